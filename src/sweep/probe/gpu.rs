//! The device [`Probe`]: tiled exact sums on the GPU, [`FftRepulsionGpu`] per grid timed with
//! CUDA events; per sample only Y, the forces and a few sums come to the host.

use cudarc::driver::CudaSlice;

use super::{approximate_with, at_targets, Approximation, Probe};
use crate::gpu::Gpu;
use crate::kernel::Kernel;
use crate::repulse::{
    exact_for_targets_gpu, exact_z_gpu, ExactTargets, FftRepulsionGpu, GridSpec, RepulseGpu,
};
use crate::Result;

/// Measures on the device; one repulsion per grid, kept across samples.
pub(crate) struct ProbeGpu {
    gpu: &'static Gpu,
    n: usize,
    dims: usize,
    repulsions: Vec<FftRepulsionGpu>,
    force: CudaSlice<f32>,
}

impl ProbeGpu {
    /// A repulsion per grid of `grids`, with the near field when `near_field`.
    pub fn new(
        gpu: &'static Gpu,
        n: usize,
        dims: usize,
        (grids, near_field): (&[GridSpec], bool),
    ) -> Result<Self> {
        let repulsions = grids
            .iter()
            .map(|&g| Ok(FftRepulsionGpu::new(gpu, g)?.with_near_field(near_field)))
            .collect::<Result<_>>()?;
        let force = gpu.stream.alloc_zeros(n * dims)?;
        Ok(ProbeGpu {
            gpu,
            n,
            dims,
            repulsions,
            force,
        })
    }
}

impl Probe<CudaSlice<f32>> for ProbeGpu {
    fn host_y(&mut self, y: &CudaSlice<f32>) -> Result<Vec<f32>> {
        let mut host = vec![0f32; self.n * self.dims];
        let view = y.slice(..host.len());
        self.gpu.stream.memcpy_dtoh(&view, &mut host)?;
        Ok(host)
    }

    fn exact(&mut self, y: &CudaSlice<f32>, targets: &[usize]) -> Result<(ExactTargets, f64)> {
        let (gpu, n, dims) = (self.gpu, self.n, self.dims);
        Ok((
            exact_for_targets_gpu(gpu, Kernel::CAUCHY, y, n, dims, targets)?,
            exact_z_gpu(gpu, Kernel::CAUCHY, y, n, dims)?,
        ))
    }

    fn approximate(
        &mut self,
        k: usize,
        y: &CudaSlice<f32>,
        targets: &[usize],
        repeats: usize,
    ) -> Result<Approximation> {
        let (gpu, n, dims) = (self.gpu, self.n, self.dims);
        let rep = &mut self.repulsions[k];
        approximate_with(
            &mut self.force,
            repeats,
            |force| rep.repulse_device(y, n, dims, force),
            |force| {
                let host = gpu.stream.clone_dtoh(force)?;
                Ok(at_targets(&host, dims, targets))
            },
        )
    }
}
