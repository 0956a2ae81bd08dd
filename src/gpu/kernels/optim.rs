//! `kernels/optim.cu`: the fused optimiser step and the re-centring (`crate::optim::gpu`).

use crate::gpu::launch::kernels;
use crate::gpu::sum::WORDS;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[];

kernels! {
    file: Optim;

    /// One step from g = `alpha` · `attr` − `rep` (plus `boost` times the mean gradient of
    /// the point's coarse cell when `boost` > 0, from `records`: the coarse step,
    /// [`crate::optim::coarse`]): gains (delta-bar-delta, floor `min_gain`), momentum
    /// `momentum`, learning rate `eta`, each point's update shortened to `max_step` where
    /// longer (infinite: no limit), y += update; the column sums of the new y added to
    /// `sums` (zeroed; exact sums, `crate::gpu::sum`). Blocks of a multiple of 32 threads.
    pub struct OptimStep = "optim_step_{dims}d" {
        dims: host,
        n: usize as i32,
        alpha: f32,
        momentum: f32,
        eta: f32,
        min_gain: f32,
        max_step: f32,
        attr: in f32 [n * dims],
        rep: in f32 [n * dims],
        y: out f32 [n * dims],
        update: out f32 [n * dims],
        gains: out f32 [n * dims],
        sums: out u64 [dims * WORDS],
        boost: f32,
        inv_cell: f32,
        cells: usize as i32,
        records: in i64 [n_records],
        n_records: host,
    }

    /// The coarse step's cells ([`crate::optim::coarse`]): each point's step `eta` · g
    /// (g = `alpha` · `attr` − `rep`) added in fixed point to its cell's record (`cells`
    /// per axis of side 1 / `inv_cell`, centred on the origin; `dims` sums, then the count;
    /// zeroed before the launch).
    pub struct OptimCoarseSums = "optim_coarse_sums_{dims}d" {
        dims: host,
        n: usize as i32,
        alpha: f32,
        eta: f32,
        inv_cell: f32,
        cells: usize as i32,
        attr: in f32 [n * dims],
        rep: in f32 [n * dims],
        y: in f32 [n * dims],
        records: out i64 [n_records],
        n_records: host,
    }

    /// y −= the mean, the sums [`OptimStep`] left over `total` points (`n`, or the points
    /// of every GPU's block in a run over several, whose sums were added up).
    pub struct OptimRecentre = "optim_recentre_{dims}d" {
        dims: host,
        n: usize as i32,
        total: usize as i64,
        y: out f32 [n * dims],
        sums: in u64 [dims * WORDS],
    }
}
