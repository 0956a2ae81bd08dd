//! Subcommands of the binary.

pub mod args;
mod embed_cmd;
mod gen_cmd;
mod info;
mod kl_cmd;
mod progress_bar;

use anyhow::Result;

/// Dispatches a parsed command line.
pub fn run(cli: args::Cli) -> Result<()> {
    match cli.command {
        args::Command::Embed(a) => embed_cmd::run(*a),
        args::Command::Info => info::run(),
        args::Command::Gen(a) => gen_cmd::run(a),
        args::Command::Kl(a) => kl_cmd::run(a),
    }
}
