//! `kernels/optim.cu`: the fused optimiser step and the re-centring (`crate::optim::gpu`).

use crate::gpu::launch::kernels;
use crate::gpu::sum::WORDS;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[];

kernels! {
    file: Optim;

    /// One step from g = `alpha` · `attr` − `rep`: gains (delta-bar-delta, floor
    /// `min_gain`), momentum `momentum`, learning rate `eta`, each point's update shortened
    /// to `max_step` where longer (infinite: no limit), y += update; the column sums of the
    /// new y added to `sums` (zeroed; exact sums, `crate::gpu::sum`). Blocks of a multiple
    /// of 32 threads.
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
