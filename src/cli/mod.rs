//! Subcommands of the binary.

mod arg_values;
pub mod args;
mod clusters;
mod embed_args;
mod embed_cmd;
mod embed_params;
mod files;
mod gen_cmd;
mod gmm_args;
mod gmm_cmd;
mod info;
pub mod interrupt;
mod kl_cmd;
mod knn_cmd;
mod progress_bar;
mod reference;
mod search_args;
mod sweep_cmd;
mod transform_cmd;
mod view_cmd;

use std::io::Write;

use anyhow::{Context, Result};

/// Dispatches a parsed command line.
pub fn run(cli: args::Cli) -> Result<()> {
    match cli.command {
        args::Command::Embed(a) => embed_cmd::run(*a),
        args::Command::Info(a) => info::run(a),
        args::Command::Gen(a) => gen_cmd::run(a),
        args::Command::Gmm(a) => gmm_cmd::run(*a),
        args::Command::Sweep(a) => sweep_cmd::run(a),
        args::Command::Kl(a) => kl_cmd::run(a),
        args::Command::Knn(a) => knn_cmd::run(*a),
        args::Command::Transform(a) => transform_cmd::run(*a),
        args::Command::View(a) => view_cmd::run(*a),
        args::Command::Completions { shell } => {
            // Generated into memory first: clap_complete panics on a failed write (a closed
            // pipe), where a write of our own returns the error.
            let mut cmd = <args::Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "sgtsne", &mut script);
            std::io::stdout()
                .write_all(&script)
                .context("writing the completion script to standard output")
        }
        args::Command::Man => {
            let cmd = <args::Cli as clap::CommandFactory>::command();
            clap_mangen::Man::new(cmd)
                .render(&mut std::io::stdout())
                .context("writing the manual page to standard output")
        }
        args::Command::Reference => {
            let cmd = <args::Cli as clap::CommandFactory>::command();
            std::io::stdout()
                .write_all(reference::markdown(cmd).as_bytes())
                .context("writing the command-line reference to standard output")
        }
    }
}

/// The rayon pool of `--threads` (default: all cores) and its size.
fn worker_pool(threads: Option<usize>) -> Result<(rayon::ThreadPool, usize)> {
    let threads =
        threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if threads == 0 {
        anyhow::bail!("invalid parameter `threads`: must be at least 1");
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("cannot start the worker threads")?;
    Ok((pool, threads))
}
