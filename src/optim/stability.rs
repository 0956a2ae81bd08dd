//! Neighbourhood stability: whether the map's local structure was still changing when a
//! run stopped, and the stopping rule of `--iters auto`.
//!
//! At scale the KL flattens long before the neighbourhoods settle ([`super::convergence()`]:
//! over the last tenth of 1000 iterations the KL of 1.3M points fell 0.25 % while their
//! 10-NN preservation still doubled by 2000), so the run also looks at the map itself: a
//! fixed sample of points, their [`STABILITY_K`] nearest neighbours in Y at two checkpoints
//! a tenth of the run apart, and the fraction of them kept. A settled map keeps most of
//! them; a map whose neighbourhoods are still forming keeps few. Nothing from the input is
//! needed (a graph or given affinities work alike), and the searches
//! ([`crate::quality::embedding_neighbors_of`]) run on two threads of their own beside the
//! optimisation, so a checkpoint costs the optimiser one copy of Y.
//!
//! `--iters auto` checks at the end of the early phase and then every tenth of the
//! iterations done so far (t, 1.1 t, 1.21 t, …), and stops once both the kept fraction and
//! the KL's relative fall over the last window say the map has settled ([`AutoIters`]),
//! or at its cap. A window's verdict is due a quarter of the window after its checkpoint;
//! a run that repeats bit for bit waits for it there, so that its stop repeats too.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::{mpsc, Arc, OnceLock};

use rand::{rngs::StdRng, seq::index::sample, SeedableRng};
use serde::Serialize;

use super::{Observer, Stop};
use crate::{Error, Result};

/// Neighbours per sampled point.
pub const STABILITY_K: usize = 10;

/// Points sampled (every point when there are fewer): the kept fraction's standard error
/// is then about 0.01.
const SAMPLE: usize = 2000;

/// Kept fraction below which a run warns that its map was still changing. Measured over
/// the last tenth (H200, `scripts/bench/converge_auto.sh`): MNIST 70k kept 0.956 at 1000
/// iterations, 0.982 at 2000 (10-NN preservation 0.390, 0.403; 0.405 at 4000); 1.3M
/// deformed digits 0.738 at 1000, 0.923 at 3000, 0.973 at 10000 (preservation 0.157, 0.262,
/// 0.304). Below 0.94 the preservation was under 90 % of what a long run reaches.
pub const SETTLED: f64 = 0.94;

/// The momentum after the early phase under `--iters auto` unless one is given: on 1.3M
/// deformed digits 0.9 reached in 2000 iterations (6.4 s) the KL and preservation 0.8
/// reached in 3000 (8.0 s), and on MNIST a lower KL at 1000 (2.643 against 2.762); the
/// default 0.8 stays for a fixed count, whose runs repeat as before.
pub const AUTO_MOMENTUM: f32 = 0.9;

/// The coarse step's β under `--iters auto` unless one is given ([`super::coarse`]): with
/// cells of 20, 1.3M deformed digits came within 1 % of a 10000-iteration run's KL in 1800
/// iterations (β = 1.5: 2400; none: 4550) and 10M in 1050 (1300; 2350), their 10-NN
/// accuracy above a 1000-iteration run's; a fixed count keeps none, so its runs repeat as
/// before.
pub const AUTO_COARSE_BOOST: f32 = 3.0;

/// The coarse step's delay under `--iters auto` below 2²⁰ points unless one is given
/// ([`super::OptimParams::coarse_delay`], `EmbedParams::auto_coarse_delay`). On the host
/// (bit for bit repeatable), begun at once after the early phase the coarse step cost 250k
/// deformed digits 0.003 of 10-NN accuracy against 1000 iterations (0.9252 against
/// 0.9282); begun 150 iterations later it gained (0.9288), in fewer iterations (1313
/// against 1590) to a lower KL (3.751 against 3.765). MNIST: 0.97704 against 0.97626 and
/// 0.97671 for 1000 iterations, 895 iterations against 814, KL 2.490 against 2.522.
pub const AUTO_COARSE_DELAY: usize = 150;

/// The schedule of `--iters auto` where the caller gave none: momentum [`AUTO_MOMENTUM`]
/// and the coarse step [`AUTO_COARSE_BOOST`] after the early phase, and the repulsion
/// grid's node budget ([`super::OptimParams::grid_budget`]). The command line and the
/// Python package call it before applying the values given.
pub fn auto_schedule(o: &mut super::OptimParams) {
    o.momentum_late = AUTO_MOMENTUM;
    o.coarse_boost = AUTO_COARSE_BOOST;
    o.grid_budget = true;
}

