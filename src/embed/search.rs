//! Stages 2 and 3 alone (`sgtsne knn`): the neighbours `embed` would compute, in input
//! numbering, for users who reuse one kNN graph across runs and tools (`embed --knn-from`).
//!
//! They run exactly as in [`embed`](super::embed): the same metric, PCA, internal numbering
//! and method for the same parameters, so `embed --knn-from` with this result builds the P
//! of the run that searched inline, bit for bit on the CPU.

use std::time::Instant;

use super::prepare::{self, Found};
use super::{sparse, EmbedParams, Input};
use crate::backend::{multi, BackendKind, Resolved};
use crate::knn::{precomputed, Neighbors};
use crate::points::inverse_permutation;
use crate::progress::Progress;
use crate::report::{KnnReport, StageSeconds};
use crate::{prep, Error, Points, Result};

/// The result of [`search_neighbors`].
pub struct Searched {
    /// Each point's k nearest other points, in input numbering; distances squared, in the
    /// space searched (after the metric's row transform and PCA), in units of the input
    /// scaled by 2^`scale_exponent`.
    pub neighbors: Neighbors,
    /// The input was multiplied by 2^scale_exponent first, as `embed` does, so that squared
    /// distances fit f32 ([`crate::prep::fit_f32_range`]; 0 for most data): a distance
    /// times 2^−scale_exponent is in the input's units, exactly.
    pub scale_exponent: i32,
    /// The kNN stage's report (method, k, the recall estimate of approximate methods).
    pub knn: KnnReport,
    /// Where it ran.
    pub backend: Resolved,
    /// What the search changed of what was asked, one sentence each.
    pub notes: Vec<String>,
    /// Seconds of PCA (with the metric's transform), ordering and search.
    pub seconds: StageSeconds,
}

impl Searched {
    /// The distances as plain (not squared) distances in the input's units, in f64:
    /// squaring them gives back the searched f32 squared distances exactly (the unit change
    /// is a power of two). What `sgtsne knn` writes and the Python package returns.
    pub fn plain_distances(&self) -> Vec<f64> {
        let unit = 2f64.powi(-self.scale_exponent);
        self.neighbors
            .distances
            .iter()
            .map(|&d| (d as f64).sqrt() * unit)
            .collect()
    }
}

/// The k = ⌈3·perplexity⌉ nearest neighbours of every point of `input` (points, dense or
/// sparse), found as [`embed`](super::embed) finds them with `params`.
pub fn search_neighbors(
    mut input: Input,
    params: &EmbedParams,
    progress: &dyn Progress,
) -> Result<Searched> {
    params.validate()?;
    let backend = params.backend.resolve()?;
    let mut seconds = StageSeconds::default();
    let t = Instant::now();
    let scale_exponent = match &mut input {
        Input::Points(p) => prep::fit_points_f32_range(p),
        Input::Sparse(s) => prep::fit_f32_range(&mut s.data),
        Input::Graph(_) | Input::Affinities(_) => 0,
    };
    let (points, params) = match input {
        Input::Points(p) => (p, params.clone()),
        Input::Sparse(rows) => {
            let (points, _) = sparse::reduce_sparse(&rows, params, backend.kind)?;
            (points, sparse::dense_params(params))
        }
        Input::Graph(_) | Input::Affinities(_) => {
            return Err(Error::param(
                "input",
                "neighbours are searched among points; a graph's are its edges",
            ))
        }
    };
    let sparse_seconds = t.elapsed().as_secs_f64();
    let mut params = params;
    super::resolve_search(&mut params, Some(points.n), backend.kind)?;
    if backend.kind == BackendKind::Gpu {
        params.gpus = Some(multi::resolve_gpus(params.gpus, points.n)?);
    }
    prepare::check_enough(points.n, &params)?;
    let mut reduced = prepare::reduce(points, &params, backend.kind, &mut seconds)?;
    seconds.pca += sparse_seconds;
    let t = seconds.start("knn");
    let mut notes = Vec::new();
    let (found, knn) = prepare::search(
        &mut reduced,
        &params,
        backend.kind,
        false,
        &mut notes,
        progress,
    )?;
    let nb = match found {
        Found::Host(nb) => nb,
        Found::Device(indices, distances) => {
            prepare::download_neighbors(&indices, &distances, reduced.points.n, knn.k)?
        }
    };
    seconds.knn = t.elapsed().as_secs_f64();
    // Internal point r is input point order[r]: input point i is internal point inv[i].
    let neighbors = match &reduced.order {
        Some(order) => precomputed::permuted(&nb, &inverse_permutation(order)),
        None => nb,
    };
    Ok(Searched {
        neighbors,
        scale_exponent,
        knn,
        backend,
        notes,
        seconds,
    })
}

/// The points of `input` (dense or sparse) as the kNN stage sees them: `params.metric`'s
/// row transform and PCA to `params.pca` applied, in input order. For analyses of the data
/// beside its embedding (`embed --clusters-on data`).
pub fn reduced_points(input: Input, params: &EmbedParams) -> Result<Points> {
    let backend = params.backend.resolve()?.kind;
    let (points, params) = match input {
        Input::Points(p) => (p, params.clone()),
        Input::Sparse(rows) => {
            let (points, _) = sparse::reduce_sparse(&rows, params, backend)?;
            (points, sparse::dense_params(params))
        }
        Input::Graph(_) | Input::Affinities(_) => {
            return Err(Error::param(
                "input",
                "a graph or affinities have no points to reduce",
            ))
        }
    };
    let params = EmbedParams {
        order: None,
        keep_reference: false,
        ..params
    };
    let mut seconds = StageSeconds::default();
    Ok(prepare::reduce(points, &params, backend, &mut seconds)?.points)
}
