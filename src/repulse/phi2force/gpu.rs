//! Phi2Force on the GPU (`kernels/phi2force.cu`): the gathered potentials and Z into the
//! repulsive forces, as [`super::phi2force`] does on the CPU.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use crate::gpu::kernels::phi2force::Phi2Force;
use crate::gpu::kernels::repulse::GridGeom;
use crate::gpu::real::DeviceReal;
use crate::gpu::{Gpu, GpuError};

/// F_rep of the n points `y` into `force` from their potentials `pot` and Z (`z`), the
/// charges having been taken relative to the centre of `geom`.
pub(crate) fn phi2force_device<T: DeviceReal>(
    gpu: &Gpu,
    s: &Arc<CudaStream>,
    (y, n, dims): (&CudaSlice<f32>, usize, usize),
    geom: GridGeom,
    pot: &CudaSlice<T>,
    z: &CudaSlice<u64>,
    force: &mut CudaSlice<f32>,
) -> Result<(), GpuError> {
    let [c0, c1, c2] = geom.centre;
    Phi2Force::<T> {
        dims,
        n,
        c0,
        c1,
        c2,
        y,
        pot,
        z,
        force,
    }
    .launch(gpu, s, gpu.config(n))
}
