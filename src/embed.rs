//! `embed`: the whole pipeline from points or a graph to an embedding and its report
//! (DESIGN §1). Stages run in order, each timed; the backend decides where the gradient
//! is computed.

use std::time::Instant;

use rayon::prelude::*;

use crate::backend::BackendKind;
use crate::init::{self, InitKind};
use crate::io::Labels;
use crate::knn::Neighbors;
use crate::optim::{Observer, Watch};
use crate::progress::Progress;
use crate::report::{KnnReport, Quality, Report, StageSeconds};
use crate::sparse::P;
use crate::{prep, quality, CsrPoints, Error, Points, Result};

mod graph;
mod kernels;
pub mod memory;
mod optimise;
mod prepare;
mod screen;
mod search;
mod setup;
mod sparse;

pub use crate::params::{
    perplexity_for, AffinityMethod, EmbedParams, KnnMethod, PointOrder, Precision, RepulsionMethod,
    AUTO_APPROX_GPU_MIN, AUTO_EXACT_MAX, MAX_NEIGHBORS,
};
pub use kernels::{compile_ahead, WarmUp};
pub(crate) use prepare::prepare_points;
pub use search::{reduced_points, search_neighbors, Searched};
pub(crate) use setup::resolve_search;

/// Neighbours whose label vote and preservation the report measures.
pub(crate) const QUALITY_K: usize = 10;

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
    /// The communicators of a run over several GPUs, aborted on side threads as the
    /// optimisation ends (NCCL's teardown took 0.5 s on the first GPU of two), are waited
    /// for when this is dropped: the caller's writing overlaps them.
    _comms: crate::gpu::comm::EndedOnDrop,
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

impl Reference {
    /// The reference of `points`, reduced by `pca` from `d_in` features and numbered by
    /// `order` (row r is input point `order[r]`; `None`: the input's), put in input order, in
    /// which `transform` reads it.
    fn in_input_order(
        points: Points,
        pca: Option<prep::Pca>,
        d_in: usize,
        order: Option<&[u32]>,
    ) -> Self {
        let points = match order {
            Some(order) => Points::new(
                points.n,
                points.d,
                crate::points::unpermute_rows(&points.data, order, points.d),
            ),
            None => points,
        };
        Reference { points, pca, d_in }
    }
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
    /// The kNN graph (point mode), for the preservation measure: with P made on the
    /// device, only each point's [`QUALITY_K`] nearest come to the host, beside the
    /// affinities.
    neighbors: Option<prepare::InputNeighbors>,
    /// The kNN stage's report (point mode).
    knn: Option<KnnReport>,
    /// The internal numbering when it is not the input's: point `r` is input point `order[r]`.
    order: Option<Vec<u32>>,
    /// What the stages changed of what they were given, for the report.
    notes: Vec<String>,
    /// The PCA initialisation when a stage already made it ([`prepare::pca_init_beside`]:
    /// on the host while the device made P); [`initialise`] takes it.
    pca_init: Option<Vec<f32>>,
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
/// [`optim::Snapshots`](crate::optim::Snapshots)): on the host and in input order whatever
/// the backend and the internal numbering, so an observer is written once for all of them.
/// Only the steps it asks for cost anything (on the gpu backend, a download of Y each).
pub fn embed_observed(
    mut input: Input,
    name: &str,
    labels: Option<&Labels>,
    params: &EmbedParams,
    progress: &dyn Progress,
    observer: Option<&mut dyn Observer<[f32]>>,
) -> Result<Embedding> {
    let start = Instant::now();
    let mut seconds = StageSeconds::default();
    let t = seconds.start("setup");
    let setup = setup::set_up(&mut input, name, labels, params, progress)?;
    seconds.setup = t.elapsed().as_secs_f64();
    let estimated = setup.memory.estimated_device_bytes;
    let free = setup.watch.as_ref().map_or(0, |w| w.start_free());
    run_stages(
        input,
        labels,
        setup,
        &mut seconds,
        start,
        progress,
        observer,
    )
    .map_err(|e| match e {
        Error::Gpu(error) if error.is_out_of_memory() => Error::DeviceMemory {
            stage: seconds.stage.to_string(),
            estimated,
            free,
            error,
        },
        e => e,
    })
}

/// The stages of [`embed_observed`] after the set-up, each marking its start in `seconds`
/// (so that an error can name the stage).
fn run_stages(
    input: Input,
    labels: Option<&Labels>,
    mut setup: setup::Setup,
    seconds: &mut StageSeconds,
    start: Instant,
    progress: &dyn Progress,
    observer: Option<&mut dyn Observer<[f32]>>,
) -> Result<Embedding> {
    let params = &mut setup.params;
    let kind = setup.backend.kind;
    let (n, d_in) = (input.n(), input.d());
    // The device's kernels compile in the background from here on, while the points are
    // reduced and searched; the guard lives until the run ends (see `Precompile`).
    let _precompile = kernels::precompile(&input, params, kind)?;
    crate::trace::event(|| "kernels: compiling, FFTs planned".into());

    // A caller's points read in place (and so not scaled) may be the reference themselves.
    let caller_points = match &input {
        Input::Points(p) if params.keep_reference && p.data.is_shared() => Some(p.clone()),
        _ => None,
    };
    // Stages 2–4: prepare, kNN, affinities.
    let mut prepared = prepare(input, params, kind, seconds, progress)?;
    setup.notes.extend(prepared.notes.iter().cloned());

    // Stage 6: initialise.
    let t = seconds.start("init");
    let mut y = initialise(&mut prepared, params, n)?;
    prep::clear_vector_upper_state();
    // Adds to the wait, if any, for an initialisation made beside the affinities.
    seconds.init += t.elapsed().as_secs_f64();
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
        (Some(points), Some(d_in)) if params.keep_reference => {
            Some(
                match caller_points.filter(|_| basis.is_none() && !params.metric.transforms_rows())
                {
                    // Neither a PCA nor the metric changed them: the caller's buffer is the
                    // reference, in input order, with no copy (the Python package's arrays).
                    Some(caller) => {
                        crate::points::drop_beside(points);
                        Reference {
                            points: caller,
                            pca: None,
                            d_in,
                        }
                    }
                    None => Reference::in_input_order(points, basis, d_in, order.as_deref()),
                },
            )
        }
        (Some(points), _) => {
            crate::points::drop_beside(points);
            None
        }
        (None, _) => None,
    };
    crate::trace::event(|| "optimise: the points let go".into());
    // The quality measure's neighbours come down beside the optimisation, now that the
    // host's copy of the points is gone.
    let neighbors = neighbors
        .map(prepare::InputNeighbors::send_down)
        .transpose()?;

