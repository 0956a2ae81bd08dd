//! S2G on the GPU (`kernels/s2g.cu`): points binned by grid tile; dense tiles summed without
//! contended atomics, sparse ones spread straight into the grid.
//!
//! Spreading with float atomics straight into the grid serialises where points crowd: at
//! 1.3M points in 2-D, 40 clusters put ~30k points on a few hundred nodes each, and S2G took
//! 2.1 ms of a 4.8 ms iteration on the H100 (1.3M × 16 nodes × 3 channels of contended
//! atomics). Binning costs two passes over the points with one atomic per tile and warp
//! (`__match_any_sync`). In 1-D and 2-D a tile is one cell: one warp per piece of a cell sums
//! its points' stencil charges in registers and adds each of the 4^D·(1+D) totals to the grid
//! once. In 3-D (4^3·4 totals do not fit in registers) tiles of 8^3 cells go through
//! shared-memory patches, whose float atomics are compare-and-swap loops on sm_90; in 2-D that
//! patch pass had cost 0.7 ms per call at 1.3M points.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::gpu::GridGeom;
use crate::gpu::kernels::KernelId;
use crate::gpu::real::DeviceReal;
use crate::gpu::{Gpu, GpuError};

/// How the points of one dimension are binned and their dense tiles summed.
struct Binning {
    /// Tile side in stencil corners (cells) per axis.
    tile: usize,
    /// Points of one tile per piece (one warp, or one block in 3-D).
    piece: usize,
    /// A tile with at least this many points is dense: below, the fixed cost of a piece (a
    /// warp's reduction, or zeroing and flushing a patch) exceeds the atomics it saves.
    dense_min: usize,
}

/// 1-D and 2-D: cells summed by warps (`s2g_scatter_cells`); 3-D: tiles of 8^3 cells through
/// patches of 11^3 nodes × 4 channels, 21.3 KB of shared memory in f32 (42.6 KB in f64,
/// within the 48 KB a block may take without opting in).
const BINNING: [Binning; 3] = [
    Binning {
        tile: 1,
        piece: 512,
        dense_min: 8,
    },
    Binning {
        tile: 1,
        piece: 512,
        dense_min: 8,
    },
    Binning {
        tile: 8,
        piece: 2048,
        dense_min: 128,
    },
];
/// Threads per block of the dense passes (`S2G_CELL_THREADS` for the cells).
const DENSE_THREADS: u32 = 256;
/// Blocks of the cells pass per multiprocessor (73 registers a thread: three fit).
const CELL_BLOCKS_PER_SM: usize = 3;
/// Threads of the planning kernels (`S2G_PLAN_THREADS`).
const PLAN_THREADS: u32 = 1024;
/// Tiles per block of the planning kernels (`S2G_PLAN_CHUNK`).
const PLAN_CHUNK: usize = 4 * PLAN_THREADS as usize;

/// Scratch buffers of the binned S2G, grown on demand.
pub(crate) struct BinnedScatter {
    /// Overrides `Binning::dense_min` (tests send every tile one way).
    dense_min: Option<usize>,
    bin: CudaSlice<i32>,
    /// The points sorted by tile in the last call: the order in which the next call bins
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
            dense_min: None,
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