/// The neighbourhood stability over one window of a run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stability {
    /// The mean fraction of a sampled point's nearest neighbours in Y at `from` that are
    /// still among its nearest at `to` (1: nothing moved past anything).
    pub kept: f64,
    /// The KL's relative fall over the window ((KL at `from` − KL at `to`) / KL at `to`,
    /// from the nearest KL reports inside it); absent without two reports there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kl_drop: Option<f64>,
    pub from: usize,
    pub to: usize,
    /// Points sampled.
    pub sample: usize,
}

impl Stability {
    /// Whether the map had settled over the window (the summary warns when not).
    pub fn settled(&self) -> bool {
        self.kept >= SETTLED
    }
}

/// The kept fraction from which a flat KL alone stops an `--iters auto` run
/// ([`AutoIters::kl_flat`]): most neighbourhoods have formed (the early phase's end keeps
/// under 1 %; a 10M-point map kept 0.74 at 1060 iterations and 0.89 at 1881, where its KL
/// was within 1 % of a 5000-iteration run's).
pub const FORMED: f64 = 0.85;

/// The rule of `--iters auto` (`max_iter="auto"` in Python): stop once a window (a tenth of
/// the run) finds the map settled — at least [`AutoIters::stability`] of the sampled
/// neighbourhoods kept and the KL's fall at most [`AutoIters::kl_drop`] — or its KL flat —
/// a fall of at most [`AutoIters::kl_flat`] with [`FORMED`] of the neighbourhoods kept.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct AutoIters {
    /// The most iterations, the early phase included (`--iters-cap`).
    pub cap: usize,
    /// Settled: at least this fraction of the sampled neighbours kept over a window
    /// (`--auto-stability`)…
    pub stability: f64,
    /// …and the KL fell by at most this fraction over it (`--auto-kl-drop`).
    pub kl_drop: f64,
    /// Flat: the KL fell by at most this fraction over a window (never more than
    /// `kl_drop`) while [`FORMED`] of the neighbourhoods were kept (`--auto-kl-flat`).
    pub kl_flat: f64,
}

/// The rule's defaults. Settled: 97 % of the sampled neighbourhoods stay over a tenth of
/// the run and the KL fell by at most 1.5 % over it (about MNIST's fall over the last
/// tenth of 1000 iterations); on MNIST the neighbourhoods settle first (97 % at about 900
/// iterations) and the KL decides. Flat: a fall of at most 0.6 %. At scale, under the
/// coarse step ([`super::coarse`]), the neighbourhoods keep reshuffling at the cells'
/// edges (1.3M deformed digits kept 0.95–0.965 from iteration 1500 to 10000) while the KL
/// flattens: its fall passed under 0.6 % a window at 1881 iterations, where the KL was
/// within 1 % of a 10000-iteration run's and the 10-NN preservation above it; 10M digits
/// likewise at 1881 (KL 4 % below a 5000-iteration run's).
impl Default for AutoIters {
    fn default() -> Self {
        AutoIters {
            cap: 10_000,
            stability: 0.97,
            kl_drop: 0.015,
            kl_flat: 0.006,
        }
    }
}

impl AutoIters {
    /// Range checks, each naming its parameter.
    pub fn validate(&self) -> Result<()> {
        if self.cap == 0 {
            return Err(Error::param("iters-cap", "must be at least 1"));
        }
        if !(self.stability > 0.0 && self.stability <= 1.0) {
            return Err(Error::param(
                "auto-stability",
                format!("{} is not in (0, 1]", self.stability),
            ));
        }
        for (name, v) in [
            ("auto-kl-drop", self.kl_drop),
            ("auto-kl-flat", self.kl_flat),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(Error::param(
                    name,
                    format!("{v} is not a fraction of 0 or more"),
                ));
            }
        }
        Ok(())
    }
}

/// Why an `--iters auto` run stopped where it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoStop {
    /// The rule held: the map had settled.
    Converged,
    /// The rule held: the KL had flattened, most neighbourhoods formed.
    Flattened,
    /// The cap came first.
    Cap,
}

impl AutoStop {
    /// Whether the run's own rule stopped it (not its cap).
    pub fn by_rule(self) -> bool {
        self != AutoStop::Cap
    }
}

