//! `embed`: the whole pipeline from points or a graph to an embedding and its report
//! (DESIGN §1). Stages run in order, each timed; the backend decides where the gradient
//! is computed.

use std::time::Instant;

use serde::{Serialize, Serializer};

use crate::affinity::{self, Affinities, GraphParams};
use crate::attract::gpu::HybGpu;
use crate::backend::gpu::{device_repulsion, optimize_device, DeviceP};
use crate::backend::{cpu::CpuGradient, hybrid::optimize_hybrid, BackendKind};
use crate::gpu::{Gpu, GpuError};
use crate::init::{self, InitKind};
use crate::io::Labels;
use crate::knn::Neighbors;
use crate::optim::{self, OptimParams, OptimReport};
use crate::progress::Progress;
use crate::report::{InputInfo, Quality, Report, StageSeconds};
use crate::repulse::{ExactRepulsion, FftRepulsion, GridSpec, Repulse};
use crate::sparse::{Csb, Hyb};
use crate::{prep, quality, Error, Points, Result};

mod prepare;

pub(crate) use prepare::prepare_points;

/// Above this many points `--knn auto` uses HNSW instead of the exact blocked GEMM.
/// Measured on 2 cores at k = 90: exact takes 2.2 s at 70k and grows as n², HNSW took 52 s
/// at 70k (recall 0.996) and grows as n·log n, so exact stays ahead to several 100k points.
pub const AUTO_EXACT_MAX: usize = 500_000;

/// Neighbours whose label vote and preservation the report measures.
const QUALITY_K: usize = 10;

/// What to embed.
pub enum Input {
    /// A dense point set.
    Points(Points),
    /// A sparse weighted graph, n × n (SG-t-SNE mode).
    Graph(sprs::CsMat<f64>),
}

/// The kNN method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KnnMethod {
    /// Exact below [`AUTO_EXACT_MAX`] points, HNSW above.
    Auto,
    /// Blocked GEMM and bounded selection.
    Exact,
    /// Approximate, `hnsw_rs`.
    Hnsw,
}

/// How the repulsion is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RepulsionMethod {
    /// FFT-accelerated interpolation on a grid (DESIGN §2.2).
    Fft,
    /// Direct O(n²) sums, the reference.
    Exact,
}

/// Precision of the FFT repulsion's grids, FFTs and potentials (coordinates and forces are
/// `f32` throughout). `f64` is the reference thesis's choice; it is meant for the hybrid
/// backend, where the repulsion is hidden behind the CPU attraction. It also runs on the cpu
/// and gpu backends, where it costs repulsion time on the critical path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Single precision (default): its rounding is far below the interpolation error.
    F32,
    /// Double precision.
    F64,
}

/// How the pipeline numbers the points internally; the embedding comes out in input order
/// either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PointOrder {
    /// Renumber the points (after PCA, before the kNN) in the leaf order of a PCA tree, so
    /// that close points get close numbers: P's non-zeros gather near the diagonal (fewer,
    /// denser CSB blocks; nearby `y_j` reads in the GPU attraction) and consecutive points
    /// spread onto and gather from nearby grid nodes (S2G, G2S). Graph inputs keep their order.
    Locality,
    /// Keep the input's order (the layout of the input file decides the locality).
    Input,
}

impl PointOrder {
    /// The order `--order auto` takes on `backend` (see [`EmbedParams::order`]).
    pub fn default_for(backend: BackendKind) -> Self {
        match backend {
            BackendKind::Gpu => PointOrder::Input,
            _ => PointOrder::Locality,
        }
    }
}

