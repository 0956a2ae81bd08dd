//! `sgtsne._sgtsne`: the Python package's extension, a thin layer over the library's own
//! `embed`, `transform`, `search_neighbors`, `kl_of_embedding`, `gmm`, `view` and GPU probe — the
//! calls the CLI makes. Arrays and parameters are converted here; everything else is the
//! library's. The pure-Python part (`python/sgtsne/`) validates inputs the scikit-learn way
//! and shapes the results.

mod arrays;
mod errors;
mod gmm;
mod params;
mod progress;
mod run;
mod view;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use numpy::{PyArray1, PyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use sgtsne::embed::{self, Input};
use sgtsne::io::{Labels, NeighborLists};
use sgtsne::transform::Model;
use sgtsne::CsrPoints;

use errors::IntoPy;
use progress::PyProgress;

/// Sparse rows from Python: (n, d, indptr, indices, data).
type SparseRows<'py> = (
    usize,
    usize,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f32>>,
);

/// Neighbour lists from Python: (n, indptr, indices, distances).
type ListsArg<'py> = (
    usize,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
);

/// Labels from Python: (codes, names).
type LabelsArg<'py> = (Bound<'py, PyArray1<u32>>, Vec<String>);

/// Neighbours handed back: (indices, distances), each n × k.
type Found<'py> = (Bound<'py, PyArray2<i64>>, Bound<'py, PyArray2<f64>>);

/// An array pair handed back: (values, report JSON).
type WithReport<'py> = (Bound<'py, PyArray2<f32>>, String);

/// A rayon pool of `threads` workers (`None`: one per core), as `--threads` makes: made
/// on the first call that asks for that many and kept for the next ones, so that a
/// process's later fits start no threads (the workers sleep between calls).
fn pool(threads: Option<usize>) -> PyResult<Arc<rayon::ThreadPool>> {
    static POOLS: Mutex<Vec<(Option<usize>, Arc<rayon::ThreadPool>)>> = Mutex::new(Vec::new());
    let threads = threads.map(|t| t.max(1));
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, pool)) = pools.iter().find(|(t, _)| *t == threads) {
        return Ok(pool.clone());
    }
    let mut b = rayon::ThreadPoolBuilder::new().thread_name(|i| format!("sgtsne-{i}"));
    if let Some(t) = threads {
        b = b.num_threads(t);
    }
    let pool = Arc::new(b.build().map_err(|e| {
        pyo3::exceptions::PyRuntimeError::new_err(format!("cannot start threads: {e}"))
    })?);
    pools.push((threads, pool.clone()));
    Ok(pool)
}

/// The rows of `x` read in place, refused (naming `source`, the row and the column) when a
/// value is not finite.
fn finite_points(x: &Bound<'_, PyArray2<f32>>, source: &str) -> PyResult<sgtsne::Points> {
    let points = arrays::points_in_place(x)?;
    points.check_finite(source).py_err()?;
    Ok(points)
}

/// Neighbour lists from the package's CSR triple (`indptr`, `indices`, `distances`).
fn neighbor_lists(lists: &ListsArg<'_>) -> PyResult<NeighborLists> {
    let n = lists.0;
    let indptr = arrays::vec1(&lists.1)?;
    if indptr.iter().any(|&p| p < 0) {
        return Err(PyValueError::new_err("neighbors: negative row start"));
    }
    let indptr = indptr.into_iter().map(|p| p as usize).collect();
    let indices = arrays::vec1(&lists.2)?;
    let distances = arrays::vec1(&lists.3)?;
    NeighborLists::from_rows(n, indptr, &indices, distances, "neighbors").py_err()
}

