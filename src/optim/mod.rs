//! Gradient descent for t-SNE (DESIGN §1.7): momentum, per-coordinate gains
//! (delta-bar-delta, Jacobs 1988), early exaggeration, re-centring, KL every few steps.
//!
//! **Convention.** The true gradient is $∂C/∂y_i = 4(α F_{attr,i} − F_{rep,i})$. As in
//! FIt-SNE and openTSNE, the constant 4 is absorbed into the learning rate: the step uses
//! $g_i = α F_{attr,i} − F_{rep,i}$, so a learning rate here means the same as there
//! (auto = max(n / early exaggeration, 50), Belkina et al. 2019).

pub mod coarse;
pub mod convergence;
pub mod gpu;
pub mod gradient;
mod overlap;
pub mod schedule;
pub mod snapshots;
pub mod stability;

pub use convergence::{convergence, Convergence};
pub use gradient::{Gradient, GradientInfo};
pub use overlap::Overlap;
pub use schedule::OptimParams;
pub use snapshots::Snapshots;
pub use stability::{AutoIters, AutoStop, Stability, Watch};

use serde::Serialize;

use crate::progress::Progress;
use crate::repulse::RepulseTimes;
use crate::{Error, Result};

/// What the optimisation returns besides the final Y.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OptimReport {
    /// (iteration, KL(P‖Q)) every `kl_every` iterations and after the last one.
    pub kl_history: Vec<(usize, f64)>,
    /// KL(P‖Q) of the final embedding.
    pub final_kl: f64,
    /// Steps taken (fewer than asked when the run was stopped, or under `--iters auto`).
    pub iterations: usize,
    /// Seconds in the attraction over all iterations.
    pub attract_seconds: f64,
    /// Seconds in the repulsion over all iterations.
    pub repulse_seconds: f64,
    /// Repulsion seconds split by sub-stage.
    pub repulse_split: RepulseTimes,
    /// Seconds in the update (gains, momentum, step, re-centring).
    pub update_seconds: f64,
    /// Seconds in the all-gather of Y between GPUs (`--gpus` above 1; 0 otherwise).
    pub exchange_seconds: f64,
    /// Grid nodes per axis at the last iteration (FFT repulsion only).
    pub final_grid: Option<usize>,
    /// Times the grid size changed from one iteration to the next.
    pub grid_changes: usize,
    /// Host seconds the repulsion spent preparing new grid sizes, outside its stage times
    /// ([`crate::repulse::Repulsion::replan_seconds`]; GPU only).
    pub replan_seconds: f64,
    /// Per-iteration times and overlap of the attraction and the repulsion (hybrid only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlap: Option<Overlap>,
    /// Each GPU's own attraction, repulsion and update seconds in a run over several
    /// (`--gpus`; the fields above are GPU 0's); absent on one GPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_gpu: Option<Vec<GpuSeconds>>,
    /// The steps taken when an observer stopped the run ([`Stop::Finish`]); absent when the
    /// run went to the end. Y, the final KL and all that follows are those after them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted_at: Option<usize>,
    /// How far the run stopped from convergence ([`convergence()`]); absent when the KL
    /// history cannot tell (a short run, no KL reports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub convergence: Option<Convergence>,
    /// The neighbourhood stability over the run's last window ([`stability`]): its last
    /// tenth, or the last window of `--iters auto`; absent for a run too short to tell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stability: Option<Stability>,
    /// Every window of an `--iters auto` run, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stability_history: Vec<Stability>,
    /// Why an `--iters auto` run stopped; absent for a fixed count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_stop: Option<AutoStop>,
}

/// One GPU's share of a run over several ([`OptimReport::per_gpu`]).
#[derive(Clone, Debug, Default, Serialize)]
pub struct GpuSeconds {
    pub attract_seconds: f64,
    pub repulse_seconds: f64,
    pub update_seconds: f64,
    pub exchange_seconds: f64,
}

/// Looks at Y while it is optimised, e.g. to measure the repulsion's error there (the
/// grid-size sweep, [`crate::sweep`]). `Y` is where the embedding lives: `[f32]` on the
/// host, a device buffer on the GPU.
pub trait Observer<Y: ?Sized> {
    /// Whether to look at Y after `iter` steps (`1 ..= iters`).
    fn wants(&self, iter: usize) -> bool;
    /// Looks at Y after `iter` steps.
    fn observe(&mut self, iter: usize, y: &Y) -> Result<()>;
    /// Whether the run should stop after `iter` steps (`0 .. iters`), and how; asked before
    /// every step, so it must be cheap, and first before the first step (which tells an
    /// observer that the optimisation has begun). The CLI's interrupt handler answers here:
    /// signals stay out of the library, and every backend stops between two steps, where Y
    /// is consistent.
    fn stop(&self, _iter: usize) -> Option<Stop> {
        None
    }
    /// The KL divergence of Y after `iter` steps, computed every
    /// [`OptimParams::kl_every`] steps and after the last one (after [`Observer::observe`]
    /// of the same `iter`, when it asked to see that Y): what callbacks that report the
    /// error beside the embedding (openTSNE's) read.
    fn kl(&mut self, _iter: usize, _kl: f64) {}
}

