//! Optimiser parameters, the exaggeration/momentum schedule and the update step.

use rayon::prelude::*;

use super::coarse::CoarseCells;
use crate::{Error, Result};

/// Optimiser parameters (DESIGN §1.7). Defaults follow openTSNE / FIt-SNE.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct OptimParams {
    /// Total iterations, the early phase included (default 1000).
    pub iters: usize,
    /// Exaggeration factor α of the early phase (default 12): P's pull multiplied by α lets
    /// clusters form and separate before the repulsion spreads them (van der Maaten 2014;
    /// openTSNE's `early_exaggeration`).
    pub early_exaggeration: f32,
    /// Iterations of the early phase, with [`Self::early_exaggeration`] and
    /// [`Self::momentum_early`] (default 250). More than `iters` means the whole run is early
    /// ([`Self::fit_early_phase`] shortens it to `iters` and says so).
    pub early_exaggeration_iters: usize,
    /// Exaggeration factor after the early phase (default 1, plain t-SNE; openTSNE's
    /// `exaggeration`). Above 1 it trades local detail for global structure, which large
    /// data sets need (Kobak & Berens 2019 use 4 from n ≈ 1M; Linderman et al. 2019).
    pub exaggeration: f32,
    /// Learning rate η (see the crate's gradient convention); `auto` resolves to
    /// max(n / early_exaggeration, 50) via [`OptimParams::auto_learning_rate`].
    pub learning_rate: f32,
    /// Momentum of the early phase (default 0.5): low, so that the exaggerated forces do not
    /// build up speed while the clusters form.
    pub momentum_early: f32,
    /// Momentum afterwards (default 0.8).
    pub momentum_late: f32,
    /// Floor of the per-coordinate gains (default 0.01).
    pub min_gain: f32,
    /// The longest step a point may take in one iteration, in embedding units (default 5,
    /// openTSNE's `max_step_norm`; `None`: no limit). A point whose update is longer moves
    /// that far along it, and the momentum keeps the shortened update. Without it a rare
    /// point, pushed hard while its few neighbours pull weakly, can leave the bulk in a
    /// few steps: the repulsion's grid covers every point, so one stray point at three
    /// times the bulk's radius gave a 10M-point run four times the grid nodes, and one
    /// farther off a grid at its cap, coarser for every point (KL +0.44 %). With the limit
    /// the 10M mixture's G2G took 0.07 s a run against 1.3–1.75 s, its KL 8.5188–8.5197
    /// against 8.5199–8.5286; MNIST and deformed digits did not change (`benches/RESULTS.md`,
    /// 2026-11-28).
    pub max_step_norm: Option<f32>,
    /// The coarse step's β after the early phase ([`super::coarse`]): each point's gradient
    /// plus β times the mean gradient of its cell of the map (default 0, off; `--iters auto`
    /// takes [`super::stability::AUTO_COARSE_BOOST`]). Smooth motions, which plain descent
    /// moves last, then go (1 + β) times as fast: 1.3M deformed digits reached a long run's
    /// KL in 1800 iterations with β = 3 against 4550 without.
    pub coarse_boost: f32,
    /// The side of the coarse step's cells in embedding units (default 20; 8 to 40 gave
    /// the same descent on MNIST and 1.3M digits).
    pub coarse_cell: f32,
    /// Iterations after the early phase before the coarse step begins (default 0;
    /// `--iters auto` below 2²⁰ points takes [`super::stability::AUTO_COARSE_DELAY`]).
    /// Just after the early
    /// phase the map expands out of its exaggerated clusters, and a coarse step there moves
    /// points of neighbouring clusters together for good: 250k deformed digits lost 0.003
    /// of 10-NN accuracy with it from the start, and none once it began 150 iterations in.
    pub coarse_delay: usize,
    /// Report KL every this many iterations (default 50; 0 = only at the end).
    pub kl_every: usize,
    /// Sum the device's forces in fixed point (`--deterministic`): the attraction and the
    /// repulsion's grid then come out the same bit for bit in every run, at some cost
    /// (default off; the host's sums always run in a fixed order, so cpu runs repeat
    /// without it). The device's scalar sums (Z, KL, means) are always exact
    /// ([`crate::gpu::sum`]).
    pub deterministic: bool,
    /// Hold an adaptive repulsion grid to a budget of nodes a point, the near field keeping
    /// its accuracy ([`crate::embed::EmbedParams::auto_grid_budget`]): part of the schedule
    /// of `--iters auto` ([`super::stability::auto_schedule`]), whose converged maps are
    /// wide and sparse; off by default, so that a stopping rule alone changes nothing else.
    pub grid_budget: bool,
}

