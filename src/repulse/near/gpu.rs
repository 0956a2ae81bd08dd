//! The near field on the GPU (`kernels/near.cu`): S2G's sort by cell reused, the sorted
//! coordinates copied once per call so that a warp's candidates are contiguous, then a
//! thread per point in sorted order sums its rows of cells ([`super::cpu`] does the same on
//! the host).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use super::NearField;
use crate::gpu::kernels::near::{NearSortedCoords, NearSums};
use crate::gpu::kernels::repulse::GridGeom;
use crate::gpu::real::DeviceReal;
use crate::gpu::{Gpu, GpuError};

/// The sorted coordinates, grown on demand.
pub(crate) struct NearGpu {
    ys: Option<CudaSlice<f32>>,
}

impl NearGpu {
    pub(crate) fn new() -> Self {
        NearGpu { ys: None }
    }

    /// Adds the short-range sums of the n points `y` to the potentials `pot` that the gather
    /// wrote (n × (2 + dims)) and their ψ terms to the exact sum `z`, on stream `s`; `order`
    /// and `starts` are S2G's sort of the same points on the grid `geom`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add<T: DeviceReal>(
        &mut self,
        gpu: &Gpu,
        s: &Arc<CudaStream>,
        (y, n, dims): (&CudaSlice<f32>, usize, usize),
        (geom, near): (GridGeom, &NearField),
        (order, starts): (&CudaSlice<i32>, &CudaSlice<i32>),
        pot: &mut CudaSlice<T>,
        z: &mut CudaSlice<u64>,
    ) -> Result<(), GpuError> {
        if self.ys.as_ref().is_none_or(|b| b.len() < 4 * n) {
            self.ys = Some(s.alloc_zeros(4 * n)?);
        }
        let ys = self.ys.as_mut().expect("just made");
        NearSortedCoords {
            real: T::DEFINES,
            n,
            dims,
            order,
            y,
            ys,
        }
        .launch(gpu, s, gpu.config(n))?;
        NearSums::<T> {
            dims,
            cells: (geom.p as usize - 3).pow(dims as u32),
            n,
            geom,
            t0: near.t0 as f32,
            cutoff: near.cutoff as f32,
            order,
            starts,
            ys,
            pot,
            z,
        }
        .launch(gpu, s, gpu.config(n))
    }
}