    // Stages 5 and 7: layout of P, optimise, the observer shown Y in input order.
    let (p_nnz, dims) = (p.nnz(), params.dims);
    // The watch of the map's neighbourhoods (the convergence measure, `--iters auto`) sees
    // Y in the internal numbering, the caller's observer in input order.
    let mut in_order =
        observer.map(|inner| optimise::InputOrder::new(inner, order.as_deref(), dims));
    let mut watch = Watch::new(
        in_order.as_mut().map(|o| o as &mut dyn Observer<[f32]>),
        (n, dims),
        (params.optim.iters, params.optim.early_exaggeration_iters),
        params.auto_iters,
        params.seed,
    )
    .repeatable(kind == crate::backend::BackendKind::Cpu || params.optim.deterministic);
    let mut optimise =
        optimise::optimise(p, &mut y, params, kind, seconds, progress, Some(&mut watch))?;
    let done = optimise.interrupted_at.unwrap_or(params.optim.iters);
    optimise.convergence = crate::optim::convergence(
        &optimise.kl_history,
        done,
        params.optim.early_exaggeration_iters,
    );

    // Quality measures, in the internal numbering; then Y back in input order.
    let t = seconds.start("quality");
    let on = (kind, params.gpus.unwrap_or(1));
    let neighbors = neighbors.map(prepare::InputNeighbors::wait).transpose()?;
    crate::trace::event(|| "quality: the input's neighbours here".into());
    // The measures' search also gives the convergence watch its last checkpoint's rows.
    let keep = watch.end_sample(&y, QUALITY_K);
    let keep = keep.as_deref().map_or(&[][..], Vec::as_slice);
    let (quality, scores) = measure(
        &y,
        dims,
        labels,
        neighbors.as_ref(),
        order.as_deref(),
        on,
        keep,
    )?;
    setup.notes.extend(scores.note);
    crate::trace::event(|| "quality: measured".into());
    if let Some(neighbors) = neighbors {
        crate::points::drop_beside(neighbors);
    }
    // The last checkpoint's search ran beside the final KL and the quality measures.
    let watched = watch.finish((!scores.kept_rows.is_empty()).then_some(scores.kept_rows));
    optimise.stability = watched.history.last().copied();
    if params.auto_iters.is_some() {
        optimise.stability_history = watched.history;
    }
    optimise.auto_stop = watched.stopped;
    if watched.stopped.is_some_and(crate::optim::AutoStop::by_rule) {
        // Stopped by its own rule, not by the caller.
        optimise.interrupted_at = None;
    }
    if let Some(warning) = crate::optim::stability::warning(&optimise) {
        progress.warn(&warning);
    }
    if let Some(order) = &order {
        y = crate::points::unpermute_rows(&y, order, dims);
        crate::trace::event(|| "quality: Y in the input's order".into());
    }
    seconds.quality = t.elapsed().as_secs_f64();
    seconds.total = start.elapsed().as_secs_f64();
    let report = setup.into_report(knn, p_nnz, *seconds, optimise, quality);
    Ok(Embedding {
        y,
        dims,
        report,
        reference,
        _comms: crate::gpu::comm::EndedOnDrop,
    })
}

