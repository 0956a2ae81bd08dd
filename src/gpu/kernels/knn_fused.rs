//! `kernels/knn_fused.cu`: the fused exact kNN (3xFP16 keys on the tensor cores, the
//! selection behind them; `crate::knn::gpu::fused`), its constants and its shared-memory
//! layout, which is defined here and given to the kernel as offsets ([`FusedLayout`]).

use std::sync::OnceLock;

use crate::gpu::launch::{kernels, KernelValue, Param};

/// Warps per block (`FUSED_WARPS`).
pub const WARPS: usize = 4;
/// Queries per block, 32 per warp: two m16 tiles (`FUSED_QUERIES`).
pub const QUERIES: usize = WARPS * 32;
/// References per step: four n8 tiles (`FUSED_CHUNK`).
pub const CHUNK: usize = 32;
/// A query's queue is merged into its list once it holds more than this (`FUSED_MERGE`),
/// unless [`MERGE_VAR`] says otherwise ([`merge`]).
pub const MERGE: usize = 24;

/// The environment variable that sets the merge threshold for a run, 1 to 96 (default
/// [`MERGE`]): for measuring what the merges cost (`scripts/bench/knn_merge.sh`). Another
/// value than the default compiles the file anew at first use: the shipped cubins hold the
/// default.
pub const MERGE_VAR: &str = "SGTSNE_KNN_MERGE";

/// The merge threshold of this process: [`MERGE_VAR`], or [`MERGE`].
pub fn merge() -> usize {
    static MERGE_AT: OnceLock<usize> = OnceLock::new();
    *MERGE_AT.get_or_init(|| {
        std::env::var(MERGE_VAR)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .filter(|m| (1..=96).contains(m))
            .unwrap_or(MERGE)
    })
}

/// Queue capacity per query (`FUSED_QUEUE`): [`merge`] + [`CHUNK`], since one step adds at
/// most [`CHUNK`] to a queue that was merged once it held more than [`merge`].
pub fn queue() -> usize {
    merge() + CHUNK
}
/// Reference buffers in the ring: one in use, two in flight (`FUSED_STAGES`).
pub const STAGES: usize = 3;
/// Halves of padding after each staged reference row, so that rows sit 4 mod 8 words apart
/// and each `ldmatrix` phase hits 32 different banks (`FUSED_ROW_PAD`).
pub const ROW_PAD: usize = 8;
/// Largest dimension the kernel takes: four k-steps of 16, the query fragments in registers.
pub const MAX_DIM: usize = 64;
/// The FP16 mma's k-step: the dimension is padded to a multiple of it.
pub const K_STEP: usize = 16;
/// Longest list, in registers per lane of a warp.
pub const MAX_KR: usize = 8;

/// Constants the file is compiled with (`-DNAME=VALUE`) by default; [`constants`] gives
/// this process's.
pub(crate) const CONSTANTS: &[(&str, usize)] = &[
    ("FUSED_WARPS", WARPS),
    ("FUSED_QUERIES", QUERIES),
    ("FUSED_CHUNK", CHUNK),
    ("FUSED_MERGE", MERGE),
    ("FUSED_QUEUE", MERGE + CHUNK),
    ("FUSED_STAGES", STAGES),
    ("FUSED_ROW_PAD", ROW_PAD),
];

/// The constants the file is compiled with in this process: [`CONSTANTS`] with its merge
/// threshold and queue capacity ([`merge`], [`queue`]).
pub(crate) fn constants() -> &'static [(&'static str, usize)] {
    static IN_USE: OnceLock<Vec<(&str, usize)>> = OnceLock::new();
    IN_USE.get_or_init(|| {
        CONSTANTS
            .iter()
            .map(|&(name, value)| match name {
                "FUSED_MERGE" => (name, merge()),
                "FUSED_QUEUE" => (name, queue()),
                _ => (name, value),
            })
            .collect()
    })
}

/// Where each part of a block's dynamic shared memory starts, in 4-byte words (the kernel
/// reads these; `FusedLayout` in `kernels/knn_fused.cu` has the same fields):
///
/// | part | words |
/// |---|---|
/// | staged references | [`STAGES`] × 2 × [`CHUNK`] × (dp + [`ROW_PAD`]) halves: heads, then tails |
/// | their terms | [`STAGES`] × [`CHUNK`] |
/// | queues | [`QUERIES`] × [`queue`] keys, then as many indices |
/// | queue lengths, K-th best keys | [`QUERIES`] each |
/// | scratch | [`WARPS`] × (4 K + 32): each warp's lists and batch while merging |
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FusedLayout {
    pub sqs: i32,
    pub queue_d: i32,
    pub queue_i: i32,
    pub qcount: i32,
    pub thr: i32,
    pub scratch: i32,
    pub scratch_per_warp: i32,
}

// SAFETY: plain `#[repr(C)]` data of seven `i32`, laid out as the CUDA struct.
unsafe impl cudarc::driver::DeviceRepr for FusedLayout {}

impl KernelValue for FusedLayout {
    const PARAM: Param = Param::Bytes(std::mem::size_of::<FusedLayout>());
}