/// Every parameter of a run. Defaults are DESIGN §1's.
#[derive(Clone, Debug, Serialize)]
pub struct EmbedParams {
    /// Embedding dimension s ∈ {1, 2, 3} (default 2).
    pub dims: usize,
    /// Perplexity u (default 30); k = ⌈3u⌉ neighbours.
    pub perplexity: f64,
    /// kNN method (default auto).
    pub knn: KnnMethod,
    /// Reduce to this many principal components first when d is larger (default 50).
    pub pca: Option<usize>,
    /// Internal numbering of the points; `None` = [`PointOrder::default_for`] the backend
    /// (resolved in the report):
    /// [`PointOrder::Locality`] on cpu and hybrid, whose CSB attraction it speeds up (MNIST, 2
    /// cores), [`PointOrder::Input`] on gpu, where its host-side PCA tree cost more than it
    /// saved (H100, 1.3M 2-D: 1.9 s to order, 0.7 s saved in the kNN and optimisation).
    pub order: Option<PointOrder>,
    /// Initialisation (default PCA; graphs always start random).
    pub init: InitKind,
    /// Repulsion grid; `None` = [`GridSpec::default_for`] the dimension (resolved in the
    /// report).
    #[serde(serialize_with = "grid_text")]
    pub grid: Option<GridSpec>,
    /// Repulsion method (default fft).
    pub repulsion: RepulsionMethod,
    /// Precision of the FFT repulsion's grids (default f32).
    pub precision: Precision,
    /// Backend (default auto).
    pub backend: BackendKind,
    /// Seed of every random choice (default 0).
    pub seed: u64,
    /// λ of SG-t-SNE's rescaling in graph mode (default 1).
    pub lambda: f64,
    /// Learning rate; `None` = auto, max(n / exaggeration, 50).
    pub learning_rate: Option<f32>,
    /// Iterations, exaggeration, momentum, gains (learning rate resolved at run time).
    pub optim: OptimParams,
}

impl Default for EmbedParams {
    fn default() -> Self {
        EmbedParams {
            dims: 2,
            perplexity: 30.0,
            knn: KnnMethod::Auto,
            pca: Some(50),
            order: None,
            init: InitKind::Pca,
            grid: None,
            repulsion: RepulsionMethod::Fft,
            precision: Precision::F32,
            backend: BackendKind::Auto,
            seed: 0,
            lambda: 1.0,
            learning_rate: None,
            optim: OptimParams::default(),
        }
    }
}

fn grid_text<S: Serializer>(grid: &Option<GridSpec>, s: S) -> Result<S::Ok, S::Error> {
    match grid {
        None => s.serialize_str("default"),
        Some(GridSpec::Fixed(n)) => s.serialize_str(&n.to_string()),
        Some(GridSpec::Auto { h }) => s.serialize_str(&format!("auto (h = {h})")),
    }
}

impl EmbedParams {
    /// k = ⌈3u⌉ (DESIGN §1.3).
    pub fn k(&self) -> usize {
        (3.0 * self.perplexity).ceil() as usize
    }

    /// Range checks that need no data, each naming its parameter.
    pub fn validate(&self) -> Result<()> {
        if !(1..=3).contains(&self.dims) {
            return Err(Error::param(
                "dims",
                format!("must be 1, 2 or 3, got {}", self.dims),
            ));
        }
        if !(self.perplexity >= 1.0 && self.perplexity.is_finite()) {
            return Err(Error::param(
                "perplexity",
                format!("must be at least 1, got {}", self.perplexity),
            ));
        }
        if self.pca == Some(0) {
            return Err(Error::param(
                "pca",
                "must be a positive number of components or `none`",
            ));
        }
        if let Some(GridSpec::Fixed(n)) = self.grid {
            if n < 8 {
                return Err(Error::param(
                    "grid",
                    format!("needs at least 8 nodes per axis, got {n}"),
                ));
            }
        }
        if let Some(GridSpec::Auto { h }) = self.grid {
            if !(h > 0.0 && h.is_finite()) {
                return Err(Error::param(
                    "grid",
                    format!("spacing h must be positive, got {h}"),
                ));
            }
        }
        if let Some(lr) = self.learning_rate {
            if !(lr > 0.0 && lr.is_finite()) {
                return Err(Error::param(
                    "learning-rate",
                    format!("must be positive, got {lr}"),
                ));
            }
        }
        if self.precision == Precision::F64 && self.repulsion == RepulsionMethod::Exact {
            return Err(Error::param(
                "precision",
                "f64 applies to the FFT repulsion's grids; the exact repulsion already sums \
                 in f64",
            ));
        }
        if self.optim.exaggeration_iters > self.optim.iters {
            return Err(Error::param(
                "exaggeration-iters",
                format!(
                    "{} exceeds the {} iterations",
                    self.optim.exaggeration_iters, self.optim.iters
                ),
            ));
        }
        self.optim.validate()
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
}

/// P where the optimisation will read it.
pub(crate) enum Affinity {
    /// Canonical CSR on the host.
    Host(Affinities),
    /// HYB on the device (boxed: the variants differ much in size).
    Device(Box<DeviceP>),
}

/// What stages 2–4 produce.
pub(crate) struct Prepared {
    pub(crate) p: Affinity,
    /// The points after PCA (point mode), for the PCA initialisation.
    points: Option<Points>,
    /// Whether `points` are PCA scores already (columns by decreasing variance).
    reduced: bool,
    /// The kNN graph (point mode), for the preservation measure.
    neighbors: Option<Neighbors>,
    knn_method: Option<&'static str>,
    /// The internal numbering when it is not the input's: point `r` is input point `order[r]`.
    order: Option<Vec<u32>>,
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
    let start = Instant::now();
    params.validate()?;
    let backend = params.backend.resolve()?;
    let mut seconds = StageSeconds::default();
    let mut params = params.clone();
    params.grid = Some(
        params
            .grid
            .unwrap_or_else(|| GridSpec::default_for(params.dims)),
    );
    params.order = Some(
        params
            .order
            .unwrap_or_else(|| PointOrder::default_for(backend.kind)),
    );
    let (info, n) = match &input {
        Input::Points(p) => (input_info(name, "points", p.n, p.d), p.n),
        Input::Graph(g) => (input_info(name, "graph", g.rows(), 0), g.rows()),
    };
    if let Some(l) = labels {
        if l.codes.len() != n {
            return Err(Error::Data(format!(
                "the labels have {} entries but the input has {n} points",
                l.codes.len()
            )));
        }
    }

