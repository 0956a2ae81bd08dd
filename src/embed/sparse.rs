//! Stage 2 for sparse points: the metric's row transform and PCA on the sparse rows, then
//! the point pipeline on the dense n × m scores.

use super::{prepare_points, EmbedParams, Prepared};
use crate::backend::BackendKind;
use crate::gpu::Gpu;
use crate::prep::{self, Metric};
use crate::progress::Progress;
use crate::report::StageSeconds;
use crate::{CsrPoints, Error, Points, Result};

/// Reduces `rows` to `params.pca` components ([`reduce_sparse`]), then runs
/// [`prepare_points`] on the result with the metric and the PCA already applied.
pub(crate) fn prepare_sparse(
    rows: &CsrPoints,
    params: &EmbedParams,
    backend: BackendKind,
    seconds: &mut StageSeconds,
    progress: &dyn Progress,
) -> Result<Prepared> {
    let t = seconds.start("pca");
    let (points, reduced) = reduce_sparse(rows, params, backend)?;
    let sparse_seconds = t.elapsed().as_secs_f64();
    let mut prepared = prepare_points(points, &dense_params(params), backend, seconds, progress)?;
    prepared.reduced = reduced;
    // prepare_points timed its own (empty) PCA step only.
    seconds.pca += sparse_seconds;
    Ok(prepared)
}

/// The parameters of the dense stages after [`reduce_sparse`]: metric and PCA done (the
/// inner product, no row transform, stays for the kNN).
pub(crate) fn dense_params(params: &EmbedParams) -> EmbedParams {
    EmbedParams {
        metric: match params.metric {
            Metric::InnerProduct => Metric::InnerProduct,
            _ => Metric::Euclidean,
        },
        pca: None,
        ..params.clone()
    }
}

/// The metric's row transform and PCA of sparse rows, straight from the sparse matrix, its
/// products on the device on the gpu and hybrid backends (or the rows densified when they
/// are no wider than `params.pca`); and whether the result is PCA scores.
///
/// Cosine scales each stored row to unit length, which keeps it sparse. Correlation would
/// centre each row, which fills it: it is refused, with the way round it. The inner product
/// leaves the rows as they are, but the sparse PCA is centred, which changes inner
/// products: with a PCA that reduces it is refused too.
pub(crate) fn reduce_sparse(
    rows: &CsrPoints,
    params: &EmbedParams,
    backend: BackendKind,
) -> Result<(Points, bool)> {
    let scaled;
    let rows = match params.metric {
        Metric::InnerProduct if params.reduces(rows.d) => {
            return Err(Error::param(
                "metric",
                "inner-product needs an uncentred PCA, and the sparse PCA centres the \
                 columns; use --pca none, or a dense matrix",
            ))
        }
        Metric::Euclidean | Metric::InnerProduct => rows,
        Metric::Cosine => {
            scaled = unit_rows(rows)?;
            &scaled
        }
        Metric::Correlation => {
            return Err(Error::param(
                "metric",
                "correlation centres every row, which would densify a sparse matrix; use \
                 cosine, or a dense matrix (e.g. --use-rep X_pca)",
            ))
        }
    };
    Ok(match params.pca {
        Some(m) if rows.d > m && backend != BackendKind::Cpu => (
            prep::sparse_pca_gpu(Gpu::get()?, rows, m, params.seed)?,
            true,
        ),
        Some(m) if rows.d > m => (prep::sparse_pca(rows, m, params.seed)?, true),
        _ => (rows.to_dense(), false),
    })
}

/// The rows scaled to unit Euclidean length; a row with no stored non-zero is an error
/// naming it, as for dense points.
fn unit_rows(rows: &CsrPoints) -> Result<CsrPoints> {
    let mut out = rows.clone();
    for i in 0..rows.n {
        let (a, b) = (rows.indptr[i] as usize, rows.indptr[i + 1] as usize);
        let norm = out.data[a..b]
            .iter()
            .map(|&x| x as f64 * x as f64)
            .sum::<f64>()
            .sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            return Err(Error::Data(format!(
                "row {i} (counting from 0) is all zeros: it has no cosine distance to any \
                 point; remove it or use --metric euclidean"
            )));
        }
        out.data[a..b]
            .iter_mut()
            .for_each(|x| *x = (*x as f64 / norm) as f32);
    }
    Ok(out)
}
