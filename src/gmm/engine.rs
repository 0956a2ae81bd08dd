//! Where EM's passes over the samples run: the host ([`HostEm`], faer on rayon) or the
//! device ([`super::gpu::DeviceEm`], cuBLAS and cuSOLVER). The fit loop ([`super::fit`])
//! is the same for both: it keeps the model on the host and asks the engine for the
//! responsibilities' statistics, the factorisations and the E-step.

use super::estep::e_step;
use super::gaussian::{Components, Floors};
use super::mstep::m_step;
use super::{CovarianceType, Model, Real, Samples};
use crate::{Error, Result};

/// The passes of EM over the samples an engine holds.
pub(crate) trait Engine<T: Real> {
    /// Replaces the responsibilities (n × K, row-major) with `resp`.
    fn set_responsibilities(&mut self, resp: &[T]) -> Result<()>;

    /// The M-step from the current responsibilities ([`super::estimate`]), and the
    /// components' total weights n_k.
    fn m_step(&mut self, k: usize, kind: CovarianceType, reg: f64) -> Result<(Model<T>, Vec<T>)>;

    /// Factors `model`'s covariances for the next E-step, raising a floor where one is not
    /// positive definite (in `model` too, counted in `floors`).
    fn factor(&mut self, model: &mut Model<T>, floors: &mut Floors) -> Result<()>;

    /// The E-step under the last factored model: the responsibilities and each sample's
    /// log-likelihood; returns their mean.
    fn e_step(&mut self) -> Result<f64>;

    /// Each sample's log-likelihood from the last E-step.
    fn log_likelihoods(&mut self) -> Result<Vec<T>>;

    /// The responsibilities (n × K, row-major).
    fn responsibilities(&mut self) -> Result<Vec<T>>;
}

/// The error of a covariance that stays non-finite whatever its floor.
pub(crate) fn not_finite<T: Real>() -> Error {
    Error::Data(format!(
        "a covariance holds non-finite values: the samples' values are too large for {}",
        T::NAME
    ))
}

/// EM on the host, on all cores ([`super::estep`], [`super::mstep`]).
pub(crate) struct HostEm<'a, T> {
    x: &'a Samples<T>,
    resp: Vec<T>,
    ll: Vec<T>,
    comps: Option<Components<T>>,
}

impl<'a, T: Real> HostEm<'a, T> {
    /// An engine over `x` for `k` components.
    pub(crate) fn new(x: &'a Samples<T>, k: usize) -> Self {
        HostEm {
            x,
            resp: vec![T::zero(); x.n * k],
            ll: vec![T::zero(); x.n],
            comps: None,
        }
    }
}

impl<T: Real> Engine<T> for HostEm<'_, T> {
    fn set_responsibilities(&mut self, resp: &[T]) -> Result<()> {
        self.resp.clear();
        self.resp.extend_from_slice(resp);
        Ok(())
    }

    fn m_step(&mut self, k: usize, kind: CovarianceType, reg: f64) -> Result<(Model<T>, Vec<T>)> {
        Ok(m_step(self.x, &self.resp, k, kind, reg))
    }

    fn factor(&mut self, model: &mut Model<T>, floors: &mut Floors) -> Result<()> {
        self.comps = Some(Components::factor(model, floors).ok_or_else(not_finite::<T>)?);
        Ok(())
    }

    fn e_step(&mut self) -> Result<f64> {
        let comps = self.comps.as_ref().expect("factor before the E-step");
        Ok(e_step(self.x, comps, &mut self.resp, &mut self.ll))
    }

    fn log_likelihoods(&mut self) -> Result<Vec<T>> {
        Ok(self.ll.clone())
    }

    fn responsibilities(&mut self) -> Result<Vec<T>> {
        Ok(std::mem::take(&mut self.resp))
    }
}