impl Default for OptimParams {
    fn default() -> Self {
        OptimParams {
            iters: 1000,
            early_exaggeration: 12.0,
            early_exaggeration_iters: 250,
            exaggeration: 1.0,
            learning_rate: 200.0,
            momentum_early: 0.5,
            momentum_late: 0.8,
            min_gain: 0.01,
            max_step_norm: Some(5.0),
            coarse_boost: 0.0,
            coarse_cell: 20.0,
            coarse_delay: 0,
            kl_every: 50,
            deterministic: false,
            grid_budget: false,
        }
    }
}

/// Exaggeration and momentum in force at one iteration.
#[derive(Clone, Copy, Debug)]
pub struct Phase {
    pub exaggeration: f32,
    pub momentum: f32,
    /// The coarse step's β ([`OptimParams::coarse_boost`] from
    /// [`OptimParams::coarse_delay`] iterations after the early phase, 0 before).
    pub boost: f32,
}

impl OptimParams {
    /// Belkina et al. (2019): η = max(n / α, 50).
    pub fn auto_learning_rate(n: usize, exaggeration: f32) -> f32 {
        (n as f32 / exaggeration.max(1.0)).max(50.0)
    }

    /// The schedule, shared by every backend: the early exaggeration and momentum for the
    /// first `early_exaggeration_iters`, then `exaggeration` and the late momentum.
    pub fn phase(&self, iter: usize) -> Phase {
        if iter < self.early_exaggeration_iters {
            Phase {
                exaggeration: self.early_exaggeration,
                momentum: self.momentum_early,
                boost: 0.0,
            }
        } else {
            let coarse = iter >= self.early_exaggeration_iters + self.coarse_delay;
            Phase {
                exaggeration: self.exaggeration,
                momentum: self.momentum_late,
                boost: if coarse { self.coarse_boost } else { 0.0 },
            }
        }
    }

    /// Shortens an early phase longer than the run to the run (`--iters 100` with the
    /// default 250 early iterations runs 100 early ones, as a user asking for a short run
    /// expects, rather than failing); returns the note saying so.
    pub fn fit_early_phase(&mut self) -> Option<String> {
        (self.early_exaggeration_iters > self.iters).then(|| {
            let note = format!(
                "the early phase ({} iterations, early-exaggeration-iters) is longer than the \
                 {} iterations: shortened to {}, so the whole run is exaggerated",
                self.early_exaggeration_iters, self.iters, self.iters
            );
            self.early_exaggeration_iters = self.iters;
            note
        })
    }

    /// Range checks, each naming its parameter.
    pub fn validate(&self) -> Result<()> {
        let positive = |name, v: f32| {
            if v > 0.0 && v.is_finite() {
                Ok(())
            } else {
                Err(Error::param(
                    name,
                    format!("must be positive and finite, got {v}"),
                ))
            }
        };
        positive("early-exaggeration", self.early_exaggeration)?;
        positive("exaggeration", self.exaggeration)?;
        positive("learning-rate", self.learning_rate)?;
        positive("min-gain", self.min_gain)?;
        positive("coarse-cell", self.coarse_cell)?;
        if !(self.coarse_boost >= 0.0 && self.coarse_boost.is_finite()) {
            return Err(Error::param(
                "coarse-boost",
                format!("must be 0 or more and finite, got {}", self.coarse_boost),
            ));
        }
        if let Some(m) = self.max_step_norm {
            positive("max-step-norm", m)?;
        }
        for (name, m) in [
            ("early-momentum", self.momentum_early),
            ("momentum", self.momentum_late),
        ] {
            if !(0.0..1.0).contains(&m) {
                return Err(Error::param(name, format!("must be in [0, 1), got {m}")));
            }
        }
        Ok(())
    }
}

/// One step of gradient descent with momentum and gains (Jacobs 1988, as in
/// van der Maaten's and openTSNE's implementations): a gain grows by 0.2 while the
/// gradient keeps pointing against the running update and shrinks by 0.8 otherwise; each
/// point's update is then shortened to [`OptimParams::max_step_norm`] where longer. With a
/// coarse step (`phase.boost` > 0) the gradient is first g + β · its cell's mean
/// ([`super::coarse`]), summed in `coarse`.
pub fn step(
    y: &mut [f32],
    grad: &[f32],
    (update, gains, coarse): (&mut [f32], &mut [f32], &mut CoarseCells),
    dims: usize,
    phase: Phase,
    params: &OptimParams,
) {
    let eta = params.learning_rate;
    let (beta, cell) = (phase.boost, params.coarse_cell);
    if beta > 0.0 {
        coarse.add(y, grad, dims, eta, cell);
    }
    let coarse = &*coarse;
    const POINTS: usize = 1024;
    let chunk = dims * POINTS;
    y.par_chunks_mut(chunk)
        .zip(grad.par_chunks(chunk))
        .zip(update.par_chunks_mut(chunk))
        .zip(gains.par_chunks_mut(chunk))
        .enumerate()
        .for_each(|(at, (((y, g), u), gain))| {
            for t in 0..y.len() {
                let g = if beta > 0.0 {
                    g[t] + beta * coarse.mean(at * POINTS + t / dims, t % dims)
                } else {
                    g[t]
                };
                // The last update went against this gradient: the descent goes on.
                let continuing = (g > 0.0) != (u[t] > 0.0);
                gain[t] = if continuing {
                    gain[t] + 0.2
                } else {
                    gain[t] * 0.8
                }
                .max(params.min_gain);
                u[t] = phase.momentum * u[t] - eta * gain[t] * g;
            }
            if let Some(limit) = params.max_step_norm {
                for point in u.chunks_mut(dims) {
                    clip_step(point, limit);
                }
            }
            for (y, u) in y.iter_mut().zip(u.iter()) {
                *y += u;
            }
        });
}