/// What the checkpoints found, once the run is over ([`Watch::finish`]).
#[derive(Clone, Debug, Default)]
pub struct Watched {
    /// Every window's stability, in order (one for a run of fixed length: its last tenth).
    pub history: Vec<Stability>,
    /// Why an `--iters auto` run stopped (`None` for a fixed count, or a run the caller
    /// stopped).
    pub stopped: Option<AutoStop>,
}

/// An observer of the optimisation that looks at Y at its checkpoints (and shows the
/// caller's `inner` observer what it asks for): the last tenth of a run of fixed length,
/// or `--iters auto`'s windows, where it also stops the run.
pub struct Watch<'a> {
    inner: Option<&'a mut dyn Observer<[f32]>>,
    dims: usize,
    sample: Arc<Vec<u32>>,
    rule: Option<AutoIters>,
    /// A run of fixed length: its two checkpoints, at 90 % and at the end (`None` under a
    /// rule, whose checkpoints are `State::next`, or for a run too short to tell).
    fixed: Option<(usize, usize)>,
    /// Whether the run repeats bit for bit, and so must its stop ([`Watch::repeatable`]).
    repeatable: bool,
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    /// The next checkpoint of an auto run.
    next: usize,
    /// The last checkpoint looked at.
    observed: Option<usize>,
    /// The last checkpoint whose neighbours came back, and them.
    last: Option<(usize, Vec<u32>)>,
    /// Searches under way, oldest first: their checkpoint, the iteration by which their
    /// answer is waited for, and the answer.
    pending: VecDeque<(usize, usize, mpsc::Receiver<Vec<u32>>)>,
    /// The fixed run's last checkpoint and Y there, searched by [`Watch::finish`].
    at_end: Option<(usize, Vec<f32>)>,
    kls: Vec<(usize, f64)>,
    history: Vec<Stability>,
    /// The iteration at which the run stops, and why, once the auto rule held at a
    /// checkpoint.
    converged: Option<(usize, AutoStop)>,
    /// Whether this watch stopped the run (not the caller's observer).
    stopped_run: bool,
}

impl<'a> Watch<'a> {
    /// A watch of `n` points in `dims` dimensions over a run of `iters` iterations whose
    /// early phase takes `early` (with `rule`, `iters` is its cap), its sample drawn with
    /// `seed`; `inner` sees what it asks for as before.
    pub fn new(
        inner: Option<&'a mut dyn Observer<[f32]>>,
        (n, dims): (usize, usize),
        (iters, early): (usize, usize),
        rule: Option<AutoIters>,
        seed: u64,
    ) -> Self {
        let m = SAMPLE.min(n);
        let mut rows: Vec<u32> = if n > STABILITY_K {
            let mut rng = StdRng::seed_from_u64(seed ^ 0x5354_4142_4c45);
            sample(&mut rng, n, m)
                .into_iter()
                .map(|i| i as u32)
                .collect()
        } else {
            Vec::new()
        };
        rows.sort_unstable();
        let from = iters - iters / 10;
        let fixed = match rule {
            Some(_) => None,
            None => (iters / 10 > 0 && from >= early && !rows.is_empty()).then_some((from, iters)),
        };
        let next = match rule {
            Some(_) if !rows.is_empty() => early.max(1),
            _ => usize::MAX,
        };
        Watch {
            inner,
            dims,
            sample: Arc::new(rows),
            rule,
            fixed,
            repeatable: true,
            state: RefCell::new(State {
                next,
                ..Default::default()
            }),
        }
    }

    /// Whether the run repeats bit for bit (the cpu backend, `--deterministic`; the
    /// default): then a window's verdict is waited for where it is due, so that the stop
    /// repeats too. Otherwise the run goes on while the search runs and stops where the
    /// verdict comes, never before it was due: at MNIST's pace (0.3 ms an iteration on the
    /// GPU) waiting cost 0.15 s a run.
    pub fn repeatable(mut self, repeatable: bool) -> Self {
        self.repeatable = repeatable;
        self
    }

    fn checkpoint(&self, iter: usize) -> bool {
        match self.fixed {
            Some((a, b)) => iter == a || iter == b,
            None => iter == self.state.borrow().next,
        }
    }

