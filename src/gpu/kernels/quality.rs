//! `kernels/quality.cu`: the quality measures' exact kNN in the embedding
//! (`crate::quality`'s device twin of its grid search).

use crate::gpu::launch::kernels;

/// Largest k the kernel keeps per row (`QUALITY_MAX_K`; the measures use 10).
pub const MAX_K: usize = 32;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[("QUALITY_MAX_K", MAX_K)];

kernels! {
    file: Quality;

    /// The k nearest other points (ids from `order`, nearest first, ties by id) of the
    /// points at positions `s0 .. s0 + count` of the host's levels of grids (`sorted`,
    /// `order`: the n points level by level, each level in cell order; level l: positions
    /// `first[l] .. first[l + 1]`, corner `geom[8l ..]`, widths `geom[8l + 3 ..]`, `cells[l]`
    /// cells per axis, cell starts from `starts[start_at[l]]`) into `rows` (count × k);
    /// k ≤ [`MAX_K`] and k < n. One thread per query.
    pub struct QualityKnn = "quality_knn_{dims}d" {
        dims: host,
        n: host,
        starts_len: host,
        sorted: in f32 [n * dims],
        order: in u32 [n],
        starts: in u32 [starts_len],
        start_at: in i64 [levels],
        first: in i64 [levels + 1],
        geom: in f32 [levels * 8],
        cells: in i32 [levels],
        levels: usize as i32,
        k: usize as i32,
        s0: usize as i64,
        count: usize as i64,
        rows: out u32 [count * k],
    }
}