/// Shortens one point's update to `limit` if longer (as the device's `step` in
/// `kernels/optim.cu` does).
fn clip_step(u: &mut [f32], limit: f32) {
    let norm = u.iter().map(|v| v * v).sum::<f32>().sqrt();
    if norm > limit {
        let scale = limit / norm;
        u.iter_mut().for_each(|v| *v *= scale);
    }
}

/// Subtracts the mean of each coordinate (the KL is translation invariant; keeping Y
/// centred keeps the repulsion grid's box small and the float precision high).
pub fn recentre(y: &mut [f32], dims: usize) {
    let n = (y.len() / dims).max(1);
    let sums = crate::ordered::sums_in_order(y.par_chunks(dims * 1024).map(|c| {
        let mut s = [0f64; 3];
        for p in c.chunks(dims) {
            for (k, v) in p.iter().enumerate() {
                s[k] += *v as f64;
            }
        }
        s
    }));
    let mean: Vec<f32> = sums[..dims].iter().map(|s| (s / n as f64) as f32).collect();
    y.par_chunks_mut(dims).for_each(|p| {
        for (v, m) in p.iter_mut().zip(&mean) {
            *v -= m;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_switches_after_exaggeration() {
        let p = OptimParams::default();
        assert_eq!(p.phase(249).exaggeration, 12.0);
        assert_eq!(p.phase(249).momentum, 0.5);
        assert_eq!(p.phase(250).exaggeration, 1.0);
        assert_eq!(p.phase(250).momentum, 0.8);
        let late = OptimParams {
            exaggeration: 4.0,
            ..p
        };
        assert_eq!(late.phase(249).exaggeration, 12.0);
        assert_eq!(late.phase(250).exaggeration, 4.0);
        assert_eq!(late.phase(999).exaggeration, 4.0);
        // The coarse step from its delay after the early phase on, never in it.
        let coarse = OptimParams {
            coarse_boost: 3.0,
            coarse_delay: 100,
            ..p
        };
        let boost = |o: &OptimParams| [249, 250, 349, 350].map(|i| o.phase(i).boost);
        assert_eq!(boost(&coarse), [0.0, 0.0, 0.0, 3.0]);
        let at_once = OptimParams {
            coarse_delay: 0,
            ..coarse
        };
        assert_eq!(boost(&at_once), [0.0, 3.0, 3.0, 3.0]);
        assert_eq!(
            OptimParams::auto_learning_rate(70_000, 12.0),
            70_000.0 / 12.0
        );
        assert_eq!(OptimParams::auto_learning_rate(100, 12.0), 50.0);
    }

    #[test]
    fn gains_grow_on_flips_and_respect_the_floor() {
        let params = OptimParams {
            learning_rate: 1.0,
            ..Default::default()
        };
        let phase = params.phase(0);
        let mut y = vec![0.0f32, 0.0];
        let mut update = vec![1.0f32, 1.0];
        let mut gains = vec![1.0f32, 0.011];
        // Coordinate 0: the gradient points against the last update (the descent goes on
        // in the same direction) → +0.2. Coordinate 1: the gradient now points along the
        // last update (it overshot) → ×0.8, held at the floor.
        step(
            &mut y,
            &[-1.0, 1.0],
            (&mut update, &mut gains, &mut CoarseCells::new()),
            1,
            phase,
            &params,
        );
        assert!((gains[0] - 1.2).abs() < 1e-6);
        assert!((gains[1] - 0.01).abs() < 1e-7);
        assert!((update[0] - (0.5 + 1.2)).abs() < 1e-6);
        assert!((y[0] - update[0]).abs() < 1e-7);
    }

    #[test]
    fn a_long_step_is_shortened_along_its_direction() {
        // Every gradient positive against a zero update: every gain becomes 1.2, so with
        // η = 1 / 1.2 the update is −g.
        let params = OptimParams {
            learning_rate: 1.0 / 1.2,
            max_step_norm: Some(5.0),
            ..Default::default()
        };
        let phase = params.phase(0);
        // Point 0 would move (−30, −40), 50 long: it moves (−3, −4) and keeps that as its
        // update (the momentum's memory); point 1 would move (−1, −2): unchanged.
        let mut y = vec![10.0f32, 10.0, -1.0, -1.0];
        let mut update = vec![0f32; 4];
        let mut gains = vec![1f32; 4];
        let grad = [30.0f32, 40.0, 1.0, 2.0];
        step(
            &mut y,
            &grad,
            (&mut update, &mut gains, &mut CoarseCells::new()),
            2,
            phase,
            &params,
        );
        let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(a, b)| (a - b).abs() < 1e-5);
        assert!(close(&update, &[-3.0, -4.0, -1.0, -2.0]), "{update:?}");
        assert!(close(&y, &[7.0, 6.0, -2.0, -3.0]), "{y:?}");
        // Without the limit the long step is taken whole.
        let free = OptimParams {
            max_step_norm: None,
            ..params
        };
        let mut y = vec![10.0f32, 10.0, -1.0, -1.0];
        let (mut update, mut gains) = (vec![0f32; 4], vec![1f32; 4]);
        step(
            &mut y,
            &grad,
            (&mut update, &mut gains, &mut CoarseCells::new()),
            2,
            phase,
            &free,
        );
        assert!(close(&y, &[-20.0, -30.0, -2.0, -3.0]), "{y:?}");
    }

    #[test]
    fn the_step_limit_holds_for_every_point_in_three_dimensions() {
        // Many points across the parallel chunks (3 floats a point: a chunk boundary
        // must not split one), gradients of every size: no point moves farther than the
        // limit, and those whose update is shorter move exactly as without it.
        let n = 5000;
        let grad: Vec<f32> = (0..n * 3)
            .map(|t| ((t * 7919) % 2001) as f32 - 1000.0)
            .collect();
        let run = |max_step_norm| {
            let params = OptimParams {
                learning_rate: 0.01,
                max_step_norm,
                ..Default::default()
            };
            let mut y = vec![0f32; n * 3];
            let (mut update, mut gains) = (vec![0f32; n * 3], vec![1f32; n * 3]);
            step(
                &mut y,
                &grad,
                (&mut update, &mut gains, &mut CoarseCells::new()),
                3,
                params.phase(0),
                &params,
            );
            y
        };
        let (limited, free) = (run(Some(5.0)), run(None));
        let norm = |p: &[f32]| p.iter().map(|v| v * v).sum::<f32>().sqrt();
        let mut shortened = 0;
        for (l, f) in limited.chunks(3).zip(free.chunks(3)) {
            assert!(norm(l) <= 5.0 * (1.0 + 1e-6), "{l:?}");
            if norm(f) > 5.0 {
                shortened += 1;
            } else {
                assert_eq!(l, f);
            }
        }
        assert!(shortened > 100 && shortened < n - 100, "{shortened}");
    }

    #[test]
    fn recentre_zeroes_the_mean() {
        let mut y = vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        recentre(&mut y, 3);
        assert_eq!(y, vec![-1.5, -1.5, -1.5, 1.5, 1.5, 1.5]);
    }

    #[test]
    fn validate_names_the_parameter() {
        let d = OptimParams::default();
        let cases = [
            (
                OptimParams {
                    learning_rate: -1.0,
                    ..d
                },
                "learning-rate",
            ),
            (
                OptimParams {
                    early_exaggeration: f32::NAN,
                    ..d
                },
                "early-exaggeration",
            ),
            (
                OptimParams {
                    exaggeration: -2.0,
                    ..d
                },
                "exaggeration",
            ),
            (
                OptimParams {
                    exaggeration: 0.0,
                    ..d
                },
                "exaggeration",
            ),
            (
                OptimParams {
                    momentum_early: 1.0,
                    ..d
                },
                "early-momentum",
            ),
            (
                OptimParams {
                    momentum_late: f32::NAN,
                    ..d
                },
                "momentum",
            ),
            (
                OptimParams {
                    max_step_norm: Some(0.0),
                    ..d
                },
                "max-step-norm",
            ),
        ];
        for (p, name) in cases {
            let e = p.validate().unwrap_err().to_string();
            assert!(e.contains(&format!("`{name}`")), "{name}: {e}");
        }
    }

    #[test]
    fn a_short_run_shortens_the_early_phase() {
        let mut p = OptimParams {
            iters: 100,
            ..Default::default()
        };
        let note = p.fit_early_phase().unwrap();
        assert_eq!(p.early_exaggeration_iters, 100);
        assert!(
            note.contains("250") && note.contains("shortened to 100"),
            "{note}"
        );
        assert_eq!(p.fit_early_phase(), None);
    }
}
