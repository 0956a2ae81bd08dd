//! `embed`: the whole pipeline from points or a graph to an embedding and its report
//! (DESIGN §1). Stages run in order, each timed; the backend decides where the gradient
//! is computed.

use std::time::Instant;

use crate::affinity::{self, GraphParams};
use crate::backend::gpu::{optimize_device_observed, Downloaded};
use crate::backend::{cpu::CpuGradient, hybrid::optimize_hybrid, BackendKind};
use crate::gpu::compile::Variant;
use crate::gpu::kernels::KernelId;
use crate::gpu::real::DeviceReal;
use crate::gpu::Gpu;
use crate::init::{self, InitKind};
use crate::io::Labels;
use crate::knn::Neighbors;
use crate::optim::{self, Observer, OptimParams, OptimReport, Stop};
use crate::progress::Progress;
use crate::report::{InputInfo, KnnReport, Quality, Report, StageSeconds};
use crate::repulse::GridSpec;
use crate::sparse::{Csb, P};
use crate::{prep, quality, CsrPoints, Error, Points, Result};

pub mod memory;
mod params;
mod prepare;
mod search;
mod sparse;

pub use params::{
    AffinityMethod, EmbedParams, KnnMethod, PointOrder, Precision, RepulsionMethod,
    AUTO_APPROX_GPU_MIN, AUTO_EXACT_MAX, MAX_NEIGHBORS,
};
pub(crate) use prepare::prepare_points;
pub use search::{reduced_points, search_neighbors, Searched};

/// Neighbours whose label vote and preservation the report measures.
const QUALITY_K: usize = 10;

/// What to embed.
pub enum Input {
    /// A dense point set.
    Points(Points),
    /// A sparse point set (e.g. an AnnData count matrix): reduced by PCA straight from its
    /// sparse rows, never densified ([`prep::sparse_pca`]), then embedded as points.
    Sparse(CsrPoints),
    /// A sparse weighted graph, n × n (SG-t-SNE mode): its weights are λ-rescaled.
    Graph(sprs::CsMat<f64>),
    /// The joint probabilities P, n × n, used as given: symmetrised and normalised only
    /// where they are not (and the report's notes say so), never λ-rescaled.
    Affinities(sprs::CsMat<f64>),
}

impl Input {
    /// Number of points (graph nodes).
    pub fn n(&self) -> usize {
        match self {
            Input::Points(p) => p.n,
            Input::Sparse(s) => s.n,
            Input::Graph(g) | Input::Affinities(g) => g.rows(),
        }
    }

    /// Features per point as given (none for a graph).
    fn d(&self) -> Option<usize> {
        match self {
            Input::Points(p) => Some(p.d),
            Input::Sparse(s) => Some(s.d),
            Input::Graph(_) | Input::Affinities(_) => None,
        }
    }
}

/// The result of [`embed`].
pub struct Embedding {
    /// Row-major n × dims coordinates.
    pub y: Vec<f32>,
    /// Embedding dimension.
    pub dims: usize,
    /// The run report (the caller adds its `load` and `write` seconds).
    pub report: Report,
    /// What placing new points into this map needs, when
    /// [`EmbedParams::keep_reference`] asked for it.
    pub reference: Option<Reference>,
}

/// The reference side of a map, for [`crate::transform`]: the points as the kNN saw them and
/// the PCA that made them, in input order.
pub struct Reference {
    /// After the metric's transform and PCA, in input order.
    pub points: Points,
    /// The PCA that reduced them (`None`: the points were used as given).
    pub pca: Option<prep::Pca>,
    /// Features per input point, before PCA.
    pub d_in: usize,
}

/// What stages 2–4 produce.
pub(crate) struct Prepared {
    pub(crate) p: P,
    /// The points after PCA (point mode), for the PCA initialisation.
    points: Option<Points>,
    /// Whether `points` are PCA scores already (columns by decreasing variance).
    reduced: bool,
    /// The fitted PCA, when [`EmbedParams::keep_reference`] asked for it.
    basis: Option<prep::Pca>,
    /// The kNN graph (point mode), for the preservation measure.
    neighbors: Option<Neighbors>,
    /// The kNN stage's report (point mode).
    knn: Option<KnnReport>,
    /// The internal numbering when it is not the input's: point `r` is input point `order[r]`.
    order: Option<Vec<u32>>,
    /// What the stages changed of what they were given, for the report.
    notes: Vec<String>,
}

