//! `kernels/s2g.cu`: the bounding box, and S2G over points counting-sorted by grid cell
//! (`crate::repulse::s2g::gpu`). Grids are node-major, [`charge_stride`] reals per node
//! (charge 1 and the dims coordinates, 2-D padded to 4) of `len` nodes; nc = p − 3 cells
//! per axis, ncells = nc^dims.

use super::repulse::GridGeom;
use crate::gpu::context::BLOCK;
use crate::gpu::launch::kernels;

/// Threads of the planning kernels (`S2G_PLAN_THREADS`).
pub const PLAN_THREADS: usize = 1024;
/// Cells per thread of the planning kernels (`S2G_PLAN_ITEMS`).
pub const PLAN_ITEMS: usize = 4;
/// Cells per block of the planning kernels (`S2G_PLAN_CHUNK`).
pub const PLAN_CHUNK: usize = PLAN_THREADS * PLAN_ITEMS;
/// Threads per block of the cells pass (`S2G_CELL_THREADS`, its `__launch_bounds__`).
pub const CELL_THREADS: usize = BLOCK as usize;

/// Reals per node of a `dims`-dimensional charge grid, node-major: the charge and the dims
/// coordinate channels, 2-D padded to 4, so that a point adds its charges to a node in one
/// 8- or 16-byte atomic (`kernels/repulse.cuh` has the same function). A power of two,
/// which [`S2gFixedToGrid`] relies on.
pub const fn charge_stride(dims: usize) -> usize {
    if dims == 1 {
        2
    } else {
        4
    }
}

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[
    ("S2G_PLAN_THREADS", PLAN_THREADS),
    ("S2G_PLAN_ITEMS", PLAN_ITEMS),
    ("S2G_PLAN_CHUNK", PLAN_CHUNK),
    ("S2G_CELL_THREADS", CELL_THREADS),
];

kernels! {
    file: S2g;

    /// The bounding box of `y` as order-preserving keys of floats: `lo` and `hi` start at
    /// (u32::MAX …) and (0 …); one atomic per block and word.
    pub struct S2gBounds = "s2g_bounds_{dims}d" {
        real: defines,
        dims: host,
        n: usize as i32,
        y: in f32 [n * dims],
        lo: out u32 [3],
        hi: out u32 [3],
    }

    /// Cell of every point (taken in the order `prev`, a permutation of 0..n) into `bin`,
    /// and the points per cell added to `counts` (zeroed). Every point lies inside the grid.
    pub struct S2gBinCount = "s2g_bin_count_{dims}d" {
        real: defines,
        dims: host,
        n: usize as i32,
        geom: GridGeom,
        nc: usize as i32,
        y: in f32 [n * dims],
        prev: in i32 [n],
        bin: out i32 [n],
        counts: out i32 [nc.pow(dims as u32)],
    }

    /// Per plan block of [`PLAN_CHUNK`] cells, its points and pieces (cells of at least
    /// `dense_min` points cut into pieces of at most `piece`) into `sums` (two ints a block).
    /// `blocks` blocks of [`PLAN_THREADS`].
    pub struct S2gPlanSums = "s2g_plan_sums" {
        real: defines,
        blocks: host,
        ncells: usize as i32,
        counts: in i32 [ncells],
        dense_min: usize as i32,
        piece: usize as i32,
        sums: out i32 [2 * blocks],
    }

    /// Each cell's first slot (`starts`, and `cursor` for the placing) and its pieces (cell,
    /// begin, end) into `pieces` (room for `max_pieces`), their number into `npieces`; the
    /// grid of [`S2gPlanSums`], whose `sums` it reads.
    pub struct S2gBinPlan = "s2g_bin_plan" {
        real: defines,
        blocks: host,
        max_pieces: host,
        ncells: usize as i32,
        counts: in i32 [ncells],
        dense_min: usize as i32,
        piece: usize as i32,
        sums: in i32 [2 * blocks],
        starts: out i32 [ncells + 1],
        cursor: out i32 [ncells],
        pieces: out i32 [3 * max_pieces],
        npieces: out i32 [1],
    }

    /// Every point into its cell's next slot of `order` (the points sorted by cell), taken in
    /// the order `prev`; `bin` as [`S2gBinCount`] left it, `cursor` as [`S2gBinPlan`] did.
    pub struct S2gBinPlace = "s2g_bin_place" {
        real: defines,
        ncells: host,
        n: usize as i32,
        prev: in i32 [n],
        bin: in i32 [n],
        cursor: out i32 [ncells],
        order: out i32 [n],
    }

    /// The charges of the points of cells with fewer than `dense_min` points, added to
    /// `grid` with native atomics.
    pub struct S2gScatterSparse<T> = "s2g_scatter_sparse_{dims}d" {
        dims: host,
        ncells: host,
        len: host,
        n: usize as i32,
        geom: GridGeom,
        y: in f32 [n * dims],
        order: in i32 [n],
        bin: in i32 [n],
        counts: in i32 [ncells],
        dense_min: usize as i32,
        grid: out T [charge_stride(dims) * len],
    }

    /// The pieces of the dense cells: one warp per piece sums its points' charges in
    /// registers and adds each total to `grid` once. Blocks of [`CELL_THREADS`], warps loop
    /// over the pieces.
    pub struct S2gScatterCells<T> = "s2g_scatter_cells_{dims}d" {
        dims: host,
        n: host,
        len: host,
        max_pieces: host,
        geom: GridGeom,
        nc: usize as i32,
        y: in f32 [n * dims],
        order: in i32 [n],
        pieces: in i32 [3 * max_pieces],
        npieces: in i32 [1],
        grid: out T [charge_stride(dims) * len],
    }

    /// [`S2gScatterSparse`] in fixed point: each charge rounded to a multiple of 1 / `s0`
    /// (channel 0) or 1 / `sq` (the others) and added to `fixed` with integer atomics.
    pub struct S2gScatterSparseFixed = "s2g_scatter_sparse_fixed_{dims}d" {
        real: defines,
        dims: host,
        ncells: host,
        len: host,
        n: usize as i32,
        geom: GridGeom,
        y: in f32 [n * dims],
        order: in i32 [n],
        bin: in i32 [n],
        counts: in i32 [ncells],
        dense_min: usize as i32,
        s0: f32,
        sq: f32,
        fixed: out i64 [charge_stride(dims) * len],
    }

    /// [`S2gScatterCells`] in the fixed point of [`S2gScatterSparseFixed`], the warps'
    /// sums in integers.
    pub struct S2gScatterCellsFixed = "s2g_scatter_cells_fixed_{dims}d" {
        real: defines,
        dims: host,
        n: host,
        len: host,
        max_pieces: host,
        geom: GridGeom,
        nc: usize as i32,
        y: in f32 [n * dims],
        order: in i32 [n],
        pieces: in i32 [3 * max_pieces],
        npieces: in i32 [1],
        s0: f32,
        sq: f32,
        fixed: out i64 [charge_stride(dims) * len],
    }

    /// `grid` = `fixed` / s0 on every node's channel 0 (each `stride`-th value, `stride` a
    /// power of two: [`charge_stride`]), / sq on the rest, given as `inv_s0` and `inv_sq`.
    pub struct S2gFixedToGrid<T> = "s2g_fixed_to_grid" {
        total: usize as i64,
        stride: usize as i32,
        fixed: in i64 [total],
        inv_s0: f64,
        inv_sq: f64,
        grid: out T [total],
    }
}