    // Stages 2–4: prepare, kNN, affinities.
    let prepared = match input {
        Input::Points(points) => {
            prepare_points(points, &params, backend.kind, &mut seconds, progress)?
        }
        Input::Graph(graph) => {
            let t = Instant::now();
            let gp = GraphParams {
                lambda: params.lambda,
                ..Default::default()
            };
            let p = affinity::graph_affinities(&graph, &gp)?;
            seconds.affinities = t.elapsed().as_secs_f64();
            if params.init == InitKind::Pca {
                params.init = InitKind::Random;
            }
            Prepared {
                p: Affinity::Host(p),
                points: None,
                reduced: false,
                neighbors: None,
                knn_method: None,
                order: None,
            }
        }
    };

    // Stage 6: initialise.
    let t = Instant::now();
    let dims = params.dims;
    let mut y = initialise(&prepared, &mut params, n)?;
    prep::clear_vector_upper_state();
    seconds.init = t.elapsed().as_secs_f64();
    let Prepared {
        p,
        points,
        neighbors,
        knn_method,
        order,
        ..
    } = prepared;
    drop(points);

    // Stages 5 and 7: layout of P, optimise.
    let lr = params
        .learning_rate
        .unwrap_or_else(|| OptimParams::auto_learning_rate(n, params.optim.exaggeration));
    params.learning_rate = Some(lr);
    params.optim.learning_rate = lr;
    let (optimise, p_nnz) = if backend.kind == BackendKind::Gpu {
        optimise_gpu(p, &mut y, &params, &mut seconds, progress)?
    } else {
        optimise_host(p, &mut y, &params, backend.kind, &mut seconds, progress)?
    };

    // Quality measures, in the internal numbering; then Y back in input order.
    let t = Instant::now();
    let embedded = quality::embedding_neighbors(&y, dims, QUALITY_K);
    let codes = labels.map(|l| match &order {
        Some(order) => order.iter().map(|&i| l.codes[i as usize]).collect(),
        None => l.codes.clone(),
    });
    let quality = Quality {
        knn_accuracy_10: codes
            .as_ref()
            .map(|c| quality::knn_accuracy(&embedded, QUALITY_K, c)),
        knn_preservation_10: neighbors
            .as_ref()
            .map(|nb| quality::knn_preservation(nb, &embedded, QUALITY_K)),
    };
    if let Some(order) = &order {
        y = crate::points::unpermute_rows(&y, order, dims);
    }
    seconds.quality = t.elapsed().as_secs_f64();
    seconds.total = start.elapsed().as_secs_f64();