/// Runs the pipeline on `input` named `name`; `labels`, when given, feed the quality
/// measures. CPU stages run on the current rayon pool.
pub fn embed(
    input: Input,
    name: &str,
    labels: Option<&Labels>,
    params: &EmbedParams,
    progress: &dyn Progress,
) -> Result<Embedding> {
    embed_observed(input, name, labels, params, progress, None)
}

/// [`embed`], showing Y to `observer` after the optimiser steps it asks for (e.g.
/// [`optim::Snapshots`]): on the host and in input order whatever the backend and the
/// internal numbering, so an observer is written once for all of them. Only the steps it
/// asks for cost anything (on the gpu backend, a download of Y each).
pub fn embed_observed(
    mut input: Input,
    name: &str,
    labels: Option<&Labels>,
    params: &EmbedParams,
    progress: &dyn Progress,
    observer: Option<&mut dyn Observer<[f32]>>,
) -> Result<Embedding> {
    let start = Instant::now();
    params.validate()?;
    let backend = params.backend.resolve()?;
    let mut seconds = StageSeconds::default();
    let mut params = params.clone();
    params.grid = Some(
        params
            .grid
            .unwrap_or_else(|| GridSpec::default_for(params.dims, backend.kind.on_device())),
    );
    let n = input.n();
    let d_in = input.d();
    if params.keep_reference && !matches!(input, Input::Points(_)) {
        return Err(Error::param(
            "save-model",
            "a model keeps the reference points to place new ones among: it needs dense \
             points (not sparse rows, a graph or affinities)",
        ));
    }
    let mut info = match &input {
        Input::Points(p) => input_info(name, "points", p.n, p.d),
        Input::Sparse(s) => input_info(name, "sparse points", s.n, s.d),
        Input::Graph(g) => input_info(name, "graph", g.rows(), 0),
        Input::Affinities(p) => input_info(name, "affinities", p.rows(), 0),
    };
    let mut notes: Vec<String> = params.optim.fit_early_phase().into_iter().collect();
    if params.k() < params.k_wanted() && input.d().is_some() {
        notes.push(format!(
            "k capped at {} neighbours by --max-neighbors (⌈3·perplexity⌉ = {}): each \
             point's Gaussian is cut beyond its {}th neighbour",
            params.k(),
            params.k_wanted(),
            params.k()
        ));
    }
    if let Some(nb) = params.knn_given.clone() {
        given_neighbors_fit(&nb, &input, &mut params, &mut notes)?;
    }
    if input.d().is_none() && params.affinities == AffinityMethod::Exact {
        return Err(Error::param(
            "affinities",
            "`exact` calibrates P over the points; a graph or affinities given have none",
        ));
    }
    if input.d().is_none() && params.metric != crate::prep::Metric::Euclidean {
        return Err(Error::param(
            "metric",
            "applies to points, whose neighbours it ranks; a graph's edges are given",
        ));
    }
    resolve_search(&mut params, input.d().map(|_| n), backend.kind)?;
    screen(&mut input, name, &mut info, progress)?;
    let (memory_estimate, watch) = plan_memory(&input, &params, backend.kind)?;
    if let Some(l) = labels {
        if l.codes.len() != n {
            return Err(Error::Data(format!(
                "the labels have {} entries but the input has {n} points",
                l.codes.len()
            )));
        }
    }

    // The device's kernels compile in the background from here on, while the points are
    // reduced and searched, on as many threads as the run may use; the guard lives until
    // the run ends (see `Precompile`).
    let _precompile = match backend.kind {
        BackendKind::Cpu => None,
        kind => {
            let d = input.d().map(|d| params.pca.map_or(d, |m| m.min(d)));
            let sparse = matches!(input, Input::Sparse(_));
            let variants = device_kernels(d, sparse, kind, &params);
            Some(Gpu::get()?.precompile(&variants, rayon::current_num_threads()))
        }
    };

    // Stages 2–4: prepare, kNN, affinities.
    let prepared = match input {
        Input::Points(points) => {
            prepare_points(points, &params, backend.kind, &mut seconds, progress)?
        }
        Input::Sparse(rows) => {
            sparse::prepare_sparse(&rows, &params, backend.kind, &mut seconds, progress)?
        }
        Input::Graph(graph) => prepare_graph(&graph, &mut params, &mut seconds)?,
        Input::Affinities(p) => prepare_affinities(&p, &mut params, &mut seconds)?,
    };
    notes.extend(prepared.notes.iter().cloned());

    // Stage 6: initialise.
    let t = Instant::now();
    let dims = params.dims;
    let mut y = initialise(&prepared, &mut params, n)?;
    prep::clear_vector_upper_state();
    seconds.init = t.elapsed().as_secs_f64();
    let Prepared {
        p,
        points,
        basis,
        neighbors,
        knn,
        order,
        ..
    } = prepared;
    let reference = match (points, d_in) {
        (Some(points), Some(d_in)) if params.keep_reference => Some(Reference {
            points: match &order {
                Some(order) => Points::new(
                    points.n,
                    points.d,
                    crate::points::unpermute_rows(&points.data, order, points.d),
                ),
                None => points,
            },
            pca: basis,
            d_in,
        }),
        _ => None,
    };

    // Stages 5 and 7: layout of P, optimise.
    let lr = params
        .learning_rate
        .unwrap_or_else(|| OptimParams::auto_learning_rate(n, params.optim.early_exaggeration));
    params.learning_rate = Some(lr);
    params.optim.learning_rate = lr;
    let p_nnz = p.nnz();
    let mut in_order = observer.map(|inner| InputOrder {
        inner,
        order: order.as_deref(),
        dims,
    });
    let observer = in_order.as_mut().map(|o| o as &mut dyn Observer<[f32]>);
    let optimise = optimise(
        p,
        &mut y,
        &params,
        backend.kind,
        &mut seconds,
        progress,
        observer,
    )?;

    // Quality measures, in the internal numbering; then Y back in input order.
    let t = Instant::now();
    let quality = measure(&y, dims, labels, neighbors.as_ref(), order.as_deref());
    if let Some(order) = &order {
        y = crate::points::unpermute_rows(&y, order, dims);
    }
    seconds.quality = t.elapsed().as_secs_f64();
    seconds.total = start.elapsed().as_secs_f64();
    let memory = memory::MemoryReport {
        peak_device_bytes: watch.map(memory::DeviceWatch::finish),
        ..memory_estimate
    };

    let report = Report {
        version: env!("CARGO_PKG_VERSION"),
        input: info,
        threads: rayon::current_num_threads(),
        knn,
        p_nnz,
        seconds,
        optimise,
        quality,
        peak_rss_bytes: crate::report::peak_rss_bytes(),
        memory,
        backend,
        params,
        notes,
        clusters: None,
    };
    Ok(Embedding {
        y,
        dims,
        report,
        reference,
    })
}

