//! `sgtsne gen`: write a synthetic Gaussian mixture (and its cluster labels).

use std::time::Instant;

use anyhow::Result;
use sgtsne::gen::{gaussian_mixture, MixtureParams};
use sgtsne::io::{self, OutputKind};

use super::args::GenArgs;

pub fn run(a: GenArgs) -> Result<()> {
    io::check_output_path(&a.output, OutputKind::Embedding)?;
    let t = Instant::now();
    let params = MixtureParams {
        n: a.n,
        dim: a.dim,
        clusters: a.clusters,
        seed: a.seed,
    };
    let (points, labels) = gaussian_mixture(&params)?;
    io::write_embedding(&a.output, &points.data, points.d)?;
    if let Some(path) = &a.labels {
        io::write_labels(path, &labels)?;
    }
    eprintln!(
        "wrote {} points × {} dims in {} clusters to {} in {:.1} s",
        a.n,
        a.dim,
        a.clusters,
        a.output.display(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
