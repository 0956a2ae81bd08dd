//! `kernels/attract_hyb.cu`: the attraction over P in HYB, ELL part then COO part
//! (`crate::attract::gpu`).

use crate::gpu::context::BLOCK;
use crate::gpu::launch::kernels;
use crate::gpu::sum::WORDS;

/// Threads per block both kernels are compiled for (`ATTRACT_THREADS` in their
/// `__launch_bounds__`, with 8 blocks per SM in 1-D and 2-D, 6 in 3-D).
pub const THREADS: usize = BLOCK as usize;
/// Runs of 32 COO entries a warp takes per step, their loads issued together
/// (`COO_CHUNKS`).
pub const COO_CHUNKS: usize = 2;
/// Blocks per SM of the COO kernel's one-wave grid (the ELL kernel's launch bounds in 1-D and
/// 2-D: the full 2048 threads).
pub const COO_BLOCKS_PER_SM: usize = 8;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] =
    &[("ATTRACT_THREADS", THREADS), ("COO_CHUNKS", COO_CHUNKS)];

kernels! {
    file: AttractHyb;

    /// F_attr of the ELL part into `force` (overwritten): slot s of row i (point row0 + i
    /// of `y`) at s · n + i, padding slots (row0 + i, 0), each edge weighed by 1 / (1 + d² · `inv_dof`) (Student's t of
    /// `dof` degrees of freedom); with `kl` (an exact sum, `crate::gpu::sum`), Σ p ln w
    /// added to it. `split` threads per row (a power of two dividing [`THREADS`]), each
    /// taking every split-th slot, their sums added in a fixed order. Blocks of
    /// [`THREADS`] (THREADS / split rows each); any grid.
    pub struct AttractEll = "attract_ell_{dims}d" {
        dims: host,
        n: usize as i32,
        row0: usize as i32,
        width: usize as i32,
        split: usize as i32,
        ell_cols: in i32 [n * width],
        ell_vals: in f32 [n * width],
        y: in f32 [(row0 + n) * dims],
        inv_dof: f32,
        dof: f32,
        force: out f32 [n * dims],
        kl: opt u64 [WORDS],
    }

    /// F_attr of the `m` COO entries (sorted by row, whole-P row numbers row0 .. row0 + n:
    /// each warp sums its runs per row before the atomics) added to `force`; with `kl`, Σ p ln w added to it. Blocks of
    /// [`THREADS`]; any grid (warps loop over runs of 32 · [`COO_CHUNKS`] entries).
    pub struct AttractCoo = "attract_coo_{dims}d" {
        dims: host,
        n: host,
        m: usize as i64,
        row0: usize as i32,
        rows: in i32 [m],
        cols: in i32 [m],
        vals: in f32 [m],
        y: in f32 [(row0 + n) * dims],
        inv_dof: f32,
        dof: f32,
        force: out f32 [n * dims],
        kl: opt u64 [WORDS],
    }

    /// [`AttractEll`] with every term rounded to a multiple of 1 / `scale` and the rows'
    /// forces summed as integers into `fixed` (overwritten): the same in any order.
    pub struct AttractEllFixed = "attract_ell_fixed_{dims}d" {
        dims: host,
        n: usize as i32,
        row0: usize as i32,
        width: usize as i32,
        split: usize as i32,
        ell_cols: in i32 [n * width],
        ell_vals: in f32 [n * width],
        y: in f32 [(row0 + n) * dims],
        inv_dof: f32,
        dof: f32,
        scale: f32,
        fixed: out i64 [n * dims],
        kl: opt u64 [WORDS],
    }

    /// [`AttractCoo`] in the fixed point of [`AttractEllFixed`], added to `fixed` with
    /// integer atomics.
    pub struct AttractCooFixed = "attract_coo_fixed_{dims}d" {
        dims: host,
        n: host,
        m: usize as i64,
        row0: usize as i32,
        rows: in i32 [m],
        cols: in i32 [m],
        vals: in f32 [m],
        y: in f32 [(row0 + n) * dims],
        inv_dof: f32,
        dof: f32,
        scale: f32,
        fixed: out i64 [n * dims],
        kl: opt u64 [WORDS],
    }

    /// `force` = `fixed` · `inv_scale`, after the fixed kernels.
    pub struct AttractFixedToForce = "attract_fixed_to_force" {
        len: usize as i64,
        fixed: in i64 [len],
        inv_scale: f64,
        force: out f32 [len],
    }
}
