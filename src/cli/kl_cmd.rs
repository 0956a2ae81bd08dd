//! `sgtsne kl`: KL(P‖Q) of a given embedding, with P built from the points as `embed`
//! builds it, so that embeddings from other tools are scored on equal terms.

use std::io::Write;

use anyhow::{Context, Result};
use sgtsne::io;
use sgtsne::quality::{self, KlOptions};

use super::args::{KlAffinities, KlArgs};

pub fn run(a: KlArgs) -> Result<()> {
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(t) = a.threads {
        pool = pool.num_threads(t.max(1));
    }
    let pool = pool.build().context("cannot start the worker threads")?;
    let points = io::read_points(&a.points)?;
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
    let options = KlOptions {
        perplexity: a.perplexity,
        exact: matches!(a.affinities, KlAffinities::Exact),
        dof: a.dof,
        pca: a.pca.into_option(),
    };
    let kl = pool.install(|| quality::kl_of_embedding(points, &embedding, &options))?;
    writeln!(std::io::stdout(), "{kl:.6}")?;
    Ok(())
}
