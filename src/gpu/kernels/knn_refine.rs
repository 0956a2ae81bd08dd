//! `kernels/knn_refine.cu`: the approximate kNN's refinement by neighbours of neighbours
//! (`crate::knn::gpu::refine`).

use crate::gpu::launch::kernels;

/// Warps per block of [`KnnRefine`] (`REFINE_WARPS`), one row each.
pub const WARPS: usize = 4;
/// Entries of a warp's merge buffer (`REFINE_BUF`, a power of two): the row's k
/// neighbours and the candidates gathered since the last merge. k may be at most
/// `BUF − 32`.
pub const BUF: usize = 512;
/// Largest dimension the refinement takes (`REFINE_MAX_DIM`): the approximate kNN's.
pub const MAX_DIM: usize = super::ivf::MAX_DIM;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[
    ("REFINE_WARPS", WARPS),
    ("REFINE_BUF", BUF),
    ("REFINE_MAX_DIM", MAX_DIM),
];

kernels! {
    file: KnnRefine;

    /// Rows `row0 .. row0 + rows` of one refinement round of the graph `in_i` (n × k, rows
    /// nearest first) on the points `x` (n × d, d ≤ [`MAX_DIM`]): each row's k nearest among
    /// its neighbours and the first `fan` neighbours of its first `fan` neighbours, into
    /// `out_i` / `out_d` (keys ascending, ties by index; the key as `KnnFinish`'s `c` gives
    /// it: with `c` ≥ 0 the inner product's 2(c − x · y), else the squared distance). `in_i` and `out_i`
    /// are distinct buffers. One warp per row, blocks of [`WARPS`] warps.
    pub struct KnnRefine = "knn_refine" {
        x: in f32 [n * d],
        n: usize as i64,
        d: usize as i32,
        c: f32,
        in_i: in i32 [n * k],
        k: usize as i32,
        fan: usize as i32,
        row0: usize as i64,
        rows: usize as i64,
        out_i: out i32 [n * k],
        out_d: out f32 [n * k],
    }
}
