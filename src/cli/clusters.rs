//! `embed --clusters K`: a Gaussian mixture fitted to the embedding or to the data, for the
//! plot's colours and the report.

use std::time::Instant;

use anyhow::{Context, Result};
use sgtsne::embed::{self, EmbedParams, Input};
use sgtsne::gmm::{self, GmmParams, Samples};
use sgtsne::io::Labels;
use sgtsne::progress::Silent;
use sgtsne::quality::adjusted_rand_index;
use sgtsne::report::ClusterReport;
use sgtsne::Points;

use super::args::ClustersOnArg;

/// Starts of the mixture fitted to an embedding; the best is kept.
const EMBEDDING_RESTARTS: usize = 5;

/// Cluster labels and what the report says of them.
pub(super) struct Clusters {
    pub labels: Vec<u32>,
    pub report: ClusterReport,
}

impl Clusters {
    /// Fits `k` components (`sgtsne gmm`'s defaults, `seed`; five starts on an embedding)
    /// to `points`; with `given` labels, measures the agreement.
    pub(super) fn fit(
        points: &Points,
        on: ClustersOnArg,
        k: usize,
        seed: u64,
        given: Option<&Labels>,
    ) -> Result<Clusters> {
        let t = Instant::now();
        let what = match on {
            ClustersOnArg::Embedding => "embedding",
            ClustersOnArg::Data => "data",
        };
        let x = Samples::<f64>::from_points(points)
            .with_context(|| format!("--clusters: cannot fit the {what}"))?;
        // A 1–3-D embedding fits in a fraction of a second, and one k-means++ start often
        // merges two of its clusters (MNIST: adjusted Rand index 0.70 with one start, 0.91
        // with five), so the embedding gets five starts; the data, often wide, one.
        let restarts = match on {
            ClustersOnArg::Embedding => EMBEDDING_RESTARTS,
            ClustersOnArg::Data => 1,
        };
        let params = GmmParams {
            k,
            seed,
            restarts,
            ..GmmParams::default()
        };
        let fit = gmm::fit(&x, &params, &Silent).context("--clusters")?;
        let report = ClusterReport {
            k,
            on: what,
            sizes: fit.sizes(),
            mean_log_likelihood: fit.mean_log_likelihood,
            bic: fit.bic(),
            iterations: fit.history.len(),
            converged: fit.converged,
            adjusted_rand_index: given.map(|l| adjusted_rand_index(&l.codes, &fit.labels)),
            notes: fit.notes,
            seconds: t.elapsed().as_secs_f64(),
        };
        Ok(Clusters {
            labels: fit.labels,
            report,
        })
    }

    /// The clusters as plot labels, named `cluster 1` … `cluster K`.
    pub(super) fn as_labels(&self) -> Labels {
        Labels {
            codes: self.labels.clone(),
            names: (1..=self.report.k)
                .map(|c| format!("cluster {c}"))
                .collect(),
        }
    }
}

/// The points `--clusters-on data` fits: a copy of the input's points, reduced as the kNN
/// stage reduces them.
pub(super) fn data_points(input: &Input, params: &EmbedParams) -> Result<Points> {
    let copy = match input {
        Input::Points(p) => Input::Points(p.clone()),
        Input::Sparse(rows) => Input::Sparse(rows.clone()),
        Input::Graph(_) | Input::Affinities(_) => {
            anyhow::bail!("--clusters-on data needs points; a graph or affinities have none")
        }
    };
    Ok(embed::reduced_points(copy, params)?)
}
