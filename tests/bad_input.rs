//! Bad inputs and faults found by trying the tool as a new user would (issue 17), each run
//! through the binary: one clear message, nothing written, or a run that copes.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::cli::{backends, csv_rows, fails_cleanly, fails_cleanly_env, sgtsne, stderr, write};

/// Arguments that keep a run on a couple of hundred points short.
const QUICK: [&str; 10] = [
    "--perplexity",
    "10",
    "--iters",
    "60",
    "--early-exaggeration-iters",
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

/// n × 5 points (`name`.npy in `dir`), distinct, with values in [0, 1.44] times `scale`.
fn points_npy(dir: &tempfile::TempDir, name: &str, n: usize, scale: f32) -> std::path::PathBuf {
    let data: Vec<f32> = (0..n * 5)
        .map(|v| {
            let (i, j) = (v / 5, v % 5);
            ((i * 7919 + j * 104_729 + i * i * 31) % 1009) as f32 / 700.0 * scale
        })
        .collect();
    let path = dir.path().join(name);
    sgtsne::io::write_embedding(&path, &data, 5).unwrap();
    path
}

/// `embed INPUT -o OUT --report REPORT` (quick), which must succeed: the embedding's bytes
/// and the report.
fn embeds(input: &Path, extra: &[&str]) -> (Vec<u8>, serde_json::Value, String) {
    let dir = input.parent().unwrap();
    let stem = input.file_stem().unwrap().to_str().unwrap();
    let out = dir.join(format!("{stem}_y.npy"));
    let report = dir.join(format!("{stem}_report.json"));
    let mut args = vec![
        "embed",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
        "-q",
    ];
    args.extend(QUICK);
    args.extend(extra);
    let run = sgtsne(&args);
    assert!(run.status.success(), "{args:?}: {}", stderr(&run));
    let json = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    (std::fs::read(&out).unwrap(), json, stderr(&run))
}

/// Values near 1e30 (squared distances overflow f32) and near 1e-30 (they underflow to
/// 0) embed as the data at a moderate scale would: the values are scaled by a power of two,
/// exactly, so a copy scaled by 2^±100 gives the same embedding bit for bit.
#[test]
fn huge_and_tiny_values_embed_as_at_any_scale() {
    let dir = tempfile::tempdir().unwrap();
    let (base, json, _) = embeds(&points_npy(&dir, "base.npy", 300, 1.0), &[]);
    assert_eq!(json["input"]["scale_exponent"], 0);
    for (name, scale, e) in [
        ("huge.npy", 2f32.powi(100), -100),
        ("tiny.npy", 2f32.powi(-100), 100),
    ] {
        let (y, json, _) = embeds(&points_npy(&dir, name, 300, scale), &[]);
        assert_eq!(json["input"]["scale_exponent"], e, "{name}");
        assert!(y == base, "{name}: another embedding");
    }
    // Not a power of two, with PCA (10 features to 5) and the cosine metric.
    let wide: Vec<f32> = (0..300 * 10)
        .map(|v| 1e30 * (((v * 7919 + v * v * 13) % 1013) as f32 / 1013.0 - 0.5))
        .collect();
    let path = dir.path().join("wide.npy");
    sgtsne::io::write_embedding(&path, &wide, 10).unwrap();
    for extra in [&["--pca", "5"][..], &["--metric", "cosine"]] {
        let (_, json, _) = embeds(&path, extra);
        assert!(json["optimise"]["final_kl"].as_f64().unwrap().is_finite());
    }
}

/// Points that are all one are refused by name; mostly copies run, with a warning that
/// counts them (shown with -q too); the report holds the count.
#[test]
fn identical_and_duplicate_points() {
    let dir = tempfile::tempdir().unwrap();
    let same = write(&dir, "same.csv", "2.5,-1,7\n".repeat(300).as_bytes());
    fails_cleanly(
        &same,
        &[],
        &["same.csv", "all 300 points are identical", "zero variance"],
    );
    let mut rows = "1,1,1\n".repeat(250);
    rows.push_str(&csv_rows(50));
    let dups = write(&dir, "dups.csv", rows.as_bytes());
    let (_, json, err) = embeds(&dups, &[]);
    assert!(
        err.contains("warning: dups.csv: 250 of 300 points (83.3 %) repeat another point"),
        "{err}"
    );
    assert_eq!(json["input"]["duplicates"], 250);
    let (_, json, err) = embeds(&points_npy(&dir, "distinct.npy", 300, 1.0), &[]);
    assert!(!err.contains("warning"), "{err}");
    assert_eq!(json["input"]["duplicates"], 0);
}

/// Wide dense input: 150 points × 6,000 features reduced to 10 components within memory
/// proportional to the data (3.6 MB), where the covariance alone would be 288 MB.
#[test]
fn wide_input_is_reduced_in_memory_proportional_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let (n, d) = (150, 6000);
    let data: Vec<f32> = (0..n * d)
        .map(|v| {
            let (i, j) = (v / d, v % d);
            ((i % 7) as f32 * ((j % 13) as f32 - 6.0) + ((i * 31 + j * 17) % 101) as f32) / 50.0
        })
        .collect();
    let path = dir.path().join("wide.npy");
    sgtsne::io::write_embedding(&path, &data, d).unwrap();
    let (_, json, _) = embeds(&path, &["--pca", "10"]);
    let peak = json["peak_rss_bytes"].as_u64().unwrap();
    assert!(peak < 150 << 20, "peak RSS {} MB", peak >> 20);
}

/// The device runs out of memory during a run: `SGTSNE_GPU_MEMORY_LIMIT` leaves the process
/// no device memory, or 200 MB, which the plan before the work does not see (as when
/// another process takes the memory after the check). One message naming the stage and the
/// estimate, status 1, nothing written, no hang; on gpu and hybrid. Skipped where there is
/// no GPU; a limit that is not a number is refused with the variable named. Ignored in the
/// suite, whose other GPU tests would find the device full while it runs:
/// `scripts/bench/gpu_tests.sh` runs it alone.
#[test]
#[ignore = "holds the GPU's memory; run alone with --ignored"]
fn device_out_of_memory_names_the_stage_and_the_estimate() {
    use sgtsne::backend::BackendKind;
    if !backends().contains(&BackendKind::Gpu) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("y.npy");
    let report = dir.path().join("r.json");
    for backend in ["gpu", "hybrid"] {
        for limit in ["0", "200000000"] {
            let args = [
                "embed",
                "--demo",
                "--backend",
                backend,
                "-o",
                out.to_str().unwrap(),
                "--report",
                report.to_str().unwrap(),
            ];
            fails_cleanly_env(
                &args,
                &[("SGTSNE_GPU_MEMORY_LIMIT", limit)],
                &out,
                &[
                    "out of GPU memory during",
                    "estimated to need",
                    "--backend cpu",
                ],
            );
            assert!(
                !report.exists(),
                "{backend}, limit {limit}: a report was written"
            );
        }
    }
    fails_cleanly_env(
        &[
            "embed",
            "--demo",
            "--backend",
            "gpu",
            "-o",
            out.to_str().unwrap(),
        ],
        &[("SGTSNE_GPU_MEMORY_LIMIT", "lots")],
        &out,
        &["SGTSNE_GPU_MEMORY_LIMIT must be BYTES or DEVICE:BYTES"],
    );
}
