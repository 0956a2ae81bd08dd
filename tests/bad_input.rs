//! Bad inputs and faults found by trying the tool as a new user would (issue 17), each run
//! through the binary: one clear message, nothing written, or a run that copes.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::cli::{csv_rows, fails_cleanly, sgtsne, stderr, write};

/// Arguments that keep a run on a couple of hundred points short.
const QUICK: [&str; 10] = [
    "--perplexity",
    "10",
    "--iters",
    "60",
    "--exaggeration-iters",
    "30",
    "--backend",
    "cpu",
    "--threads",
    "2",
];

/// An output path that names a file the run reads is refused before any work, whatever the
/// format, and the file is left as it was: the input itself (through a hard link too), the
/// labels, the initial embedding.
#[test]
fn outputs_that_would_replace_an_input_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(&dir, "pts.csv", csv_rows(200).as_bytes());
    let labels = write(&dir, "labels.csv", "0\n".repeat(200).as_bytes());
    let init = dir.path().join("init.npy");
    sgtsne::io::write_embedding(&init, &vec![0.5f32; 400], 2).unwrap();
    let linked = dir.path().join("linked.csv");
    std::fs::hard_link(&input, &linked).unwrap();
    let (i, l, n, k) = (
        input.to_str().unwrap(),
        labels.to_str().unwrap(),
        init.to_str().unwrap(),
        linked.to_str().unwrap(),
    );
    let cases: [(Vec<&str>, &[&str]); 5] = [
        (vec!["-o", i], &["-o", "pts.csv", "is the input file"]),
        (vec!["-o", k], &["linked.csv", "is the input file"]),
        (vec!["--labels", l, "-o", l], &["is the --labels file"]),
        (vec!["--init", n, "-o", n], &["is the --init file"]),
        (vec!["--report", i], &["--report", "is the input file"]),
    ];
    let before: Vec<Vec<u8>> = [&input, &labels, &init]
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    for (extra, needles) in cases {
        let mut args = vec!["embed", i, "-q"];
        args.extend(extra);
        let run = sgtsne(&args);
        let err = stderr(&run);
        assert!(!run.status.success(), "{args:?} ran");
        assert!(!err.contains("panicked"), "{err}");
        for needle in needles.iter().chain(&["choose another output path"]) {
            assert!(err.contains(needle), "{args:?}: `{needle}` not in {err}");
        }
    }
    let after: Vec<Vec<u8>> = [&input, &labels, &init]
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert!(before == after, "an input file changed");
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 4, "files were added: {names:?}");
}

/// A negative number after an option is its value (not an unknown flag `-1`), so that the
/// range check names the parameter; unsigned counts say they want a number.
#[test]
fn negative_values_reach_their_range_check() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(&dir, "pts.csv", csv_rows(200).as_bytes());
    for (extra, needles) in [
        (["--lambda", "-1"], ["`lambda`", "must be positive, got -1"]),
        (
            ["--grid-error", "-1"],
            ["`grid-error`", "-1; need a relative error"],
        ),
        (
            ["--grid-spacing", "-0.5"],
            ["`grid`", "must be positive, got -0.5"],
        ),
        (
            ["--perplexity", "-5"],
            ["`perplexity`", "at least 1, got -5"],
        ),
        (["--learning-rate", "-1"], ["`learning-rate`", "got -1"]),
        (["--exaggeration", "-2"], ["`exaggeration`", "got -2"]),
    ] {
        fails_cleanly(&input, &extra, &needles);
    }
    let out = dir.path().join("out.npy");
    let run = sgtsne(&[
        "embed",
        input.to_str().unwrap(),
        "--iters",
        "-1",
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(err.contains("invalid value '-1' for '--iters"), "{err}");
    assert!(!out.exists());
}

/// `sgtsne ARGS` with its standard output a pipe whose reader is gone before it starts
/// (`… | head -1` once head has its line): exit status 0, no panic, nothing on stderr.
fn with_closed_stdout(args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_sgtsne"))
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    out
}

/// Every command that writes to standard output ends quietly with status 0 when its reader
/// has closed the pipe; `embed -o -` still writes its other outputs.
#[test]
fn a_closed_standard_output_ends_quietly() {
    for args in [&["info"][..], &["completions", "bash"], &["man"]] {
        let out = with_closed_stdout(args);
        assert!(out.stderr.is_empty(), "{args:?}: {}", stderr(&out));
    }
    let dir = tempfile::tempdir().unwrap();
    let input = write(&dir, "pts.csv", csv_rows(200).as_bytes());
    let report = dir.path().join("r.json");
    let mut args = vec![
        "embed",
        input.to_str().unwrap(),
        "-o",
        "-",
        "--report",
        report.to_str().unwrap(),
        "-q",
    ];
    args.extend(QUICK);
    with_closed_stdout(&args);
    assert!(Path::new(&report).exists(), "no report");
    let emb = dir.path().join("emb.npy");
    let run = sgtsne(
        &[
            &["embed", input.to_str().unwrap(), "-o"][..],
            &[emb.to_str().unwrap(), "-q"],
            &QUICK,
        ]
        .concat(),
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let out = with_closed_stdout(&[
        "kl",
        input.to_str().unwrap(),
        emb.to_str().unwrap(),
        "--perplexity",
        "10",
    ]);
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}
