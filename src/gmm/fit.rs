//! EM from an initial model to convergence, over several restarts.

use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::engine::{Engine, HostEm};
use super::gaussian::Floors;
use super::gpu::DeviceEm;
use super::kmeans::kmeans;
use super::{GmmBackend, GmmInit, GmmParams, Model, Real, Samples};
use crate::progress::Progress;
use crate::{Error, Result};

/// A fitted mixture and how the fit went.
#[derive(Clone, Debug)]
pub struct Fit<T> {
    /// The model after the last M-step.
    pub model: Model<T>,
    /// The model EM started from (the M-step of the initial responsibilities).
    pub initial: Model<T>,
    /// The mean log-likelihood per sample at the start of each iteration, before its
    /// M-step: `history[0]` is the initial model's (scikit-learn's `lower_bound_` after
    /// that many iterations).
    pub history: Vec<f64>,
    /// Whether the change fell below `tol` within `max_iter` iterations.
    pub converged: bool,
    /// The mean log-likelihood per sample of [`Fit::model`] (scikit-learn's `score`).
    pub mean_log_likelihood: f64,
    /// Each sample's most responsible component under [`Fit::model`].
    pub labels: Vec<u32>,
    /// p(k | x_i) under [`Fit::model`], n × K row-major.
    pub responsibilities: Vec<T>,
    /// Things done to keep the fit going (re-seeded components, raised floors).
    pub notes: Vec<String>,
    /// Which restart this fit is (0-based), and every restart's final mean log-likelihood.
    pub restart: usize,
    pub restart_scores: Vec<f64>,
    /// Seconds of this restart's initialisation (k-means or random responsibilities, and
    /// the first M-step) and of each EM iteration (an E-step and an M-step).
    pub init_seconds: f64,
    pub iteration_seconds: Vec<f64>,
}

impl<T: Real> Fit<T> {
    /// Samples per component of [`Fit::labels`].
    pub fn sizes(&self) -> Vec<usize> {
        let mut sizes = vec![0; self.model.k()];
        for &l in &self.labels {
            sizes[l as usize] += 1;
        }
        sizes
    }

    /// The Bayesian information criterion, −2 n · score + p ln n (lower is better).
    pub fn bic(&self) -> f64 {
        let n = self.labels.len() as f64;
        -2.0 * n * self.mean_log_likelihood + self.model.n_parameters() as f64 * n.ln()
    }

    /// Akaike's criterion, −2 n · score + 2p.
    pub fn aic(&self) -> f64 {
        let n = self.labels.len() as f64;
        -2.0 * n * self.mean_log_likelihood + 2.0 * self.model.n_parameters() as f64
    }
}

/// Fits a mixture of `params.k` Gaussians to `x` by EM, `params.restarts` times from seeds
/// `seed`, `seed + 1`, …, keeping the fit with the highest final log-likelihood, on the
/// host or the device as `params.backend` says. `progress` sees one unit per EM iteration
/// (up to `max_iter` per restart) and the latest mean log-likelihood as its status.
pub fn fit<T: Real>(x: &Samples<T>, params: &GmmParams, progress: &dyn Progress) -> Result<Fit<T>> {
    params.validate(x.n)?;
    match params.backend {
        GmmBackend::Cpu => restarts(x, params, progress, &mut HostEm::new(x, params.k)),
        GmmBackend::Gpu => {
            let gpu = crate::gpu::Gpu::get()?;
            restarts(x, params, progress, &mut DeviceEm::new(gpu, x, params)?)
        }
    }
}

/// [`fit`]'s restarts on one engine.
pub(crate) fn restarts<T: Real>(
    x: &Samples<T>,
    params: &GmmParams,
    progress: &dyn Progress,
    engine: &mut dyn Engine<T>,
) -> Result<Fit<T>> {
    progress.begin("gmm", (params.max_iter * params.restarts) as u64);
    let mut best: Option<Fit<T>> = None;
    let mut scores = Vec::with_capacity(params.restarts);
    for r in 0..params.restarts {
        let fit = fit_once(
            x,
            params,
            params.seed.wrapping_add(r as u64),
            engine,
            progress,
        )?;
        progress.advance((params.max_iter - fit.history.len()) as u64);
        scores.push(fit.mean_log_likelihood);
        let better = best
            .as_ref()
            .is_none_or(|b| fit.mean_log_likelihood > b.mean_log_likelihood);
        if better {
            best = Some(Fit { restart: r, ..fit });
        }
    }
    progress.end();
    let mut best = best.expect("at least one restart");
    best.restart_scores = scores;
    Ok(best)
}