/// Resolves the kNN method for `n` points (`None`: a graph, which has none) and the
/// internal numbering on the `backend`, and checks that they go together.
pub(crate) fn resolve_search(
    params: &mut EmbedParams,
    n: Option<usize>,
    backend: BackendKind,
) -> Result<()> {
    if let Some(n) = n {
        params.knn = params.knn.resolve(n, backend != BackendKind::Cpu);
    }
    params.order = Some(
        params
            .order
            .unwrap_or_else(|| PointOrder::default_for(backend, params.knn)),
    );
    if params.order == Some(PointOrder::Cells)
        && !(params.knn == KnnMethod::Approx && backend != BackendKind::Cpu)
    {
        return Err(Error::param(
            "order",
            "`cells` numbers the points by the cells of the GPU's approximate kNN: it needs \
             --knn approx on the gpu or hybrid backend",
        ));
    }
    Ok(())
}

/// The memory estimate of a run on points (nothing for a graph, whose P is given), checked
/// against the host's and, on the gpu and hybrid backends, the device's available memory
/// before any work; and the watch of the device's peak.
fn plan_memory(
    input: &Input,
    params: &EmbedParams,
    backend: BackendKind,
) -> Result<(memory::MemoryReport, Option<memory::DeviceWatch>)> {
    let on_gpu = backend != BackendKind::Cpu;
    let watch = if on_gpu {
        Some(memory::DeviceWatch::start(Gpu::get()?)?)
    } else {
        None
    };
    // Exact affinities check their n² pairs against the host's memory themselves
    // (`affinity::exact::max_points`); the estimate here is the kNN pipeline's.
    let Some(d_given) = input
        .d()
        .filter(|_| params.affinities == AffinityMethod::Knn)
    else {
        return Ok((memory::MemoryReport::default(), watch));
    };
    let n = input.n();
    let d = params.pca.map_or(d_given, |m| m.min(d_given));
    let shape = memory::RunShape {
        n,
        // Sparse rows are read already and never densified: the dense input the stages
        // hold is the PCA's n × d.
        d_in: if matches!(input, Input::Sparse(_)) {
            d
        } else {
            d_given
        },
        d,
        k: params.k().min(n.saturating_sub(1)),
        dims: params.dims,
    };
    let estimate = memory::estimate(shape, backend, params.knn);
    let device = if on_gpu {
        Some(memory::device_available(Gpu::get()?)?)
    } else {
        None
    };
    // What the run holds already and the estimate counts: the dense input (sparse rows are
    // not counted, and their PCA is not made yet).
    let held = match input {
        Input::Points(p) => (p.n * p.d * 4) as u64,
        _ => 0,
    };
    let host = memory::host_available(held);
    memory::check(&estimate, shape, host, device)?;
    Ok((estimate, watch))
}

