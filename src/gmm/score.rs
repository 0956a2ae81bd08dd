//! A fitted mixture applied to samples, fitted on or new: scikit-learn's `predict`,
//! `predict_proba`, `score_samples` and `score`, by the E-step of the fit itself.

use super::engine::not_finite;
use super::estep::e_step;
use super::gaussian::{Components, Floors};
use super::{Model, Real, Samples};
use crate::{Error, Result};

/// What a model says of each sample.
#[derive(Clone, Debug)]
pub struct Scored<T> {
    /// p(k | x_i), n × K row-major (scikit-learn's `predict_proba`).
    pub responsibilities: Vec<T>,
    /// log p(x_i) (scikit-learn's `score_samples`).
    pub log_likelihood: Vec<T>,
    /// The mean of `log_likelihood`, summed in f64 in a fixed order (scikit-learn's `score`).
    pub mean_log_likelihood: f64,
}

impl<T: Real> Scored<T> {
    /// Each sample's most responsible component (scikit-learn's `predict`; ties to the
    /// lower index).
    pub fn labels(&self) -> Vec<u32> {
        let k = self.responsibilities.len() / self.log_likelihood.len().max(1);
        self.responsibilities
            .chunks_exact(k.max(1))
            .map(|r| {
                let mut best = 0;
                for (c, &v) in r.iter().enumerate() {
                    if v > r[best] {
                        best = c;
                    }
                }
                best as u32
            })
            .collect()
    }
}

/// The responsibilities and log-likelihoods of `x` under `model`, on all cores. Errors: a
/// feature count other than the model's, no samples, or a covariance that cannot be
/// factorised (a model whose values are not finite).
pub fn score<T: Real>(model: &Model<T>, x: &Samples<T>) -> Result<Scored<T>> {
    if x.d != model.d {
        return Err(Error::Data(format!(
            "the samples have {} features, but the mixture was fitted to {}",
            x.d, model.d
        )));
    }
    if x.n == 0 {
        return Err(Error::Data("no samples to score".into()));
    }
    let k = model.k();
    let mut factored = model.clone();
    let comps =
        Components::factor(&mut factored, &mut Floors::new(k)).ok_or_else(not_finite::<T>)?;
    let mut responsibilities = vec![T::zero(); x.n * k];
    let mut log_likelihood = vec![T::zero(); x.n];
    let mean_log_likelihood = e_step(x, &comps, &mut responsibilities, &mut log_likelihood);
    Ok(Scored {
        responsibilities,
        log_likelihood,
        mean_log_likelihood,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gmm::{fit, GmmParams};
    use crate::progress::Silent;
    use crate::Points;

    /// Scoring the samples a mixture was fitted to gives back the fit's labels,
    /// responsibilities and score.
    #[test]
    fn scoring_the_fitted_samples_repeats_the_fit() {
        let mut values = Vec::new();
        for i in 0..300 {
            let c = (i % 3) as f64 * 6.0;
            let t = i as f64 * 0.37;
            values.extend([(c + t.sin()) as f32, (c + t.cos()) as f32]);
        }
        let x = Samples::<f64>::from_points(&Points::new(300, 2, values)).unwrap();
        let params = GmmParams {
            k: 3,
            ..GmmParams::default()
        };
        let f = fit(&x, &params, &Silent).unwrap();
        let s = score(&f.model, &x).unwrap();
        assert_eq!(s.labels(), f.labels);
        assert!((s.mean_log_likelihood - f.mean_log_likelihood).abs() < 1e-12);
        for (a, b) in s.responsibilities.iter().zip(&f.responsibilities) {
            assert!((a - b).abs() < 1e-12);
        }
        let wrong = Samples::<f64>::from_points(&Points::new(1, 3, vec![0.0; 3])).unwrap();
        assert!(score(&f.model, &wrong).is_err());
    }
}
