//! S2G on the GPU (`kernels/s2g.cu`): points binned by grid tile, dense tiles spread through
//! shared-memory patches, sparse ones straight to the grid.
//!
//! Spreading with float atomics straight into the grid serialises where points crowd: at
//! 1.3M points in 2-D, 40 clusters put ~30k points on a few hundred nodes each, and S2G took
//! 2.1 ms of a 4.8 ms iteration on the H100 (1.3M × 16 nodes × 3 channels of contended
//! atomics). Binning costs two passes over the points with one atomic per tile and warp
//! (`__match_any_sync`); the dense tiles' atomics then land in shared memory, and each
//! patch meets the grid once.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::gpu::GridGeom;
use crate::gpu::kernels::KernelId;
use crate::gpu::real::DeviceReal;
use crate::gpu::{Gpu, GpuError};

/// Tile side in stencil corners per axis, for 1-D, 2-D, 3-D: patches of (T+3)^D nodes ×
/// (1+D) channels of 8.2, 14.7 and 21.3 KB of shared memory in f32 (twice that in f64,
/// within the 48 KB a block may take without opting in).
const TILE: [usize; 3] = [1024, 32, 8];
/// Points of one tile per block of the dense pass.
const PIECE: usize = 2048;
/// A tile with at least this many points goes through a shared patch: below, zeroing and
/// flushing a patch costs more than the atomics it saves.
const DENSE_MIN: usize = 128;
/// Threads per block of the dense pass.
const DENSE_THREADS: u32 = 256;
/// Threads of the planning kernel (`S2G_PLAN_THREADS`).
const PLAN_THREADS: u32 = 1024;

/// Scratch buffers of the binned S2G, grown on demand.
pub(crate) struct BinnedScatter {
    dense_min: usize,
    bin: CudaSlice<i32>,
    order: CudaSlice<i32>,
    counts: CudaSlice<i32>,
    starts: CudaSlice<i32>,
    cursor: CudaSlice<i32>,
    pieces: CudaSlice<i32>,
    npieces: CudaSlice<i32>,
}

/// `buf` with room for at least `len` entries (its contents are not kept).
fn grow(s: &Arc<CudaStream>, buf: &mut CudaSlice<i32>, len: usize) -> Result<(), GpuError> {
    if buf.len() < len {
        *buf = s.alloc_zeros(len)?;
    }
    Ok(())
}

impl BinnedScatter {
    /// Empty buffers on `stream`.
    pub(crate) fn new(stream: &Arc<CudaStream>) -> Result<Self, GpuError> {
        let one = || stream.alloc_zeros::<i32>(1);
        Ok(BinnedScatter {
            dense_min: DENSE_MIN,
            bin: one()?,
            order: one()?,
            counts: one()?,
            starts: one()?,
            cursor: one()?,
            pieces: one()?,
            npieces: one()?,
        })
    }

    /// Sends every tile through the patches (`1`) or none (`usize::MAX`), for tests.
    #[cfg(test)]
    pub(crate) fn set_dense_min(&mut self, dense_min: usize) {
        self.dense_min = dense_min;
    }

    /// Adds the charges of the n points `y` (n × dims, inside the grid `geom`) to `grid`
    /// ((1 + dims) channels of p^dims nodes in `T`, zeroed by the caller), on stream `s`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run<T: DeviceReal>(
        &mut self,
        gpu: &Gpu,
        s: &Arc<CudaStream>,
        y: &CudaSlice<f32>,
        n: usize,
        dims: usize,
        geom: &GridGeom,
        grid: &mut CudaSlice<T>,
    ) -> Result<(), GpuError> {
        let function = |name: &str| gpu.function_with(KernelId::S2g, T::DEFINES, name);
        let p = geom.p as usize;
        let t = TILE[dims - 1];
        let nt = (p - 3).div_ceil(t);
        let ntiles = nt.pow(dims as u32);
        let max_pieces = n / PIECE + ntiles.min(n / self.dense_min.max(1)) + 1;
        grow(s, &mut self.bin, n)?;
        grow(s, &mut self.order, n)?;
        grow(s, &mut self.counts, ntiles)?;
        grow(s, &mut self.starts, ntiles + 1)?;
        grow(s, &mut self.cursor, ntiles)?;
        grow(s, &mut self.pieces, 3 * max_pieces)?;
        let mut counts = self.counts.slice_mut(0..ntiles);
        s.memset_zeros(&mut counts)?;
        let (n32, t32, nt32, nti32) = (n as i32, t as i32, nt as i32, ntiles as i32);
        let dense_min = self.dense_min.min(i32::MAX as usize) as i32;
        let piece = PIECE as i32;

        let f = function(&format!("s2g_bin_count_{dims}d"))?;
        let mut b = s.launch_builder(&f);
        b.arg(&n32).arg(geom).arg(&t32).arg(&nt32).arg(y);
        b.arg(&mut self.bin).arg(&mut self.counts);
        // SAFETY: s2g.cu contract: y n·dims floats inside the grid, bin ≥ n ints, counts ≥
        // ntiles ints zeroed above; blocks of whole warps.
        unsafe { b.launch(gpu.config(n)) }?;

        let f = function("s2g_bin_plan")?;
        let mut b = s.launch_builder(&f);
        b.arg(&nti32).arg(&self.counts).arg(&dense_min).arg(&piece);
        b.arg(&mut self.starts)
            .arg(&mut self.cursor)
            .arg(&mut self.pieces)
            .arg(&mut self.npieces);
        // SAFETY: s2g.cu contract: starts ≥ ntiles + 1, cursor ≥ ntiles, pieces ≥ 3 ×
        // max_pieces ints (the bound of the contract), npieces one int; one block.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (PLAN_THREADS, 1, 1),
                shared_mem_bytes: 0,
            })
        }?;

        let f = function("s2g_bin_place")?;
        let mut b = s.launch_builder(&f);
        b.arg(&n32).arg(&self.bin).arg(&self.counts).arg(&dense_min);
        b.arg(&mut self.cursor).arg(&mut self.order);
        // SAFETY: s2g.cu contract: bin holds n tiles < ntiles, cursor the dense tiles'
        // starts, order ≥ n ints; blocks of whole warps.
        unsafe { b.launch(gpu.config(n)) }?;

        let f = function(&format!("s2g_scatter_sparse_{dims}d"))?;
        let mut b = s.launch_builder(&f);
        b.arg(&n32)
            .arg(geom)
            .arg(y)
            .arg(&self.bin)
            .arg(&self.counts);
        b.arg(&dense_min).arg(&mut *grid);
        // SAFETY: s2g.cu contract: grid (1+dims)·p^dims reals, bin and counts as above.
        unsafe { b.launch(gpu.config(n)) }?;

        let f = function(&format!("s2g_scatter_dense_{dims}d"))?;
        let patch = (1 + dims) * (t + 3).pow(dims as u32) * std::mem::size_of::<T>();
        let mut b = s.launch_builder(&f);
        b.arg(geom).arg(&t32).arg(&nt32).arg(y).arg(&self.order);
        b.arg(&self.pieces).arg(&self.npieces).arg(&mut *grid);
        // SAFETY: s2g.cu contract: order holds the dense points by tile, pieces npieces ≤
        // max_pieces runs of it; blocks beyond npieces return; shared memory one patch.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (max_pieces as u32, 1, 1),
                block_dim: (DENSE_THREADS, 1, 1),
                shared_mem_bytes: patch as u32,
            })
        }?;
        Ok(())
    }
}
