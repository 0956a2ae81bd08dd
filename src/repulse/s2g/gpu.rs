//! S2G on the GPU (`kernels/s2g.cu`): the embedding's bounding box (`BoundsGpu`), then the
//! points counting-sorted by grid cell; the points of a dense cell summed in registers by
//! one warp, those of sparse cells spread straight into the grid (`ScatterGpu`).
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
//!
//! A deterministic run (`--deterministic`) spreads in fixed point instead: each charge
//! rounded to a multiple of 1/s0 (`fixed_scale`; relative to the grid's half width for
//! the coordinate channels), summed as integers, which any order of the atomics and of the
//! points in a cell sums alike, then written to the grid in `T` (`s2g_fixed_to_grid`).

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, LaunchConfig, PinnedHostSlice};

use crate::gpu::kernels::repulse::GridGeom;
use crate::gpu::kernels::s2g::{
    charge_stride, S2gBinCount, S2gBinPlace, S2gBinPlan, S2gBounds, S2gFixedToGrid, S2gPlanSums,
    S2gScatterCells, S2gScatterCellsFixed, S2gScatterSparse, S2gScatterSparseFixed, PLAN_CHUNK,
    PLAN_THREADS,
};
use crate::gpu::memory::pinned;
use crate::gpu::real::DeviceReal;
use crate::gpu::{Gpu, GpuError};

/// Points of one cell per piece (one warp's work; [`fixed_scale`] bounds its sums).
const PIECE: usize = 512;

/// Units per charge (a weight |w| ≤ 1, or a weight times a coordinate over the grid's half
/// width) of the fixed-point S2G of n points on grids of `T`, a power of two. Float grids
/// sum a piece in 32-bit integers: 2²¹, so that PIECE charges stay within 2³⁰ (5·10⁻⁷ per
/// charge, below the float weights' own rounding of their sums). Double grids sum in 64-bit
/// integers: 2⁶²/n (n at least PIECE), so that a node's total over every point stays within
/// 2⁶² (2⁻⁴¹ per charge at a million points).
fn fixed_scale<T>(n: usize) -> f64 {
    if std::mem::size_of::<T>() == 4 {
        21f64.exp2()
    } else {
        (62.0 - (n.max(PIECE) as f64).log2().ceil()).exp2()
    }
}
/// A cell with at least this many points is dense: below, the fixed cost of a warp's
/// reduction exceeds the atomics it saves.
const DENSE_MIN: usize = 8;
/// Blocks of the cells pass per multiprocessor: two fit at the 3-D kernel's 127 registers a
/// thread, three at the 2-D kernel's 74; the rest wait their turn.
const CELL_BLOCKS_PER_SM: usize = 3;
/// Blocks of the bounding-box pass per multiprocessor: enough to stream `y`, few enough
/// that their atomics on the six words of the box do not queue.
const BOUNDS_BLOCKS_PER_SM: usize = 2;

/// The bounding box of Y, reduced on the device and sent to the host, where the grid is
/// placed: the only host round trip of an FFT repulsion besides Z.
pub(crate) struct BoundsGpu {
    /// Per-axis order-preserving keys of the box: minima (3), then maxima (3).
    keys: CudaSlice<u32>,
    host: PinnedHostSlice<u32>,
    /// Recorded after the copy into `host`. (A pinned slice's own event is recorded only
    /// when cudarc manages several streams, so it cannot be relied on here.)
    ready: CudaEvent,
    /// Whether `host` is on its way for the next [`BoundsGpu::read`].
    sent: bool,
}

impl BoundsGpu {
    pub(crate) fn new(gpu: &Gpu, stream: &Arc<CudaStream>) -> Result<Self, GpuError> {
        Ok(BoundsGpu {
            keys: stream.alloc_zeros(6)?,
            host: pinned(gpu, 6, 0)?,
            ready: gpu
                .device
                .context
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?,
            sent: false,
        })
    }