/// The thing to embed: dense rows read in place, sparse rows, or (no points) P from given
/// neighbours.
fn input(
    x: Option<&Bound<'_, PyArray2<f32>>>,
    sparse: Option<SparseRows<'_>>,
) -> PyResult<Option<Input>> {
    if let Some(x) = x {
        // The engine's screen of the values refuses one that is not finite, by row and
        // column, in the same pass that looks for copies.
        return Ok(Some(Input::Points(arrays::points_in_place(x)?)));
    }
    let Some((n, d, indptr, indices, data)) = sparse else {
        return Ok(None);
    };
    let indptr: Vec<i64> = arrays::vec1(&indptr)?;
    let indices: Vec<i64> = arrays::vec1(&indices)?;
    if indices.iter().any(|&j| j < 0 || j as usize >= d) || indptr.iter().any(|&p| p < 0) {
        return Err(PyValueError::new_err(
            "sparse input: an index is out of range",
        ));
    }
    let rows = CsrPoints {
        n,
        d,
        indptr: indptr.into_iter().map(|p| p as u64).collect(),
        indices: indices.into_iter().map(|j| j as u32).collect(),
        data: arrays::vec1(&data)?,
    };
    rows.check_finite("X").py_err()?;
    Ok(Some(Input::Sparse(rows)))
}

/// P in the layout [`Input::Affinities`] takes.
fn to_f64_csr(p: &sgtsne::affinity::Affinities) -> sprs::CsMat<f64> {
    let (indptr, indices, data) = (p.indptr(), p.indices(), p.data());
    sprs::CsMat::new(
        p.shape(),
        indptr.raw_storage().to_vec(),
        indices.iter().map(|&j| j as usize).collect(),
        data.iter().map(|&v| f64::from(v)).collect(),
    )
}

/// What `embed` hands back to Python.
#[pyclass(module = "sgtsne._sgtsne", frozen)]
struct Fitted {
    /// The embedding, n × dims.
    #[pyo3(get)]
    y: Py<PyArray2<f32>>,
    /// The run report as JSON (the CLI's `--report`).
    #[pyo3(get)]
    report: String,
    /// What `transform` needs, when kept.
    #[pyo3(get)]
    map: Option<Py<Map>>,
}

/// A fitted map that new points can be placed into (the library's transform model).
#[pyclass(module = "sgtsne._sgtsne", frozen)]
struct Map {
    model: Model,
}

#[pymethods]
impl Map {
    /// The model's bytes (`embed --save-model`'s format), for pickling.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self
            .model
            .encode(std::path::Path::new("<map>"))
            .map_err(|e| errors::to_py(e.into()))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// A map from [`Map::to_bytes`]' bytes (or a `.sgtsne` file's).
    #[staticmethod]
    fn from_bytes(bytes: &[u8]) -> PyResult<Map> {
        let model = Model::decode(bytes, std::path::Path::new("<map>"))
            .map_err(|e| errors::to_py(e.into()))?;
        Ok(Map { model })
    }

    /// Features per input point.
    #[getter]
    fn n_features(&self) -> usize {
        self.model.d_in
    }

    /// Places the rows of `x` into the map: (coordinates, report JSON).
    #[pyo3(signature = (x, params, threads=None))]
    fn transform<'py>(
        &self,
        py: Python<'py>,
        x: Bound<'py, PyArray2<f32>>,
        params: Bound<'py, PyDict>,
        threads: Option<usize>,
    ) -> PyResult<WithReport<'py>> {
        let points = finite_points(&x, "X")?;
        let p = params::transform_params(&params)?;
        let pool = pool(threads)?;
        let stop = AtomicBool::new(false);
        let model = &self.model;
        let placed = run::detached(py, &pool, &stop, || {
            sgtsne::transform::transform(model, points, &p, &sgtsne::progress::Silent)
        })?
        .py_err()?;
        let report = serde_json::to_string(&placed.report).unwrap_or_default();
        Ok((arrays::to_array2(py, placed.y, placed.dims)?, report))
    }
}

/// Embeds dense rows `x`, sparse rows `sparse` (n, d, indptr, indices, data) or, with
/// neither, the neighbours `neighbors` alone (their P, as the run would make it).
#[pyfunction]
#[pyo3(signature = (params, x=None, sparse=None, neighbors=None, labels=None, init=None,
    name="array", threads=None, say=None, warn=None, callbacks=Vec::new(), callbacks_every=50))]
