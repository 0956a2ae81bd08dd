//! Exact O(n²) repulsion on the GPU (`kernels/exact.cu`): the reference for errors and for
//! small n, as [`super::ExactRepulsion`] is on the CPU.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::gpu::{check_device_args, DeviceRepulse};
use super::{RepulseTimes, Repulsion};
use crate::gpu::context::BLOCK;
use crate::gpu::kernels::KernelId;
use crate::gpu::{Gpu, GpuError};
use crate::Result;

/// Tiled direct sums; f64 accumulation per target.
pub struct ExactRepulsionGpu {
    gpu: &'static Gpu,
    stream: Arc<CudaStream>,
    z: CudaSlice<f64>,
}

impl ExactRepulsionGpu {
    /// Exact repulsion on `gpu`'s stream.
    pub fn new(gpu: &'static Gpu) -> Result<Self> {
        Self::on_stream(gpu, gpu.stream.clone())
    }

    /// Exact repulsion whose work goes to `stream` (of `gpu`'s context).
    pub fn on_stream(gpu: &'static Gpu, stream: Arc<CudaStream>) -> Result<Self> {
        let z = stream.alloc_zeros(1).map_err(GpuError::from)?;
        Ok(ExactRepulsionGpu { gpu, stream, z })
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
        let sums = gpu.function(KernelId::Exact, &format!("exact_sums_{dims}d"))?;
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(BLOCK as usize) as u32, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: BLOCK * dims as u32 * 4,
        };
        let n32 = n as i32;
        let mut b = s.launch_builder(&sums);
        b.arg(&n32).arg(y).arg(&mut *force).arg(&mut self.z);
        // SAFETY: exact_sums contract: one thread per target, BLOCK·dims floats of shared
        // memory, y and force n·dims floats, z zeroed above.
        unsafe { b.launch(cfg) }?;
        let normalise = gpu.function(KernelId::Exact, "exact_normalise")?;
        let len = (n * dims) as i64;
        let mut b = s.launch_builder(&normalise);
        b.arg(&len).arg(&mut *force).arg(&self.z);
        // SAFETY: force holds n·dims floats, z the Z just summed.
        unsafe { b.launch(gpu.config(n * dims)) }?;
        let mut z = [0f64];
        s.memcpy_dtoh(&self.z, &mut z)?;
        Ok(Repulsion {
            z: z[0],
            grid: None,
            times: RepulseTimes {
                g2g: start.elapsed().as_secs_f64(),
                ..Default::default()
            },
        })
    }
}

impl DeviceRepulse for ExactRepulsionGpu {
    fn repulse_device(
        &mut self,
        y: &CudaSlice<f32>,
        n: usize,
        dims: usize,
        force: &mut CudaSlice<f32>,
    ) -> Result<Repulsion> {
        check_device_args(n, dims, y.len(), force.len())?;
        Ok(self.run(y, n, dims, force)?)
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

    /// The GPU's direct sums equal the CPU's (both exact; only float rounding differs).
    #[test]
    fn gpu_exact_equals_cpu_exact() {
        let Some(gpu) = crate::gpu::for_test() else {
            return;
        };
        let seed = rand::random();
        let mut rng = StdRng::seed_from_u64(seed);
        for (dims, n) in [(1, 3001), (2, 2500), (3, 1000)] {
            let y: Vec<f32> = (0..n * dims)
                .map(|_| rng.random_range(-30.0..30.0))
                .collect();
            let mut cpu = vec![0f32; n * dims];
            let mut dev = vec![f32::NAN; n * dims];
            let zc = ExactRepulsion::new().repulse(&y, dims, &mut cpu).unwrap().z;
            let zg = ExactRepulsionGpu::new(gpu)
                .unwrap()
                .repulse(&y, dims, &mut dev)
                .unwrap()
                .z;
            let err: f64 = cpu
                .iter()
                .zip(&dev)
                .map(|(a, b)| ((a - b) as f64).powi(2))
                .sum();
            let norm: f64 = cpu.iter().map(|a| (*a as f64).powi(2)).sum();
            assert!(
                (err / norm).sqrt() < 1e-5,
                "seed {seed} {dims}-D: {}",
                (err / norm).sqrt()
            );
            assert!((zc - zg).abs() < 1e-9 * zc, "seed {seed}: Z {zg} vs {zc}");
        }
    }
}