/// Stages 2–4: the points reduced, searched and calibrated into P ([`prepare_points`],
/// sparse rows reduced first), or P from a graph or given as it is (`graph`).
fn prepare(
    input: Input,
    params: &mut EmbedParams,
    backend: BackendKind,
    seconds: &mut StageSeconds,
    progress: &dyn Progress,
) -> Result<Prepared> {
    if matches!(input, Input::Graph(_) | Input::Affinities(_)) {
        // No kNN sweep to overlap: NCCL's set-up for a run over several GPUs starts now.
        crate::gpu::comm::go_ahead();
    }
    match input {
        Input::Points(points) => prepare_points(points, params, backend, seconds, progress),
        Input::Sparse(rows) => sparse::prepare_sparse(&rows, params, backend, seconds, progress),
        Input::Graph(graph) => graph::prepare_graph(&graph, params, seconds),
        Input::Affinities(p) => graph::prepare_affinities(&p, params, seconds),
    }
}

/// The quality measures of the embedding `y` (in the internal numbering `order`, when it
/// is not the input's): 10-NN label accuracy with labels, 10-NN preservation with the
/// input's neighbours; the embedding's neighbours searched on the GPU on a backend that has
/// one (on the gpu backend on each of the run's `gpus`, an equal share of the points each),
/// with a note when the search had to stay on the host; the rows of the points `keep`
/// (ascending) come back with the scores.
fn measure(
    y: &[f32],
    dims: usize,
    labels: Option<&Labels>,
    neighbors: Option<&Neighbors>,
    order: Option<&[u32]>,
    (backend, gpus): (BackendKind, usize),
    keep: &[u32],
) -> Result<(Quality, quality::Scores)> {
    let codes: Option<Vec<u32>> = labels.map(|l| match order {
        Some(order) => order.par_iter().map(|&i| l.codes[i as usize]).collect(),
        None => l.codes.clone(),
    });
    let gpus = match backend {
        BackendKind::Cpu => Vec::new(),
        BackendKind::Gpu => (0..gpus)
            .map(crate::gpu::Gpu::device)
            .collect::<Result<_>>()?,
        _ => vec![crate::gpu::Gpu::get()?],
    };
    let scores =
        quality::embedding_scores(y, dims, QUALITY_K, codes.as_deref(), neighbors, &gpus, keep)?;
    let quality = Quality {
        knn_accuracy_10: scores.knn_accuracy,
        knn_preservation_10: scores.knn_preservation,
    };
    Ok((quality, scores))
}

/// Stage 6: the initial Y of `n` points; a PCA initialisation without points to take it
/// from falls back to random (and `params.init` says so).
pub(crate) fn initialise(
    prepared: &mut Prepared,
    params: &mut EmbedParams,
    n: usize,
) -> Result<Vec<f32>> {
    if let Some(y) = prepared.pca_init.take() {
        return Ok(y);
    }
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
                Some(order) => Points::new(n, dims, y).permuted(order).data.into_vec(),
                None => y,
            }
        }
    })
}
