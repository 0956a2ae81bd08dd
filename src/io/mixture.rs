//! A fitted Gaussian mixture as a file: `.json` (for people and scripts) or `.npz` (for
//! numpy), with the arrays scikit-learn's `GaussianMixture` holds.

use std::path::Path;

use super::error::{extension, unknown_extension, IoError};
use super::npz::write_npz;
use super::write::write_atomic;
use crate::gmm::{CovarianceType, Model, Real};

/// Writes `model` to `path` (`.json` or `.npz`), atomically, with the model EM started from
/// (`initial`) and the mean log-likelihood of every iteration (`history`).
///
/// - `.json`: `weights`, `means`, `covariances` (nested lists) and the rest of
///   [`Model::to_json`], `initial` (the same for the initial model) and
///   `log_likelihood_history`.
/// - `.npz`: `weights` (K), `means` (K × d), `covariances` (K × d × d, K × d or K, by the
///   covariance type), `initial_weights`, `initial_means`, `initial_covariances` and
///   `log_likelihood_history`, all float64.
pub fn write_mixture<T: Real>(
    path: &Path,
    model: &Model<T>,
    initial: &Model<T>,
    history: &[f64],
) -> Result<(), IoError> {
    match extension(path).as_str() {
        "json" => {
            let mut json = model.to_json();
            json["initial"] = initial.to_json();
            json["log_likelihood_history"] = serde_json::json!(history);
            write_atomic(path, |w| {
                serde_json::to_writer_pretty(&mut *w, &json).map_err(std::io::Error::other)?;
                writeln!(w)
            })
        }
        "npz" => {
            let large = model.covariances.len() * 8 >= u32::MAX as usize;
            write_npz(path, large, |npz| {
                for (prefix, m) in [("", model), ("initial_", initial)] {
                    let (k, d) = (m.k() as u64, m.d as u64);
                    let f = |v: &[T]| v.iter().map(|x| x.f64()).collect::<Vec<_>>();
                    let cov_shape = match m.covariance {
                        CovarianceType::Full => vec![k, d, d],
                        CovarianceType::Diag => vec![k, d],
                        CovarianceType::Spherical => vec![k],
                    };
                    npz.array(&format!("{prefix}weights"), &[k], f(&m.weights).into_iter())?;
                    npz.array(&format!("{prefix}means"), &[k, d], f(&m.means).into_iter())?;
                    npz.array(
                        &format!("{prefix}covariances"),
                        &cov_shape,
                        f(&m.covariances).into_iter(),
                    )?;
                }
                npz.array(
                    "log_likelihood_history",
                    &[history.len() as u64],
                    history.iter().copied(),
                )
            })
        }
        _ => Err(unknown_extension(path, "a mixture model", ".json, .npz")),
    }
}
