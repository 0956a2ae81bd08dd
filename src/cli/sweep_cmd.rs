//! `sgtsne sweep --config FILE.toml`: the grid-size sweep. The configuration and the output
//! directory are checked before the long work; the outputs are written atomically after it.

use std::path::PathBuf;

use anyhow::{Context, Result};
use sgtsne::io::{self, OutputKind};
use sgtsne::sweep::{fit_error_model, run_sweep, write_outputs, SweepConfig};

use super::args::SweepArgs;
use super::progress_bar::Lines;

pub fn run(args: SweepArgs) -> Result<()> {
    let cfg = SweepConfig::from_file(&args.config)?;
    let dir = args
        .out
        .clone()
        .or_else(|| cfg.out_dir.clone())
        .unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the output directory {}", dir.display()))?;
    for (suffix, kind) in [
        (".csv", OutputKind::Embedding),
        ("-error.png", OutputKind::Plot),
        ("-fit.json", OutputKind::Report),
    ] {
        io::check_output_path(&dir.join(format!("{}{suffix}", cfg.name)), kind)?;
    }
    let (pool, threads) = super::worker_pool(args.threads)?;
    let lines = Lines::new(args.quiet);
    let rows = pool.install(|| run_sweep(&cfg, &lines))?;
    let device = cfg.backend.resolve()?;
    let device = match device.kind {
        sgtsne::backend::BackendKind::Cpu => format!("cpu, {threads} threads"),
        _ => device.note,
    };
    let written = write_outputs(&cfg, &rows, &dir, &device)?;
    if !args.quiet {
        if let Some(fit) = fit_error_model(&rows) {
            eprintln!(
                "error ≈ C·h⁴ in {}-D from {} samples: C median {:.3e}, largest {:.3e} \
                 (free exponent {:.2})",
                fit.dims, fit.samples, fit.c_median, fit.c_bound, fit.exponent
            );
        }
        for p in written {
            eprintln!("  wrote {}", p.display());
        }
    }
    Ok(())
}
