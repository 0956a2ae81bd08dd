//! S2G on the GPU (`kernels/s2g.cu`): points counting-sorted by grid cell; the points of a
//! dense cell summed in registers by one warp, those of sparse cells spread straight into
//! the grid.
//!
//! Spreading with float atomics straight into the grid serialises where points crowd: at
//! 1.3M points in 2-D, 40 clusters put ~30k points on a few hundred nodes each, and S2G took
//! 2.1 ms of a 4.8 ms iteration on the H100 (1.3M × 16 nodes × 3 channels of contended
//! atomics). All points of a cell share one stencil, so a warp sums a piece of a cell's
//! points and adds each of the 4^D·(1+D) totals to the grid once. Sorting costs two passes
//! over the points with one atomic per cell and warp (`__match_any_sync`), taken in the
//! last call's sorted order so that a warp's points share their cell. An earlier version
//! summed tiles of cells in shared-memory patches, whose float atomics are compare-and-swap
//! loops on sm_90: 0.7 ms per call in 2-D at 1.3M points, against 0.13 ms now.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::gpu::GridGeom;
use crate::gpu::kernels::KernelId;
use crate::gpu::real::DeviceReal;
use crate::gpu::{Gpu, GpuError};

/// Points of one cell per piece (one warp's work).
const PIECE: usize = 512;
/// A cell with at least this many points is dense: below, the fixed cost of a warp's
/// reduction exceeds the atomics it saves.
const DENSE_MIN: usize = 8;
// The cells pass is launched with `Gpu::config`'s blocks (`S2G_CELL_THREADS`).
const _: () = assert!(crate::gpu::context::BLOCK == 256);
/// Blocks of the cells pass per multiprocessor: two fit at the 3-D kernel's 127 registers a
/// thread, three at the 2-D kernel's 74; the rest wait their turn.
const CELL_BLOCKS_PER_SM: usize = 3;
/// Threads of the planning kernels (`S2G_PLAN_THREADS`).
const PLAN_THREADS: u32 = 1024;
/// Cells per block of the planning kernels (`S2G_PLAN_CHUNK`).
const PLAN_CHUNK: usize = 4 * PLAN_THREADS as usize;

