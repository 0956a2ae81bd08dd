//! `sgtsne embed`: load, embed, write — outputs checked before the long work starts, and
//! written atomically after it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use sgtsne::embed::{self, EmbedParams, Embedding, Input};
use sgtsne::io::{self, Labels, OutputKind};
use sgtsne::optim::Snapshots;
use sgtsne::transform::Model;
use sgtsne::view::Column;
use sgtsne::Points;

use super::args::{AffinitiesArg, ClustersOnArg, EmbedArgs, InitArg, OnInterruptArg};
use super::clusters::{data_points, Clusters};
use super::embed_params::{params_from, renamed_flags};
use super::files::{
    display_name, is_h5ad, is_stdout, obs_column, read_input, read_labels_for,
    refuse_outputs_over_inputs, write_y,
};
use super::interrupt::Interrupts;
use super::progress_bar::Bar;

/// The checks of `plan` first, then load, embed (with the clusters of `--clusters`) and
/// write, each output atomically.
pub fn run(args: EmbedArgs) -> Result<()> {
    let start = Instant::now();
    let mut plan = plan(&args)?;
    let interrupts = install_interrupts(&args, plan.output.as_deref())?;
    let (pool, _) = super::worker_pool(args.threads)?;
    let warm = embed::WarmUp::start(&plan.params);
    // However `run` returns, the NCCL communicators being made ahead or aborted on side
    // threads end first: the process must not end under them. (Dropped before `warm`,
    // whose thread may wait for the GPUs beyond the first until this lets them go.)
    let ended = sgtsne::gpu::comm::EndedOnDrop;

    let t = Instant::now();
    sgtsne::trace::event(|| "load".into());
    let (input, name, labels) = load(&args)?;
    if let Some(spec) = &args.knn_from {
        // On the run's threads (`--threads`): the file's values are checked in parallel.
        let k = plan.params.k();
        let nb = pool.install(|| -> Result<_> {
            let lists = io::read_neighbors(spec, input.n())?;
            let source = spec.display().to_string();
            Ok(sgtsne::knn::precomputed::from_lists(&lists, k, &source)?)
        })?;
        plan.params.knn_given = Some(Arc::new(nb));
    }
    let load_seconds = t.elapsed().as_secs_f64();
    let params = &plan.params;
    let clusters_on = args.clusters_on.unwrap_or(ClustersOnArg::Embedding);
    let mut clusters = match args.clusters {
        Some(k) if clusters_on == ClustersOnArg::Data => {
            let points = pool.install(|| data_points(&input, params))?;
            let fit = pool
                .install(|| Clusters::fit(&points, clusters_on, k, params.seed, labels.as_ref()));
            Some(fit?)
        }
        _ => None,
    };

    let bar = Bar::new(args.quiet);
    let mut result = pool.install(|| {
        let mut watch = interrupts.watch(plan.snapshots.as_mut().map(|s| s as _));
        embed::embed_observed(
            input,
            &name,
            labels.as_ref(),
            params,
            &bar,
            Some(&mut watch),
        )
    })?;
    if interrupts.writing() && args.on_interrupt == OnInterruptArg::Discard {
        let iters = params.optim.iters;
        return Err(sgtsne::Error::Interrupted { iter: iters, iters }.into());
    }
    if let (Some(k), ClustersOnArg::Embedding) = (args.clusters, clusters_on) {
        let y = Points::new(result.y.len() / result.dims, result.dims, result.y.clone());
        let fit = pool.install(|| Clusters::fit(&y, clusters_on, k, params.seed, labels.as_ref()));
        clusters = Some(fit?);
    }
    // The GPU work is over: beside the writing, NCCL's teardown and the warm-up thread are
    // waited for, then every GPU's context ends (at once, instead of one after another at
    // the process's exit).
    // SAFETY: nothing uses a GPU once the closure has returned: the run has, its side
    // threads (the warm-up, NCCL's set-up and teardown) have ended, `result` holds host
    // data only, and the writing and the summary run on the host.
    let _contexts = unsafe {
        sgtsne::gpu::end::end_contexts(move || {
            drop(ended);
            drop(warm);
        })
    };

    let t = Instant::now();
    sgtsne::trace::event(|| "write".into());
    write_outputs(
        &args,
        &plan,
        &result,
        &name,
        labels.as_ref(),
        clusters.as_ref(),
    )?;
    let report = &mut result.report;
    report.clusters = clusters.map(|c| c.report);
    report.seconds.load = load_seconds;
    report.seconds.write = t.elapsed().as_secs_f64();
    report.seconds.total = start.elapsed().as_secs_f64();
    report.peak_rss_bytes = sgtsne::report::peak_rss_bytes();
    sgtsne::trace::event(|| "written".into());
    if let Some(path) = &args.report {
        io::write_atomic(path, |w| {
            serde_json::to_writer_pretty(&mut *w, report).map_err(std::io::Error::other)?;
            writeln!(w)
        })?;
    }
    if !args.quiet {
        summarise(report, &args, plan.output.as_ref());
        if let (Some(dir), Some(s)) = (&args.snapshots, &plan.snapshots) {
            eprintln!(
                "  wrote {} snapshots to {}",
                s.written().len(),
                dir.display()
            );
        }
    }
    Ok(())
}