/// Stages 4 and 5 in graph mode: P from the graph, λ-rescaled (SG-t-SNE); the
/// initialisation becomes random (a graph has no coordinates to take a PCA of).
fn prepare_graph(
    graph: &sprs::CsMat<f64>,
    params: &mut EmbedParams,
    seconds: &mut StageSeconds,
) -> Result<Prepared> {
    let t = Instant::now();
    let gp = GraphParams {
        lambda: params.lambda,
        ..Default::default()
    };
    let p = affinity::graph_affinities(graph, &gp)?;
    seconds.affinities = t.elapsed().as_secs_f64();
    Ok(without_points(p, params, Vec::new()))
}

/// Stages 4 and 5 with P given: checked, symmetrised and normalised where it is not (a
/// note says so), the initialisation random as for a graph.
fn prepare_affinities(
    given: &sprs::CsMat<f64>,
    params: &mut EmbedParams,
    seconds: &mut StageSeconds,
) -> Result<Prepared> {
    let t = Instant::now();
    let (p, notes) = affinity::given(given)?;
    seconds.affinities = t.elapsed().as_secs_f64();
    Ok(without_points(p, params, notes))
}

/// What stages 2–4 leave when P comes without points (a graph, affinities): no neighbours
/// and no PCA, so the initialisation becomes random.
fn without_points(
    p: affinity::Affinities,
    params: &mut EmbedParams,
    notes: Vec<String>,
) -> Prepared {
    if params.init == InitKind::Pca {
        params.init = InitKind::Random;
    }
    Prepared {
        p: P::from_csr(p),
        points: None,
        reduced: false,
        basis: None,
        neighbors: None,
        knn: None,
        order: None,
        notes,
    }
}

/// Checks neighbours given for `input` ([`EmbedParams::knn_given`]): points to go with
/// them, one row per point, and at least one neighbour per row. Fewer neighbours than
/// k = ⌈3·perplexity⌉ lower the perplexity to a third of them, with a note (openTSNE does
/// the same), since the calibration cannot spread a point's mass over more neighbours than
/// it has.
fn given_neighbors_fit(
    nb: &Neighbors,
    input: &Input,
    params: &mut EmbedParams,
    notes: &mut Vec<String>,
) -> Result<()> {
    if input.d().is_none() {
        return Err(Error::param(
            "knn-from",
            "applies to points; a graph or affinities need no neighbours",
        ));
    }
    if nb.n != input.n() {
        return Err(Error::Data(format!(
            "the neighbours given have {} rows, but the input has {} points",
            nb.n,
            input.n()
        )));
    }
    if nb.k < params.k() {
        let perplexity = nb.k as f64 / 3.0;
        notes.push(format!(
            "the neighbours given hold {} per point, fewer than k = {} for perplexity {}: \
             perplexity lowered to {perplexity:.3}",
            nb.k,
            params.k(),
            params.perplexity
        ));
        params.perplexity = perplexity;
        // Multiscale: the scales above the new largest one merge into it.
        params.multiscale.retain(|&u| u < perplexity);
        if !params.multiscale.is_empty() {
            params.multiscale.push(perplexity);
        }
    }
    Ok(())
}