    /// Queues the box's reduction over `y` (n × dims) and its trip to the host, with the
    /// kernels of precision `T`'s module.
    pub(crate) fn send<T: DeviceReal>(
        &mut self,
        gpu: &Gpu,
        s: &Arc<CudaStream>,
        y: &CudaSlice<f32>,
        n: usize,
        dims: usize,
    ) -> Result<(), GpuError> {
        s.memcpy_htod(&[u32::MAX, u32::MAX, u32::MAX, 0, 0, 0], &mut self.keys)?;
        let (mut lo, mut hi) = self.keys.split_at_mut(3);
        // Few blocks: each ends in one atomic per word (s2g.cu).
        let config = gpu.config_waves(n, BOUNDS_BLOCKS_PER_SM);
        S2gBounds {
            real: T::DEFINES,
            dims,
            n,
            y,
            lo: &mut lo,
            hi: &mut hi,
        }
        .launch(gpu, s, config)?;
        s.memcpy_dtoh(&self.keys, &mut self.host)?;
        self.ready.record(s)?;
        self.sent = true;
        Ok(())
    }

    /// The box (per-axis minima and maxima) of the last [`BoundsGpu::send`], sending it now
    /// when nothing is on its way; waits for the copy.
    pub(crate) fn read<T: DeviceReal>(
        &mut self,
        gpu: &Gpu,
        s: &Arc<CudaStream>,
        y: &CudaSlice<f32>,
        n: usize,
        dims: usize,
    ) -> Result<([f32; 3], [f32; 3]), GpuError> {
        if !self.sent {
            self.send::<T>(gpu, s, y, n, dims)?;
        }
        self.sent = false;
        self.ready.synchronize()?;
        let keys = self.host.as_slice()?;
        let mut lo = [0f32; 3];
        let mut hi = [0f32; 3];
        for a in 0..dims {
            lo[a] = key_to_f32(keys[a]);
            hi[a] = key_to_f32(keys[3 + a]);
        }
        Ok((lo, hi))
    }
}

/// Inverse of the order-preserving key of `kernels/s2g.cu`.
fn key_to_f32(k: u32) -> f32 {
    f32::from_bits(if k & 0x8000_0000 != 0 {
        k & 0x7fff_ffff
    } else {
        !k
    })
}

/// Scratch buffers of the sorted S2G, grown on demand.
pub(crate) struct ScatterGpu {
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
    /// Spread in fixed point (a deterministic run).
    deterministic: bool,
    /// The fixed-point grid of a deterministic run, made and grown on demand.
    fixed: Option<CudaSlice<i64>>,
}

/// What [`ScatterGpu::sort`] planned: cells per axis and in all, the dense-cell threshold,
/// the room for pieces.
struct Plan {
    nc: usize,
    ncells: usize,
    dense_min: usize,
    max_pieces: usize,
}

/// The cells pass's grid: a warp per piece, [`CELL_BLOCKS_PER_SM`] blocks per SM.
fn cells_config(gpu: &Gpu, plan: &Plan) -> LaunchConfig {
    gpu.config_waves(32 * plan.max_pieces, CELL_BLOCKS_PER_SM)
}

/// `buf` with room for at least `len` entries (its contents are not kept).
fn grow(s: &Arc<CudaStream>, buf: &mut CudaSlice<i32>, len: usize) -> Result<(), GpuError> {
    if buf.len() < len {
        *buf = s.alloc_zeros(len)?;
    }
    Ok(())
}

impl ScatterGpu {
    /// Empty buffers on `stream`.
    pub(crate) fn new(stream: &Arc<CudaStream>) -> Result<Self, GpuError> {
        let one = || stream.alloc_zeros::<i32>(1);
        Ok(ScatterGpu {
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
            deterministic: false,
            fixed: None,
        })
    }

    /// Spreads in fixed point (the same grid in every run) when `deterministic`.
    pub(crate) fn set_deterministic(&mut self, deterministic: bool) {
        self.deterministic = deterministic;
    }