    let report = Report {
        version: env!("CARGO_PKG_VERSION"),
        input: info,
        threads: rayon::current_num_threads(),
        k: neighbors.as_ref().map(|nb| nb.k),
        knn_method: knn_method.map(str::to_string),
        p_nnz,
        seconds,
        optimise,
        quality,
        peak_rss_bytes: crate::report::peak_rss_bytes(),
        backend,
        params,
    };
    Ok(Embedding { y, dims, report })
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
    })
}

/// Stages 5 and 7 with P and Y on the host: CSB, then the host optimiser, with the
/// repulsion on the CPU (`cpu`) or on the GPU at the same time as the attraction (`hybrid`).
fn optimise_host(
    p: Affinity,
    y: &mut [f32],
    params: &EmbedParams,
    backend: BackendKind,
    seconds: &mut StageSeconds,
    progress: &dyn Progress,
) -> Result<(OptimReport, usize)> {
    let Affinity::Host(p) = p else {
        unreachable!("the cpu and hybrid paths compute P on the host");
    };
    let t = Instant::now();
    let plp = affinity::p_log_p(&p);
    let n = p.rows();
    let csb = Csb::from_csr(&p, Csb::default_beta(n, rayon::current_num_threads()))?;
    let nnz = p.nnz();
    drop(p);
    seconds.layout = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let (dims, grid) = (params.dims, grid_of(params));
    let report = if backend == BackendKind::Hybrid {
        let gpu = Gpu::get()?;
        let stream = gpu
            .device
            .context
            .new_stream()
            .map_err(|e| Error::from(GpuError::from(e)))?;
        let repulse = device_repulsion(
            gpu,
            stream.clone(),
            params.repulsion,
            grid,
            params.precision,
        )?;
        optimize_hybrid(
            gpu,
            stream,
            csb,
            repulse,
            plp,
            y,
            dims,
            &params.optim,
            progress,
        )?
    } else {
        let repulse: Box<dyn Repulse> = match (params.repulsion, params.precision) {
            (RepulsionMethod::Fft, Precision::F32) => Box::new(FftRepulsion::new(grid)),
            (RepulsionMethod::Fft, Precision::F64) => {
                Box::new(FftRepulsion::<f64>::with_precision(grid))
            }
            (RepulsionMethod::Exact, _) => Box::new(ExactRepulsion::new()),
        };
        let mut gradient = CpuGradient::new(csb, repulse, plp);
        optim::optimize(&mut gradient, y, dims, &params.optim, progress)?
    };
    seconds.optimise = t.elapsed().as_secs_f64();
    Ok((report, nnz))
}

/// Stages 5 and 7 on the GPU: P in HYB on the device, then the device optimiser; Y goes
/// up once and comes back once.
fn optimise_gpu(
    p: Affinity,
    y: &mut [f32],
    params: &EmbedParams,
    seconds: &mut StageSeconds,
    progress: &dyn Progress,
) -> Result<(OptimReport, usize)> {
    let gpu = Gpu::get()?;
    let t = Instant::now();
    let p = match p {
        Affinity::Host(p) => Box::new(DeviceP {
            hyb: HybGpu::new(gpu, &Hyb::from_csr(&p, None)?)?,
            p_log_p: affinity::p_log_p(&p),
            nnz: p.nnz(),
        }),
        Affinity::Device(p) => p,
    };
    seconds.layout = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut repulse = device_repulsion(
        gpu,
        gpu.stream.clone(),
        params.repulsion,
        grid_of(params),
        params.precision,
    )?;
    let up = |e| Error::from(GpuError::from(e));
    let mut y_dev = gpu.stream.clone_htod(&*y).map_err(up)?;
    let report = optimize_device(
        gpu,
        &p,
        &mut repulse,
        &mut y_dev,
        params.dims,
        &params.optim,
        progress,
    )?;
    gpu.stream.memcpy_dtoh(&y_dev, y).map_err(up)?;
    seconds.optimise = t.elapsed().as_secs_f64();
    Ok((report, p.nnz))
}

/// The grid, resolved by [`embed`] before any stage runs.
fn grid_of(params: &EmbedParams) -> GridSpec {
    params
        .grid
        .unwrap_or_else(|| GridSpec::default_for(params.dims))
}

fn input_info(name: &str, kind: &'static str, n: usize, d: usize) -> InputInfo {
    InputInfo {
        name: name.to_string(),
        kind,
        n,
        d,
    }
}