    /// Takes in the searches that have finished, oldest first, and in a repeatable run
    /// waits for those due by iteration `upto`. A search's answer is due a quarter of its
    /// window after its checkpoint; a repeatable run stops (or not) exactly there, however
    /// fast the search was, so that its stop repeats too.
    fn collect(&self, upto: usize) {
        let mut st = self.state.borrow_mut();
        while let Some((iter, due, coming)) = st.pending.pop_front() {
            let got = match coming.try_recv() {
                Ok(got) => Some(got),
                Err(mpsc::TryRecvError::Empty) if due <= upto && self.repeatable => {
                    coming.recv().ok()
                }
                Err(mpsc::TryRecvError::Empty) => {
                    st.pending.push_front((iter, due, coming));
                    return;
                }
                Err(mpsc::TryRecvError::Disconnected) => None,
            };
            if let Some(got) = got {
                self.arrived(&mut st, (iter, due), got);
            }
        }
    }

    /// The neighbours at checkpoint `iter` (due at `due`): the window since the last one,
    /// and the rule.
    fn arrived(&self, st: &mut State, (iter, due): (usize, usize), now: Vec<u32>) {
        if let Some((from, before)) = st.last.take() {
            let window = Stability {
                kept: kept(&before, &now, STABILITY_K),
                kl_drop: kl_drop(&st.kls, from, iter),
                from,
                to: iter,
                sample: self.sample.len(),
            };
            st.history.push(window);
            if let (Some(rule), None) = (self.rule, st.converged) {
                // Without KL reports (`kl_every` 0) the rule is the stability's alone.
                let settled = window.kept >= rule.stability
                    && match window.kl_drop {
                        Some(d) => d <= rule.kl_drop,
                        None => st.kls.len() < 2,
                    };
                let flat = window.kept >= FORMED
                    && window
                        .kl_drop
                        .is_some_and(|d| d <= rule.kl_flat.min(rule.kl_drop));
                if settled {
                    st.converged = Some((due, AutoStop::Converged));
                } else if flat {
                    st.converged = Some((due, AutoStop::Flattened));
                }
            }
        }
        st.last = Some((iter, now));
    }

    /// The sampled points, when the last checkpoint of a run of fixed length saw exactly
    /// `y` and a search of `k` neighbours is what it needs: a caller that searches `y`
    /// anyway (the quality measures) hands their rows to [`Watch::finish`].
    pub fn end_sample(&self, y: &[f32], k: usize) -> Option<Arc<Vec<u32>>> {
        let st = self.state.borrow();
        let (_, seen) = st.at_end.as_ref()?;
        (k == STABILITY_K && seen.as_slice() == y).then(|| self.sample.clone())
    }

    /// Waits for the last searches; what the checkpoints found. The last checkpoint of a
    /// run of fixed length takes `end_rows` (the rows of [`Watch::end_sample`]'s points,
    /// nearest first) or is searched here, on the caller's threads, which the run no
    /// longer uses (two threads took 13 ms at MNIST on the GPU, 6 ms on 16; the quality
    /// measures' search gives them for nothing).
    pub fn finish(mut self, end_rows: Option<Vec<u32>>) -> Watched {
        self.repeatable = true;
        self.collect(usize::MAX);
        let at_end = self.state.get_mut().at_end.take();
        if let Some((iter, y)) = at_end {
            let wanted = self.sample.len() * STABILITY_K.min(y.len() / self.dims - 1);
            let found = match end_rows {
                Some(rows) if rows.len() == wanted => rows,
                _ => neighbors_of(&y, self.dims, &self.sample),
            };
            self.arrived(&mut self.state.borrow_mut(), (iter, iter), found);
        }
        let st = self.state.into_inner();
        // A verdict that came after the cap did not stop the run: the cap did.
        let stopped = self.rule.map(|_| match (st.stopped_run, st.converged) {
            (true, Some((_, why))) => why,
            _ => AutoStop::Cap,
        });
        Watched {
            history: st.history,
            stopped,
        }
    }
}