/// The quality measures of the embedding `y` (in the internal numbering `order`, when it
/// is not the input's): 10-NN label accuracy with labels, 10-NN preservation with the
/// input's neighbours.
fn measure(
    y: &[f32],
    dims: usize,
    labels: Option<&Labels>,
    neighbors: Option<&Neighbors>,
    order: Option<&[u32]>,
) -> Quality {
    let embedded = quality::embedding_neighbors(y, dims, QUALITY_K);
    let codes = labels.map(|l| match order {
        Some(order) => order.iter().map(|&i| l.codes[i as usize]).collect(),
        None => l.codes.clone(),
    });
    Quality {
        knn_accuracy_10: codes
            .as_ref()
            .map(|c| quality::knn_accuracy(&embedded, QUALITY_K, c)),
        knn_preservation_10: neighbors
            .map(|nb| quality::knn_preservation(nb, &embedded, QUALITY_K)),
    }
}

/// Stage 6: the initial Y of `n` points; a PCA initialisation without points to take it
/// from falls back to random (and `params.init` says so).
pub(crate) fn initialise(
    prepared: &Prepared,
    params: &mut EmbedParams,
    n: usize,
) -> Result<Vec<f32>> {
    let dims = params.dims;
    Ok(match (&prepared.points, params.init) {
        (Some(scores), InitKind::Pca) if prepared.reduced && scores.d >= dims => {
            init::from_scores(scores, dims)
        }
        (Some(points), InitKind::Pca) if points.d >= dims => init::pca(points, dims)?,
        (_, InitKind::Pca) => {
            params.init = InitKind::Random;
            init::random(n, dims, params.seed)
        }
        (_, InitKind::Random) => init::random(n, dims, params.seed),
        (_, InitKind::Given) => {
            let given = params.init_y.as_deref().ok_or_else(|| {
                Error::param("init", "`given` needs the initial embedding (init_y)")
            })?;
            let y = init::given(given, n, dims, params.init_rescale)?;
            // In the internal numbering: point r is input point order[r].
            match &prepared.order {
                Some(order) => Points::new(n, dims, y).permuted(order).data,
                None => y,
            }
        }
    })
}

/// Shows Y in input order to an observer of the optimisation, which runs in the internal
/// numbering (`order`: row r is input point `order[r]`; `None`: the input's).
struct InputOrder<'a> {
    inner: &'a mut dyn Observer<[f32]>,
    order: Option<&'a [u32]>,
    dims: usize,
}

impl Observer<[f32]> for InputOrder<'_> {
    fn wants(&self, iter: usize) -> bool {
        self.inner.wants(iter)
    }

    fn observe(&mut self, iter: usize, y: &[f32]) -> Result<()> {
        match self.order {
            Some(order) => {
                let y = crate::points::unpermute_rows(y, order, self.dims);
                self.inner.observe(iter, &y)
            }
            None => self.inner.observe(iter, y),
        }
    }

    fn stop(&self, iter: usize) -> Option<Stop> {
        self.inner.stop(iter)
    }
}

