//! Exact O(n²) repulsion on the GPU (`kernels/exact.cu`): the reference for errors and for
//! small n, as [`super::ExactRepulsion`] is on the CPU; and the GPU twins of
//! [`super::exact_for_targets`] and [`super::exact_z`], the grid-size sweep's reference at
//! large n (all n sources for a few thousand targets, and Z alone).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig};

use super::cpu::ExactTargets;
use crate::gpu::context::BLOCK;
use crate::gpu::kernels::exact::{ExactNormalise, ExactSums, ExactTargets as TargetSums, ExactZ};
use crate::gpu::{sum, Gpu, GpuError};
use crate::kernel::Kernel;
use crate::repulse::{check_device_args, Pending, RepulseGpu, RepulseTimes, Repulsion};
use crate::{Error, Result};

/// Blocks the target sums aim for: a few per SM of the largest devices, so that 1000
/// targets (4 blocks of threads) still fill the GPU by splitting the sources.
const TARGET_BLOCKS: usize = 1024;

/// [`super::exact_for_targets_with`] for the device-resident `y` (n × dims): per-target sums
/// over all n sources in f64 with the `kernel`, sources split over block columns whose
/// partial sums are added atomically (so the order of the additions, not their precision,
/// differs from the CPU).
pub fn exact_for_targets_gpu(
    gpu: &Gpu,
    kernel: Kernel,
    y: &CudaSlice<f32>,
    n: usize,
    dims: usize,
    targets: &[usize],
) -> Result<ExactTargets> {
    check_device_args(n, dims, y.len(), y.len())?;
    if let Some(&bad) = targets.iter().find(|&&t| t >= n) {
        return Err(Error::param(
            "targets",
            format!("index {bad} out of range for {n} points"),
        ));
    }
    let m = targets.len();
    if m == 0 {
        return Ok(ExactTargets {
            dims,
            ..Default::default()
        });
    }
    let s = &gpu.stream;
    let idx: Vec<i32> = targets.iter().map(|&t| t as i32).collect();
    let idx = s.clone_htod(&idx)?;
    let mut z_row = s.alloc_zeros::<f64>(m)?;
    let mut force_z = s.alloc_zeros::<f64>(m * dims)?;
    let rows = m.div_ceil(BLOCK as usize);
    let columns = TARGET_BLOCKS
        .div_ceil(rows)
        .clamp(1, n.div_ceil(BLOCK as usize));
    // Whole tiles per column, so only the last column has a partial tile.
    let chunk = n.div_ceil(columns).div_ceil(BLOCK as usize) * BLOCK as usize;
    let cfg = LaunchConfig {
        grid_dim: (rows as u32, n.div_ceil(chunk) as u32, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: BLOCK * dims as u32 * 4,
    };
    TargetSums {
        dims,
        n,
        m,
        targets: &idx,
        y,
        dof: kernel.dof,
        chunk,
        z_row: &mut z_row,
        force_z: &mut force_z,
    }
    .launch(gpu, s, cfg)?;
    Ok(ExactTargets {
        dims,
        z_row: s.clone_dtoh(&z_row)?,
        force_z: s.clone_dtoh(&force_z)?,
    })
}

/// [`super::exact_z_with`] for the device-resident `y` (n × dims): all n² pairs, each
/// weight G1 of the `kernel` in f32 and the sums in f64 every 32 pairs (relative error about
/// 1e-7, far below the errors it is the reference for; the f64 weights of
/// [`ExactRepulsionGpu`] cost ten times more, seconds at a million points).
pub fn exact_z_gpu(
    gpu: &Gpu,
    kernel: Kernel,
    y: &CudaSlice<f32>,
    n: usize,
    dims: usize,
) -> Result<f64> {
    check_device_args(n, dims, y.len(), y.len())?;
    let s = &gpu.stream;
    let mut z = s.alloc_zeros::<u64>(sum::WORDS)?;
    ExactZ {
        dims,
        n,
        y,
        inv_dof: (1.0 / kernel.dof) as f32,
        dof: kernel.dof as f32,
        z: &mut z,
    }
    .launch(gpu, s, tiles(n, dims))?;
    Ok(sum::read(s, &z)?[0])
}

/// One thread per target, sources staged a block-sized tile at a time through shared
/// memory.
fn tiles(n: usize, dims: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(BLOCK as usize) as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: BLOCK * dims as u32 * 4,
    }
}

/// Tiled direct sums; f64 accumulation per target.
pub struct ExactRepulsionGpu {
    gpu: &'static Gpu,
    stream: Arc<CudaStream>,
    kernel: Kernel,
    /// Z, an exact sum ([`sum`]).
    z: CudaSlice<u64>,
}

impl ExactRepulsionGpu {
    /// Exact repulsion on `gpu`'s stream, with t-SNE's Cauchy kernel.
    pub fn new(gpu: &'static Gpu) -> Result<Self> {
        Self::on_stream(gpu, gpu.stream.clone())
    }

    /// Exact repulsion whose work goes to `stream` (of `gpu`'s context).
    pub fn on_stream(gpu: &'static Gpu, stream: Arc<CudaStream>) -> Result<Self> {
        let z = stream.alloc_zeros(sum::WORDS)?;
        Ok(ExactRepulsionGpu {
            gpu,
            stream,
            kernel: Kernel::CAUCHY,
            z,
        })
    }