    /// Sends every tile through the dense pass (`1`) or none (`usize::MAX`), for tests.
    #[cfg(test)]
    pub(crate) fn set_dense_min(&mut self, dense_min: usize) {
        self.dense_min = Some(dense_min);
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
        let binning = &BINNING[dims - 1];
        let t = binning.tile;
        let dense_min = self.dense_min.unwrap_or(binning.dense_min).max(1);
        let nt = (p - 3).div_ceil(t);
        let ntiles = nt.pow(dims as u32);
        let max_pieces = n / binning.piece + ntiles.min(n / dense_min) + 1;
        let plan_blocks = ntiles.div_ceil(PLAN_CHUNK).max(1);
        if self.ordered != n {
            self.prev = s.clone_htod(&(0..n as i32).collect::<Vec<i32>>())?;
            self.ordered = n;
        }
        grow(s, &mut self.bin, n)?;
        grow(s, &mut self.order, n)?;
        grow(s, &mut self.counts, ntiles)?;
        grow(s, &mut self.sums, 2 * plan_blocks)?;
        grow(s, &mut self.starts, ntiles + 1)?;
        grow(s, &mut self.cursor, ntiles)?;
        grow(s, &mut self.pieces, 3 * max_pieces)?;
        let mut counts = self.counts.slice_mut(0..ntiles);
        s.memset_zeros(&mut counts)?;
        let (n32, t32, nt32, nti32) = (n as i32, t as i32, nt as i32, ntiles as i32);
        let dense_min = dense_min.min(i32::MAX as usize) as i32;
        let piece = binning.piece as i32;

        let f = function(&format!("s2g_bin_count_{dims}d"))?;
        let mut b = s.launch_builder(&f);
        b.arg(&n32)
            .arg(geom)
            .arg(&t32)
            .arg(&nt32)
            .arg(y)
            .arg(&self.prev);
        b.arg(&mut self.bin).arg(&mut self.counts);
        // SAFETY: s2g.cu contract: y n·dims floats inside the grid, prev a permutation of
        // 0..n, bin ≥ n ints, counts ≥ ntiles ints zeroed above; blocks of whole warps.
        unsafe { b.launch(gpu.config(n)) }?;

        let plan = LaunchConfig {
            grid_dim: (plan_blocks as u32, 1, 1),
            block_dim: (PLAN_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let f = function("s2g_plan_sums")?;
        let mut b = s.launch_builder(&f);
        b.arg(&nti32).arg(&self.counts).arg(&dense_min).arg(&piece);
        b.arg(&mut self.sums);
        // SAFETY: s2g.cu contract: counts ntiles ints, sums ≥ 2 ints per block.
        unsafe { b.launch(plan) }?;

        let f = function("s2g_bin_plan")?;
        let mut b = s.launch_builder(&f);
        b.arg(&nti32).arg(&self.counts).arg(&dense_min).arg(&piece);
        b.arg(&self.sums);
        b.arg(&mut self.starts)
            .arg(&mut self.cursor)
            .arg(&mut self.pieces)
            .arg(&mut self.npieces);
        // SAFETY: s2g.cu contract: sums filled above for the same blocks, starts ≥ ntiles +
        // 1, cursor ≥ ntiles, pieces ≥ 3 × max_pieces ints (the bound of the contract),
        // npieces one int.
        unsafe { b.launch(plan) }?;

        let f = function("s2g_bin_place")?;
        let mut b = s.launch_builder(&f);
        b.arg(&n32).arg(&self.prev).arg(&self.bin);
        b.arg(&mut self.cursor).arg(&mut self.order);
        // SAFETY: s2g.cu contract: prev a permutation of 0..n, bin holds n tiles < ntiles,
        // cursor their starts, order ≥ n ints; blocks of whole warps.
        unsafe { b.launch(gpu.config(n)) }?;

        let f = function(&format!("s2g_scatter_sparse_{dims}d"))?;
        let mut b = s.launch_builder(&f);
        b.arg(&n32).arg(geom).arg(y).arg(&self.order);
        b.arg(&self.bin).arg(&self.counts);
        b.arg(&dense_min).arg(&mut *grid);
        // SAFETY: s2g.cu contract: grid (1+dims)·p^dims reals, order the points sorted by
        // tile, bin and counts as above.
        unsafe { b.launch(gpu.config(n)) }?;

        if t == 1 {
            let f = function(&format!("s2g_scatter_cells_{dims}d"))?;
            let warps_per_block = DENSE_THREADS as usize / 32;
            let blocks = max_pieces
                .div_ceil(warps_per_block)
                .min(CELL_BLOCKS_PER_SM * gpu.multiprocessors());
            let mut b = s.launch_builder(&f);
            b.arg(geom).arg(&nt32).arg(y).arg(&self.order);
            b.arg(&self.pieces).arg(&self.npieces).arg(&mut *grid);
            // SAFETY: s2g.cu contract: tiles are cells (T = 1, nt = p - 3), order holds the
            // points by cell, pieces npieces runs of it; warps loop over the pieces.
            unsafe {
                b.launch(LaunchConfig {
                    grid_dim: (blocks as u32, 1, 1),
                    block_dim: (DENSE_THREADS, 1, 1),
                    shared_mem_bytes: 0,
                })
            }?;
        } else {
            let f = function(&format!("s2g_scatter_dense_{dims}d"))?;
            let patch = (1 + dims) * (t + 3).pow(dims as u32) * std::mem::size_of::<T>();
            let mut b = s.launch_builder(&f);
            b.arg(geom).arg(&t32).arg(&nt32).arg(y).arg(&self.order);
            b.arg(&self.pieces).arg(&self.npieces).arg(&mut *grid);
            // SAFETY: s2g.cu contract: order holds the points by tile, pieces npieces ≤
            // max_pieces runs of it; blocks beyond npieces return; shared memory one patch.
            unsafe {
                b.launch(LaunchConfig {
                    grid_dim: (max_pieces as u32, 1, 1),
                    block_dim: (DENSE_THREADS, 1, 1),
                    shared_mem_bytes: patch as u32,
                })
            }?;
        }
        std::mem::swap(&mut self.prev, &mut self.order);
        Ok(())
    }
}
