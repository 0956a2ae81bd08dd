//! `sgtsne`: the command-line tool. Thin by design: it parses arguments, calls the
//! library and maps errors to exit codes (0 success, 1 failure, 2 usage error from clap).
//!
//! A closed standard output (`sgtsne info | head -1`) ends the run quietly with status 0,
//! as in ripgrep: the reader took what it wanted. Rust ignores SIGPIPE, so a write to the
//! closed pipe returns EPIPE instead of killing the process (status 141 in the shell);
//! every write to stdout returns that error rather than panicking as `println!` does, and
//! it is recognised here.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Before any thread starts: the environment is the process's.
    sgtsne::gpu::comm::set_nccl_defaults();
    sgtsne::trace::begin();
    let args = cli::args::Cli::parse();
    let ended = cli::run(args);
    sgtsne::trace::event(|| "end".into());
    match ended {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        // Ctrl-C during the optimisation (`embed --on-interrupt discard`): status 130 as
        // for a process the signal ends, so that a script stops too.
        Err(err) if is_interrupt(&err) => {
            eprintln!("error: {err:#}; nothing written");
            ExitCode::from(cli::interrupt::EXIT_STATUS)
        }
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Whether `err` comes from writing to a pipe whose reader has gone.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Whether `err` is a run stopped by Ctrl-C ([`cli::interrupt`]).
fn is_interrupt(err: &anyhow::Error) -> bool {
    matches!(
        err.downcast_ref::<sgtsne::Error>(),
        Some(sgtsne::Error::Interrupted { .. })
    )
}
