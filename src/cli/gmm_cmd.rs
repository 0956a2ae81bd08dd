//! `sgtsne gmm`: a Gaussian mixture fitted to points or an embedding by EM; K given or
//! chosen by BIC.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use sgtsne::backend::BackendKind;
use sgtsne::embed::{self, EmbedParams, Input};
use sgtsne::gmm::{self, CovarianceType, Fit, GmmBackend, GmmInit, GmmParams, Real, Samples};
use sgtsne::io::{self, Labels, OutputKind};
use sgtsne::Points;

use super::args::{AutoOr, NoneOr};
use super::files::{
    display_name, obs_column, read_input, read_labels_for, refuse_outputs_over_inputs,
};
use super::gmm_args::{
    CovarianceArg, FitArgs, GmmArgs, GmmBackendArg, GmmInitArg, KRange, PrecisionArg,
};
use super::progress_bar::Bar;

pub fn run(args: GmmArgs) -> Result<()> {
    let start = Instant::now();
    let outputs = Outputs::check(&args)?;
    let (pool, threads) = super::worker_pool(args.threads)?;
    let input = read_input(&args.input, args.use_rep.as_deref(), args.quiet)?;
    let labels = read_labels(&args, input.n())?;
    let load = start.elapsed().as_secs_f64();
    let t = Instant::now();
    let points = pool.install(|| reduce(input, args.pca, args.fit.seed))?;
    let pca = t.elapsed().as_secs_f64();
    let backend = match args.backend {
        GmmBackendArg::Auto => GmmBackend::auto(points.n, points.d),
        GmmBackendArg::Cpu => GmmBackend::Cpu,
        GmmBackendArg::Gpu => GmmBackend::Gpu,
    };
    let run = Run {
        backend,
        args: &args,
        outputs: &outputs,
        labels: labels.as_ref(),
        threads,
        seconds: (load, pca),
        start,
    };
    pool.install(|| match args.fit.precision {
        PrecisionArg::F64 => run.fit::<f64>(&points),
        PrecisionArg::F32 => run.fit::<f32>(&points),
    })
}

/// The library's parameters from the flags, for `k` components.
pub(super) fn params_from(fit: &FitArgs, k: usize, backend: GmmBackend) -> GmmParams {
    GmmParams {
        backend,
        k,
        covariance: match fit.covariance {
            CovarianceArg::Full => CovarianceType::Full,
            CovarianceArg::Diag => CovarianceType::Diag,
            CovarianceArg::Spherical => CovarianceType::Spherical,
        },
        init: match fit.init {
            GmmInitArg::KmeansPlusPlus => GmmInit::KMeansPlusPlus,
            GmmInitArg::Random => GmmInit::Random,
        },
        max_iter: fit.iters,
        tol: fit.tol,
        restarts: fit.restarts,
        reg: fit.reg,
        seed: fit.seed,
    }
}

/// The points to fit: the input as read, or its top `pca` principal components when it
/// has more features (a sparse input straight from its sparse rows), as `embed` reduces
/// them.
fn reduce(input: Input, pca: NoneOr<usize>, seed: u64) -> Result<Points> {
    let pca = match (&input, pca) {
        (Input::Sparse(rows), NoneOr::None) => anyhow::bail!(
            "the input is a sparse matrix ({} × {}): fit it after PCA, e.g. --pca 50",
            rows.n,
            rows.d
        ),
        (_, NoneOr::Value(m)) => Some(m),
        (_, NoneOr::None) => None,
    };
    let params = EmbedParams {
        pca,
        backend: BackendKind::Cpu,
        seed,
        ..EmbedParams::default()
    };
    Ok(embed::reduced_points(input, &params)?)
}

/// `--labels`: a labels file, or `obs:COLUMN` of an `.h5ad` input; one per sample.
fn read_labels(args: &GmmArgs, n: usize) -> Result<Option<Labels>> {
    let Some(path) = &args.labels else {
        return Ok(None);
    };
    let labels = read_labels_for(path, Some(&args.input))?;
    if labels.codes.len() != n {
        anyhow::bail!(
            "{}: {} labels for {n} samples",
            path.display(),
            labels.codes.len()
        );
    }
    Ok(Some(labels))
}

/// Every file the run writes, checked before the work.
struct Outputs {
    labels: PathBuf,
    bic_csv: Option<PathBuf>,
    bic_plot: Option<PathBuf>,
}

