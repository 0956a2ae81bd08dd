//! Attraction on the GPU over P in HYB (`kernels/attract_hyb.cu`).

use cudarc::driver::{CudaSlice, DevicePtrMut, PushKernelArg};

use super::{check_shapes, Attract};
use crate::gpu::kernels::KernelId;
use crate::gpu::{Gpu, GpuError};
use crate::sparse::Hyb;
use crate::Result;

// The kernels' `__launch_bounds__` are for the blocks of `Gpu::config`.
const _: () = assert!(crate::gpu::context::BLOCK == 256);

/// Runs of 32 COO entries a warp of `attract_coo` takes per step (`COO_CHUNKS` there).
const COO_CHUNKS: usize = 2;

/// P in HYB, resident on the device.
pub struct HybGpu {
    gpu: &'static Gpu,
    n: usize,
    k: usize,
    coo_len: usize,
    ell_cols: CudaSlice<i32>,
    ell_vals: CudaSlice<f32>,
    coo_rows: CudaSlice<i32>,
    coo_cols: CudaSlice<i32>,
    coo_vals: CudaSlice<f32>,
}

impl HybGpu {
    /// Uploads `hyb`.
    pub fn new(gpu: &'static Gpu, hyb: &Hyb) -> Result<Self> {
        let s = &gpu.stream;
        let up = |e: cudarc::driver::DriverError| GpuError::from(e);
        // cudarc refuses zero-length allocations on some paths: keep one padding element.
        let pad_i = |v: &[i32]| if v.is_empty() { vec![0] } else { v.to_vec() };
        let pad_f = |v: &[f32]| if v.is_empty() { vec![0.0] } else { v.to_vec() };
        Ok(HybGpu {
            gpu,
            n: hyb.n,
            k: hyb.k,
            coo_len: hyb.coo_vals.len(),
            ell_cols: s.clone_htod(&pad_i(&hyb.ell_cols)).map_err(up)?,
            ell_vals: s.clone_htod(&pad_f(&hyb.ell_vals)).map_err(up)?,
            coo_rows: s.clone_htod(&pad_i(&hyb.coo_rows)).map_err(up)?,
            coo_cols: s.clone_htod(&pad_i(&hyb.coo_cols)).map_err(up)?,
            coo_vals: s.clone_htod(&pad_f(&hyb.coo_vals)).map_err(up)?,
        })
    }

    /// Wraps HYB arrays already on the device (built there by the GPU affinity stage),
    /// with the layout and invariants of [`Hyb`]; empty COO arrays must hold one padding
    /// element.
    #[allow(clippy::too_many_arguments)]
    pub fn from_device(
        gpu: &'static Gpu,
        n: usize,
        k: usize,
        coo_len: usize,
        ell_cols: CudaSlice<i32>,
        ell_vals: CudaSlice<f32>,
        coo: (CudaSlice<i32>, CudaSlice<i32>, CudaSlice<f32>),
    ) -> Self {
        assert!(ell_cols.len() >= n * k && ell_vals.len() >= n * k);
        assert!(coo.0.len() >= coo_len && coo.1.len() >= coo_len && coo.2.len() >= coo_len);
        HybGpu {
            gpu,
            n,
            k,
            coo_len,
            ell_cols,
            ell_vals,
            coo_rows: coo.0,
            coo_cols: coo.1,
            coo_vals: coo.2,
        }
    }

    /// Number of rows.
    pub fn n(&self) -> usize {
        self.n
    }