/// Stages 5 and 7: P in the layout the backend reads (CSB on the host for cpu and hybrid,
/// HYB on the device for gpu), then the backend's optimiser: on the host with the repulsion
/// on the CPU (cpu) or on the GPU at the same time as the attraction (hybrid), or on the
/// device, where Y goes up once and comes back once (gpu), unless `observer` asks to see it.
fn optimise(
    p: P,
    y: &mut [f32],
    params: &EmbedParams,
    backend: BackendKind,
    seconds: &mut StageSeconds,
    progress: &dyn Progress,
    observer: Option<&mut dyn Observer<[f32]>>,
) -> Result<OptimReport> {
    let t = Instant::now();
    let p = match backend {
        BackendKind::Gpu => p.into_hyb(Gpu::get()?)?,
        _ => {
            let beta = Csb::default_beta(p.n(), rayon::current_num_threads());
            p.into_csb(beta)?
        }
    };
    seconds.layout = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let (dims, repulsion) = (params.dims, params.repulsion_spec());
    let report = match backend {
        BackendKind::Gpu => {
            let gpu = Gpu::get()?;
            let mut repulse = repulsion.device(gpu, gpu.stream.clone())?;
            let mut y_dev = gpu.stream.clone_htod(&*y)?;
            let mut downloaded = observer.map(|inner| Downloaded { gpu, inner });
            let report = optimize_device_observed(
                gpu,
                &p,
                params.kernel,
                &mut repulse,
                &mut y_dev,
                dims,
                &params.optim,
                progress,
                downloaded.as_mut().map(|o| o as _),
            )?;
            gpu.stream.memcpy_dtoh(&y_dev, y)?;
            report
        }
        BackendKind::Hybrid => {
            let gpu = Gpu::get()?;
            let stream = gpu.device.context.new_stream()?;
            let repulse = repulsion.device(gpu, stream.clone())?;
            optimize_hybrid(
                gpu,
                stream,
                &p,
                params.kernel,
                repulse,
                y,
                dims,
                &params.optim,
                progress,
                observer,
            )?
        }
        _ => {
            let mut gradient = CpuGradient::with_kernel(&p, repulsion.host(), params.kernel)?;
            optim::optimize_observed(&mut gradient, y, dims, &params.optim, progress, observer)?
        }
    };
    seconds.optimise = t.elapsed().as_secs_f64();
    Ok(report)
}

/// The kernel files and variants a run on the `backend` device uses, roughly in the order
/// it first uses them, for [`Gpu::precompile`]: for sparse points their PCA's products, in
/// point mode the centring (PCA, kNN) and
/// the kNN's files, then on gpu the affinities, the attraction and the update, and the
/// repulsion's files (the FFT's in the grids' precision, or the exact one). A file missed
/// here still compiles when first used; one listed but unused costs a core for a while.
fn device_kernels(
    d: Option<usize>,
    sparse: bool,
    backend: BackendKind,
    params: &EmbedParams,
) -> Vec<Variant> {
    let on_gpu = backend == BackendKind::Gpu;
    let mut files = Vec::new();
    if sparse {
        files.push(KernelId::SparsePca);
    }
    if d.is_some() {
        files.push(KernelId::Centre);
        match params.knn {
            _ if params.knn_given.is_some() => {}
            KnnMethod::Hnsw => {}
            KnnMethod::Approx => files.extend([
                KernelId::Ivf,
                KernelId::Knn,
                KernelId::KnnFused,
                KernelId::KnnRefine,
            ]),
            _ => files.extend([KernelId::Knn, KernelId::KnnFused]),
        }
        if on_gpu && params.knn_given.is_none() {
            files.push(KernelId::Affinity);
        }
    }
    if on_gpu {
        files.extend([KernelId::AttractHyb, KernelId::Optim]);
    }
    // The fused kNN file is compiled for the points' dimension only (after PCA).
    let fused = crate::knn::gpu::sweep_variant(d.unwrap_or(0));
    let mut variants: Vec<Variant> = files
        .into_iter()
        .map(|id| {
            (
                id,
                if id == KernelId::KnnFused {
                    fused
                } else {
                    &[][..]
                },
            )
        })
        .collect();
    let real = grid_defines(params.precision);
    match params.repulsion {
        RepulsionMethod::Fft => variants.extend(
            [
                KernelId::S2g,
                KernelId::G2g,
                KernelId::G2s,
                KernelId::Phi2force,
            ]
            .map(|id| (id, real)),
        ),
        RepulsionMethod::Exact => variants.push((KernelId::Exact, &[])),
    }
    variants
}

/// The NVRTC defines of the repulsion's kernels for grids in `precision`.
fn grid_defines(precision: Precision) -> &'static [&'static str] {
    match precision {
        Precision::F32 => <f32 as DeviceReal>::DEFINES,
        Precision::F64 => <f64 as DeviceReal>::DEFINES,
    }
}

