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
        perplexity: perplexity_for(args.k),
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
    // Plain distances in the input's units, in f64: squaring them gives back the f32
    // squared distances exactly (the unit change is a power of two).
    let unit = 2f64.powi(-found.scale_exponent);
    let distances: Vec<f64> = nb
        .distances
        .iter()
        .map(|&d| (d as f64).sqrt() * unit)
        .collect();
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

/// The perplexity whose k = ⌈3·perplexity⌉ is `k`: k / 3, stepped down past any rounding
/// that would make 3 · (k / 3) exceed k.
fn perplexity_for(k: usize) -> f64 {
    let mut u = k as f64 / 3.0;
    while (3.0 * u).ceil() as usize > k {
        u = f64::from_bits(u.to_bits() - 1);
    }
    u
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perplexity_gives_back_k() {
        for k in 3..2000 {
            let params = EmbedParams {
                perplexity: perplexity_for(k),
                max_neighbors: k,
                ..EmbedParams::default()
            };
            assert_eq!(params.k(), k);
        }
    }
}
