//! G2S on the GPU (`kernels/g2s.cu`): every point gathers its potentials from the 4^dims
//! nodes around it (no atomics), and Σ ψ minus the interpolated self terms goes to Z, as
//! [`super::gather`] does on the CPU.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use crate::gpu::kernels::g2s::G2sGather;
use crate::gpu::kernels::repulse::GridGeom;
use crate::gpu::real::DeviceReal;
use crate::gpu::{Gpu, GpuError};
use crate::kernel::Kernel;

/// The potentials of the n points `y` (`order`: the points sorted by cell, which the 3-D
/// kernel walks) from the grids `phi` of `geom` into `pot` (n × (2 + dims), point-major),
/// Σ ψ − Σ w̃_ii into the exact sum `z` ([`crate::gpu::sum`]), which it zeroes first; the
/// self terms `w̃_ii` of `kernel`'s G₁, as G2G's.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gather_device<T: DeviceReal>(
    gpu: &Gpu,
    s: &Arc<CudaStream>,
    (y, n, dims): (&CudaSlice<f32>, usize, usize),
    (geom, kernel): (GridGeom, Kernel),
    order: &CudaSlice<i32>,
    phi: &CudaSlice<T>,
    pot: &mut CudaSlice<T>,
    z: &mut CudaSlice<u64>,
) -> Result<(), GpuError> {
    s.memset_zeros(z)?;
    G2sGather::<T> {
        dims,
        len: (geom.p as usize).pow(dims as u32),
        n,
        geom,
        dof: kernel.dof,
        y,
        order,
        phi,
        out: pot,
        z,
    }
    .launch(gpu, s, gpu.config(n))
}
