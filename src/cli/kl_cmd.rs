//! `sgtsne kl`: KL(P‖Q) of a given embedding, with P built from the points as `embed`
//! builds it, so that embeddings from other tools are scored on equal terms.

use std::io::Write;

use anyhow::{Context, Result};
use sgtsne::progress::Silent;
use sgtsne::{affinity, io, knn, prep, quality};

use super::args::{KlAffinities, KlArgs, NoneOr};

pub fn run(a: KlArgs) -> Result<()> {
    if !(a.perplexity >= 1.0 && a.perplexity.is_finite()) {
        anyhow::bail!(
            "invalid parameter `perplexity`: must be at least 1, got {}",
            a.perplexity
        );
    }
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(t) = a.threads {
        pool = pool.num_threads(t.max(1));
    }
    let pool = pool.build().context("cannot start the worker threads")?;
    let mut points = io::read_points(&a.points)?;
    // As `embed` does: values whose squared distances f32 cannot hold, scaled exactly.
    prep::fit_f32_range(&mut points.data);
    let embedding = io::read_points(&a.embedding)?;
    if embedding.n != points.n {
        anyhow::bail!(
            "{}: {} rows, but {} has {} points",
            a.embedding.display(),
            embedding.n,
            a.points.display(),
            points.n
        );
    }
    let k = (3.0 * a.perplexity).ceil() as usize;
    let kl = pool.install(|| -> Result<f64> {
        let points = match a.pca {
            NoneOr::Value(m) if points.d > m => prep::pca(&points, m)?,
            _ => points,
        };
        let p = match a.affinities {
            KlAffinities::Exact => affinity::exact_affinities(&points, a.perplexity)?,
            KlAffinities::Knn => {
                let nb = knn::exact(&points, k, &Silent)?;
                affinity::from_neighbors(&nb, a.perplexity)?
            }
        };
        let kernel = sgtsne::kernel::Kernel::new(a.dof)?;
        Ok(quality::kl_divergence_with(
            kernel,
            &p,
            &embedding.data,
            embedding.d,
        )?)
    })?;
    writeln!(std::io::stdout(), "{kl:.6}")?;
    Ok(())
}
