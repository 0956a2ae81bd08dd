//! Bad inputs and faults found by trying the tool as a new user would (issue 17), each run
//! through the binary: one clear message, nothing written, or a run that copes.

use crate::cli::{csv_rows, fails_cleanly, sgtsne, stderr, write};

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