/// What [`plan`] settles before any work.
struct Plan<'a> {
    params: EmbedParams,
    /// Where the embedding goes: `-o`, or the input itself with `--in-place`.
    output: Option<PathBuf>,
    /// The input, when it is an `.h5ad` (an `.h5ad` output is a copy of it).
    h5ad_input: Option<&'a Path>,
    /// The observer that writes `--snapshot-every`'s files.
    snapshots: Option<Snapshots>,
}

/// Every check that needs no data, before the long work starts: one thing to embed, the
/// parameters, the flags only an `.h5ad` honours, and every output writable and none over
/// an input (a run must not fail at its end for a path it could have refused at once).
fn plan(args: &EmbedArgs) -> Result<Plan<'_>> {
    check_source(args)?;
    let params = params_from(args)?;
    params.validate()?;
    if !args.quiet {
        for note in renamed_flags(args) {
            eprintln!("note: {note}");
        }
    }
    let h5ad_input = args.input.as_deref().filter(|p| is_h5ad(p));
    check_h5ad_flags(args, h5ad_input)?;
    let output = if args.in_place {
        args.input.clone()
    } else {
        args.output.clone()
    };
    check_outputs_spare_inputs(args, output.as_deref(), h5ad_input.is_some())?;
    for (path, kind) in [
        (&output, OutputKind::Embedding),
        (&args.plot, OutputKind::Plot),
        (&args.view, OutputKind::Map),
        (&args.report, OutputKind::Report),
        (&args.animate, OutputKind::Animation),
        (&args.save_model, OutputKind::Model),
        (&args.clusters_out, OutputKind::Labels),
    ] {
        if let Some(p) = path.as_deref().filter(|p| !is_stdout(p)) {
            io::check_output_path(p, kind)?;
        }
    }
    // Last of the checks: the snapshot directory is made at the first snapshot.
    let snapshots = match (args.snapshot_every, &args.snapshots) {
        (Some(every), Some(dir)) => {
            Some(Snapshots::new(dir, every, params.optim.iters, params.dims)?)
        }
        _ => None,
    };
    if output.is_none()
        && args.plot.is_none()
        && args.view.is_none()
        && args.report.is_none()
        && snapshots.is_none()
    {
        eprintln!(
            "warning: no -o, --plot, --view or --report: the embedding will be computed and not kept"
        );
    }
    Ok(Plan {
        params,
        output,
        h5ad_input,
        snapshots,
    })
}

/// Ctrl-C's handling for the run, told the directories its outputs (and the compiled
/// kernels) go to, where this process's temporary files may lie when it has to end at once.
fn install_interrupts(args: &EmbedArgs, output: Option<&Path>) -> Result<Interrupts> {
    let dirs = [
        output,
        args.plot.as_deref(),
        args.view.as_deref(),
        args.report.as_deref(),
        args.animate.as_deref(),
    ]
    .into_iter()
    .flatten()
    .filter(|p| !is_stdout(p))
    .map(|p| match p.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    })
    .chain(args.snapshots.clone())
    .chain(sgtsne::gpu::compile::cache_dir())
    .collect();
    Interrupts::install(dirs, args.on_interrupt)
}

/// The embedding, the `--clusters` labels, the model, the plot and the animation, each
/// where its flag asks. Without labels of their own, the plot and the animation show the
/// clusters.
fn write_outputs(
    args: &EmbedArgs,
    plan: &Plan,
    result: &Embedding,
    name: &str,
    labels: Option<&Labels>,
    clusters: Option<&Clusters>,
) -> Result<()> {
    let cluster_labels = clusters
        .filter(|_| labels.is_none())
        .map(Clusters::as_labels);
    let plot_labels = labels.or(cluster_labels.as_ref());
    if let Some(out) = &plan.output {
        write_y(out, plan.h5ad_input, &args.key, &result.y, result.dims)?;
    }
    if let (Some(path), Some(c)) = (&args.clusters_out, clusters) {
        io::write_labels(path, &c.labels)?;
    }
    if let Some(path) = &args.save_model {
        Model::of(result)?.save(path)?;
    }
    if let Some(plot) = &args.plot {
        let title = format!("sgtsne: {name}, KL {:.3}", result.report.optimise.final_kl);
        io::plot::scatter_png(plot, &result.y, result.dims, plot_labels, &title)?;
    }
    if let Some(map) = &args.view {
        let columns: Vec<Column> = plot_labels
            .map(|l| {
                Column::categorical(
                    if labels.is_some() {
                        "labels"
                    } else {
                        "clusters"
                    },
                    l.clone(),
                )
            })
            .into_iter()
            .collect();
        sgtsne::view::write_html(
            map,
            &result.y,
            result.dims,
            &columns,
            &format!("sgtsne: {name}"),
        )?;
    }
    if let (Some(gif), Some(s)) = (&args.animate, &plan.snapshots) {
        let title = format!("sgtsne: {name}");
        io::plot::animate_gif(gif, s.written(), result.dims, plot_labels, &title)?;
    }
    Ok(())
}