#[allow(clippy::too_many_arguments)]
fn embed_points<'py>(
    py: Python<'py>,
    params: Bound<'py, PyDict>,
    x: Option<Bound<'py, PyArray2<f32>>>,
    sparse: Option<SparseRows<'py>>,
    neighbors: Option<ListsArg<'py>>,
    labels: Option<LabelsArg<'py>>,
    init: Option<Bound<'py, PyArray2<f32>>>,
    name: &str,
    threads: Option<usize>,
    say: Option<Py<PyAny>>,
    warn: Option<Py<PyAny>>,
    callbacks: Vec<Py<PyAny>>,
    callbacks_every: usize,
) -> PyResult<Fitted> {
    let init_y = init
        .map(|y| arrays::vec2(&y).map(|(_, _, v)| v))
        .transpose()?;
    let mut p = params::embed_params(&params, init_y)?;
    if !callbacks.is_empty() {
        p.optim.kl_every = callbacks_every.max(1);
    }
    p.validate().py_err()?;
    let given = match &neighbors {
        Some(lists) => {
            let lists = neighbor_lists(lists)?;
            Some(sgtsne::knn::precomputed::from_lists(&lists, p.k(), "neighbors").py_err()?)
        }
        None => None,
    };
    let input = match (input(x.as_ref(), sparse)?, given) {
        (Some(input), given) => {
            p.knn_given = given.map(std::sync::Arc::new);
            input
        }
        (None, Some(nb)) => {
            let affinities =
                sgtsne::affinity::from_neighbors_multiscale(&nb, &p.scales()).py_err()?;
            Input::Affinities(to_f64_csr(&affinities))
        }
        (None, None) => return Err(PyValueError::new_err("nothing to embed")),
    };
    let labels = labels
        .map(|(codes, names)| arrays::vec1(&codes).map(|codes| Labels { codes, names }))
        .transpose()?;
    let warn = match warn {
        Some(w) => w,
        None => py.None(),
    };
    let progress = PyProgress::new(say, warn);
    let pool = pool(threads)?;
    let stop = AtomicBool::new(false);
    let dims = p.dims;
    let mut watch = run::Watch::new(&stop, callbacks, callbacks_every, dims);
    // The GPU starts and the kernels compile while the run sets up; the context and the
    // compiled kernels stay for the process's next run.
    let warm = embed::WarmUp::start(&p);
    // Over several GPUs, NCCL's communicators made ahead end before the call returns,
    // whether the run succeeds or not (dropped before `warm`, as the CLI does).
    let ended = sgtsne::gpu::comm::EndedOnDrop;
    let result = run::detached(py, &pool, &stop, || {
        embed::embed_observed(
            input,
            name,
            labels.as_ref(),
            &p,
            &progress,
            Some(&mut watch),
        )
    });
    drop(ended);
    drop(warm);
    if let Some(e) = watch.error.lock().unwrap_or_else(|e| e.into_inner()).take() {
        return Err(e);
    }
    let mut result = result?.py_err()?;
    result.report.peak_rss_bytes = sgtsne::report::peak_rss_bytes();
    for line in result.report.summary_lines() {
        progress.say(&line);
    }
    let map = match p.keep_reference {
        true => Some(Py::new(
            py,
            Map {
                model: Model::of(&result).py_err()?,
            },
        )?),
        false => None,
    };
    let report = serde_json::to_string(&result.report).unwrap_or_default();
    let y = std::mem::take(&mut result.y);
    Ok(Fitted {
        y: arrays::to_array2(py, y, result.dims)?.unbind(),
        report,
        map,
    })
}

/// Every point's `k` nearest neighbours as `embed` finds them: (indices, plain distances),
/// each n × k.
#[pyfunction]
#[pyo3(signature = (x, k, params, threads=None))]
fn knn<'py>(
    py: Python<'py>,
    x: Bound<'py, PyArray2<f32>>,
    k: usize,
    params: Bound<'py, PyDict>,
    threads: Option<usize>,
) -> PyResult<Found<'py>> {
    if k < 3 {
        return Err(PyValueError::new_err(format!(
            "invalid parameter `k`: must be at least 3 (k = ⌈3·perplexity⌉, and t-SNE's \
             perplexity is at least 1), got {k}"
        )));
    }
    let mut p = params::embed_params(&params, None)?;
    p.perplexity = embed::perplexity_for(k);
    p.max_neighbors = k;
    let input = Input::Points(finite_points(&x, "X")?);
    let pool = pool(threads)?;
    let stop = AtomicBool::new(false);
    let found = run::detached(py, &pool, &stop, || {
        embed::search_neighbors(input, &p, &sgtsne::progress::Silent)
    })?
    .py_err()?;
    let distances = found.plain_distances();
    let nb = found.neighbors;
    let indices: Vec<i64> = nb.indices.iter().map(|&i| i64::from(i)).collect();
    Ok((
        arrays::to_array2(py, indices, nb.k)?,
        arrays::to_array2(py, distances, nb.k)?,
    ))
}

