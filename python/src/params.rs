//! The Python package's parameters onto the library's [`EmbedParams`]: the same names as
//! `sgtsne embed`'s flags (underscores for dashes), each absent or `None` key the library's
//! default, which is the CLI's. Values are range-checked by the library
//! ([`EmbedParams::validate`]), so both front doors give the same message for a mistake.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use sgtsne::backend::BackendKind;
use sgtsne::embed::{
    AffinityMethod, EmbedParams, KnnMethod, PointOrder, Precision, RepulsionMethod,
};
use sgtsne::init::InitKind;
use sgtsne::optim::AutoIters;
use sgtsne::prep::Metric;
use sgtsne::repulse::GridSpec;
use sgtsne::transform::TransformParams;

/// A parameter given as text, one of `choices` (`(name, value)`).
fn choice<T: Copy>(name: &str, given: &str, choices: &[(&str, T)]) -> PyResult<T> {
    let lower = given.to_ascii_lowercase().replace('_', "-");
    choices
        .iter()
        .find(|(c, _)| *c == lower)
        .map(|&(_, v)| v)
        .ok_or_else(|| {
            let names: Vec<&str> = choices.iter().map(|(c, _)| *c).collect();
            PyValueError::new_err(format!(
                "invalid parameter `{name}`: {given:?} is not one of {}",
                names.join(", ")
            ))
        })
}

/// The value of `key`, when given and not `None`.
fn get<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<T>> {
    match d.get_item(key)? {
        Some(v) if !v.is_none() => v.extract::<T>().map(Some).map_err(|e| {
            let e: PyErr = e.into();
            PyValueError::new_err(format!("invalid parameter `{key}`: {e}"))
        }),
        _ => Ok(None),
    }
}

/// The parameters of placing new points ([`TransformParams`]; absent keys its defaults).
pub fn transform_params(d: &Bound<'_, PyDict>) -> PyResult<TransformParams> {
    let mut p = TransformParams::default();
    for (key, slot) in [
        ("perplexity", &mut p.perplexity),
        ("learning_rate", &mut p.learning_rate),
        ("exaggeration", &mut p.exaggeration),
        ("momentum", &mut p.momentum),
    ] {
        if let Some(v) = get(d, key)? {
            *slot = v;
        }
    }
    if let Some(v) = get(d, "iters")? {
        p.iters = v;
    }
    if let Some(v) = get(d, "init_neighbors")? {
        p.init_neighbors = v;
    }
    if let Some(v) = get::<String>(d, "backend")? {
        p.backend = backend(&v)?;
    }
    Ok(p)
}

/// The backend's name.
pub fn backend(name: &str) -> PyResult<BackendKind> {
    choice(
        "backend",
        name,
        &[
            ("auto", BackendKind::Auto),
            ("cpu", BackendKind::Cpu),
            ("gpu", BackendKind::Gpu),
            ("hybrid", BackendKind::Hybrid),
        ],
    )
}

/// The metric's name.
pub fn metric(name: &str) -> PyResult<Metric> {
    choice(
        "metric",
        name,
        &[
            ("euclidean", Metric::Euclidean),
            ("cosine", Metric::Cosine),
            ("correlation", Metric::Correlation),
            ("inner-product", Metric::InnerProduct),
        ],
    )
}

