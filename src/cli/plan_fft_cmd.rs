//! `sgtsne plan-fft` (hidden): the cuFFT plans of a run, made in a process of their own.
//!
//! On a machine's first run the driver compiles cuFFT's kernels into its cache as the plans
//! are made, and meanwhile the run's own calls into the driver wait (`sgtsne::gpu::fft`).
//! `embed` therefore starts this command (the same program) with the plans it will make
//! ahead, and makes its own only once this one has ended, from the driver's cache. The file
//! `--done` marks the work done, so later runs skip this process
//! (`sgtsne::gpu::fft::warm_mark`).

use anyhow::{Context, Result};
use sgtsne::gpu::fft::PlanSpec;

use super::args::PlanFftArgs;

/// Reads the plans (JSON) from standard input, makes them on GPU 0, then creates `--done`.
pub fn run(args: PlanFftArgs) -> Result<()> {
    let plans: Vec<PlanSpec> =
        serde_json::from_reader(std::io::stdin().lock()).context("reading the plans (JSON)")?;
    sgtsne::embed::make_fft_plans(&plans)?;
    if let Some(done) = &args.done {
        if let Some(dir) = done.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(done, b"").with_context(|| format!("writing {}", done.display()))?;
    }
    Ok(())
}

/// Starts `sgtsne plan-fft` with the plans a run with `params` makes ahead, unless there are
/// none, their mark says a process made them before, or the program cannot be started
/// again; the run then plans as it would have.
pub fn start_warmer(params: &sgtsne::embed::EmbedParams) -> Option<std::process::Child> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let plans = sgtsne::embed::fft_plans_ahead(params);
    if plans.is_empty() {
        return None;
    }
    let mark = sgtsne::gpu::fft::warm_mark(&plans)?;
    if mark.exists() {
        return None;
    }
    // Without the memory limit of fault injection, which would have the warmer take what the
    // run was left.
    let mut child = Command::new(std::env::current_exe().ok()?)
        .env_remove(sgtsne::gpu::context::MEMORY_LIMIT_VAR)
        .arg("plan-fft")
        .arg("--done")
        .arg(&mark)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let sent = child.stdin.take().map(|mut stdin| {
        serde_json::to_writer(&mut stdin, &plans).is_ok() && stdin.flush().is_ok()
    });
    if sent != Some(true) {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    }
    Some(child)
}