    /// The points sorted by cell in the last call (a permutation of its `0..n`).
    pub(crate) fn sorted(&self) -> &CudaSlice<i32> {
        &self.prev
    }

    /// Where each cell's points start in [`ScatterGpu::sorted`] (`(p − 3)^dims + 1`
    /// entries, the last one n), as the last call sorted them.
    pub(crate) fn cell_starts(&self) -> &CudaSlice<i32> {
        &self.starts
    }

    /// Sends every cell through the warps (`1`) or none (`usize::MAX`), for tests.
    #[cfg(test)]
    pub(crate) fn set_dense_min(&mut self, dense_min: usize) {
        self.dense_min = dense_min;
    }

    /// Adds the charges of the n points `y` (n × dims, inside the grid `geom`) to `grid`
    /// (p^dims nodes of [`charge_stride`] reals in `T`, node-major, zeroed by the caller), on
    /// stream `s`:
    /// the points sorted by cell ([`ScatterGpu::sort`]), then the sparse cells point by
    /// point and the dense cells a piece per warp.
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
        let geom = *geom;
        let plan = self.sort::<T>(gpu, s, y, n, dims, geom)?;
        if self.deterministic {
            self.spread_fixed(gpu, s, y, (n, dims), geom, &plan, grid)?;
        } else {
            self.spread(gpu, s, y, (n, dims), geom, &plan, grid)?;
        }
        std::mem::swap(&mut self.prev, &mut self.order);
        Ok(())
    }

    /// The sorted points' charges added to `grid` with float atomics.
    #[allow(clippy::too_many_arguments)]
    fn spread<T: DeviceReal>(
        &self,
        gpu: &Gpu,
        s: &Arc<CudaStream>,
        y: &CudaSlice<f32>,
        (n, dims): (usize, usize),
        geom: GridGeom,
        plan: &Plan,
        grid: &mut CudaSlice<T>,
    ) -> Result<(), GpuError> {
        let len = (geom.p as usize).pow(dims as u32);
        S2gScatterSparse {
            dims,
            ncells: plan.ncells,
            len,
            n,
            geom,
            y,
            order: &self.order,
            bin: &self.bin,
            counts: &self.counts,
            dense_min: plan.dense_min,
            grid: &mut *grid,
        }
        .launch(gpu, s, gpu.config(n))?;
        S2gScatterCells {
            dims,
            n,
            len,
            max_pieces: plan.max_pieces,
            geom,
            nc: plan.nc,
            y,
            order: &self.order,
            pieces: &self.pieces,
            npieces: &self.npieces,
            grid,
        }
        .launch(gpu, s, cells_config(gpu, plan))
    }

    /// The sorted points' charges summed in fixed point, then written to `grid`: the
    /// coordinate channels in units of the grid's half width R = (p − 1) h / 2, which
    /// bounds |y − c| for every point inside the grid.
    #[allow(clippy::too_many_arguments)]
    fn spread_fixed<T: DeviceReal>(
        &mut self,
        gpu: &Gpu,
        s: &Arc<CudaStream>,
        y: &CudaSlice<f32>,
        (n, dims): (usize, usize),
        geom: GridGeom,
        plan: &Plan,
        grid: &mut CudaSlice<T>,
    ) -> Result<(), GpuError> {
        let real = T::DEFINES;
        let len = (geom.p as usize).pow(dims as u32);
        let stride = charge_stride(dims);
        let total = stride * len;
        if self.fixed.as_ref().is_none_or(|f| f.len() < total) {
            self.fixed = Some(s.alloc_zeros(total)?);
        }
        let fixed = self.fixed.as_mut().expect("just made");
        s.memset_zeros(&mut fixed.slice_mut(0..total))?;
        let half_width = (geom.p as f64 - 1.0) * geom.h as f64 / 2.0;
        let s0 = fixed_scale::<T>(n);
        let sq = s0 / half_width;
        S2gScatterSparseFixed {
            real,
            dims,
            ncells: plan.ncells,
            len,
            n,
            geom,
            y,
            order: &self.order,
            bin: &self.bin,
            counts: &self.counts,
            dense_min: plan.dense_min,
            s0: s0 as f32,
            sq: sq as f32,
            fixed: &mut *fixed,
        }
        .launch(gpu, s, gpu.config(n))?;
        S2gScatterCellsFixed {
            real,
            dims,
            n,
            len,
            max_pieces: plan.max_pieces,
            geom,
            nc: plan.nc,
            y,
            order: &self.order,
            pieces: &self.pieces,
            npieces: &self.npieces,
            s0: s0 as f32,
            sq: sq as f32,
            fixed: &mut *fixed,
        }
        .launch(gpu, s, cells_config(gpu, plan))?;
        S2gFixedToGrid::<T> {
            total,
            stride,
            fixed: &*fixed,
            // The factors the kernels scaled by, as floats.
            inv_s0: 1.0 / (s0 as f32) as f64,
            inv_sq: 1.0 / (sq as f32) as f64,
            grid,
        }
        .launch(gpu, s, gpu.config(total))
    }

    /// The points counted per cell, the cells' slots and pieces planned, and the points
    /// placed in `order` by cell, all in the kernels of precision `T`'s module.
    fn sort<T: DeviceReal>(
        &mut self,
        gpu: &Gpu,
        s: &Arc<CudaStream>,
        y: &CudaSlice<f32>,
        n: usize,
        dims: usize,
        geom: GridGeom,
    ) -> Result<Plan, GpuError> {
        let real = T::DEFINES;
        let nc = geom.p as usize - 3;
        let ncells = nc.pow(dims as u32);
        let dense_min = self.dense_min.clamp(1, i32::MAX as usize);
        let max_pieces = n / PIECE + ncells.min(n / dense_min) + 1;
        let blocks = ncells.div_ceil(PLAN_CHUNK).max(1);
        if self.ordered != n {
            self.prev = s.clone_htod(&(0..n as i32).collect::<Vec<i32>>())?;
            self.ordered = n;
        }
        grow(s, &mut self.bin, n)?;
        grow(s, &mut self.order, n)?;
        grow(s, &mut self.counts, ncells)?;
        grow(s, &mut self.sums, 2 * blocks)?;
        grow(s, &mut self.starts, ncells + 1)?;
        grow(s, &mut self.cursor, ncells)?;
        grow(s, &mut self.pieces, 3 * max_pieces)?;
        s.memset_zeros(&mut self.counts.slice_mut(0..ncells))?;
        S2gBinCount {
            real,
            dims,
            n,
            geom,
            nc,
            y,
            prev: &self.prev,
            bin: &mut self.bin,
            counts: &mut self.counts,
        }
        .launch(gpu, s, gpu.config(n))?;
        // Each cell's slots and pieces: two passes over blocks of cells on all SMs.
        let config = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (PLAN_THREADS as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        S2gPlanSums {
            real,
            blocks,
            ncells,
            counts: &self.counts,
            dense_min,
            piece: PIECE,
            sums: &mut self.sums,
        }
        .launch(gpu, s, config)?;
        S2gBinPlan {
            real,
            blocks,
            max_pieces,
            ncells,
            counts: &self.counts,
            dense_min,
            piece: PIECE,
            sums: &self.sums,
            starts: &mut self.starts,
            cursor: &mut self.cursor,
            pieces: &mut self.pieces,
            npieces: &mut self.npieces,
        }
        .launch(gpu, s, config)?;
        S2gBinPlace {
            real,
            ncells,
            n,
            prev: &self.prev,
            bin: &self.bin,
            cursor: &mut self.cursor,
            order: &mut self.order,
        }
        .launch(gpu, s, gpu.config(n))?;
        Ok(Plan {
            nc,
            ncells,
            dense_min,
            max_pieces,
        })
    }
}