impl FusedLayout {
    /// The layout for points padded to `dp` dimensions and lists of 32 · `kr` entries.
    pub fn new(dp: usize, kr: usize) -> Self {
        let sqs = STAGES * 2 * CHUNK * (dp + ROW_PAD) / 2;
        let queue_d = sqs + STAGES * CHUNK;
        let queue_i = queue_d + QUERIES * queue();
        let qcount = queue_i + QUERIES * queue();
        let thr = qcount + QUERIES;
        let scratch = thr + QUERIES;
        let word = |w: usize| w as i32;
        FusedLayout {
            sqs: word(sqs),
            queue_d: word(queue_d),
            queue_i: word(queue_i),
            qcount: word(qcount),
            thr: word(thr),
            scratch: word(scratch),
            scratch_per_warp: word(4 * 32 * kr + 32),
        }
    }

    /// Bytes of dynamic shared memory a block needs.
    pub fn bytes(&self) -> usize {
        (self.scratch + WARPS as i32 * self.scratch_per_warp) as usize * 4
    }
}

kernels! {
    file: KnnFused;

    /// The key's rows `xc` (n × d: the centred points for the squared distance, the points
    /// as given for the inner product) times `sc` (a power of two) split into FP16 heads `hi`
    /// and tails `lo` (their bits), padded with zero columns to `dp` and zero rows to `n_pad`;
    /// `sq` = their terms `norms` (squared norms, or the inner product's c), +∞ past n (never
    /// selected).
    pub struct KnnFusedSplit = "knn_fused_split" {
        variant: defines,
        xc: in f32 [n * d],
        norms: in f32 [n],
        n: usize as i64,
        d: usize as i32,
        dp: usize as i32,
        n_pad: usize as i64,
        sc: f32,
        hi: out u16 [n_pad * dp],
        lo: out u16 [n_pad * dp],
        sq: out f32 [n_pad],
    }

    /// Sweeps the query slots of blocks `block0 .. block0 + blocks` (each [`QUERIES`] slots;
    /// `qrows` gives a slot's row, −1 for none) over their references: block B's are the
    /// chunks of [`CHUNK`] rows named by the runs `runs[2 · run_off[B] ..
    /// 2 · run_off[B + 1]]` (first chunk, count; every chunk below n_pad / [`CHUNK`], none
    /// twice). Each slot's list in `state_d` / `state_i` (32 · `kr` entries from slot
    /// `slot0` on, sorted, (+∞, −1) before the first sweep, 1 ≤ kr ≤ [`MAX_KR`]) ends
    /// holding its K best reference rows by the 3xFP16 key, never the slot's own row. `hi`,
    /// `lo` and `sq` as [`KnnFusedSplit`] made them with the scale sc, `half_sc2` = sc² / 2,
    /// `inv_half_sc2` = 2 / sc², dp = 16 · `ks` ≤ [`MAX_DIM`]; blocks of [`QUERIES`] threads
    /// with [`FusedLayout::bytes`] of dynamic shared memory.
    pub struct KnnFusedSweep = "knn_fused_{ks}" {
        variant: defines,
        ks: host,
        n_pad: host,
        blocks: host,
        runs_len: host,
        hi: in u16 [n_pad * K_STEP * ks],
        lo: in u16 [n_pad * K_STEP * ks],
        half_sc2: f32,
        inv_half_sc2: f32,
        sq: in f32 [n_pad],
        qrows: in i32 [(block0 + blocks) * QUERIES],
        runs: in i32 [2 * runs_len],
        run_off: in i32 [block0 + blocks + 1],
        kr: usize as i32,
        state_d: out f32 [((block0 + blocks) * QUERIES).saturating_sub(slot0) * 32 * kr],
        state_i: out i32 [((block0 + blocks) * QUERIES).saturating_sub(slot0) * 32 * kr],
        slot0: usize as i64,
        block0: usize as i32,
        layout: FusedLayout,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without `SGTSNE_KNN_MERGE` the file compiles with its default constants, the ones
    /// its shipped cubins were compiled with.
    #[test]
    fn the_merge_threshold_defaults_to_the_shipped_one() {
        if std::env::var_os(MERGE_VAR).is_some() {
            eprintln!("skipped: {MERGE_VAR} is set");
            return;
        }
        assert_eq!(constants(), CONSTANTS);
        assert_eq!(queue(), MERGE + CHUNK);
    }

    /// The layout is the one the kernel carved before it took offsets (the same bytes), and
    /// two blocks fit an SM of an H100 (228 KiB) at the largest dimension and list, so that
    /// one block's merges overlap the other's tensor work.
    #[test]
    fn layout_fits_two_blocks_per_sm() {
        for (dp, kr) in [(16, 1), (64, 3), (64, 8)] {
            let stage = STAGES * 2 * CHUNK * (dp + ROW_PAD) * 2;
            let norms = STAGES * CHUNK * 4;
            let queue = QUERIES * queue() * 8;
            let counts = QUERIES * 8;
            let scratch = WARPS * (4 * 32 * kr + 32) * 4;
            let layout = FusedLayout::new(dp, kr);
            assert_eq!(layout.bytes(), stage + norms + queue + counts + scratch);
            assert_eq!(layout.sqs % 4, 0, "cp.async needs 16-byte aligned rows");
        }
        assert!(2 * (FusedLayout::new(MAX_DIM, MAX_KR).bytes() + 1024) <= 228 * 1024);
    }
}