    /// The same with the heavy-tailed `kernel` ([`Kernel`]) in place of the Cauchy one.
    pub fn with_kernel(self, kernel: Kernel) -> Self {
        ExactRepulsionGpu { kernel, ..self }
    }

    fn run(
        &mut self,
        y: &CudaSlice<f32>,
        n: usize,
        dims: usize,
        force: &mut CudaSlice<f32>,
    ) -> std::result::Result<Repulsion, GpuError> {
        let gpu = self.gpu;
        let s = &self.stream;
        let start = std::time::Instant::now();
        s.memset_zeros(&mut self.z)?;
        ExactSums {
            dims,
            n,
            y,
            dof: self.kernel.dof,
            force: &mut *force,
            z: &mut self.z,
        }
        .launch(gpu, s, tiles(n, dims))?;
        ExactNormalise {
            len: n * dims,
            force,
            z: &self.z,
        }
        .launch(gpu, s, gpu.config(n * dims))?;
        let z = sum::read(s, &self.z)?[0];
        Ok(Repulsion {
            z,
            grid: None,
            times: RepulseTimes {
                g2g: start.elapsed().as_secs_f64(),
                ..Default::default()
            },
            replan_seconds: 0.0,
        })
    }
}

impl RepulseGpu for ExactRepulsionGpu {
    fn enqueue(
        &mut self,
        y: &CudaSlice<f32>,
        n: usize,
        dims: usize,
        force: &mut CudaSlice<f32>,
    ) -> Result<Pending> {
        check_device_args(n, dims, y.len(), force.len())?;
        Ok(Pending::Done(self.run(y, n, dims, force)?))
    }
    fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repulse::{ExactRepulsion, Repulse};
    use rand::{rngs::StdRng, Rng, SeedableRng};

    crate::gpu::gpu_test! {
        /// The GPU's direct sums equal the CPU's (both exact; only float rounding differs),
        /// for the Cauchy kernel and heavy- and light-tailed ones (α = 0.5, 2).
        fn gpu_exact_equals_cpu_exact(gpu) {
            let seed = rand::random();
            let mut rng = StdRng::seed_from_u64(seed);
            for (dims, n) in [(1, 3001), (2, 2500), (3, 1000)] {
                let y: Vec<f32> = (0..n * dims)
                    .map(|_| rng.random_range(-30.0..30.0))
                    .collect();
                for dof in [1.0, 0.5, 2.0] {
                    let kernel = Kernel::new(dof).unwrap();
                    let mut cpu = vec![0f32; n * dims];
                    let mut dev = vec![f32::NAN; n * dims];
                    let zc = ExactRepulsion::with_kernel(kernel)
                        .repulse(&y, dims, &mut cpu)
                        .unwrap()
                        .z;
                    let zg = ExactRepulsionGpu::new(gpu)
                        .unwrap()
                        .with_kernel(kernel)
                        .repulse(&y, dims, &mut dev)
                        .unwrap()
                        .z;
                    let rel = crate::repulse::relative_error(&cpu, &dev);
                    assert!(rel < 1e-5, "seed {seed} {dims}-D dof {dof}: {rel}");
                    // The GPU squares float differences; a power α of the weights (pow in
                    // double) carries their rounding, measured 2.1e-9 at α = 2.
                    let bound = if dof == 1.0 { 1e-9 } else { 2e-8 };
                    assert!((zc - zg).abs() < bound * zc, "seed {seed} dof {dof}: Z {zg} vs {zc}");
                }
            }
        }
    }

    crate::gpu::gpu_test! {
        /// The sweep's GPU references equal the CPU's to 1e-6: the GPU forms differences and
        /// squared distances in f32 (and Z's pair weights), the CPU in f64.
        fn gpu_target_sums_and_z_equal_cpu(gpu) {
            let seed = rand::random();
            let mut rng = StdRng::seed_from_u64(seed);
            for (dims, n) in [(1, 5003), (2, 4001), (3, 2999)] {
                let y: Vec<f32> = (0..n * dims)
                    .map(|_| rng.random_range(-40.0..40.0))
                    .collect();
                let targets: Vec<usize> = (0..700).map(|_| rng.random_range(0..n)).collect();
                let y_dev = gpu.stream.clone_htod(&y).unwrap();
                for dof in [1.0, 0.5] {
                    let kernel = Kernel::new(dof).unwrap();
                    let cpu =
                        crate::repulse::exact_for_targets_with(kernel, &y, dims, &targets).unwrap();
                    let dev = exact_for_targets_gpu(gpu, kernel, &y_dev, n, dims, &targets).unwrap();
                    for (a, b) in cpu.z_row.iter().zip(&dev.z_row) {
                        assert!(
                            (a - b).abs() <= 1e-6 * a,
                            "seed {seed} {dims}-D dof {dof}: z {b} vs {a}"
                        );
                    }
                    let err = crate::repulse::relative_error(&cpu.force_z, &dev.force_z);
                    assert!(err < 1e-6, "seed {seed} {dims}-D dof {dof}: force {err:e}");
                    let zc = crate::repulse::exact_z_with(kernel, &y, dims).unwrap();
                    let zg = exact_z_gpu(gpu, kernel, &y_dev, n, dims).unwrap();
                    assert!((zc - zg).abs() < 1e-6 * zc, "seed {seed} dof {dof}: Z {zg} vs {zc}");
                }
            }
        }
    }
}
