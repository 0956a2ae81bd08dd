//! `kernels/ivf.cu`: the approximate kNN's k-means assignment, the points' gather into
//! cell order, the return to input order and the recall sample's rows (`crate::knn::gpu::ivf`).

use crate::gpu::launch::kernels;

/// Points per block of [`IvfAssign`] (`IVF_THREADS`).
pub const THREADS: usize = 128;
/// Centroids staged in shared memory per step (`IVF_TILE`).
pub const TILE: usize = 64;
/// Largest dimension [`IvfAssign`] takes, its point in registers (`IVF_MAX_DIM`): the fused
/// sweep's limit too.
pub const MAX_DIM: usize = 64;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[
    ("IVF_THREADS", THREADS),
    ("IVF_TILE", TILE),
    ("IVF_MAX_DIM", MAX_DIM),
];

kernels! {
    file: Ivf;

    /// `labels[i]` = the row of `centroids` (lists × d) nearest `x_i` by squared distance,
    /// the first on ties; d ≤ [`MAX_DIM`]. Blocks of [`THREADS`] threads, one per point.
    pub struct IvfAssign = "ivf_assign" {
        x: in f32 [n * d],
        n: usize as i64,
        d: usize as i32,
        centroids: in f32 [lists * d],
        lists: usize as i32,
        labels: out i32 [n],
    }

    /// Row p of the sorted points' kNN (`sorted_i` positions, `sorted_d` squared distances,
    /// n × k, rows ascending) into row `order[p]` of `out_i` / `out_d`, neighbours renamed
    /// through `order`, equal distances ordered by the new index. One thread per row.
    pub struct IvfUnsort = "ivf_unsort" {
        sorted_i: in i32 [n * k],
        sorted_d: in f32 [n * k],
        order: in i32 [n],
        n: usize as i64,
        k: usize as i32,
        out_i: out i32 [n * k],
        out_d: out f32 [n * k],
    }

    /// Row `order[p]` of `x` (n × d) into row p of `out`: the points sorted by cell,
    /// gathered on the device from their upload in input order. One thread per value.
    pub struct IvfGather = "ivf_gather" {
        x: in f32 [n * d],
        n: usize as i64,
        d: usize as i32,
        order: in i32 [n],
        out: out f32 [n * d],
    }

    /// Row `pos[r]` of `src` (n × k) into row r of `rows` (−1s for a position outside
    /// `0..n`). One thread per entry.
    pub struct IvfRows = "ivf_rows" {
        src: in i32 [n * k],
        n: usize as i64,
        k: usize as i32,
        pos: in i32 [count],
        count: usize as i64,
        rows: out i32 [count * k],
    }
}