/// The run's parameters from `d` (see the module doc); `init_y`, an initial embedding in
/// input order, when the caller gives one.
pub fn embed_params(d: &Bound<'_, PyDict>, init_y: Option<Vec<f32>>) -> PyResult<EmbedParams> {
    let mut p = EmbedParams::default();
    if let Some(v) = get::<usize>(d, "dims")? {
        p.dims = v;
    }
    if let Some(scales) = get::<Vec<f64>>(d, "perplexity")? {
        match scales.as_slice() {
            [] => {
                return Err(PyValueError::new_err(
                    "invalid parameter `perplexity`: empty",
                ))
            }
            [one] => p.perplexity = *one,
            [.., last] => {
                p.perplexity = *last;
                p.multiscale = scales.clone();
            }
        }
    }
    if let Some(v) = get(d, "max_neighbors")? {
        p.max_neighbors = v;
    }
    if let Some(v) = get::<String>(d, "affinities")? {
        p.affinities = choice(
            "affinities",
            &v,
            &[
                ("knn", AffinityMethod::Knn),
                ("exact", AffinityMethod::Exact),
            ],
        )?;
    }
    if let Some(v) = get(d, "dof")? {
        p.kernel = sgtsne::kernel::Kernel { dof: v };
    }
    if let Some(v) = get::<String>(d, "knn")? {
        p.knn = choice(
            "neighbors",
            &v,
            &[
                ("auto", KnnMethod::Auto),
                ("exact", KnnMethod::Exact),
                ("approx", KnnMethod::Approx),
                ("hnsw", KnnMethod::Hnsw),
            ],
        )?;
    }
    if let Some(v) = get::<String>(d, "metric")? {
        p.metric = metric(&v)?;
    }
    p.pca = match d.get_item("pca")? {
        Some(v) if v.is_none() => None,
        Some(v) => Some(
            v.extract()
                .map_err(|e| PyValueError::new_err(format!("invalid parameter `pca`: {e}")))?,
        ),
        None => p.pca,
    };
    if let Some(v) = get::<String>(d, "order")? {
        p.order = choice(
            "order",
            &v,
            &[
                ("auto", None),
                ("locality", Some(PointOrder::Locality)),
                ("cells", Some(PointOrder::Cells)),
                ("input", Some(PointOrder::Input)),
            ],
        )?;
    }
    search_params(d, &mut p)?;
    p.init = match (get::<String>(d, "init")?, &init_y) {
        (_, Some(_)) => InitKind::Given,
        (Some(v), None) => choice(
            "init",
            &v,
            &[("pca", InitKind::Pca), ("random", InitKind::Random)],
        )?,
        (None, None) => p.init,
    };
    p.init_y = init_y.map(Arc::from);
    if let Some(v) = get(d, "init_rescale")? {
        p.init_rescale = v;
    }
    p.grid = grid(d, p.dims)?;
    if let Some(v) = get::<String>(d, "repulsion")? {
        p.repulsion = choice(
            "repulsion",
            &v,
            &[
                ("fft", RepulsionMethod::Fft),
                ("exact", RepulsionMethod::Exact),
            ],
        )?;
    }
    if let Some(v) = get::<usize>(d, "grid_max_nodes")? {
        if v == 0 {
            return Err(PyValueError::new_err(
                "invalid parameter `grid_max_nodes`: must be at least 1",
            ));
        }
        p.grid_max_nodes = Some(v);
    }
    if let Some(v) = get::<usize>(d, "coarse_delay")? {
        p.coarse_delay = Some(v);
    }
    if let Some(v) = get::<String>(d, "near_field")? {
        p.near_field = choice(
            "near_field",
            &v,
            &[("auto", None), ("on", Some(true)), ("off", Some(false))],
        )?;
    }
    if let Some(v) = get::<String>(d, "precision")? {
        p.precision = choice(
            "precision",
            &v,
            &[("f32", Precision::F32), ("f64", Precision::F64)],
        )?;
    }
    if let Some(v) = get::<String>(d, "backend")? {
        p.backend = backend(&v)?;
    }
    p.gpus = get(d, "gpus")?;
    if let Some(v) = get(d, "seed")? {
        p.seed = v;
        p.ivf.seed = v;
    }
    if let Some(v) = get(d, "lambda")? {
        p.lambda = v;
    }
    p.learning_rate = get(d, "learning_rate")?;
    optim_params(d, &mut p)?;
    if let Some(v) = get(d, "keep_reference")? {
        p.keep_reference = v;
    }
    Ok(p)
}

