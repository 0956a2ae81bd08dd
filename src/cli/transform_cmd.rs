//! `sgtsne transform`: place new points into a map saved by `embed --save-model`, on the
//! CPU or the GPU. Outputs are checked before the work and written atomically after it.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use sgtsne::embed::Input;
use sgtsne::io::{self, Labels, OutputKind};
use sgtsne::progress::Silent;
use sgtsne::transform::{self, Model, TransformParams};
use sgtsne::{knn, quality, Points};

use super::args::TransformArgs;
use super::files::{is_stdout, read_input, write_y};
use super::progress_bar::Bar;

/// Reference neighbours of a new point in the map whose labels vote (the report's
/// `knn_accuracy`), as `embed`'s 10-NN accuracy.
const VOTERS: usize = 10;

pub fn run(args: TransformArgs) -> Result<()> {
    let start = Instant::now();
    let params = TransformParams {
        perplexity: args.perplexity,
        init_neighbors: args.init_neighbors,
        iters: args.iters,
        learning_rate: args.learning_rate,
        exaggeration: args.exaggeration,
        backend: args.backend.into(),
        ..TransformParams::default()
    };
    params.validate()?;
    for (path, kind) in [
        (&args.output, OutputKind::Embedding),
        (&args.report, OutputKind::Report),
    ] {
        if let Some(p) = path.as_deref().filter(|p| !is_stdout(p)) {
            io::check_output_path(p, kind)?;
        }
    }
    if args.output.is_none() && args.report.is_none() {
        eprintln!("warning: no -o or --report: the placement will be computed and not kept");
    }
    let model = Model::load(&args.model)?;
    let new = match read_input(&args.input, None, args.quiet)? {
        Input::Points(p) => p,
        _ => anyhow::bail!(
            "{}: transform needs dense points (sparse rows are not supported yet)",
            args.input.display()
        ),
    };
    let labels = match (&args.labels, &args.reference_labels) {
        (Some(l), Some(r)) => Some((
            read_counted(l, new.n, "new")?,
            read_counted(r, model.n, "reference")?,
        )),
        _ => None,
    };

    let (pool, _) = super::worker_pool(args.threads)?;
    let bar = Bar::new(args.quiet);
    let mut placed = pool.install(|| transform::transform(&model, new, &params, &bar))?;
    if let Some((new_labels, ref_labels)) = &labels {
        let dims = placed.dims;
        let map = Points::new(model.n, dims, model.y.clone());
        let at = Points::new(placed.y.len() / dims, dims, placed.y.clone());
        let k = VOTERS.min(model.n);
        let nb = pool.install(|| knn::query(&map, &at, k, knn::Key::SqEuclidean, &Silent))?;
        placed.report.knn_accuracy = Some(quality::knn_accuracy_among(
            &nb.indices,
            k,
            &new_labels.codes,
            &ref_labels.codes,
        ));
    }

    if let Some(out) = &args.output {
        write_y(out, None, "X_tsne", &placed.y, placed.dims)?;
    }
    placed.report.seconds.total = start.elapsed().as_secs_f64();
    let r = &placed.report;
    if let Some(path) = &args.report {
        io::write_atomic(path, |w| {
            serde_json::to_writer_pretty(&mut *w, r).map_err(std::io::Error::other)?;
            writeln!(w)
        })?;
    }
    if !args.quiet {
        eprintln!(
            "placed {} points into the map of {} ({} reference points) on the {}: {:.2} s (kNN \
             {:.2} s, optimise {:.2} s), mean shift from the median start {:.3}",
            r.n_new,
            args.model.display(),
            r.n_reference,
            r.backend.kind.name(),
            r.seconds.total,
            r.seconds.knn,
            r.seconds.optimise,
            r.mean_shift
        );
        if let Some(acc) = r.knn_accuracy {
            eprintln!("  10-NN label accuracy against the reference map: {acc:.4}");
        }
        for note in &r.notes {
            eprintln!("  note: {note}");
        }
    }
    Ok(())
}

/// Labels from `path`, one per point of the `which` set of `n`.
fn read_counted(path: &Path, n: usize, which: &str) -> Result<Labels> {
    let l = io::read_labels(path)?;
    if l.codes.len() != n {
        anyhow::bail!(
            "{}: {} labels for {n} {which} points",
            path.display(),
            l.codes.len()
        );
    }
    Ok(l)
}
