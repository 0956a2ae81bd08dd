//! Attraction on the GPU over P in HYB (`kernels/attract_hyb.cu`): the ELL part overwrites
//! the forces, the COO part (long rows) adds to them. Deterministic runs sum in fixed point
//! instead (the kernels' `_fixed` variants): the COO part's float atomics, and the order a
//! row's entries took in the symmetrisation, would otherwise change the forces' last bits
//! from run to run.
//!
//! The kernels wait on the gathers of y_j, one per entry of P. Where a point's neighbours
//! lie at random among many (the 10M mixture's clusters of 1.66M points), those gathers
//! alone take 13.8 ms per evaluation on an H100 (`scripts/bench/attract_floors.py`).
//! P cut into tiles whose Y sits in shared memory took that input to 12.1 ms, but real
//! images, whose P has locality in the cells' order, to 15.3 ms against HYB's 9.2
//! (`benches/RESULTS.md`, 2026-11-27; the layout is commit `a975616`): HYB stays until a run
//! can choose between them.

use cudarc::driver::{CudaSlice, CudaStream};

use super::{check_shapes, Attract};
use crate::gpu::kernels::attract_hyb::{
    AttractCoo, AttractCooFixed, AttractEll, AttractEllFixed, AttractFixedToForce,
    COO_BLOCKS_PER_SM, COO_CHUNKS, THREADS,
};
use crate::gpu::GpuError;
use crate::kernel::Kernel;
use crate::sparse::HybGpu;
use crate::Result;

/// The fixed point of the deterministic attraction: terms are rounded to multiples of
/// 1 / scale, a power of two (so that scaling a float is exact). |F_attr,i| ≤ √α/2 · Σ_j p_ij
/// (the edge weight times the distance peaks at d = √α), so 2⁵⁴/√α leaves room for rows of
/// P summing to 2⁸ (a normalised P's rows sum to far less than 1) and rounds each term to
/// about 5.5·10⁻¹⁷ √α, below a float's precision of the forces at 10⁷ points (about 10⁻⁸).
fn fixed_scale(kernel: Kernel) -> f32 {
    let root = kernel.dof.sqrt().max(1.0);
    (54.0 - root.log2().ceil()).exp2() as f32
}

/// The most threads per row of the ELL part ([`HybGpu::ell_split`]).
const MAX_SPLIT: usize = 8;
/// Threads per multiprocessor the split ELL kernel aims at: four times the 2048 an SM
/// holds, so that gathers in flight hide their latency (at most 135k rows get 8 threads
/// each on an H200's 132 SMs).
const SPLIT_THREADS_PER_SM: usize = 8192;

impl HybGpu {
    /// F_attr of the device-resident `y` (every point: for a row block of P,
    /// [`HybGpu::row0`], the whole embedding) into `force` (the rows held), each edge
    /// weighed by the `kernel`'s $w^{1/α}$ ([`Kernel::edge`]); with `kl`, adds Σ p ln w to that exact sum
    /// ([`crate::gpu::sum`]; the caller zeroes it). With `fixed` (n × dims words), the sums
    /// are taken in fixed point there, the same in any order, and then written to `force`:
    /// a deterministic run's attraction. Everything stays on the device, queued on
    /// `stream` (of the matrix's GPU).
    #[allow(clippy::too_many_arguments)]
    pub fn attract_device(
        &self,
        stream: &CudaStream,
        kernel: Kernel,
        y: &CudaSlice<f32>,
        dims: usize,
        force: &mut CudaSlice<f32>,
        kl: Option<&mut CudaSlice<u64>>,
        fixed: Option<&mut CudaSlice<i64>>,
    ) -> std::result::Result<(), GpuError> {
        self.attract_split(
            stream,
            kernel,
            (y, dims),
            force,
            kl,
            fixed,
            self.ell_split(),
        )
    }

    /// [`HybGpu::attract_device`] with `split` threads per row of the ELL part.
    #[allow(clippy::too_many_arguments)]
    fn attract_split(
        &self,
        stream: &CudaStream,
        kernel: Kernel,
        (y, dims): (&CudaSlice<f32>, usize),
        force: &mut CudaSlice<f32>,
        kl: Option<&mut CudaSlice<u64>>,
        fixed: Option<&mut CudaSlice<i64>>,
        split: usize,
    ) -> std::result::Result<(), GpuError> {
        match fixed {
            None => self.attract_float(stream, kernel, y, dims, force, kl, split),
            Some(fixed) => self.attract_fixed(stream, kernel, y, dims, fixed, force, kl, split),
        }
    }