impl Observer<[f32]> for Watch<'_> {
    fn wants(&self, iter: usize) -> bool {
        self.checkpoint(iter) || self.inner.as_ref().is_some_and(|o| o.wants(iter))
    }

    fn observe(&mut self, iter: usize, y: &[f32]) -> Result<()> {
        if self.fixed.is_some_and(|(_, end)| end == iter) {
            self.state.get_mut().at_end = Some((iter, y.to_vec()));
        } else if self.checkpoint(iter) {
            let (tx, rx) = mpsc::sync_channel(1);
            let (y, dims, rows) = (y.to_vec(), self.dims, self.sample.clone());
            let search = move || {
                let _ = tx.send(neighbors_of(&y, dims, &rows));
            };
            match searches() {
                Some(pool) => pool.spawn(search),
                None => search(),
            }
            let mut st = self.state.borrow_mut();
            let due = iter + st.observed.map_or(0, |before| (iter - before).div_ceil(4));
            st.observed = Some(iter);
            st.pending.push_back((iter, due, rx));
            if self.rule.is_some() {
                st.next = iter + iter.div_ceil(10).max(1);
            }
        }
        match self.inner.as_mut() {
            Some(o) if o.wants(iter) => o.observe(iter, y),
            _ => Ok(()),
        }
    }

    fn stop(&self, iter: usize) -> Option<Stop> {
        if let Some(stop) = self.inner.as_ref().and_then(|o| o.stop(iter)) {
            return Some(stop);
        }
        self.rule?;
        self.collect(iter);
        let mut st = self.state.borrow_mut();
        st.converged.filter(|&(at, _)| iter >= at)?;
        st.stopped_run = true;
        Some(Stop::Finish)
    }

    fn kl(&mut self, iter: usize, kl: f64) {
        self.state.get_mut().kls.push((iter, kl));
        if let Some(o) = self.inner.as_mut() {
            o.kl(iter, kl);
        }
    }
}

/// The searches' own threads, a quarter of the machine's cores, 2 to 8 (`None` if they
/// cannot be started: the searches then run where they are asked for). Not the caller's
/// pool: rayon runs a worker's queued jobs while it waits, so a search spawned there ran on
/// the thread that drives the optimisation and put itself on the run's critical path (5 ms
/// a call at MNIST); a quarter takes little from the caller's `--threads`, and a verdict
/// comes sooner: on two threads a 10M-point map's search took 80 GPU iterations.
fn searches() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        rayon::ThreadPoolBuilder::new()
            .num_threads((cores / 4).clamp(2, 8))
            .thread_name(|i| format!("sgtsne-watch-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// The warning a run gives when it stopped while its map was still changing (not when the
/// caller stopped it): what was measured and how to run longer.
pub fn warning(report: &super::OptimReport) -> Option<String> {
    if report.interrupted_at.is_some() || report.auto_stop.is_some_and(AutoStop::by_rule) {
        return None;
    }
    let s = report.stability.filter(|s| !s.settled())?;
    let measured = format!(
        "only {:.0} % of the {STABILITY_K} nearest neighbours in the map of {} sampled points \
         were the same at iterations {} and {} (a settled map keeps {:.0} % or more)",
        s.kept * 100.0,
        s.sample,
        s.from,
        s.to,
        SETTLED * 100.0
    );
    Some(match report.auto_stop {
        Some(_) => format!(
            "the map was still changing at the cap of --iters auto, {} iterations: {measured}; \
             raise the cap (--iters-cap)",
            report.iterations
        ),
        None => format!(
            "the map was still changing when the run stopped: {measured}. More iterations \
             would improve it: --iters {} (max_iter in Python), or --iters auto \
             (max_iter=\"auto\") to run until it settles",
            report.iterations.max(1) * 2
        ),
    })
}

/// The [`STABILITY_K`] nearest neighbours in `y` (`dims` per point) of the sampled points
/// `rows`, row after row.
fn neighbors_of(y: &[f32], dims: usize, rows: &[u32]) -> Vec<u32> {
    crate::quality::embedding_neighbors_of(y, dims, rows, STABILITY_K)
}

/// The mean fraction of each row of `before` (rows of `k`) found in the same row of
/// `now`.
fn kept(before: &[u32], now: &[u32], k: usize) -> f64 {
    if before.is_empty() || before.len() != now.len() {
        return 1.0;
    }
    let found: usize = before
        .chunks(k)
        .zip(now.chunks(k))
        .map(|(a, b)| a.iter().filter(|j| b.contains(j)).count())
        .sum();
    found as f64 / before.len() as f64
}

/// The KL's relative fall over the window `from`..`to`, from the last KL report in it and
/// the report before (at or before `from`), scaled to the window's length: KL reports come
/// every `kl_every` iterations, which may be more than a window. `None` without two
/// reports.
fn kl_drop(kls: &[(usize, f64)], from: usize, to: usize) -> Option<f64> {
    let finite = |(_, kl): &&(usize, f64)| kl.is_finite() && *kl > 0.0;
    let last = kls.iter().rev().filter(finite).find(|(i, _)| *i <= to)?;
    let first = kls
        .iter()
        .rev()
        .filter(finite)
        .find(|(i, _)| *i <= from && *i < last.0)?;
    let per_iteration = (first.1 - last.1) / last.1 / (last.0 - first.0) as f64;
    Some(per_iteration * (to - from) as f64)
}

#[cfg(test)]
mod tests;