/// How an [`Observer`] stops a run early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Keep Y as it is: the run finishes as if `iters` had been reached (final KL, quality
    /// measures), with [`OptimReport::interrupted_at`] set.
    Finish,
    /// Drop the run: the optimiser returns [`Error::Interrupted`] at once.
    Abort,
}

/// Asks `observer` whether to stop after `iter` steps of `iters`: `Ok(true)` to finish now
/// (recorded in `report`), an error to abort. Shared by the host and the device loops.
pub(crate) fn stops<Y: ?Sized>(
    observer: Option<&dyn Observer<Y>>,
    iter: usize,
    iters: usize,
    report: &mut OptimReport,
) -> Result<bool> {
    match observer.and_then(|o| o.stop(iter)) {
        None => Ok(false),
        Some(Stop::Finish) => {
            report.interrupted_at = Some(iter);
            Ok(true)
        }
        Some(Stop::Abort) => Err(Error::Interrupted { iter, iters }),
    }
}

/// Runs `params.iters` steps from `y` (row-major n × dims, updated in place), fewer if an
/// observer stops the run ([`Observer::stop`]).
pub fn optimize(
    gradient: &mut dyn Gradient,
    y: &mut [f32],
    dims: usize,
    params: &OptimParams,
    progress: &dyn Progress,
) -> Result<OptimReport> {
    optimize_observed(gradient, y, dims, params, progress, None)
}

/// [`optimize`], showing Y to `observer` after the steps it asks for.
pub fn optimize_observed(
    gradient: &mut dyn Gradient,
    y: &mut [f32],
    dims: usize,
    params: &OptimParams,
    progress: &dyn Progress,
    mut observer: Option<&mut dyn Observer<[f32]>>,
) -> Result<OptimReport> {
    params.validate()?;
    let len = y.len();
    let mut grad = vec![0f32; len];
    let mut update = vec![0f32; len];
    let mut gains = vec![1f32; len];
    let mut coarse = coarse::CoarseCells::new();
    let mut report = OptimReport::default();
    progress.begin("optimise", params.iters as u64);
    let mut done = params.iters;
    for iter in 0..params.iters {
        if stops(observer.as_deref(), iter, params.iters, &mut report)? {
            done = iter;
            break;
        }
        let phase = params.phase(iter);
        let with_kl = params.kl_every > 0 && iter % params.kl_every == 0;
        let info = gradient.gradient(y, dims, phase.exaggeration, &mut grad, with_kl)?;
        report.add(&info);
        if let Some(kl) = info.kl {
            report.kl_history.push((iter, kl));
            progress.status(&format!("KL {kl:.4}"));
            if let Some(o) = observer.as_mut() {
                o.kl(iter, kl);
            }
        }
        let t = std::time::Instant::now();
        schedule::step(
            y,
            &grad,
            (&mut update, &mut gains, &mut coarse),
            dims,
            phase,
            params,
        );
        schedule::recentre(y, dims);
        report.update_seconds += t.elapsed().as_secs_f64();
        progress.advance(1);
        if let Some(o) = observer.as_mut().filter(|o| o.wants(iter + 1)) {
            o.observe(iter + 1, y)?;
        }
    }
    let info = gradient.gradient(y, dims, 1.0, &mut grad, true)?;
    let kl = info.kl.unwrap_or(f64::NAN);
    report.kl_history.push((done, kl));
    report.final_kl = kl;
    report.iterations = done;
    if let Some(o) = observer.as_mut() {
        o.kl(done, kl);
    }
    report.set_grid(info.grid);
    progress.end();
    Ok(report)
}

impl OptimReport {
    fn add(&mut self, info: &GradientInfo) {
        self.attract_seconds += info.attract_seconds;
        self.repulse_seconds += info.repulse_seconds;
        self.add_split(&info.repulse_split);
        self.set_grid(info.grid);
    }

    /// Records the grid of the latest evaluation, counting size changes.
    fn set_grid(&mut self, grid: Option<usize>) {
        if self.final_grid.is_some() && grid != self.final_grid {
            self.grid_changes += 1;
        }
        self.final_grid = grid;
    }

    /// Adds one repulsion's times (its seconds are the sum of its sub-stages).
    pub fn add_repulsion(&mut self, rep: &crate::repulse::Repulsion) {
        let t = &rep.times;
        self.repulse_seconds += t.total();
        self.add_split(t);
        self.replan_seconds += rep.replan_seconds;
        self.set_grid(rep.grid);
    }

    fn add_split(&mut self, t: &RepulseTimes) {
        self.repulse_split.s2g += t.s2g;
        self.repulse_split.g2g += t.g2g;
        self.repulse_split.g2s += t.g2s;
        self.repulse_split.near += t.near;
        self.repulse_split.phi2force += t.phi2force;
    }
}
