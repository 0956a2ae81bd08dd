//! `kernels/affinity.cu`: perplexity calibration and symmetrisation of P into HYB
//! (`crate::affinity::gpu`, whose module doc describes the scheme step by step). Every n × k
//! array is row-major, slot s of row i at i · k + s.

use crate::gpu::launch::kernels;
use crate::gpu::sum::WORDS;

/// Largest k the per-row sort handles (the bitonic sort keeps a row in shared memory; the
/// kernels take rows in chunks of 32).
pub const MAX_K: usize = 256;
/// Rows per thread of the COO-offset scan (`SCAN_ITEMS`).
pub const SCAN_ITEMS: usize = 8;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] =
    &[("AFF_MAX_CHUNKS", MAX_K / 32), ("SCAN_ITEMS", SCAN_ITEMS)];

kernels! {
    file: Affinity;

    /// Step 1: per row, the bisection on the Gaussian precision that gives the row's
    /// distances `dist` entropy `target` (= ln perplexity) within `tol`, at most `max_steps`
    /// steps; the row-stochastic conditionals into `cond`, their sum added to `total`
    /// (zeroed; an exact sum, `crate::gpu::sum`). One thread per row, blocks of a multiple of 32 rows with rows · `stride`
    /// floats of dynamic shared memory (`stride` ≥ k, odd).
    pub struct AffinityPerplexity = "affinity_perplexity" {
        n: usize as i32,
        k: usize as i32,
        stride: usize as i32,
        target: f64,
        tol: f64,
        max_steps: i32,
        dist: in f32 [n * k],
        cond: out f32 [n * k],
        total: out u64 [WORDS],
    }

    /// Step 2: each row's (index, conditional) pairs sorted by index and repeated indices
    /// merged, in place in `cond` and into `sidx` (closed by `i32::MAX`); bit 0 of `error`
    /// (zeroed) set when an index lies outside [0, n). One warp per row, (warps per block) ·
    /// 8 · `p2` bytes of dynamic shared memory, `p2` the power of two ≥ k.
    pub struct AffinitySort = "affinity_sort" {
        n: usize as i32,
        k: usize as i32,
        p2: usize as i32,
        idx: in i32 [n * k],
        cond: out f32 [n * k],
        sidx: out i32 [n * k],
        partner: out f32 [n * k],
        error: out i32 [1],
    }

    /// Step 3: every edge i → j with i < j finds i in the sorted row j; each of the two
    /// slots receives the other's value in `partner`. Rows as [`AffinitySort`] left them.
    pub struct AffinityMatch = "affinity_match" {
        n: usize as i32,
        k: usize as i32,
        sidx: in i32 [n * k],
        sval: in f32 [n * k],
        partner: out f32 [n * k],
    }

    /// Step 4: each slot's symmetric value (c_ij + c_ji) / (2 `total`), encoded in place for
    /// the fill; the rows' own counts, the appended entries' ranks (atomics on `extra`,
    /// zeroed) and Σ p ln p into `plp` (zeroed). One warp per row.
    pub struct AffinityCount = "affinity_count" {
        n: usize as i32,
        k: usize as i32,
        total: in u64 [WORDS],
        sidx: in i32 [n * k],
        sval: out f32 [n * k],
        own: out f32 [n * k],
        own_count: out i32 [n],
        extra: out i32 [n],
        plp: out u64 [WORDS],
    }

    /// Step 5: the histogram of the row lengths into `hist` (h + 1 bins, zeroed; the last
    /// takes every longer row) and nnz into `nnz` (zeroed); h + 1 ints of dynamic shared
    /// memory.
    pub struct AffinityLengths = "affinity_lengths" {
        n: usize as i32,
        h: usize as i32,
        own_count: in i32 [n],
        extra: in i32 [n],
        hist: out i32 [h + 1],
        nnz: out f64 [1],
    }

    /// COO offsets, first pass: tile t (blockDim · [`SCAN_ITEMS`] rows) sums its rows'
    /// overflow max(len − `width`, 0) into `tile_sums[t]`; `tiles` blocks.
    pub struct AffinityScanTiles = "affinity_scan_tiles" {
        tiles: host,
        n: usize as i32,
        width: usize as i32,
        own_count: in i32 [n],
        extra: in i32 [n],
        tile_sums: out i64 [tiles],
    }

    /// COO offsets, second pass: the exclusive scan of the `tiles` tile sums, their total in
    /// `tile_sums[tiles]`; one block.
    pub struct AffinityScanSums = "affinity_scan_sums" {
        tiles: usize as i32,
        tile_sums: out i64 [tiles + 1],
    }

    /// COO offsets, last pass: each row's offset in `coo_off`, the grid of
    /// [`AffinityScanTiles`].
    pub struct AffinityScanApply = "affinity_scan_apply" {
        tiles: host,
        n: usize as i32,
        width: usize as i32,
        own_count: in i32 [n],
        extra: in i32 [n],
        tile_sums: in i64 [tiles],
        coo_off: out i64 [n],
    }

    /// Step 6: the rows `lo .. lo + rows` of P (all n, or one GPU's block) into ELL (slot s
    /// of row i at s · `rows` + i − `lo`, padding (i, 0)) and COO (`coo_len` entries sorted
    /// by row, entry e of the whole's at e − `coo0`, by the offsets `coo_off`) from the
    /// encoded rows; `rank` is the value array after [`AffinityCount`]. One warp per row,
    /// over all n rows (entries appended to the block come from any row).
    pub struct AffinityFill = "affinity_fill" {
        coo_len: host,
        n: usize as i32,
        k: usize as i32,
        width: usize as i32,
        lo: usize as i32,
        rows: usize as i32,
        coo0: i64,
        sidx: in i32 [n * k],
        own: in f32 [n * k],
        rank: in f32 [n * k],
        own_count: in i32 [n],
        extra: in i32 [n],
        coo_off: in i64 [n],
        ell_cols: out i32 [rows * width],
        ell_vals: out f32 [rows * width],
        coo_rows: out i32 [coo_len],
        coo_cols: out i32 [coo_len],
        coo_vals: out f32 [coo_len],
    }

    /// Fills `len` 4-byte words with `value` (tests poison outputs with it, so that an entry
    /// a kernel fails to write shows).
    pub struct AffinityPoison = "affinity_poison" {
        len: usize as i64,
        out: out u32 [len],
        value: u32,
    }
}