/// Scratch buffers of the sorted S2G, grown on demand.
pub(crate) struct BinnedScatter {
    /// Overrides [`DENSE_MIN`] (tests send every cell one way).
    dense_min: usize,
    bin: CudaSlice<i32>,
    /// The points sorted by cell in the last call: the order in which the next call sorts
    /// them (a permutation of `0..ordered`).
    prev: CudaSlice<i32>,
    ordered: usize,
    order: CudaSlice<i32>,
    counts: CudaSlice<i32>,
    sums: CudaSlice<i32>,
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
            prev: one()?,
            ordered: 0,
            order: one()?,
            counts: one()?,
            sums: one()?,
            starts: one()?,
            cursor: one()?,
            pieces: one()?,
            npieces: one()?,
        })
    }

    /// The points sorted by cell in the last call (a permutation of its `0..n`).
    pub(crate) fn sorted(&self) -> &CudaSlice<i32> {
        &self.prev
    }

    /// Sends every cell through the warps (`1`) or none (`usize::MAX`), for tests.
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
        let nc = geom.p as usize - 3;
        let ncells = nc.pow(dims as u32);
        let dense_min = self.dense_min.max(1);
        let max_pieces = n / PIECE + ncells.min(n / dense_min) + 1;
        let plan_blocks = ncells.div_ceil(PLAN_CHUNK).max(1);
        if self.ordered != n {
            self.prev = s.clone_htod(&(0..n as i32).collect::<Vec<i32>>())?;
            self.ordered = n;
        }
        grow(s, &mut self.bin, n)?;
        grow(s, &mut self.order, n)?;
        grow(s, &mut self.counts, ncells)?;
        grow(s, &mut self.sums, 2 * plan_blocks)?;
        grow(s, &mut self.starts, ncells + 1)?;
        grow(s, &mut self.cursor, ncells)?;
        grow(s, &mut self.pieces, 3 * max_pieces)?;
        let mut counts = self.counts.slice_mut(0..ncells);
        s.memset_zeros(&mut counts)?;
        let (n32, nc32, ncells32) = (n as i32, nc as i32, ncells as i32);
        let dense_min = dense_min.min(i32::MAX as usize) as i32;
        let piece = PIECE as i32;

        let f = function(&format!("s2g_bin_count_{dims}d"))?;
        let mut b = s.launch_builder(&f);
        b.arg(&n32).arg(geom).arg(&nc32).arg(y).arg(&self.prev);
        b.arg(&mut self.bin).arg(&mut self.counts);
        // SAFETY: s2g.cu contract: y n·dims floats inside the grid, prev a permutation of
        // 0..n, bin ≥ n ints, counts ≥ ncells ints zeroed above; blocks of whole warps.
        unsafe { b.launch(gpu.config(n)) }?;

        let plan = LaunchConfig {
            grid_dim: (plan_blocks as u32, 1, 1),
            block_dim: (PLAN_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let f = function("s2g_plan_sums")?;
        let mut b = s.launch_builder(&f);
        b.arg(&ncells32)
            .arg(&self.counts)
            .arg(&dense_min)
            .arg(&piece);
        b.arg(&mut self.sums);
        // SAFETY: s2g.cu contract: counts ncells ints, sums ≥ 2 ints per block.
        unsafe { b.launch(plan) }?;

        let f = function("s2g_bin_plan")?;
        let mut b = s.launch_builder(&f);
        b.arg(&ncells32)
            .arg(&self.counts)
            .arg(&dense_min)
            .arg(&piece);
        b.arg(&self.sums);
        b.arg(&mut self.starts)
            .arg(&mut self.cursor)
            .arg(&mut self.pieces)
            .arg(&mut self.npieces);
        // SAFETY: s2g.cu contract: sums filled above for the same blocks, starts ≥ ncells +
        // 1, cursor ≥ ncells, pieces ≥ 3 × max_pieces ints (the bound of the contract),
        // npieces one int.
        unsafe { b.launch(plan) }?;

        let f = function("s2g_bin_place")?;
        let mut b = s.launch_builder(&f);
        b.arg(&n32).arg(&self.prev).arg(&self.bin);
        b.arg(&mut self.cursor).arg(&mut self.order);
        // SAFETY: s2g.cu contract: prev a permutation of 0..n, bin holds n cells < ncells,
        // cursor their starts, order ≥ n ints; blocks of whole warps.
        unsafe { b.launch(gpu.config(n)) }?;

        let f = function(&format!("s2g_scatter_sparse_{dims}d"))?;
        let mut b = s.launch_builder(&f);
        b.arg(&n32).arg(geom).arg(y).arg(&self.order);
        b.arg(&self.bin).arg(&self.counts);
        b.arg(&dense_min).arg(&mut *grid);
        // SAFETY: s2g.cu contract: grid (1+dims)·p^dims reals, order the points sorted by
        // cell, bin and counts as above.
        unsafe { b.launch(gpu.config(n)) }?;

        let f = function(&format!("s2g_scatter_cells_{dims}d"))?;
        let mut b = s.launch_builder(&f);
        b.arg(geom).arg(&nc32).arg(y).arg(&self.order);
        b.arg(&self.pieces).arg(&self.npieces).arg(&mut *grid);
        // SAFETY: s2g.cu contract: order holds the points by cell, pieces npieces runs of
        // it; warps (one per piece, 32 threads each) loop over the pieces.
        unsafe { b.launch(gpu.config_waves(32 * max_pieces, CELL_BLOCKS_PER_SM)) }?;
        std::mem::swap(&mut self.prev, &mut self.order);
        Ok(())
    }
}
