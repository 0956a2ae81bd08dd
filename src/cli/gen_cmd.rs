//! `sgtsne gen`: write a synthetic Gaussian mixture, or deformed copies of real images
//! (`--deform-images`), and their labels. Outputs are checked before the work starts and
//! written atomically after it.

use std::time::Instant;

use anyhow::{Context, Result};
use sgtsne::gen::{
    gaussian_mixture, DeformParams, DeformedDigits, DigitsParams, ImageSet, MixtureParams,
};
use sgtsne::io::{self, OutputKind};
use sgtsne::Points;

use super::args::GenArgs;
use super::progress_bar::Bar;

/// Clusters of the mixture when `--clusters` is not given.
const DEFAULT_CLUSTERS: usize = 40;

pub fn run(a: GenArgs) -> Result<()> {
    io::check_output_path(&a.output, OutputKind::Embedding)?;
    if let Some(path) = &a.labels {
        io::check_output_path(path, OutputKind::Labels)?;
    }
    let (pool, _) = super::worker_pool(a.threads)?;
    let t = Instant::now();
    let (points, labels, what) = pool.install(|| match &a.deform_images {
        Some(_) => deformed_images(&a),
        None => mixture(&a),
    })?;
    let generated = t.elapsed().as_secs_f64();
    io::write_embedding(&a.output, &points.data, points.d)?;
    if let Some(path) = &a.labels {
        io::write_labels(path, &labels)?;
    }
    if !a.quiet {
        eprintln!(
            "wrote {} points × {} dims ({what}) to {} in {:.1} s (generate {generated:.1} s, \
             write {:.1} s)",
            points.n,
            points.d,
            a.output.display(),
            t.elapsed().as_secs_f64(),
            t.elapsed().as_secs_f64() - generated
        );
    }
    Ok(())
}

/// The Gaussian mixture, its cluster labels and a description.
fn mixture(a: &GenArgs) -> Result<(Points, Vec<u32>, String)> {
    let clusters = a.clusters.unwrap_or(DEFAULT_CLUSTERS);
    let params = MixtureParams {
        n: a.n,
        dim: a.dim,
        clusters,
        seed: a.seed,
    };
    let (points, labels) = gaussian_mixture(&params)?;
    Ok((points, labels, format!("{clusters} clusters")))
}

/// Deformed copies of `--deform-images` in PCA coordinates, their images' labels and a
/// description.
fn deformed_images(a: &GenArgs) -> Result<(Points, Vec<u32>, String)> {
    let (Some(images), Some(image_labels)) = (&a.deform_images, &a.image_labels) else {
        anyhow::bail!("--deform-images needs --image-labels");
    };
    let t = Instant::now();
    let deform = DeformParams::default().scaled(a.deform_strength);
    deform.validate().with_context(|| {
        format!(
            "--deform-strength {} gives deformation ranges out of bounds",
            a.deform_strength
        )
    })?;
    let params = DigitsParams {
        dim: a.dim,
        deform,
        deform_originals: a.deform_all,
    };
    let source = ImageSet::read(images, image_labels)?;
    let (n_src, side) = (source.len(), source.side());
    let digits = DeformedDigits::fit(source, &params)
        .with_context(|| format!("{}: cannot use these images", images.display()))?;
    if !a.quiet {
        eprintln!(
            "read {n_src} images of {side} × {side} and fitted their PCA ({} components, \
             {:.1}% of the variance) in {:.1} s",
            a.dim,
            100.0 * digits.pca().variances.iter().sum::<f64>() / digits.pca().total_variance,
            t.elapsed().as_secs_f64()
        );
    }
    let bar = Bar::new(a.quiet);
    let (points, labels) = digits.generate(a.n, a.seed, &bar)?;
    let what = format!(
        "deformed copies of the {n_src} images of {}",
        images.display()
    );
    Ok((points, labels, what))
}