impl Outputs {
    fn check(args: &GmmArgs) -> Result<Outputs> {
        let auto = matches!(args.k, AutoOr::Auto);
        let beside = |suffix: &str| {
            let stem = args
                .output
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy();
            args.output.with_file_name(format!("{stem}.bic.{suffix}"))
        };
        let (bic_csv, bic_plot) = if auto {
            (
                Some(args.bic_csv.clone().unwrap_or_else(|| beside("csv"))),
                Some(args.bic_plot.clone().unwrap_or_else(|| beside("png"))),
            )
        } else {
            if args.bic_csv.is_some() || args.bic_plot.is_some() {
                anyhow::bail!("--bic-csv and --bic-plot apply to -k auto only");
            }
            (None, None)
        };
        let all = [
            ("-o", Some(&args.output), OutputKind::Labels),
            ("--proba", args.proba.as_ref(), OutputKind::Matrix),
            ("--model", args.model.as_ref(), OutputKind::Mixture),
            ("--report", args.report.as_ref(), OutputKind::Report),
            ("--bic-csv", bic_csv.as_ref(), OutputKind::Table),
            ("--bic-plot", bic_plot.as_ref(), OutputKind::Plot),
        ];
        let labels = args.labels.as_deref().filter(|l| obs_column(l).is_none());
        let inputs = [
            ("the input file", Some(args.input.as_path())),
            ("the --labels file", labels),
        ];
        let outputs: Vec<_> = all
            .iter()
            .map(|(f, p, _)| (*f, p.map(PathBuf::as_path)))
            .collect();
        refuse_outputs_over_inputs(&outputs, &inputs, |_, _| "choose another output path")?;
        for (i, (flag, path, kind)) in all.iter().enumerate() {
            let Some(path) = path else { continue };
            if let Some((other, _, _)) = all[..i].iter().find(|(_, p, _)| *p == Some(path)) {
                anyhow::bail!("{flag} and {other} name the same file {}", path.display());
            }
            io::check_output_path(path, *kind)?;
        }
        Ok(Outputs {
            labels: args.output.clone(),
            bic_csv,
            bic_plot,
        })
    }
}

/// One `gmm` command after its input is read.
struct Run<'a> {
    /// Where EM runs (`--backend`, `auto` resolved).
    backend: GmmBackend,
    args: &'a GmmArgs,
    outputs: &'a Outputs,
    /// `--labels`, checked against the sample count.
    labels: Option<&'a Labels>,
    threads: usize,
    /// Load and PCA.
    seconds: (f64, f64),
    start: Instant,
}

