//! `kernels/repulse.cuh`, the header of the repulsion's files: the grid's geometry as the
//! kernels take it.

use crate::gpu::launch::{KernelValue, Param};
use crate::repulse::Grid;

/// Grid geometry as the kernels take it by value (`GridGeom` in `kernels/repulse.cuh`): p
/// nodes per axis, spacing h and 1/h, origin and centre per axis.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GridGeom {
    pub p: i32,
    pub h: f32,
    pub inv_h: f32,
    pub origin: [f32; 3],
    pub centre: [f32; 3],
}

// SAFETY: plain `#[repr(C)]` data with the layout of the CUDA struct (8 × 4 bytes).
unsafe impl cudarc::driver::DeviceRepr for GridGeom {}

impl KernelValue for GridGeom {
    const PARAM: Param = Param::Bytes(std::mem::size_of::<GridGeom>());
}

impl GridGeom {
    /// The geometry of `grid`, in the kernels' single precision.
    pub fn of(grid: &Grid) -> Self {
        GridGeom {
            p: grid.p as i32,
            h: grid.h as f32,
            inv_h: (1.0 / grid.h) as f32,
            origin: grid.origin.map(|v| v as f32),
            centre: grid.centre.map(|v| v as f32),
        }
    }
}
