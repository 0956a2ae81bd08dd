//! A fitted mixture: weights, means and covariances.

use super::Real;

/// The covariances' form (scikit-learn's `covariance_type`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CovarianceType {
    /// A full d × d matrix per component.
    #[default]
    Full,
    /// A diagonal per component (d variances).
    Diag,
    /// One variance per component, the same along every axis.
    Spherical,
}

impl CovarianceType {
    /// The name `--covariance` takes.
    pub fn name(self) -> &'static str {
        match self {
            CovarianceType::Full => "full",
            CovarianceType::Diag => "diag",
            CovarianceType::Spherical => "spherical",
        }
    }

    /// Values one component's covariance holds.
    pub fn len(self, d: usize) -> usize {
        match self {
            CovarianceType::Full => d * d,
            CovarianceType::Diag => d,
            CovarianceType::Spherical => 1,
        }
    }
}

/// K Gaussian components in d dimensions.
#[derive(Clone, Debug)]
pub struct Model<T> {
    /// The covariances' form.
    pub covariance: CovarianceType,
    /// Dimensions.
    pub d: usize,
    /// π, K of them, summing to 1.
    pub weights: Vec<T>,
    /// μ, K × d row-major.
    pub means: Vec<T>,
    /// Σ, K blocks of [`CovarianceType::len`] values (full: d × d row-major, symmetric).
    pub covariances: Vec<T>,
}

impl<T: Real> Model<T> {
    /// Components (K).
    pub fn k(&self) -> usize {
        self.weights.len()
    }

    /// Component `c`'s mean.
    pub fn mean(&self, c: usize) -> &[T] {
        &self.means[c * self.d..(c + 1) * self.d]
    }

    /// Component `c`'s covariance values (see [`Model::covariances`]).
    pub fn covariance_of(&self, c: usize) -> &[T] {
        let len = self.covariance.len(self.d);
        &self.covariances[c * len..(c + 1) * len]
    }

    /// Free parameters, as scikit-learn counts them for the BIC: K·d means, K − 1 weights
    /// and K·d(d+1)/2, K·d or K covariance values.
    pub fn n_parameters(&self) -> usize {
        let (k, d) = (self.k(), self.d);
        let cov = match self.covariance {
            CovarianceType::Full => k * d * (d + 1) / 2,
            CovarianceType::Diag => k * d,
            CovarianceType::Spherical => k,
        };
        cov + k * d + k - 1
    }

    /// The model as JSON: `covariance_type`, `weights` (K), `means` (K × d) and
    /// `covariances` (K × d × d, K × d or K, as scikit-learn's `covariances_`).
    pub fn to_json(&self) -> serde_json::Value {
        let d = self.d;
        let rows = |v: &[T], w: usize| -> Vec<Vec<f64>> {
            v.chunks(w.max(1))
                .map(|r| r.iter().map(|x| x.f64()).collect())
                .collect()
        };
        let covariances = match self.covariance {
            CovarianceType::Full => serde_json::json!(self
                .covariances
                .chunks(d * d)
                .map(|c| rows(c, d))
                .collect::<Vec<_>>()),
            CovarianceType::Diag => serde_json::json!(rows(&self.covariances, d)),
            CovarianceType::Spherical => {
                serde_json::json!(self.covariances.iter().map(|x| x.f64()).collect::<Vec<_>>())
            }
        };
        serde_json::json!({
            "covariance_type": self.covariance.name(),
            "n_components": self.k(),
            "n_features": d,
            "weights": self.weights.iter().map(|x| x.f64()).collect::<Vec<_>>(),
            "means": rows(&self.means, d),
            "covariances": covariances,
        })
    }
}
