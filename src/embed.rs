//! `embed`: the whole pipeline from points or a graph to an embedding and its report
//! (DESIGN §1). Stages run in order, each timed; the backend decides where the gradient
//! is computed.

use std::time::Instant;

use serde::{Serialize, Serializer};

use crate::affinity::{self, Affinities, GraphParams};
use crate::attract::gpu::HybGpu;
use crate::backend::gpu::{optimize_device, DeviceP, DeviceRepulsion};
use crate::backend::{cpu::CpuGradient, BackendKind};
use crate::gpu::{Gpu, GpuError};
use crate::init::{self, InitKind};
use crate::io::Labels;
use crate::knn::{self, Neighbors};
use crate::optim::{self, OptimParams, OptimReport};
use crate::progress::Progress;
use crate::report::{InputInfo, Quality, Report, StageSeconds};
use crate::repulse::exact_gpu::ExactRepulsionGpu;
use crate::repulse::gpu::FftRepulsionGpu;
use crate::repulse::{ExactRepulsion, FftRepulsion, GridSpec, Repulse};
use crate::sparse::{Csb, Hyb};
use crate::{prep, quality, Error, Points, Result};

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
    /// Internal numbering of the points (default locality).
    pub order: PointOrder,
    /// Initialisation (default PCA; graphs always start random).
    pub init: InitKind,
    /// Repulsion grid; `None` = [`GridSpec::default_for`] the dimension (resolved in the
    /// report).
    #[serde(serialize_with = "grid_text")]
    pub grid: Option<GridSpec>,
    /// Repulsion method (default fft).
    pub repulsion: RepulsionMethod,
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
            order: PointOrder::Locality,
            init: InitKind::Pca,
            grid: None,
            repulsion: RepulsionMethod::Fft,
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
enum Affinity {
    /// Canonical CSR on the host.
    Host(Affinities),
    /// HYB on the device (boxed: the variants differ much in size).
    Device(Box<DeviceP>),
}