/// Components holding less than this many samples' worth of responsibility are re-seeded.
const MIN_WEIGHT: f64 = 1.0;

/// One EM run from the initial responsibilities of `seed`.
fn fit_once<T: Real>(
    x: &Samples<T>,
    params: &GmmParams,
    seed: u64,
    engine: &mut dyn Engine<T>,
    progress: &dyn Progress,
) -> Result<Fit<T>> {
    let k = params.k;
    let start = Instant::now();
    let mut rng = StdRng::seed_from_u64(seed);
    engine.set_responsibilities(&initial_responsibilities(x, params, &mut rng)?)?;
    let mut notes = Vec::new();
    let mut floors = Floors::new(k);
    let (mut model, nk) = engine.m_step(k, params.covariance, params.reg)?;
    reseed_empty(x, &mut model, &nk, None, 0, &mut notes);
    engine.factor(&mut model, &mut floors)?;
    let initial = model.clone();
    let init_seconds = start.elapsed().as_secs_f64();
    let mut iteration_seconds = Vec::with_capacity(params.max_iter);
    let mut history = Vec::with_capacity(params.max_iter);
    let mut converged = false;
    for iter in 0..params.max_iter {
        let t = Instant::now();
        let score = engine.e_step()?;
        if !score.is_finite() {
            return Err(Error::Data(format!(
                "the log-likelihood became {score} at iteration {iter}: the samples' values \
                 are too large or too small for {} (rescale them, or use --precision f64)",
                T::NAME
            )));
        }
        let previous = history.last().copied();
        history.push(score);
        progress.status(&format!("log-likelihood {score:.6}"));
        progress.advance(1);
        let nk;
        (model, nk) = engine.m_step(k, params.covariance, params.reg)?;
        if nk.iter().any(|w| w.f64() < MIN_WEIGHT) {
            let ll = engine.log_likelihoods()?;
            reseed_empty(x, &mut model, &nk, Some(&ll), iter + 1, &mut notes);
        }
        engine.factor(&mut model, &mut floors)?;
        iteration_seconds.push(t.elapsed().as_secs_f64());
        if previous.is_some_and(|p| (score - p).abs() < params.tol) {
            converged = true;
            break;
        }
    }
    // A last E-step so that labels and score belong to the final model (as scikit-learn's
    // fit_predict and score).
    let mean_log_likelihood = engine.e_step()?;
    let resp = engine.responsibilities()?;
    notes.extend(floors.notes());
    let labels = resp
        .chunks_exact(k)
        .map(|r| {
            (0..k)
                .max_by(|&a, &b| {
                    r[a].partial_cmp(&r[b])
                        .unwrap_or(std::cmp::Ordering::Equal)
                        .then(b.cmp(&a))
                })
                .unwrap_or(0) as u32
        })
        .collect();
    Ok(Fit {
        model,
        initial,
        history,
        converged,
        mean_log_likelihood,
        labels,
        responsibilities: resp,
        notes,
        restart: 0,
        restart_scores: Vec::new(),
        init_seconds,
        iteration_seconds,
    })
}

/// The responsibilities the first M-step starts from.
fn initial_responsibilities<T: Real>(
    x: &Samples<T>,
    params: &GmmParams,
    rng: &mut StdRng,
) -> Result<Vec<T>> {
    let k = params.k;
    let mut resp = vec![T::zero(); x.n * k];
    match params.init {
        GmmInit::KMeansPlusPlus => {
            let labels = kmeans(x, k, rng)?;
            for (r, &l) in resp.chunks_exact_mut(k).zip(&labels) {
                r[l as usize] = T::one();
            }
        }
        GmmInit::Random => {
            for r in resp.chunks_exact_mut(k) {
                let mut total = 0.0;
                let draws: Vec<f64> = (0..k).map(|_| rng.random::<f64>()).collect();
                for v in &draws {
                    total += v;
                }
                for (v, u) in r.iter_mut().zip(&draws) {
                    *v = T::of(u / total);
                }
            }
        }
    }
    Ok(resp)
}

