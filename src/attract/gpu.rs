//! Attraction on the GPU over P in HYB (`kernels/attract_hyb.cu`): the ELL part overwrites
//! the forces, the COO part (long rows) adds to them.

use cudarc::driver::CudaSlice;

use super::{check_shapes, Attract};
use crate::gpu::kernels::attract_hyb::{AttractCoo, AttractEll, COO_BLOCKS_PER_SM, COO_CHUNKS};
use crate::gpu::GpuError;
use crate::kernel::Kernel;
use crate::sparse::HybGpu;
use crate::Result;

impl HybGpu {
    /// F_attr of the device-resident `y` into `force`, each edge weighed by the `kernel`'s
    /// $w^{1/α}$ ([`Kernel::edge`]); with `kl`, adds Σ p ln w to `kl[0]` (the caller zeroes
    /// it). Everything stays on the device.
    pub fn attract_device(
        &self,
        kernel: Kernel,
        y: &CudaSlice<f32>,
        dims: usize,
        force: &mut CudaSlice<f32>,
        mut kl: Option<&mut CudaSlice<f64>>,
    ) -> std::result::Result<(), GpuError> {
        let gpu = self.gpu;
        let s = &gpu.stream;
        let edge = kernel.edge_f32();
        AttractEll {
            dims,
            n: self.n,
            width: self.width,
            ell_cols: &self.ell_cols,
            ell_vals: &self.ell_vals,
            y,
            inv_dof: edge.inv_dof,
            dof: edge.dof,
            force: &mut *force,
            kl: kl.as_deref_mut().map(|k| k as _),
        }
        .launch(gpu, s, gpu.config(self.n))?;
        if self.coo_len > 0 {
            // One wave: every SM full (the kernel's launch bounds), each warp looping over
            // runs of COO_CHUNKS × 32 entries.
            let cfg = gpu.config_waves(self.coo_len.div_ceil(COO_CHUNKS), COO_BLOCKS_PER_SM);
            AttractCoo {
                dims,
                n: self.n,
                m: self.coo_len,
                rows: &self.coo_rows,
                cols: &self.coo_cols,
                vals: &self.coo_vals,
                y,
                inv_dof: edge.inv_dof,
                dof: edge.dof,
                force,
                kl: kl.map(|k| k as _),
            }
            .launch(gpu, s, cfg)?;
        }
        Ok(())
    }
}

impl Attract for HybGpu {
    /// Host-to-host form of [`HybGpu::attract_device`], for tests against the CPU path.
    fn attract_with(
        &self,
        kernel: Kernel,
        y: &[f32],
        dims: usize,
        force: &mut [f32],
        with_kl: bool,
    ) -> Result<Option<f64>> {
        check_shapes(self.n, y, dims, force)?;
        let s = &self.gpu.stream;
        let y_dev = s.clone_htod(y)?;
        // Upload the caller's buffer as is, so that poisoned entries the kernels miss show.
        let mut f_dev = s.clone_htod(force)?;
        let mut kl_dev = s.alloc_zeros::<f64>(1)?;
        self.attract_device(
            kernel,
            &y_dev,
            dims,
            &mut f_dev,
            with_kl.then_some(&mut kl_dev),
        )?;
        s.memcpy_dtoh(&f_dev, force)?;
        let kl = s.clone_dtoh(&kl_dev)?;
        Ok(with_kl.then_some(kl[0]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::affinity::Affinities;
    use crate::sparse::Hyb;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    crate::gpu::gpu_test! {
        /// HYB on the GPU equals CSR on the CPU, forces and Σ p ln w, for the Cauchy kernel and
        /// Student's t of 0.5 and 3 degrees of freedom, in 1-D, 2-D and 3-D, with
        /// rows both shorter and longer than the ELL width (so the COO part is exercised), and
        /// with a width of 2 that sends most entries to COO: 2.5M of them at 200k rows, enough
        /// for every warp of the COO kernel's one-wave grid to loop several times.
        fn hyb_gpu_equals_csr(gpu) {
            let mut rng = StdRng::seed_from_u64(rand::random());
            for (n, dims, width) in [
                (5000, 1, None),
                (20_000, 2, None),
                (7000, 3, None),
                (200_000, 2, Some(2)),
                (30_000, 3, Some(2)),
            ] {
                let mut t = sprs::TriMatI::<f32, u32>::new((n, n));
                for i in 0..n {
                    let len = if i % 97 == 0 {
                        200
                    } else {
                        rng.random_range(1..20)
                    };
                    for _ in 0..len {
                        let j = rng.random_range(0..n);
                        if j != i {
                            let v: f32 = rng.random();
                            t.add_triplet(i, j, v);
                            t.add_triplet(j, i, v);
                        }
                    }
                }
                let p: Affinities = t.to_csr();
                let hyb = Hyb::from_csr(&p, width).unwrap();
                assert!(!hyb.coo_vals.is_empty(), "test must exercise the COO part");
                let dev = HybGpu::new(gpu, &hyb).unwrap();
                let y: Vec<f32> = (0..n * dims)
                    .map(|_| rng.random_range(-20.0..20.0))
                    .collect();
                for dof in [1.0, 0.5, 3.0] {
                    let kernel = Kernel::new(dof).unwrap();
                    let mut want = vec![0f32; n * dims];
                    let mut got = vec![f32::NAN; n * dims];
                    let kl_want = p.attract_with(kernel, &y, dims, &mut want, true).unwrap().unwrap();
                    let kl_got = dev.attract_with(kernel, &y, dims, &mut got, true).unwrap().unwrap();
                    let rel = crate::repulse::relative_error(&want, &got);
                    assert!(
                        rel < 1e-5,
                        "n={n} dims={dims} width={width:?} dof {dof}: rel err {rel}"
                    );
                    assert!(
                        (kl_got - kl_want).abs() < 1e-5 * kl_want.abs(),
                        "dof {dof}: {kl_got} vs {kl_want}"
                    );
                }
            }
        }
    }
}