fn input_info(name: &str, kind: &'static str, n: usize, d: usize) -> InputInfo {
    InputInfo {
        name: name.to_string(),
        kind,
        n,
        d,
        duplicates: 0,
        scale_exponent: 0,
    }
}

/// Copies make up at least this fraction of the points before a run warns about them: a
/// few are harmless (each set collapses onto one spot, as it should), but as they grow
/// toward k per point a copy's neighbours become its own copies only.
const DUPLICATES_WARNED: f64 = 0.01;

/// Stage 1b, the values themselves ([`prep::duplicate_rows`], [`prep::fit_f32_range`]):
/// refuses dense points that are all one point (nothing to embed), warns through
/// `progress` when many repeat another exactly, and brings the values into the range where
/// squared distances fit f32. Sparse rows are rescaled only: their columns may be stored
/// unsorted or repeated, so equal rows need not be stored alike. Fills in `info`.
fn screen(
    input: &mut Input,
    name: &str,
    info: &mut InputInfo,
    progress: &dyn Progress,
) -> Result<()> {
    let values = match input {
        Input::Points(p) => {
            let copies = prep::duplicate_rows(p);
            if p.n > 1 && copies == p.n - 1 {
                return Err(Error::Data(format!(
                    "{name}: all {} points are identical (zero variance): t-SNE has no \
                     distances to embed",
                    p.n
                )));
            }
            if copies as f64 >= DUPLICATES_WARNED * p.n as f64 && copies > 0 {
                progress.warn(&format!(
                    "{name}: {copies} of {} points ({:.1} %) repeat another point exactly; \
                     each set of copies collapses onto one spot (remove them first, e.g. \
                     numpy.unique(x, axis=0), for a picture of the distinct points)",
                    p.n,
                    100.0 * copies as f64 / p.n as f64
                ));
            }
            info.duplicates = copies;
            &mut p.data
        }
        Input::Sparse(s) => &mut s.data,
        Input::Graph(_) | Input::Affinities(_) => return Ok(()),
    };
    info.scale_exponent = prep::fit_f32_range(values);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kernel file is compiled ahead for some run (a new file must join the list),
    /// the repulsion's in the grids' precision only, and the exact repulsion's file only
    /// for the exact repulsion.
    #[test]
    fn device_kernels_cover_every_file() {
        let mut listed = Vec::new();
        for backend in [BackendKind::Gpu, BackendKind::Hybrid] {
            for knn in [KnnMethod::Exact, KnnMethod::Approx, KnnMethod::Hnsw] {
                for (repulsion, precision) in [
                    (RepulsionMethod::Fft, Precision::F32),
                    (RepulsionMethod::Fft, Precision::F64),
                    (RepulsionMethod::Exact, Precision::F32),
                ] {
                    let params = EmbedParams {
                        knn,
                        repulsion,
                        precision,
                        ..Default::default()
                    };
                    let variants = device_kernels(Some(50), false, backend, &params);
                    let exact = repulsion == RepulsionMethod::Exact;
                    let count =
                        |f: fn(KernelId) -> bool| variants.iter().filter(|v| f(v.0)).count();
                    assert_eq!(count(|id| id == KernelId::Exact), exact as usize);
                    assert_eq!(count(KernelId::repulse), if exact { 0 } else { 4 });
                    for &(id, defines) in &variants {
                        let want = if id.repulse() {
                            grid_defines(precision)
                        } else if id == KernelId::KnnFused {
                            crate::knn::gpu::sweep_variant(50)
                        } else {
                            &[][..]
                        };
                        assert_eq!(defines, want, "{}", id.file());
                    }
                    listed.extend(variants.into_iter().map(|(id, _)| id));
                }
            }
        }
        let sparse = device_kernels(Some(50), true, BackendKind::Gpu, &EmbedParams::default());
        assert_eq!(sparse[0], (KernelId::SparsePca, &[][..]));
        listed.extend(sparse.into_iter().map(|(id, _)| id));
        for id in KernelId::ALL {
            assert!(listed.contains(id), "{} is never compiled ahead", id.file());
        }
    }
}
