//! `sgtsne knn`: every point's k nearest neighbours, found as `embed` finds them, written as
//! an `.npz` for `embed --knn-from` and for other tools.

use std::time::Instant;

use anyhow::Result;
use sgtsne::embed::{self, EmbedParams};
use sgtsne::io::{self, IndexType, OutputKind};

use super::args::{IndexTypeArg, KnnArgs};
use super::embed_params::apply_search;
use super::files::{display_name, read_input};
use super::progress_bar::Bar;

pub fn run(args: KnnArgs) -> Result<()> {
    let start = Instant::now();
    if args.k < 3 {
        anyhow::bail!(
            "invalid parameter `k`: must be at least 3 (k = ⌈3·perplexity⌉, and t-SNE's \
             perplexity is at least 1), got {}",
            args.k
        );
    }
    super::embed_params::check_gpus(args.gpus, args.backend)?;
    io::check_output_path(&args.output, OutputKind::Neighbors)?;
    if let Some(report) = &args.report {
        io::check_output_path(report, OutputKind::Report)?;
    }
    let mut params = EmbedParams {
        perplexity: embed::perplexity_for(args.k),
        // -k is the count asked for: embed's cap on neighbours does not apply.
        max_neighbors: args.k,
        backend: args.backend.into(),
        gpus: args.gpus,
        seed: args.seed,
        ..EmbedParams::default()
    };
    apply_search(&args.search, args.seed, &mut params);
    let (pool, _) = super::worker_pool(args.threads)?;
    let input = read_input(&args.input, args.use_rep.as_deref(), args.quiet)?;
    let load = start.elapsed().as_secs_f64();
    let bar = Bar::new(args.quiet);
    let found = pool.install(|| embed::search_neighbors(input, &params, &bar))?;
    // The search is over: every GPU's context ends beside the writing, all at once, instead
    // of one after another at the process's exit (as `embed`'s do).
    // SAFETY: nothing uses a GPU from here on: the search's threads have ended, and `found`
    // holds host data only; the writing and the report run on the host.
    let _contexts = unsafe { sgtsne::gpu::end::end_contexts(|| {}) };
    let nb = &found.neighbors;
    let t = Instant::now();
    let distances = found.plain_distances();
    let index_type = match args.index_type {
        IndexTypeArg::I64 => IndexType::I64,
        IndexTypeArg::U32 => IndexType::U32,
    };
    io::write_neighbors(
        &args.output,
        nb.n,
        nb.k,
        &nb.indices,
        &distances,
        index_type,
    )?;
    let write = t.elapsed().as_secs_f64();
    let total = start.elapsed().as_secs_f64();
    if let Some(path) = &args.report {
        let report = serde_json::json!({
            "version": env!("CARGO_PKG_VERSION"),
            "input": { "name": display_name(&args.input), "n": nb.n },
            "knn": found.knn,
            "metric": params.metric,
            "pca": params.pca,
            "backend": found.backend,
            "seconds": {
                "load": load, "pca": found.seconds.pca, "order": found.seconds.order,
                "knn": found.seconds.knn, "write": write, "total": total,
            },
            "peak_rss_bytes": sgtsne::report::peak_rss_bytes(),
        });
        io::write_atomic(path, |w| {
            serde_json::to_writer_pretty(&mut *w, &report).map_err(std::io::Error::other)?;
            writeln!(w)
        })?;
    }
    if !args.quiet {
        let s = &found.seconds;
        eprintln!(
            "{} neighbours of {} points ({}, {}): {total:.1} s (load {load:.2} s, pca {:.2} s, \
             knn {:.2} s, write {write:.2} s) → {}",
            nb.k,
            nb.n,
            found.knn.method,
            found.backend.kind.name(),
            s.pca,
            s.knn,
            args.output.display()
        );
        if let (Some(recall), Some(size)) = (found.knn.recall_sample, found.knn.recall_sample_size)
        {
            eprintln!("  recall {recall:.4} on a sample of {size} points");
        }
        for note in &found.notes {
            eprintln!("  note: {note}");
        }
    }
    Ok(())
}
