//! Gaussian mixtures for the package's `GaussianMixture`: the library's EM fit
//! ([`sgtsne::gmm::fit`]) and its E-step on any samples ([`sgtsne::gmm::score`]), in f64 as
//! scikit-learn computes.

use numpy::{PyArray1, PyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use sgtsne::gmm::{self, CovarianceType, GmmBackend, GmmInit, GmmParams, Model, Samples};

use crate::arrays;
use crate::errors::IntoPy;

/// The covariance type's name.
fn covariance(name: &str) -> PyResult<CovarianceType> {
    match name {
        "full" => Ok(CovarianceType::Full),
        "diag" => Ok(CovarianceType::Diag),
        "spherical" => Ok(CovarianceType::Spherical),
        other => Err(PyValueError::new_err(format!(
            "invalid parameter `covariance_type`: {other:?} is not one of full, diag, spherical"
        ))),
    }
}

/// Samples from a C-contiguous float64 array.
fn samples(x: &Bound<'_, PyArray2<f64>>) -> PyResult<Samples<f64>> {
    let (n, d, data) = arrays::vec2(x)?;
    Ok(Samples { n, d, data })
}

/// Responsibilities, log-likelihoods, their mean and the model's free parameters (for the
/// BIC and AIC), handed back.
type ScoreArrays<'py> = (
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray1<f64>>,
    f64,
    usize,
);

/// The model's arrays: (weights K, means K × d, covariances K × len).
type ModelArrays<'py> = (
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray2<f64>>,
);

fn model_arrays<'py>(py: Python<'py>, m: &Model<f64>) -> PyResult<ModelArrays<'py>> {
    let len = m.covariance.len(m.d);
    Ok((
        PyArray1::from_vec(py, m.weights.clone()),
        arrays::to_array2(py, m.means.clone(), m.d)?,
        arrays::to_array2(py, m.covariances.clone(), len)?,
    ))
}

/// Fits a mixture to `x`: a dict of the model's arrays (and the initial model's), the
/// labels, the responsibilities and how the fit went.
#[pyfunction]
#[pyo3(signature = (x, k, covariance_type, init, max_iter, tol, restarts, reg, seed, backend, threads=None))]
#[allow(clippy::too_many_arguments)]
fn gmm_fit<'py>(
    py: Python<'py>,
    x: Bound<'py, PyArray2<f64>>,
    k: usize,
    covariance_type: &str,
    init: &str,
    max_iter: usize,
    tol: f64,
    restarts: usize,
    reg: f64,
    seed: u64,
    backend: &str,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let x = samples(&x)?;
    let params = GmmParams {
        k,
        covariance: covariance(covariance_type)?,
        init: match init {
            "kmeans" | "k-means++" | "kmeans++" => GmmInit::KMeansPlusPlus,
            "random" => GmmInit::Random,
            other => {
                return Err(PyValueError::new_err(format!(
                    "invalid parameter `init_params`: {other:?} is not kmeans or random"
                )))
            }
        },
        max_iter,
        tol,
        restarts,
        reg,
        seed,
        backend: match backend {
            "auto" => GmmBackend::auto(x.n, x.d),
            "cpu" => GmmBackend::Cpu,
            "gpu" => GmmBackend::Gpu,
            other => {
                return Err(PyValueError::new_err(format!(
                    "invalid parameter `backend`: {other:?} is not auto, cpu or gpu"
                )))
            }
        },
    };
    let pool = crate::pool(threads)?;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let fit = crate::run::detached(py, &pool, &stop, || {
        gmm::fit(&x, &params, &sgtsne::progress::Silent)
    })?
    .py_err()?;
    let out = PyDict::new(py);
    out.set_item("model", model_arrays(py, &fit.model)?)?;
    out.set_item("initial", model_arrays(py, &fit.initial)?)?;
    out.set_item("labels", PyArray1::from_vec(py, fit.labels.clone()))?;
    out.set_item(
        "responsibilities",
        arrays::to_array2(py, fit.responsibilities.clone(), k)?,
    )?;
    out.set_item("history", fit.history.clone())?;
    out.set_item("converged", fit.converged)?;
    out.set_item("score", fit.mean_log_likelihood)?;
    out.set_item("bic", fit.bic())?;
    out.set_item("aic", fit.aic())?;
    out.set_item("notes", fit.notes.clone())?;
    out.set_item("backend", params.backend.name())?;
    Ok(out)
}

/// The responsibilities (n × K) and log-likelihoods (n) of `x` under the model given by
/// its arrays, their mean, and the model's free parameters.
#[pyfunction]
#[pyo3(signature = (covariance_type, weights, means, covariances, x, threads=None))]
fn gmm_score<'py>(
    py: Python<'py>,
    covariance_type: &str,
    weights: Bound<'py, PyArray1<f64>>,
    means: Bound<'py, PyArray2<f64>>,
    covariances: Bound<'py, PyArray2<f64>>,
    x: Bound<'py, PyArray2<f64>>,
    threads: Option<usize>,
) -> PyResult<ScoreArrays<'py>> {
    let (_, d, means) = arrays::vec2(&means)?;
    let model = Model {
        covariance: covariance(covariance_type)?,
        d,
        weights: arrays::vec1(&weights)?,
        means,
        covariances: arrays::vec2(&covariances)?.2,
    };
    let x = samples(&x)?;
    let k = model.k();
    let pool = crate::pool(threads)?;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let scored = crate::run::detached(py, &pool, &stop, || gmm::score(&model, &x))?.py_err()?;
    Ok((
        arrays::to_array2(py, scored.responsibilities, k)?,
        PyArray1::from_vec(py, scored.log_likelihood),
        scored.mean_log_likelihood,
        model.n_parameters(),
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(gmm_fit, m)?)?;
    m.add_function(wrap_pyfunction!(gmm_score, m)?)?;
    Ok(())
}
