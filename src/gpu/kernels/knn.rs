//! `kernels/knn.cu`: list filling, the top-k selection across SGEMM distance tiles
//! and the exact finish of the kNN (`crate::knn::gpu`).

use crate::gpu::launch::kernels;

/// Warps per block of the selection and finish kernels (`KNN_WARPS`): one warp per query,
/// eight of them share a block's L1 reads of the tile.
pub const WARPS: usize = 8;
/// The longest list the selection keeps, in registers per lane of a warp (`knn_select_1` …
/// `knn_select_8`: lists of 32 · `kr` entries).
pub const MAX_KR: usize = 8;

/// The NVRTC variant of the file holding the kernels of lists of 32 · `kr` entries
/// (`-DKNN_KR=kr`, 1 ≤ `kr` ≤ [`MAX_KR`]; each file variant is one list length, its
/// `knn_select_{kr}` and `knn_finish_{kr}`, and `knn_fill`).
pub fn list_variant(kr: usize) -> &'static [&'static str] {
    const VARIANTS: [&[&str]; MAX_KR] = [
        &["-DKNN_KR=1"],
        &["-DKNN_KR=2"],
        &["-DKNN_KR=3"],
        &["-DKNN_KR=4"],
        &["-DKNN_KR=5"],
        &["-DKNN_KR=6"],
        &["-DKNN_KR=7"],
        &["-DKNN_KR=8"],
    ];
    VARIANTS[kr.clamp(1, MAX_KR) - 1]
}

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[("KNN_WARPS", WARPS)];

kernels! {
    file: Knn;

    /// Sets the first `count` entries of (`dist`, `idx`) to (`value`, −1): +∞ empties lists,
    /// NaN poisons outputs.
    pub struct KnnFill = "knn_fill" {
        variant: defines,
        dist: out f32 [count],
        idx: out i32 [count],
        count: usize as i64,
        value: f32,
    }

    /// The first `keep` of each of the `n` rows of `k` entries of (`idx`, `dist`), packed
    /// into `n × keep`.
    pub struct KnnLeading = "knn_leading" {
        variant: defines,
        n: usize as i64,
        k: usize as i32,
        keep: usize as i32,
        idx: in i32 [n * k],
        dist: in f32 [n * k],
        idx_out: out i32 [n * keep],
        dist_out: out f32 [n * keep],
    }

    /// Merges the distance tile `c` (−2 xc_r · xc_q of the rows the key multiplies, for
    /// references `ref0 ..` `ref0 + r_valid` and queries `q0 .. q0 + q_count`, column q at
    /// `q · ldc`, ldc a multiple of 128), plus the references' terms `norms`, into the
    /// queries' sorted lists by rows (one warp per query), and, with `columns` > 0 (the
    /// symmetric schedule off the diagonal), into the references' lists by columns. Lists
    /// hold 32 · `kr` entries, ascending, (+∞, −1) where empty. Blocks of [`WARPS`] warps:
    /// ⌈q_count / WARPS⌉ blocks of rows, then ⌈columns / WARPS⌉ of columns.
    pub struct KnnSelect = "knn_select_{kr}" {
        kr: host,
        variant: defines,
        columns: host,
        c: in f32 [q_count * ldc],
        ldc: usize as i32,
        r_valid: usize as i32,
        q_count: usize as i32,
        q0: usize as i32,
        ref0: usize as i32,
        norms: in f32 [(ref0 + ldc).max(q0 + q_count)],
        state_d: out f32 [q_count * 32 * kr],
        state_i: out i32 [q_count * 32 * kr],
        ref_state_d: out f32 [columns * 32 * kr],
        ref_state_i: out i32 [columns * 32 * kr],
    }

    /// Recomputes the keys of each list's candidates from the input points `x` (n × d, any
    /// of whose rows a list may name) in double, ranks them and writes the k best of queries
    /// `q0 .. q0 + q_count` into rows of `out_i` / `out_d` (k ≤ 32 · `kr`). The key: with
    /// `c` ≥ 0 the inner product's 2(c − x · y), with `c` < 0 the squared distance. One warp
    /// per query, blocks of [`WARPS`] warps.
    pub struct KnnFinish = "knn_finish_{kr}" {
        kr: host,
        variant: defines,
        n: host,
        x: in f32 [n * d],
        d: usize as i32,
        q0: usize as i32,
        q_count: usize as i32,
        k: usize as i32,
        c: f32,
        state_i: in i32 [q_count * 32 * kr],
        out_i: out i32 [(q0 + q_count) * k],
        out_d: out f32 [(q0 + q_count) * k],
    }
}