    /// The COO kernels' grid: one wave, every SM full (the kernel's launch bounds), each
    /// warp looping over runs of COO_CHUNKS × 32 entries.
    fn coo_config(&self) -> cudarc::driver::LaunchConfig {
        self.gpu
            .config_waves(self.coo_len.div_ceil(COO_CHUNKS), COO_BLOCKS_PER_SM)
    }

    /// Threads per row of the ELL part: one where the rows fill the device several times
    /// over; at small n up to [`MAX_SPLIT`], so that about [`SPLIT_THREADS_PER_SM`] threads
    /// per multiprocessor share the rows' gathers (MNIST 70k on an H200: 8 per row).
    fn ell_split(&self) -> usize {
        let want = SPLIT_THREADS_PER_SM * self.gpu.multiprocessors();
        let mut split = 1;
        while split < MAX_SPLIT && self.n * split * 2 <= want {
            split *= 2;
        }
        split
    }

    /// The ELL kernels' grid: a block per THREADS / split rows, with room in shared memory
    /// for a split row's partial sums (8 bytes per thread and dimension; none for one
    /// thread per row).
    fn ell_config(&self, split: usize, dims: usize) -> cudarc::driver::LaunchConfig {
        let blocks = self.n.div_ceil(THREADS / split).clamp(1, 65_535 * 8) as u32;
        cudarc::driver::LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (THREADS as u32, 1, 1),
            shared_mem_bytes: if split > 1 {
                (THREADS * dims * 8) as u32
            } else {
                0
            },
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn attract_float(
        &self,
        stream: &CudaStream,
        kernel: Kernel,
        y: &CudaSlice<f32>,
        dims: usize,
        force: &mut CudaSlice<f32>,
        mut kl: Option<&mut CudaSlice<u64>>,
        split: usize,
    ) -> std::result::Result<(), GpuError> {
        let (gpu, edge) = (self.gpu, kernel.edge_f32());
        AttractEll {
            dims,
            n: self.n,
            row0: self.row0,
            width: self.width,
            split,
            ell_cols: &self.ell_cols,
            ell_vals: &self.ell_vals,
            y,
            inv_dof: edge.inv_dof,
            dof: edge.dof,
            force: &mut *force,
            kl: kl.as_deref_mut().map(|k| k as _),
        }
        .launch(gpu, stream, self.ell_config(split, dims))?;
        if self.coo_len > 0 {
            AttractCoo {
                dims,
                n: self.n,
                m: self.coo_len,
                row0: self.row0,
                rows: &self.coo_rows,
                cols: &self.coo_cols,
                vals: &self.coo_vals,
                y,
                inv_dof: edge.inv_dof,
                dof: edge.dof,
                force,
                kl: kl.map(|k| k as _),
            }
            .launch(gpu, stream, self.coo_config())?;
        }
        Ok(())
    }

    /// The sums in fixed point into `fixed`, then converted into `force`.
    #[allow(clippy::too_many_arguments)]
    fn attract_fixed(
        &self,
        stream: &CudaStream,
        kernel: Kernel,
        y: &CudaSlice<f32>,
        dims: usize,
        fixed: &mut CudaSlice<i64>,
        force: &mut CudaSlice<f32>,
        mut kl: Option<&mut CudaSlice<u64>>,
        split: usize,
    ) -> std::result::Result<(), GpuError> {
        let (gpu, edge, scale) = (self.gpu, kernel.edge_f32(), fixed_scale(kernel));
        AttractEllFixed {
            dims,
            n: self.n,
            row0: self.row0,
            width: self.width,
            split,
            ell_cols: &self.ell_cols,
            ell_vals: &self.ell_vals,
            y,
            inv_dof: edge.inv_dof,
            dof: edge.dof,
            scale,
            fixed: &mut *fixed,
            kl: kl.as_deref_mut().map(|k| k as _),
        }
        .launch(gpu, stream, self.ell_config(split, dims))?;
        if self.coo_len > 0 {
            AttractCooFixed {
                dims,
                n: self.n,
                m: self.coo_len,
                row0: self.row0,
                rows: &self.coo_rows,
                cols: &self.coo_cols,
                vals: &self.coo_vals,
                y,
                inv_dof: edge.inv_dof,
                dof: edge.dof,
                scale,
                fixed: &mut *fixed,
                kl: kl.map(|k| k as _),
            }
            .launch(gpu, stream, self.coo_config())?;
        }
        AttractFixedToForce {
            len: self.n * dims,
            fixed,
            inv_scale: 1.0 / scale as f64,
            force,
        }
        .launch(gpu, stream, gpu.config(self.n * dims))
    }
}

impl HybGpu {
    /// Host-to-host form of [`HybGpu::attract_device`] (deterministic or not) with `split`
    /// threads per ELL row, for tests against the CPU path.
    #[allow(clippy::too_many_arguments)]
    fn attract_host(
        &self,
        kernel: Kernel,
        y: &[f32],
        dims: usize,
        force: &mut [f32],
        with_kl: bool,
        deterministic: bool,
        split: usize,
    ) -> Result<Option<f64>> {
        check_shapes(self.n, y, dims, force)?;
        let s = &self.gpu.stream;
        let y_dev = s.clone_htod(y)?;
        // Upload the caller's buffer as is, so that poisoned entries the kernels miss show.
        let mut f_dev = s.clone_htod(force)?;
        let mut kl_dev = s.alloc_zeros::<u64>(crate::gpu::sum::WORDS)?;
        let mut fixed = match deterministic {
            true => Some(s.alloc_zeros::<i64>(self.n * dims)?),
            false => None,
        };
        self.attract_split(
            s,
            kernel,
            (&y_dev, dims),
            &mut f_dev,
            with_kl.then_some(&mut kl_dev),
            fixed.as_mut(),
            split,
        )?;
        s.memcpy_dtoh(&f_dev, force)?;
        let kl = crate::gpu::sum::read(&self.gpu.stream, &kl_dev)?;
        Ok(with_kl.then_some(kl[0]))
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
        self.attract_host(kernel, y, dims, force, with_kl, false, self.ell_split())
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
        /// for every warp of the COO kernel's one-wave grid to loop several times. The
        /// deterministic (fixed-point) sums too, which repeat bit for bit; the ELL part with
        /// one, two and eight threads per row ([`HybGpu::ell_split`]).
        fn hyb_gpu_equals_csr(gpu) {
            let mut rng = StdRng::seed_from_u64(rand::random());
            for (n, dims, width) in [
                (5000, 1, None),
                (20_000, 2, None),
                (7000, 3, None),
                (200_000, 2, Some(2)),
                (30_000, 3, Some(2)),
            ] {
                let p: Affinities = crate::sparse::ragged_p(n, &mut rng);
                let hyb = Hyb::from_csr(&p, width).unwrap();
                assert!(!hyb.coo_vals.is_empty(), "test must exercise the COO part");
                let dev = HybGpu::new(gpu, &hyb).unwrap();
                let y: Vec<f32> = (0..n * dims)
                    .map(|_| rng.random_range(-20.0..20.0))
                    .collect();
                for (dof, deterministic, split) in [
                    (1.0, false, 1), (1.0, false, 2), (1.0, false, 8), (0.5, false, 8),
                    (3.0, false, 1), (1.0, true, 1), (3.0, true, 8),
                ] {
                    let kernel = Kernel::new(dof).unwrap();
                    let mut want = vec![0f32; n * dims];
                    let mut got = vec![f32::NAN; n * dims];
                    let kl_want = p.attract_with(kernel, &y, dims, &mut want, true).unwrap().unwrap();
                    let kl_got = dev
                        .attract_host(kernel, &y, dims, &mut got, true, deterministic, split)
                        .unwrap()
                        .unwrap();
                    let rel = crate::repulse::relative_error(&want, &got);
                    assert!(
                        rel < 1e-5,
                        "n={n} dims={dims} width={width:?} dof {dof} det {deterministic} \
                         split {split}: rel err {rel}"
                    );
                    assert!(
                        (kl_got - kl_want).abs() < 1e-5 * kl_want.abs(),
                        "dof {dof}: {kl_got} vs {kl_want}"
                    );
                    if deterministic {
                        let mut again = vec![f32::NAN; n * dims];
                        let kl_again = dev
                            .attract_host(kernel, &y, dims, &mut again, true, true, split)
                            .unwrap()
                            .unwrap();
                        assert!(
                            got.iter().zip(&again).all(|(a, b)| a.to_bits() == b.to_bits()),
                            "n={n} dims={dims}: deterministic forces differ between calls"
                        );
                        assert_eq!(kl_got.to_bits(), kl_again.to_bits());
                    }
                }
            }
        }
    }
}