/// Refuses an output (`-o`, `--plot`, `--report`) that names a file the run reads (the
/// input, `--graph`, `--labels`, `--init`): written after the work, it would replace data
/// the user keeps. `--in-place` is the one deliberate exception, for an `.h5ad` input.
fn check_outputs_spare_inputs(args: &EmbedArgs, output: Option<&Path>, h5ad: bool) -> Result<()> {
    let init = match &args.init {
        InitArg::File(path) => Some(path.as_path()),
        _ => None,
    };
    let inputs = [
        ("the input file", args.input.as_deref()),
        ("the --graph file", args.graph.as_deref()),
        (
            "the --affinities file",
            args.affinities.as_ref().and_then(AffinitiesArg::file),
        ),
        (
            "the --labels file",
            args.labels.as_deref().filter(|p| obs_column(p).is_none()),
        ),
        ("the --init file", init),
    ];
    let outputs = [
        ("-o", output.filter(|_| !args.in_place)),
        ("--plot", args.plot.as_deref()),
        ("--view", args.view.as_deref()),
        ("--report", args.report.as_deref()),
        ("--clusters-out", args.clusters_out.as_deref()),
    ];
    refuse_outputs_over_inputs(&outputs, &inputs, |flag, what| {
        if h5ad && flag == "-o" && what == "the input file" {
            "to add the embedding to the .h5ad itself, use --in-place"
        } else {
            "choose another output path"
        }
    })
}

/// The flags that only an `.h5ad` input can honour.
fn check_h5ad_flags(args: &EmbedArgs, h5ad_input: Option<&Path>) -> Result<()> {
    if h5ad_input.is_some() {
        return Ok(());
    }
    let obs_labels = args.labels.as_deref().and_then(obs_column).is_some();
    for (given, flag) in [
        (args.use_rep.is_some(), "--use-rep"),
        (args.in_place, "--in-place"),
        (obs_labels, "--labels obs:COLUMN"),
    ] {
        if given {
            anyhow::bail!("{flag} applies to an .h5ad input only");
        }
    }
    Ok(())
}

/// Exactly one thing to embed: INPUT, --demo, --graph, or a P file given as --affinities.
fn check_source(args: &EmbedArgs) -> Result<()> {
    let others = args.input.is_some() as usize + args.demo as usize + args.graph.is_some() as usize;
    match (
        args.affinities.as_ref().and_then(AffinitiesArg::file),
        others,
    ) {
        (Some(p), 1..) => anyhow::bail!(
            "--affinities {} is the input itself (P over the points): give no INPUT, --demo \
             or --graph with it",
            p.display()
        ),
        (None, 0) => anyhow::bail!(
            "nothing to embed: give INPUT, --demo, --graph G.mtx or --affinities P.mtx"
        ),
        _ => Ok(()),
    }
}

/// The input, its display name and its labels (given or, for the demo, built in).
fn load(args: &EmbedArgs) -> Result<(Input, String, Option<Labels>)> {
    let (input, name) = if args.demo {
        (
            Input::Points(sgtsne::demo::points()?),
            sgtsne::demo::NAME.to_string(),
        )
    } else if let Some(g) = &args.graph {
        (Input::Graph(io::read_graph(g)?), display_name(g))
    } else if let Some(p) = args.affinities.as_ref().and_then(AffinitiesArg::file) {
        // With --lambda the user asks for SG-t-SNE's rescaling: P is then a graph's weights.
        let p_given = io::read_graph(p)?;
        let input = match args.lambda {
            Some(_) => Input::Graph(p_given),
            None => Input::Affinities(p_given),
        };
        (input, display_name(p))
    } else {
        let path = args.input.as_ref().expect("check_source requires one");
        let input = read_input(path, args.use_rep.as_deref(), args.quiet)?;
        (input, display_name(path))
    };
    let labels = match (&args.labels, args.demo) {
        (Some(path), _) => Some(read_labels_for(path, args.input.as_deref())?),
        (None, true) => Some(sgtsne::demo::labels()?),
        (None, false) => None,
    };
    if let Some(l) = &labels {
        let n = input.n();
        if l.codes.len() != n {
            let source = args
                .labels
                .as_ref()
                .map_or("the built-in labels".to_string(), |p| {
                    p.display().to_string()
                });
            anyhow::bail!("{source}: {} labels for {n} points", l.codes.len());
        }
    }
    Ok((input, name, labels))
}

/// A few lines on stderr: the report's summary ([`sgtsne::report::Report::summary_lines`])
/// and the files written.
fn summarise(r: &sgtsne::report::Report, args: &EmbedArgs, output: Option<&PathBuf>) {
    for line in r.summary_lines() {
        eprintln!("{line}");
    }
    for p in [
        output,
        args.plot.as_ref(),
        args.report.as_ref(),
        args.animate.as_ref(),
        args.clusters_out.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        if is_stdout(p) {
            eprintln!("  wrote the embedding to standard output");
        } else {
            eprintln!("  wrote {}", p.display());
        }
    }
}