impl Run<'_> {
    fn fit<T: Real + io::NpyNumber>(&self, points: &Points) -> Result<()> {
        let args = self.args;
        let x = Samples::<T>::from_points(points)
            .with_context(|| format!("cannot fit {}", args.input.display()))?;
        let bar = Bar::new(args.quiet);
        let t = Instant::now();
        let (fit, candidates) = match args.k {
            AutoOr::Value(k) => (
                gmm::fit(&x, &params_from(&args.fit, k, self.backend), &bar)?,
                None,
            ),
            AutoOr::Auto => {
                let KRange { low, high } = args.k_range;
                let s = gmm::select_k(
                    &x,
                    low..=high,
                    &params_from(&args.fit, low, self.backend),
                    &bar,
                )?;
                (s.best, Some(s.candidates))
            }
        };
        let fit_seconds = t.elapsed().as_secs_f64();
        // The fit is over: every GPU's context ends beside the writing, as `embed`'s do.
        // SAFETY: nothing uses a GPU from here on: the fit's threads have ended, `fit` and
        // `candidates` hold host data only, and the writing runs on the host.
        let _contexts = unsafe { sgtsne::gpu::end::end_contexts(|| {}) };
        let t = Instant::now();
        self.write(&x, &fit, candidates.as_deref())?;
        let write = t.elapsed().as_secs_f64();
        if !args.quiet {
            self.summary(&x, &fit, fit_seconds, write);
        }
        Ok(())
    }

    fn write<T: Real + io::NpyNumber>(
        &self,
        x: &Samples<T>,
        fit: &Fit<T>,
        candidates: Option<&[gmm::Candidate]>,
    ) -> Result<()> {
        let args = self.args;
        let k = fit.model.k();
        io::write_labels(&self.outputs.labels, &fit.labels)?;
        if let Some(path) = &args.proba {
            io::write_matrix(path, &[x.n as u64, k as u64], &fit.responsibilities)?;
        }
        if let Some(path) = &args.model {
            io::write_mixture(path, &fit.model, &fit.initial, &fit.history)?;
        }
        if let (Some(candidates), Some(csv), Some(png)) =
            (candidates, &self.outputs.bic_csv, &self.outputs.bic_plot)
        {
            write_bic(csv, png, candidates, k)?;
        }
        if let Some(path) = &args.report {
            let report = self.report(x, fit, candidates);
            io::write_atomic(path, |w| {
                serde_json::to_writer_pretty(&mut *w, &report).map_err(std::io::Error::other)?;
                writeln!(w)
            })?;
        }
        Ok(())
    }

    fn report<T: Real>(
        &self,
        x: &Samples<T>,
        fit: &Fit<T>,
        candidates: Option<&[gmm::Candidate]>,
    ) -> serde_json::Value {
        let args = self.args;
        let params = params_from(&args.fit, fit.model.k(), self.backend);
        serde_json::json!({
            "version": env!("CARGO_PKG_VERSION"),
            "input": { "name": display_name(&args.input), "n": x.n, "d": x.d },
            "mean_log_likelihood": fit.mean_log_likelihood,
            "k": fit.model.k(),
            "bic": fit.bic(),
            "aic": fit.aic(),
            "n_parameters": fit.model.n_parameters(),
            "converged": fit.converged,
            "iterations": fit.history.len(),
            "log_likelihood_history": fit.history,
            "sizes": fit.sizes(),
            "adjusted_rand_index": self.ari(fit),
            "weights": fit.model.weights.iter().map(|w| w.f64()).collect::<Vec<_>>(),
            "restart": fit.restart,
            "restart_scores": fit.restart_scores,
            "notes": fit.notes,
            "k_selection": candidates,
            "params": params,
            "pca": args.pca.into_option(),
            "precision": T::NAME,
            "backend": self.backend.name(),
            "threads": self.threads,
            "seconds": {
                "load": self.seconds.0,
                "pca": self.seconds.1,
                "init": fit.init_seconds,
                "em": fit.iteration_seconds.iter().sum::<f64>(),
                "iteration_median": median(&fit.iteration_seconds),
                "total": self.start.elapsed().as_secs_f64(),
            },
            "peak_rss_bytes": sgtsne::report::peak_rss_bytes(),
        })
    }

    /// The clusters' agreement with `--labels`.
    fn ari<T: Real>(&self, fit: &Fit<T>) -> Option<f64> {
        self.labels
            .map(|l| sgtsne::quality::adjusted_rand_index(&l.codes, &fit.labels))
    }

    fn summary<T: Real>(&self, x: &Samples<T>, fit: &Fit<T>, fit_seconds: f64, write: f64) {
        let (load, pca) = self.seconds;
        let total = self.start.elapsed().as_secs_f64();
        let state = if fit.converged {
            "converged"
        } else {
            "not converged: raise --iters or --tol"
        };
        eprintln!(
            "{} components ({}, {}) on {} × {}: mean log-likelihood {:.6}, BIC {:.6e}, {} \
             iterations ({state})",
            fit.model.k(),
            fit.model.covariance.name(),
            T::NAME,
            x.n,
            x.d,
            fit.mean_log_likelihood,
            fit.bic(),
            fit.history.len(),
        );
        eprintln!(
            "  {total:.2} s (load {load:.2} s, pca {pca:.2} s, fit {fit_seconds:.2} s: init \
             {:.2} s, {:.3} s per iteration; write {write:.2} s) on {} → {}",
            fit.init_seconds,
            median(&fit.iteration_seconds).unwrap_or(0.0),
            match self.backend {
                GmmBackend::Cpu => format!("{} threads", self.threads),
                GmmBackend::Gpu => "the GPU".to_string(),
            },
            self.outputs.labels.display()
        );
        eprintln!("  sizes {:?}", fit.sizes());
        if let Some(ari) = self.ari(fit) {
            eprintln!("  adjusted Rand index against the labels {ari:.4}");
        }
        for note in &fit.notes {
            eprintln!("  note: {note}");
        }
        if let Some(csv) = &self.outputs.bic_csv {
            eprintln!("  BIC curve → {}", csv.display());
        }
    }
}

/// The BIC curve as CSV and as a plot, the chosen K marked.
fn write_bic(csv: &Path, png: &Path, candidates: &[gmm::Candidate], best: usize) -> Result<()> {
    io::write_atomic(csv, |w| {
        writeln!(w, "k,bic,aic,mean_log_likelihood,iterations,converged")?;
        for c in candidates {
            writeln!(
                w,
                "{},{},{},{},{},{}",
                c.k, c.bic, c.aic, c.mean_log_likelihood, c.iterations, c.converged
            )?;
        }
        Ok(())
    })?;
    let series = |f: fn(&gmm::Candidate) -> f64| {
        candidates
            .iter()
            .map(|c| (c.k as f64, f(c)))
            .collect::<Vec<_>>()
    };
    io::plot::curve_png(
        png,
        &io::plot::Curves {
            title: "Gaussian mixture: information criteria against K",
            x_label: "components K",
            y_label: "criterion (lower is better)",
            series: vec![("BIC", series(|c| c.bic)), ("AIC", series(|c| c.aic))],
            mark: Some((best as f64, format!("K = {best} (lowest BIC)"))),
        },
    )?;
    Ok(())
}

/// The median of `v` (`None` when empty).
fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    (!s.is_empty()).then(|| s[s.len() / 2])
}