/// KL(P‖Q) of the embedding `y` of the points `x`, P as `embed` builds it.
#[pyfunction]
#[pyo3(signature = (x, y, perplexity=30.0, exact=false, dof=1.0, pca=Some(50), threads=None))]
#[allow(clippy::too_many_arguments)]
fn kl_divergence(
    py: Python<'_>,
    x: Bound<'_, PyArray2<f32>>,
    y: Bound<'_, PyArray2<f32>>,
    perplexity: f64,
    exact: bool,
    dof: f64,
    pca: Option<usize>,
    threads: Option<usize>,
) -> PyResult<f64> {
    let points = finite_points(&x, "X")?;
    let y = finite_points(&y, "Y")?;
    let options = sgtsne::quality::KlOptions {
        perplexity,
        exact,
        dof,
        pca,
    };
    let pool = pool(threads)?;
    let stop = AtomicBool::new(false);
    run::detached(py, &pool, &stop, || {
        sgtsne::quality::kl_of_embedding(points, &y, &options)
    })?
    .py_err()
}

/// What this process can use: `(threads, gpu, reason)` — the GPU's description, or why
/// there is none.
#[pyfunction]
fn probe(py: Python<'_>) -> (usize, Option<String>, Option<String>) {
    let threads = rayon::current_num_threads();
    py.detach(|| match sgtsne::gpu::probe() {
        Ok(d) => (
            threads,
            Some(format!(
                "{} (compute capability {}.{}, {:.1} GiB)",
                d.name,
                d.compute_capability.0,
                d.compute_capability.1,
                d.total_memory as f64 / (1u64 << 30) as f64
            )),
            None,
        ),
        Err(reason) => (threads, None, Some(reason)),
    })
}

/// Whether NCCL (several GPUs) can be loaded.
#[pyfunction]
fn nccl_present() -> bool {
    sgtsne::gpu::comm::nccl_present()
}

/// Registers the files of a CUDA library found outside the loader's path (`name`: NVRTC,
/// cuFFT, cuBLAS, cuSOLVER or NCCL; `files` in load order), loaded only when a stage first
/// needs it ([`sgtsne::gpu::libraries`]).
#[pyfunction]
fn register_cuda_library(name: &str, files: Vec<std::path::PathBuf>) -> PyResult<()> {
    use sgtsne::gpu::libraries::{register, CudaLibrary};
    let library = CudaLibrary::named(name)
        .ok_or_else(|| PyValueError::new_err(format!("unknown CUDA library {name:?}")))?;
    register(library, files);
    Ok(())
}

/// Compiles every kernel for `arch` with this process's NVRTC (no GPU needed); how many.
#[pyfunction]
#[pyo3(signature = (arch="sm_90", threads=2))]
fn compile_kernels(py: Python<'_>, arch: &str, threads: usize) -> PyResult<usize> {
    let arch: &'static str = match arch {
        "sm_80" => "sm_80",
        "sm_86" => "sm_86",
        "sm_89" => "sm_89",
        "sm_90" => "sm_90",
        "sm_100" => "sm_100",
        "sm_120" => "sm_120",
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown architecture {other:?}"
            )))
        }
    };
    py.detach(|| sgtsne::gpu::compile::compile_every_kernel(arch, threads))
        .py_err()
}

#[pymodule]
fn _sgtsne(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Fitted>()?;
    m.add_class::<Map>()?;
    m.add_function(wrap_pyfunction!(embed_points, m)?)?;
    m.add_function(wrap_pyfunction!(knn, m)?)?;
    m.add_function(wrap_pyfunction!(kl_divergence, m)?)?;
    m.add_function(wrap_pyfunction!(probe, m)?)?;
    m.add_function(wrap_pyfunction!(nccl_present, m)?)?;
    m.add_function(wrap_pyfunction!(compile_kernels, m)?)?;
    m.add_function(wrap_pyfunction!(register_cuda_library, m)?)?;
    gmm::register(m)?;
    view::register(m)?;
    Ok(())
}
