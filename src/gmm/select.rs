//! Choosing K by the Bayesian information criterion (Schwarz 1978), as scikit-learn's
//! `GaussianMixture.bic` computes it.

use std::ops::RangeInclusive;

use super::{fit, Fit, GmmParams, Real, Samples};
use crate::progress::Progress;
use crate::{Error, Result};

/// One K tried.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Candidate {
    /// Components.
    pub k: usize,
    /// −2 n · score + p ln n.
    pub bic: f64,
    /// −2 n · score + 2p.
    pub aic: f64,
    /// Mean log-likelihood per sample of the fit.
    pub mean_log_likelihood: f64,
    /// EM iterations of the kept restart, and whether it converged.
    pub iterations: usize,
    pub converged: bool,
}

/// Every K tried and the fit of the best (lowest BIC; the smaller K on a tie).
pub struct Selection<T> {
    pub candidates: Vec<Candidate>,
    pub best: Fit<T>,
}

/// Fits `params` with each K of `ks` (at most n) and keeps the one of lowest BIC.
pub fn select_k<T: Real>(
    x: &Samples<T>,
    ks: RangeInclusive<usize>,
    params: &GmmParams,
    progress: &dyn Progress,
) -> Result<Selection<T>> {
    let (lo, hi) = (*ks.start(), *ks.end());
    if lo == 0 || lo > hi {
        return Err(Error::param(
            "k-range",
            format!("expected 1 ≤ low ≤ high, got {lo}..{hi}"),
        ));
    }
    if hi > x.n {
        return Err(Error::param(
            "k-range",
            format!("{hi} components cannot be fitted to {} samples", x.n),
        ));
    }
    let mut candidates = Vec::new();
    let mut best: Option<Fit<T>> = None;
    for k in ks {
        let f = fit(
            x,
            &GmmParams {
                k,
                ..params.clone()
            },
            progress,
        )?;
        let c = Candidate {
            k,
            bic: f.bic(),
            aic: f.aic(),
            mean_log_likelihood: f.mean_log_likelihood,
            iterations: f.history.len(),
            converged: f.converged,
        };
        if best.as_ref().is_none_or(|b| c.bic < b.bic()) {
            best = Some(f);
        }
        candidates.push(c);
    }
    Ok(Selection {
        candidates,
        best: best.expect("a non-empty range"),
    })
}