/// The approximate kNN's settings (`knn_probes`, …).
fn search_params(d: &Bound<'_, PyDict>, p: &mut EmbedParams) -> PyResult<()> {
    let ivf = &mut p.ivf;
    if let Some(v) = get(d, "knn_probes")? {
        ivf.probes = v;
    }
    if let Some(v) = get(d, "knn_spread")? {
        ivf.spread = v;
    }
    if let Some(v) = get(d, "knn_max_probes")? {
        ivf.max_probes = v;
    }
    if let Some(v) = get(d, "knn_refine")? {
        ivf.refine = v;
    }
    if let Some(v) = get(d, "knn_refine_below")? {
        ivf.refine_below = v;
    }
    if let Some(v) = get(d, "knn_fan")? {
        ivf.fan = v;
    }
    if let Some(v) = get(d, "knn_lists")? {
        ivf.lists = v;
    }
    Ok(())
}

/// The repulsion grid: `grid` ("auto", "fixed" or nodes per axis), `grid_spacing`,
/// `grid_error`, as `--grid`, `--grid-spacing` and `--grid-error` combine.
fn grid(d: &Bound<'_, PyDict>, dims: usize) -> PyResult<Option<GridSpec>> {
    let spacing: Option<f64> = get(d, "grid_spacing")?;
    if let Some(e) = get::<f64>(d, "grid_error")? {
        return GridSpec::for_error(e, dims)
            .map(Some)
            .map_err(crate::errors::to_py);
    }
    let named = match d.get_item("grid")? {
        Some(v) if v.is_none() => None,
        Some(v) => match v.extract::<usize>() {
            Ok(n) => return Ok(Some(GridSpec::Fixed(n))),
            Err(_) => Some(
                v.extract::<String>()
                    .map_err(|e| PyValueError::new_err(format!("invalid parameter `grid`: {e}")))?,
            ),
        },
        None => None,
    };
    Ok(
        match (
            named.as_deref().map(str::to_ascii_lowercase).as_deref(),
            spacing,
        ) {
            (None, None) => None,
            (None | Some("auto"), Some(h)) => Some(GridSpec::Auto { h }),
            (Some("auto"), None) => Some(GridSpec::default_auto()),
            (Some("fixed"), None) => Some(GridSpec::default_fixed(dims)),
            (Some(other), _) => {
                return Err(PyValueError::new_err(format!(
                    "invalid parameter `grid`: {other:?} is not auto, fixed or a number of nodes \
                 per axis (grid_spacing applies to auto only)"
                )))
            }
        },
    )
}

/// The optimiser's schedule (`iters`, exaggerations, momenta, the coarse step,
/// `max_step_norm`, `deterministic`, `kl_every`).
fn optim_params(d: &Bound<'_, PyDict>, p: &mut EmbedParams) -> PyResult<()> {
    if let Some(cap) = get::<usize>(d, "auto_iters_cap")? {
        p.auto_iters = Some(AutoIters {
            cap,
            ..AutoIters::default()
        });
        p.optim.iters = cap;
        sgtsne::optim::stability::auto_schedule(&mut p.optim);
    }
    let o = &mut p.optim;
    if let Some(v) = get(d, "iters")? {
        o.iters = v;
    }
    if let Some(v) = get(d, "early_exaggeration")? {
        o.early_exaggeration = v;
    }
    if let Some(v) = get(d, "early_exaggeration_iters")? {
        o.early_exaggeration_iters = v;
    }
    if let Some(v) = get(d, "exaggeration")? {
        o.exaggeration = v;
    }
    if let Some(v) = get(d, "early_momentum")? {
        o.momentum_early = v;
    }
    if let Some(v) = get(d, "momentum")? {
        o.momentum_late = v;
    }
    if let Some(v) = get(d, "coarse_boost")? {
        o.coarse_boost = v;
    }
    if let Some(v) = get(d, "coarse_cell")? {
        o.coarse_cell = v;
    }
    match d.get_item("max_step_norm")? {
        Some(v) if v.is_none() => o.max_step_norm = None,
        Some(v) => {
            o.max_step_norm = Some(v.extract().map_err(|e| {
                PyValueError::new_err(format!("invalid parameter `max_step_norm`: {e}"))
            })?)
        }
        None => {}
    }
    if let Some(v) = get(d, "deterministic")? {
        o.deterministic = v;
    }
    if let Some(v) = get(d, "kl_every")? {
        o.kl_every = v;
    }
    Ok(())
}
