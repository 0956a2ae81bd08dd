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
            eprintln!("error: {}; nothing written", message(&err));
            ExitCode::from(cli::interrupt::EXIT_STATUS)
        }
        Err(err) => {
            eprintln!("error: {}", message(&err));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes in one line, each cause after a colon as anyhow's `{:#}` has
/// them, but a cause whose text the line already holds left out: an error that shows its
/// source in its own message (`IoError::Write`: "out.npy: cannot write: {source}") also
/// gives it as its source, and the line would say it twice (with tempfile's "at path" of
/// the temporary file: a full disk named the temporary file twice).
fn message(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if line.is_empty() {
            line = text;
        } else if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A write to a temporary file that fails (here a file open for reading only, as a full
    /// disk fails it) names the temporary file once, after the output's path; causes that
    /// add something are still joined on.
    #[test]
    fn a_failed_write_names_its_temporary_file_once() {
        let dir = tempfile::tempdir().unwrap();
        let temp = dir.path().join(".sgtsne-1-x.tmp");
        std::fs::write(&temp, "").unwrap();
        let read_only = std::fs::File::open(&temp).unwrap();
        let temp_path = tempfile::TempPath::try_from_path(&temp).unwrap();
        let mut file = tempfile::NamedTempFile::from_parts(read_only, temp_path);
        let source = file.write_all(b"x").unwrap_err();
        let out = dir.path().join("out.npy");
        let err = anyhow::Error::from(sgtsne::io::IoError::Write {
            path: out.clone(),
            source,
        });
        let line = message(&err);
        assert!(
            line.starts_with(&format!("{}: cannot write: ", out.display())),
            "{line}"
        );
        assert_eq!(line.matches(".sgtsne-1-x.tmp").count(), 1, "{line}");
        let err = err.context("writing the points");
        assert!(
            message(&err).starts_with("writing the points: "),
            "{}",
            message(&err)
        );
    }
}
