//! `sgtsne`: the command-line tool. Thin by design: it parses arguments, calls the
//! library and maps errors to exit codes (0 success, 1 failure, 2 usage error from clap).

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::args::Cli::parse();
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