/// Re-seeds each component whose total weight `nk` fell below [`MIN_WEIGHT`] samples: its
/// mean moves to the worst-explained sample not already taken (lowest `ll`; without `ll`,
/// the sample farthest from the mixture's mean), its covariance becomes the weighted mean of
/// the others', its weight 1/n (the weights are then renormalised); `notes` says so.
fn reseed_empty<T: Real>(
    x: &Samples<T>,
    model: &mut Model<T>,
    nk: &[T],
    ll: Option<&[T]>,
    iter: usize,
    notes: &mut Vec<String>,
) {
    let empty: Vec<usize> = (0..model.k())
        .filter(|&c| nk[c].f64() < MIN_WEIGHT)
        .collect();
    if empty.is_empty() || empty.len() == model.k() {
        return;
    }
    let (n, d) = (x.n, x.d);
    let badness: Vec<f64> = match ll {
        Some(ll) => ll.iter().map(|v| -v.f64()).collect(),
        None => {
            let mut centre = vec![0.0; d];
            for i in 0..n {
                for (c, v) in centre.iter_mut().zip(x.row(i)) {
                    *c += v.f64() / n as f64;
                }
            }
            (0..n)
                .map(|i| {
                    x.row(i)
                        .iter()
                        .zip(&centre)
                        .map(|(v, c)| (v.f64() - c).powi(2))
                        .sum()
                })
                .collect()
        }
    };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| badness[b].total_cmp(&badness[a]).then(a.cmp(&b)));
    let len = model.covariance.len(d);
    let live: Vec<usize> = (0..model.k()).filter(|c| !empty.contains(c)).collect();
    let live_weight: f64 = live.iter().map(|&c| model.weights[c].f64()).sum();
    let mut pooled = vec![T::zero(); len];
    for &c in &live {
        let w = T::of(model.weights[c].f64() / live_weight);
        for (p, v) in pooled.iter_mut().zip(model.covariance_of(c)) {
            *p += w * *v;
        }
    }
    for (&c, &row) in empty.iter().zip(&order) {
        model.means[c * d..(c + 1) * d].copy_from_slice(x.row(row));
        model.covariances[c * len..(c + 1) * len].copy_from_slice(&pooled);
        model.weights[c] = T::of(1.0 / n as f64);
        let when = if iter == 0 {
            "in the initial clusters".to_string()
        } else {
            format!("at iteration {iter}")
        };
        notes.push(format!(
            "component {c} lost its samples {when}; re-seeded at sample {row}"
        ));
    }
    let total = model.weights.iter().fold(T::zero(), |s, &w| s + w);
    for w in &mut model.weights {
        *w /= total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gmm::CovarianceType;

    /// A component with no weight moves to the worst-explained sample, takes the others'
    /// pooled covariance and weight 1/n, and a note says so.
    #[test]
    fn an_empty_component_is_reseeded_at_the_worst_sample() {
        let x = Samples {
            n: 4,
            d: 1,
            data: vec![0.0, 1.0, 2.0, 9.0],
        };
        let mut model: Model<f64> = Model {
            covariance: CovarianceType::Diag,
            d: 1,
            weights: vec![1.0, 0.0],
            means: vec![1.0, 0.0],
            covariances: vec![2.0, 1e-6],
        };
        let ll = [-1.0, -1.0, -1.5, -30.0];
        let mut notes = Vec::new();
        reseed_empty(&x, &mut model, &[4.0, 0.0], Some(&ll), 3, &mut notes);
        assert_eq!(model.means, vec![1.0, 9.0]);
        assert_eq!(model.covariances, vec![2.0, 2.0]);
        assert!((model.weights[1] - 0.25 / 1.25).abs() < 1e-15);
        assert!((model.weights.iter().sum::<f64>() - 1.0).abs() < 1e-15);
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("component 1") && notes[0].contains("iteration 3"));
        assert!(notes[0].contains("sample 3"));
    }
}