/// What stages 2–4 produce.
struct Prepared {
    p: Affinity,
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
    let on_gpu = backend.kind == BackendKind::Gpu;
    let mut seconds = StageSeconds::default();
    let mut params = params.clone();
    params.grid = Some(
        params
            .grid
            .unwrap_or_else(|| GridSpec::default_for(params.dims)),
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
        Input::Points(points) => prepare_points(points, &params, on_gpu, &mut seconds, progress)?,
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
    let mut y = match (&prepared.points, params.init) {
        (Some(scores), InitKind::Pca) if prepared.reduced && scores.d >= dims => {
            init::from_scores(scores, dims)
        }
        (Some(points), InitKind::Pca) if points.d >= dims => init::pca(points, dims)?,
        (_, InitKind::Pca) => {
            params.init = InitKind::Random;
            init::random(n, dims, params.seed)
        }
        (_, InitKind::Random) => init::random(n, dims, params.seed),
    };
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
    let (optimise, p_nnz) = if on_gpu {
        optimise_gpu(p, &mut y, &params, &mut seconds, progress)?
    } else {
        optimise_cpu(p, &mut y, &params, &mut seconds, progress)?
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

/// Stages 2–4 in point mode: PCA, kNN, perplexity calibration and symmetrisation.
fn prepare_points(
    points: Points,
    params: &EmbedParams,
    on_gpu: bool,
    seconds: &mut StageSeconds,
    progress: &dyn Progress,
) -> Result<Prepared> {
    let k = params.k();
    if points.n <= k {
        return Err(Error::Data(format!(
            "{} points are too few for perplexity {}: t-SNE needs more than k = {k} \
             points (k = ⌈3·perplexity⌉); lower --perplexity",
            points.n, params.perplexity
        )));
    }
    let t = Instant::now();
    let reduced = params.pca.is_some_and(|m| points.d > m);
    let points = match params.pca {
        Some(m) if reduced && on_gpu => prep::gpu::pca_gpu(Gpu::get()?, &points, m)?,
        Some(m) if reduced => prep::pca(&points, m)?,
        _ => points,
    };
    seconds.pca = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let (points, order) = match params.order {
        PointOrder::Locality => {
            let order = knn::pca_tree_order(&points.data, points.n, points.d);
            (points.permuted(&order), Some(order))
        }
        PointOrder::Input => (points, None),
    };
    seconds.order = t.elapsed().as_secs_f64();
    let method = match params.knn {
        KnnMethod::Auto if points.n <= AUTO_EXACT_MAX || on_gpu => KnnMethod::Exact,
        KnnMethod::Auto => KnnMethod::Hnsw,
        m => m,
    };
    let knn_method = Some(if method == KnnMethod::Hnsw {
        "hnsw"
    } else {
        "exact"
    });
    if on_gpu {
        let (p, nb) = gpu_affinities(&points, k, method, params, seconds, progress)?;
        return Ok(Prepared {
            p,
            points: Some(points),
            reduced,
            neighbors: Some(nb),
            knn_method,
            order,
        });
    }
    let t = Instant::now();
    let nb = match method {
        KnnMethod::Hnsw => knn::hnsw(&points, k, params.seed, progress)?,
        _ => knn::exact(&points, k, progress)?,
    };
    seconds.knn = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let p = affinity::from_neighbors(&nb, params.perplexity)?;
    seconds.affinities = t.elapsed().as_secs_f64();
    Ok(Prepared {
        p: Affinity::Host(p),
        points: Some(points),
        reduced,
        neighbors: Some(nb),
        knn_method,
        order,
    })
}

/// kNN (exact on the GPU, or HNSW on the CPU then uploaded) and affinities on the GPU: P
/// is born in HYB on the device. The neighbours also come down, for the quality measure.
fn gpu_affinities(
    points: &Points,
    k: usize,
    method: KnnMethod,
    params: &EmbedParams,
    seconds: &mut StageSeconds,
    progress: &dyn Progress,
) -> Result<(Affinity, Neighbors)> {
    let gpu = Gpu::get()?;
    let s = &gpu.stream;
    let up = |e| Error::from(GpuError::from(e));
    let t = Instant::now();
    let (indices, distances) = match method {
        KnnMethod::Hnsw => {
            let nb = knn::hnsw(points, k, params.seed, progress)?;
            let idx: Vec<i32> = nb.indices.iter().map(|&j| j as i32).collect();
            (
                s.clone_htod(&idx).map_err(up)?,
                s.clone_htod(&nb.distances).map_err(up)?,
            )
        }
        _ => {
            let dev = s.clone_htod(&points.data).map_err(up)?;
            knn::gpu::exact_device_with(gpu, &dev, points.n, points.d, k, None, progress)?
        }
    };
    s.synchronize().map_err(up)?;
    seconds.knn = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let (hyb, stats) = affinity::gpu::affinities_device(
        gpu,
        &indices,
        &distances,
        points.n,
        k,
        params.perplexity,
    )?;
    s.synchronize().map_err(up)?;
    seconds.affinities = t.elapsed().as_secs_f64();
    let nb = Neighbors {
        n: points.n,
        k,
        indices: s
            .clone_dtoh(&indices)
            .map_err(up)?
            .into_iter()
            .map(|j| j as u32)
            .collect(),
        distances: s.clone_dtoh(&distances).map_err(up)?,
    };
    let p = DeviceP {
        hyb,
        p_log_p: stats.p_log_p,
        nnz: stats.nnz,
    };
    Ok((Affinity::Device(Box::new(p)), nb))
}

/// Stages 5 and 7 on the CPU: CSB, then the host optimiser.
fn optimise_cpu(
    p: Affinity,
    y: &mut [f32],
    params: &EmbedParams,
    seconds: &mut StageSeconds,
    progress: &dyn Progress,
) -> Result<(OptimReport, usize)> {
    let Affinity::Host(p) = p else {
        unreachable!("the CPU path computes P on the host");
    };
    let t = Instant::now();
    let plp = affinity::p_log_p(&p);
    let n = p.rows();
    let csb = Csb::from_csr(&p, Csb::default_beta(n, rayon::current_num_threads()))?;
    let nnz = p.nnz();
    drop(p);
    seconds.layout = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let repulse: Box<dyn Repulse> = match params.repulsion {
        RepulsionMethod::Fft => Box::new(FftRepulsion::new(grid_of(params))),
        RepulsionMethod::Exact => Box::new(ExactRepulsion::new()),
    };
    let mut gradient = CpuGradient::new(csb, repulse, plp);
    let report = optim::optimize(&mut gradient, y, params.dims, &params.optim, progress)?;
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
    let mut repulse = match params.repulsion {
        RepulsionMethod::Fft => {
            DeviceRepulsion::Fft(Box::new(FftRepulsionGpu::new(gpu, grid_of(params))?))
        }
        RepulsionMethod::Exact => DeviceRepulsion::Exact(ExactRepulsionGpu::new(gpu)?),
    };
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
