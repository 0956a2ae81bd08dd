//! `sgtsne embed`: load, embed, write — outputs checked before the long work starts, and
//! written atomically after it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use sgtsne::backend::BackendKind;
use sgtsne::embed::{
    self, AffinityMethod, EmbedParams, Input, KnnMethod, PointOrder, Precision, RepulsionMethod,
};
use sgtsne::init::InitKind;
use sgtsne::io::h5ad::{H5adMatrix, Rep};
use sgtsne::io::{self, Labels, OutputKind};
use sgtsne::knn::ivf::IvfParams;
use sgtsne::optim::{OptimParams, Snapshots};
use sgtsne::prep::Metric;
use sgtsne::repulse::GridSpec;
use sgtsne::transform::Model;
use sgtsne::Points;

use super::args::{
    AffinitiesArg, AutoOr, BackendArg, ClustersOnArg, EmbedArgs, GridArg, InitArg, KnnArg,
    MetricArg, NoneOr, OnInterruptArg, OrderArg, PrecisionArg, RepulsionArg, SearchArgs,
};
use super::clusters::{data_points, Clusters};
use super::interrupt::Interrupts;
use super::progress_bar::Bar;

pub fn run(args: EmbedArgs) -> Result<()> {
    let start = Instant::now();
    check_source(&args)?;
    let mut params = params_from(&args)?;
    params.validate()?;
    if !args.quiet {
        for note in renamed_flags(&args) {
            eprintln!("note: {note}");
        }
    }
    let h5ad_input = args.input.as_deref().filter(|p| is_h5ad(p));
    check_h5ad_flags(&args, h5ad_input)?;
    let output = if args.in_place {
        args.input.clone()
    } else {
        args.output.clone()
    };
    check_outputs_spare_inputs(&args, output.as_deref(), h5ad_input.is_some())?;
    for (path, kind) in [
        (&output, OutputKind::Embedding),
        (&args.plot, OutputKind::Plot),
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
    let mut snapshots = match (args.snapshot_every, &args.snapshots) {
        (Some(every), Some(dir)) => {
            Some(Snapshots::new(dir, every, params.optim.iters, params.dims)?)
        }
        _ => None,
    };
    if output.is_none() && args.plot.is_none() && args.report.is_none() && snapshots.is_none() {
        eprintln!(
            "warning: no -o, --plot or --report: the embedding will be computed and not kept"
        );
    }

    let dirs = [&output, &args.plot, &args.report, &args.animate]
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
    let interrupts = Interrupts::install(dirs, args.on_interrupt)?;
    let (pool, _) = super::worker_pool(args.threads)?;

    let t = Instant::now();
    let (input, name, labels) = load(&args)?;
    if let Some(spec) = &args.knn_from {
        let lists = io::read_neighbors(spec, input.n())?;
        let nb =
            sgtsne::knn::precomputed::from_lists(&lists, params.k(), &spec.display().to_string())?;
        params.knn_given = Some(Arc::new(nb));
    }
    let load_seconds = t.elapsed().as_secs_f64();
    let clusters_on = args.clusters_on.unwrap_or(ClustersOnArg::Embedding);
    let mut clusters = match args.clusters {
        Some(k) if clusters_on == ClustersOnArg::Data => {
            let points = pool.install(|| data_points(&input, &params))?;
            let fit = pool
                .install(|| Clusters::fit(&points, clusters_on, k, params.seed, labels.as_ref()));
            Some(fit?)
        }
        _ => None,
    };

    let bar = Bar::new(args.quiet);
    let mut result = pool.install(|| {
        let mut watch = interrupts.watch(snapshots.as_mut().map(|s| s as _));
        embed::embed_observed(
            input,
            &name,
            labels.as_ref(),
            &params,
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
    // Without labels of its own, the plot shows the clusters.
    let cluster_labels = clusters
        .as_ref()
        .filter(|_| labels.is_none())
        .map(Clusters::as_labels);
    let plot_labels = labels.as_ref().or(cluster_labels.as_ref());

    let t = Instant::now();
    if let Some(out) = &output {
        write_y(out, h5ad_input, &args.key, &result.y, result.dims)?;
    }
    if let (Some(path), Some(c)) = (&args.clusters_out, &clusters) {
        io::write_labels(path, &c.labels)?;
    }
    if let Some(path) = &args.save_model {
        Model::of(&result)?.save(path)?;
    }
    if let Some(plot) = &args.plot {
        let title = format!("sgtsne: {name}, KL {:.3}", result.report.optimise.final_kl);
        io::plot::scatter_png(plot, &result.y, result.dims, plot_labels, &title)?;
    }
    if let (Some(gif), Some(s)) = (&args.animate, &snapshots) {
        let title = format!("sgtsne: {name}");
        io::plot::animate_gif(gif, s.written(), result.dims, plot_labels, &title)?;
    }
    let report = &mut result.report;
    report.clusters = clusters.map(|c| c.report);
    report.seconds.load = load_seconds;
    report.seconds.write = t.elapsed().as_secs_f64();
    report.seconds.total = start.elapsed().as_secs_f64();
    report.peak_rss_bytes = sgtsne::report::peak_rss_bytes();
    if let Some(path) = &args.report {
        io::write_atomic(path, |w| {
            serde_json::to_writer_pretty(&mut *w, report).map_err(std::io::Error::other)?;
            writeln!(w)
        })?;
    }
    if !args.quiet {
        summarise(report, &args, output.as_ref());
        if let (Some(dir), Some(s)) = (&args.snapshots, &snapshots) {
            eprintln!(
                "  wrote {} snapshots to {}",
                s.written().len(),
                dir.display()
            );
        }
    }
    Ok(())
}

/// Notes on the exaggeration flags renamed after openTSNE's: `--exaggeration-iters`
/// is an alias of `--early-exaggeration-iters`, while `--exaggeration` changed meaning, from
/// the early factor to the factor after the early phase. A script written for the old
/// meaning runs on, so it is told; one that also gives `--early-exaggeration` is written for
/// the new meaning and is not.
fn renamed_flags(a: &EmbedArgs) -> Vec<String> {
    let mut notes = Vec::new();
    if a.exaggeration_iters.is_some() {
        notes.push(
            "--exaggeration-iters is now called --early-exaggeration-iters (the old name \
             still works)"
                .to_string(),
        );
    }
    if let (Some(x), None) = (a.exaggeration, a.early_exaggeration) {
        notes.push(format!(
            "--exaggeration {x} sets the exaggeration after the early phase (openTSNE's \
             meaning; default 1); it used to set the early factor, now \
             --early-exaggeration (default 12, used here)"
        ));
    }
    notes
}

/// `-o -`: the embedding goes to standard output as CSV.
/// Writes an embedding `y` (n × `dims`) to `out`: CSV on standard output for `-` (a reader
/// that closes the pipe early took what it wanted: no error), an `.h5ad` (a copy of
/// `h5ad_input` with it as obsm[`key`], or a new file), or any other [`io::write_embedding`]
/// format.
pub(super) fn write_y(
    out: &Path,
    h5ad_input: Option<&Path>,
    key: &str,
    y: &[f32],
    dims: usize,
) -> Result<()> {
    if is_stdout(out) {
        let mut w = std::io::BufWriter::new(std::io::stdout().lock());
        match io::write_embedding_text(&mut w, y, dims, b',').and_then(|()| w.flush()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            r => r.context("writing the embedding to standard output")?,
        }
    } else if is_h5ad(out) {
        io::h5ad::write_h5ad(h5ad_input, out, key, y, dims)?;
    } else {
        io::write_embedding(out, y, dims)?;
    }
    Ok(())
}

pub(super) fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

fn is_h5ad(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("h5ad"))
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

/// Refuses any of `outputs` (flag, path) that names one of `inputs` (what, path), through
/// links too, with `hint(flag, what)` as the way round; `-` (standard output) is no file.
pub(super) fn refuse_outputs_over_inputs(
    outputs: &[(&str, Option<&Path>)],
    inputs: &[(&str, Option<&Path>)],
    hint: impl Fn(&str, &str) -> &'static str,
) -> Result<()> {
    for &(flag, out) in outputs {
        let Some(out) = out.filter(|p| !is_stdout(p)) else {
            continue;
        };
        for &(what, input) in inputs {
            if input.is_some_and(|input| same_file(out, input)) {
                anyhow::bail!(
                    "{flag} {} is {what}: the output would replace it; {}",
                    out.display(),
                    hint(flag, what)
                );
            }
        }
    }
    Ok(())
}

/// Whether two paths name one file (the second may not exist yet): on Unix the same device
/// and inode, so that a hard or symbolic link to the file is caught too.
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
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

/// `--labels`: `obs:COLUMN` of the `.h5ad` `input`, or a labels file.
pub(super) fn read_labels_for(labels: &Path, input: Option<&Path>) -> Result<Labels> {
    Ok(match (obs_column(labels), input) {
        (Some(column), Some(input)) => io::h5ad::read_h5ad_labels(input, column)?,
        _ => io::read_labels(labels)?,
    })
}

/// The column of `--labels obs:COLUMN`.
pub(super) fn obs_column(labels: &Path) -> Option<&str> {
    labels.to_str()?.strip_prefix("obs:")
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

/// The points of a file: of an `.h5ad`, the matrix `use_rep` (`--use-rep`) names, dense or
/// sparse (what was read is said on stderr unless `quiet`).
pub(super) fn read_input(path: &Path, use_rep: Option<&str>, quiet: bool) -> Result<Input> {
    if !is_h5ad(path) {
        return Ok(Input::Points(io::read_points(path)?));
    }
    let read = io::h5ad::read_h5ad_points(path, &Rep::from_flag(use_rep))?;
    let (n, d) = read.matrix.shape();
    Ok(match read.matrix {
        H5adMatrix::Dense(points) => {
            if !quiet {
                eprintln!("{}: {} ({n} × {d})", path.display(), read.source);
            }
            Input::Points(points)
        }
        H5adMatrix::Sparse(rows) => {
            if !quiet {
                eprintln!(
                    "{}: {} ({n} × {d}, sparse: {} stored values, {:.2} %)",
                    path.display(),
                    read.source,
                    rows.nnz(),
                    100.0 * rows.nnz() as f64 / (n as f64 * d as f64)
                );
            }
            Input::Sparse(rows)
        }
    })
}

pub(super) fn display_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    )
}

/// Maps the raw arguments onto the library's parameters.
fn params_from(a: &EmbedArgs) -> Result<EmbedParams> {
    let defaults = EmbedParams::default();
    if a.init_rescale && !matches!(a.init, InitArg::File(_)) {
        anyhow::bail!("--init-rescale applies to --init FILE only");
    }
    let dims = a.dims as usize;
    let grid = match (a.grid, a.grid_spacing, a.grid_error) {
        (_, _, Some(e)) => Some(GridSpec::for_error(e, dims)?),
        (None, None, None) => None,
        (Some(GridArg::Auto), None, None) => Some(GridSpec::default_auto()),
        (None | Some(GridArg::Auto), Some(h), None) => Some(GridSpec::Auto { h }),
        (Some(GridArg::Fixed), None, None) => Some(GridSpec::default_fixed(dims)),
        (Some(GridArg::Nodes(n)), None, None) => Some(GridSpec::Fixed(n)),
        (Some(GridArg::Fixed | GridArg::Nodes(_)), Some(_), None) => {
            anyhow::bail!("--grid-spacing applies to --grid auto only, not to a fixed grid")
        }
    };
    let mut params = EmbedParams {
        dims,
        perplexity: *a
            .perplexity
            .0
            .last()
            .expect("the parser gives one at least"),
        multiscale: if a.perplexity.0.len() > 1 {
            a.perplexity.0.clone()
        } else {
            Vec::new()
        },
        max_neighbors: a.max_neighbors,
        affinities: match a.affinities {
            Some(AffinitiesArg::Exact) => AffinityMethod::Exact,
            _ => AffinityMethod::Knn,
        },
        kernel: sgtsne::kernel::Kernel { dof: a.dof },
        init: match a.init {
            InitArg::Pca => InitKind::Pca,
            InitArg::Random => InitKind::Random,
            InitArg::File(_) => InitKind::Given,
        },
        init_y: match &a.init {
            InitArg::File(path) => Some(read_init(path, dims, a.quiet, a.init_rescale)?),
            _ => None,
        },
        init_rescale: a.init_rescale,
        grid,
        repulsion: match a.repulsion {
            RepulsionArg::Fft => RepulsionMethod::Fft,
            RepulsionArg::Exact => RepulsionMethod::Exact,
        },
        precision: match a.precision {
            PrecisionArg::F32 => Precision::F32,
            PrecisionArg::F64 => Precision::F64,
        },
        backend: match a.backend {
            BackendArg::Auto => BackendKind::Auto,
            BackendArg::Cpu => BackendKind::Cpu,
            BackendArg::Gpu => BackendKind::Gpu,
            BackendArg::Hybrid => BackendKind::Hybrid,
        },
        seed: a.seed,
        lambda: a.lambda.unwrap_or(defaults.lambda),
        keep_reference: a.save_model.is_some(),
        learning_rate: match a.learning_rate {
            AutoOr::Auto => None,
            AutoOr::Value(v) => Some(v),
        },
        optim: OptimParams {
            iters: a.iters,
            early_exaggeration: a
                .early_exaggeration
                .unwrap_or(defaults.optim.early_exaggeration),
            early_exaggeration_iters: a
                .early_exaggeration_iters
                .or(a.exaggeration_iters)
                .unwrap_or(defaults.optim.early_exaggeration_iters),
            exaggeration: a.exaggeration.unwrap_or(defaults.optim.exaggeration),
            momentum_early: a.early_momentum,
            momentum_late: a.momentum,
            ..defaults.optim
        },
        ..defaults
    };
    apply_search(&a.search, a.seed, &mut params);
    Ok(params)
}

/// The search flags ([`SearchArgs`]) onto `params`, with the approximate kNN's `seed`.
pub(super) fn apply_search(a: &SearchArgs, seed: u64, params: &mut EmbedParams) {
    params.knn = match a.knn {
        KnnArg::Auto => KnnMethod::Auto,
        KnnArg::Exact => KnnMethod::Exact,
        KnnArg::Hnsw => KnnMethod::Hnsw,
        KnnArg::Approx => KnnMethod::Approx,
    };
    params.metric = match a.metric {
        MetricArg::Euclidean => Metric::Euclidean,
        MetricArg::Cosine => Metric::Cosine,
        MetricArg::Correlation => Metric::Correlation,
        MetricArg::InnerProduct => Metric::InnerProduct,
    };
    params.ivf = IvfParams {
        probes: a.knn_probes,
        refine: a.knn_refine,
        fan: a.knn_fan,
        lists: match a.knn_lists {
            AutoOr::Auto => 0,
            AutoOr::Value(l) => l,
        },
        seed,
        ..IvfParams::default()
    };
    params.pca = match a.pca {
        NoneOr::None => None,
        NoneOr::Value(m) => Some(m),
    };
    params.order = match a.order {
        OrderArg::Auto => None,
        OrderArg::Locality => Some(PointOrder::Locality),
        OrderArg::Input => Some(PointOrder::Input),
        OrderArg::Cells => Some(PointOrder::Cells),
    };
}

/// The initial embedding of `--init FILE`: n × `dims` (the point count is checked by the
/// library), with a note when its scale is far from the customary 1e-4.
fn read_init(path: &Path, dims: usize, quiet: bool, rescale: bool) -> Result<Arc<[f32]>> {
    let y = io::read_points(path)?;
    if y.d != dims {
        anyhow::bail!(
            "{}: --init has {} columns; the embedding has --dims {dims}",
            path.display(),
            y.d
        );
    }
    let std = sgtsne::init::first_axis_std(&y.data, dims);
    if !quiet && !rescale && std > 1e-2 {
        eprintln!(
            "note: --init {} has std {std:.3e} on its first axis, used as given; \
             --init-rescale scales it to 1e-4, the customary start for early exaggeration",
            path.display()
        );
    }
    Ok(y.data.into())
}

/// A few lines on stderr: what ran, how long each stage took, how good the result is.
fn summarise(r: &sgtsne::report::Report, args: &EmbedArgs, output: Option<&PathBuf>) {
    let s = &r.seconds;
    eprintln!(
        "embedded {} ({} × {}) in {}-D: {:.1} s, backend {} ({}), {} threads",
        r.input.name,
        r.input.n,
        r.input.d,
        r.params.dims,
        s.total,
        r.backend.kind.name(),
        r.backend.note,
        r.threads
    );
    eprintln!(
        "  load {:.2} s, pca {:.2} s, knn {:.2} s, affinities {:.2} s, optimise {:.2} s, write {:.2} s",
        s.load, s.pca, s.knn, s.affinities, s.optimise, s.write
    );
    if let Some(knn) = &r.knn {
        if let (Some(recall), Some(size)) = (knn.recall_sample, knn.recall_sample_size) {
            eprintln!(
                "  knn {} (k = {}): recall {recall:.4} on a sample of {size} points",
                knn.method, knn.k
            );
        }
    }
    for note in &r.notes {
        eprintln!("  note: {note}");
    }
    if let Some(o) = &r.optimise.overlap {
        eprintln!(
            "  per iteration (median): attraction {:.2} ms (CPU) and repulsion {:.2} ms (GPU) \
             in {:.2} ms: overlap {:.0} %",
            o.attract_median * 1e3,
            o.repulse_median * 1e3,
            o.wall_median * 1e3,
            o.overlap * 100.0
        );
    }
    if let Some(i) = r.optimise.interrupted_at {
        eprintln!(
            "  interrupted at iteration {i} of {}: the outputs hold the embedding reached",
            r.params.optim.iters
        );
    }
    let mut line = format!("  KL {:.4}", r.optimise.final_kl);
    if let Some(acc) = r.quality.knn_accuracy_10 {
        line += &format!(", 10-NN accuracy {acc:.4}");
    }
    if let Some(p) = r.quality.knn_preservation_10 {
        line += &format!(", 10-NN preservation {p:.4}");
    }
    if let Some(rss) = r.peak_rss_bytes {
        line += &format!(", peak memory {:.2} GiB", rss as f64 / (1u64 << 30) as f64);
    }
    if let Some(dev) = r.memory.peak_device_bytes {
        line += &format!(", device {:.2} GiB", dev as f64 / (1u64 << 30) as f64);
    }
    eprintln!("{line}");
    if let Some(c) = &r.clusters {
        let ari = c.adjusted_rand_index.map_or(String::new(), |a| {
            format!(", adjusted Rand index {a:.4} against the labels")
        });
        eprintln!(
            "  {} clusters of the {} ({:.2} s{}): sizes {:?}",
            c.k, c.on, c.seconds, ari, c.sizes
        );
        for note in &c.notes {
            eprintln!("  clusters note: {note}");
        }
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