    /// F_attr of the device-resident `y` into `force`; with `kl`, adds Σ p ln w to
    /// `kl[0]` (the caller zeroes it). Everything stays on the device.
    pub fn attract_device(
        &self,
        y: &CudaSlice<f32>,
        dims: usize,
        force: &mut CudaSlice<f32>,
        kl: Option<&mut CudaSlice<f64>>,
    ) -> std::result::Result<(), GpuError> {
        assert!(y.len() >= self.n * dims && force.len() >= self.n * dims);
        let gpu = self.gpu;
        let ell = gpu.function(KernelId::AttractHyb, &format!("attract_ell_{dims}d"))?;
        let coo = gpu.function(KernelId::AttractHyb, &format!("attract_coo_{dims}d"))?;
        let (n, k, m) = (self.n as i32, self.k as i32, self.coo_len as i64);
        // A null KL pointer tells the kernels to skip the sum.
        let (kl_ptr, _kl_guard) = match kl {
            Some(kl) => {
                let (ptr, guard) = kl.device_ptr_mut(&gpu.stream);
                (ptr, Some(guard))
            }
            None => (0, None),
        };
        let mut b = gpu.stream.launch_builder(&ell);
        b.arg(&n)
            .arg(&k)
            .arg(&self.ell_cols)
            .arg(&self.ell_vals)
            .arg(y);
        b.arg(&mut *force).arg(&kl_ptr);
        // SAFETY: argument contract of attract_ell in kernels/attract_hyb.cu; the lengths
        // were checked above and at upload; kl_ptr is null or one live double.
        unsafe { b.launch(gpu.config(self.n)) }?;
        if m > 0 {
            let mut b = gpu.stream.launch_builder(&coo);
            b.arg(&m)
                .arg(&self.coo_rows)
                .arg(&self.coo_cols)
                .arg(&self.coo_vals);
            b.arg(y).arg(&mut *force).arg(&kl_ptr);
            // One wave: every SM full (8 blocks of 256 threads, the kernel's launch bounds),
            // each warp looping over runs of COO_CHUNKS × 32 entries.
            let cfg = gpu.config_waves(self.coo_len.div_ceil(COO_CHUNKS), 8);
            // SAFETY: argument contract of attract_coo; m entries were uploaded.
            unsafe { b.launch(cfg) }?;
        }
        Ok(())
    }
}

impl Attract for HybGpu {
    /// Host-to-host form of [`HybGpu::attract_device`], for tests against the CPU path.
    fn attract(
        &self,
        y: &[f32],
        dims: usize,
        force: &mut [f32],
        with_kl: bool,
    ) -> Result<Option<f64>> {
        check_shapes(self.n, y, dims, force)?;
        let s = &self.gpu.stream;
        let mut run = || -> std::result::Result<Option<f64>, GpuError> {
            let y_dev = s.clone_htod(y)?;
            // Upload the caller's buffer as is, so that poisoned entries the kernels miss show.
            let mut f_dev = s.clone_htod(force)?;
            let mut kl_dev = s.alloc_zeros::<f64>(1)?;
            self.attract_device(&y_dev, dims, &mut f_dev, with_kl.then_some(&mut kl_dev))?;
            s.memcpy_dtoh(&f_dev, force)?;
            let kl = s.clone_dtoh(&kl_dev)?;
            Ok(with_kl.then_some(kl[0]))
        };
        Ok(run()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::affinity::Affinities;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// HYB on the GPU equals CSR on the CPU, forces and Σ p ln w, in 1-D, 2-D and 3-D, with
    /// rows both shorter and longer than the ELL width (so the COO part is exercised), and
    /// with a width of 2 that sends most entries to COO: 2.5M of them at 200k rows, enough
    /// for every warp of the COO kernel's one-wave grid to loop several times.
    #[test]
    fn hyb_gpu_equals_csr() {
        let Some(gpu) = crate::gpu::for_test() else {
            return;
        };
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
            let mut want = vec![0f32; n * dims];
            let mut got = vec![f32::NAN; n * dims];
            let kl_want = p.attract(&y, dims, &mut want, true).unwrap().unwrap();
            let kl_got = dev.attract(&y, dims, &mut got, true).unwrap().unwrap();
            let err: f64 = want
                .iter()
                .zip(&got)
                .map(|(a, b)| ((a - b) as f64).powi(2))
                .sum();
            let norm: f64 = want.iter().map(|a| (*a as f64).powi(2)).sum();
            assert!(
                (err / norm).sqrt() < 1e-5,
                "n={n} dims={dims} width={width:?}: rel err {}",
                (err / norm).sqrt()
            );
            assert!(
                (kl_got - kl_want).abs() < 1e-5 * kl_want.abs(),
                "{kl_got} vs {kl_want}"
            );
        }
    }
}
