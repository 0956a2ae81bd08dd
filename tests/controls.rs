use std::path::Path;

use sgtsne::backend::BackendKind;
use sgtsne::embed::{embed, EmbedParams, Input};
use sgtsne::optim::OptimParams;
use sgtsne::progress::Silent;

use crate::cli::{backends, fails_cleanly_with, sgtsne, stderr};

/// Embeds the built-in digits on `backend` for 150 iterations, 50 of them early, with the
/// exaggeration `late` after the early phase (`None`: the default).
fn digits_with_late(backend: BackendKind, late: Option<f32>) -> Vec<f32> {
    let defaults = OptimParams {
        iters: 150,
        early_exaggeration_iters: 50,
        ..Default::default()
    };
    let params = EmbedParams {
        backend,
        optim: OptimParams {
            exaggeration: late.unwrap_or(defaults.exaggeration),
            ..defaults
        },
        ..Default::default()
    };
    let input = Input::Points(sgtsne::demo::points().unwrap());
    embed(input, "digits", None, &params, &Silent).unwrap().y
}

/// Root mean square distance from the centre (Y is centred every step).
fn spread(y: &[f32]) -> f64 {
    (y.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / (y.len() / 2) as f64).sqrt()
}

/// The exaggeration after the early phase reaches the gradient on every backend the machine
/// has: 1 is the default (exactly on the cpu backend), and 4 pulls the points together
/// (P's attraction weighs four times the repulsion).
#[test]
fn late_exaggeration_changes_the_result_and_one_is_the_default() {
    for kind in backends() {
        let backend = kind.name();
        let default = digits_with_late(kind, None);
        let one = digits_with_late(kind, Some(1.0));
        if kind == BackendKind::Cpu {
            assert_eq!(one, default);
        } else {
            // The device's float atomics vary the last bits from run to run.
            let (a, b) = (spread(&one), spread(&default));
            assert!(
                (a - b).abs() < 0.02 * b,
                "{backend}: spread {a} against {b}"
            );
        }
        let late = digits_with_late(kind, Some(4.0));
        assert_ne!(late, default);
        let (s1, s4) = (spread(&default), spread(&late));
        assert!(
            s4 < 0.8 * s1,
            "{backend}: spread {s4} with exaggeration 4, {s1} without"
        );
    }
}

/// `embed --demo` for 40 iterations on the CPU with `extra` flags and a report; returns
/// stderr and the report's `params.optim`.
fn short_run(dir: &Path, extra: &[&str]) -> (String, serde_json::Value) {
    let report = dir.join("r.json");
    let mut args = vec![
        "embed",
        "--demo",
        "--backend",
        "cpu",
        "--iters",
        "40",
        "--report",
        report.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let run = sgtsne(&args);
    let err = stderr(&run);
    assert!(run.status.success(), "{args:?}: {err}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    (err, json["params"]["optim"].clone())
}

const RENAMED: &str = "--exaggeration-iters is now called --early-exaggeration-iters";
const MEANING: &str = "sets the exaggeration after the early phase";

#[test]
fn old_flag_names_still_work_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let (err, optim) = short_run(dir.path(), &["--exaggeration-iters", "20"]);
    assert!(err.contains(RENAMED), "{err}");
    assert!(!err.contains(MEANING), "{err}");
    assert_eq!(optim["early_exaggeration_iters"], 20);

    // --exaggeration alone may come from a script written for its old meaning.
    let (err, optim) = short_run(
        dir.path(),
        &["--exaggeration", "2", "--early-exaggeration-iters", "20"],
    );
    assert!(err.contains(MEANING), "{err}");
    assert!(!err.contains(RENAMED), "{err}");
    assert_eq!(optim["exaggeration"], 2.0);
    assert_eq!(optim["early_exaggeration"], 12.0);
    assert_eq!(optim["early_exaggeration_iters"], 20);

    // With --early-exaggeration the command line is written for the new names: no note.
    let (err, optim) = short_run(
        dir.path(),
        &[
            "--early-exaggeration",
            "6",
            "--early-exaggeration-iters",
            "20",
            "--exaggeration",
            "1.5",
            "--early-momentum",
            "0.25",
            "--momentum",
            "0.75",
        ],
    );
    assert!(!err.contains("note: --"), "{err}");
    for (key, want) in [
        ("early_exaggeration", 6.0),
        ("exaggeration", 1.5),
        ("momentum_early", 0.25),
        ("momentum_late", 0.75),
    ] {
        assert_eq!(optim[key], want, "{key}");
    }
    // The old and the new name of one flag together are refused.
    let run = sgtsne(&[
        "embed",
        "--demo",
        "--exaggeration-iters",
        "20",
        "--early-exaggeration-iters",
        "20",
    ]);
    assert!(!run.status.success());
    assert!(
        stderr(&run).contains("cannot be used with"),
        "{}",
        stderr(&run)
    );
}

/// `--iters` shorter than the early phase runs an early phase of `--iters`, with a note
/// (in the summary and the report), instead of failing.
#[test]
fn short_iters_shorten_the_early_phase() {
    let dir = tempfile::tempdir().unwrap();
    let (err, optim) = short_run(dir.path(), &[]);
    assert!(
        err.contains("the early phase (250 iterations, early-exaggeration-iters) is longer than the 40 iterations: shortened to 40"),
        "{err}"
    );
    assert_eq!(optim["early_exaggeration_iters"], 40);
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    assert!(json["notes"][0]
        .as_str()
        .unwrap()
        .contains("shortened to 40"));
}

/// The step limit reaches the optimiser: 5 by default, another number, or none (`null`
/// in the report).
#[test]
fn the_step_limit_is_set_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, want) in [
        (&[][..], serde_json::json!(5.0)),
        (&["--max-step-norm", "2.5"][..], serde_json::json!(2.5)),
        (&["--max-step-norm", "none"][..], serde_json::Value::Null),
    ] {
        let (_, optim) = short_run(dir.path(), extra);
        assert_eq!(optim["max_step_norm"], want, "{extra:?}");
    }
}

/// Negative, zero, NaN or out-of-range factors, momenta and step limits fail before any
/// work, naming the flag, and write nothing.
#[test]
fn bad_exaggeration_and_momentum_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("y.npy");
    let out_s = out.to_str().unwrap();
    for (flag, value, needle) in [
        (
            "--exaggeration",
            "-1",
            "must be positive and finite, got -1",
        ),
        ("--exaggeration", "0", "must be positive and finite, got 0"),
        (
            "--early-exaggeration",
            "nan",
            "must be positive and finite, got NaN",
        ),
        (
            "--early-exaggeration",
            "inf",
            "must be positive and finite, got inf",
        ),
        ("--momentum", "1", "must be in [0, 1), got 1"),
        ("--early-momentum", "-0.5", "must be in [0, 1), got -0.5"),
        ("--momentum", "NaN", "must be in [0, 1), got NaN"),
        ("--max-step-norm", "0", "must be positive and finite, got 0"),
        (
            "--max-step-norm",
            "-5",
            "must be positive and finite, got -5",
        ),
    ] {
        let name = format!("`{}`", flag.trim_start_matches('-'));
        fails_cleanly_with(
            &["embed", "--demo", "-o", out_s, flag, value],
            &out,
            &[name.as_str(), needle],
        );
    }
}

fn read_npy(path: &Path) -> Vec<f32> {
    sgtsne::io::read_points(path).unwrap().data.into_vec()
}

/// Snapshots every 25 of 60 iterations and after the last, in sorting names and in input
/// order (the cpu and hybrid backends number the points in a locality order inside: the
/// last snapshot equals the output), drawn as a GIF of one frame each; on every backend the
/// machine has.
#[test]
fn snapshots_and_their_animation() {
    for backend in backends() {
        snapshots_on(backend.name());
    }
}

fn snapshots_on(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let frames = dir.path().join("frames");
    let (out, gif) = (dir.path().join("y.npy"), dir.path().join("run.gif"));
    let run = sgtsne(&[
        "embed",
        "--demo",
        "--backend",
        backend,
        "--iters",
        "60",
        "--early-exaggeration-iters",
        "20",
        "--snapshot-every",
        "25",
        "--snapshots",
        frames.to_str().unwrap(),
        "--animate",
        gif.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = stderr(&run);
    assert!(run.status.success(), "{backend}: {err}");
    assert!(err.contains("wrote 3 snapshots to"), "{backend}: {err}");
    let mut names: Vec<String> = std::fs::read_dir(&frames)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["iter_0025.npy", "iter_0050.npy", "iter_0060.npy"]);
    let last = read_npy(&frames.join("iter_0060.npy"));
    assert_eq!(last, read_npy(&out), "{backend}");
    assert_ne!(read_npy(&frames.join("iter_0025.npy")), last);

    let bytes = std::fs::read(&gif).unwrap();
    let mut decoder = gif::DecodeOptions::new();
    decoder.set_color_output(gif::ColorOutput::Indexed);
    let mut d = decoder.read_info(&bytes[..]).unwrap();
    let mut count = 0;
    while d.read_next_frame().unwrap().is_some() {
        count += 1;
    }
    assert_eq!(count, 3);
}

/// A directory that refuses new files even to root: a read-only directory, or where the
/// tests run as root (which writes anyway), /sys; `None` where neither refuses.
fn unwritable_dir(dir: &Path) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let ro = dir.join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    [ro, "/sys".into()]
        .into_iter()
        .find(|d| tempfile::tempfile_in(d).is_err())
}

/// Bad snapshot settings fail before the run, each with one message naming the flag or the
/// path, and leave nothing: no output, no snapshot, no animation.
#[test]
fn bad_snapshot_settings_are_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("y.npy");
    let file = dir.path().join("file.txt");
    std::fs::write(&file, "x").unwrap();
    let (out_s, file_s) = (out.to_str().unwrap(), file.to_str().unwrap());
    let frames = dir.path().join("frames");
    let frames_s = frames.to_str().unwrap();
    let gif = dir.path().join("a.gif");
    let png = dir.path().join("a.png");
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["--snapshot-every", "0", "--snapshots", frames_s],
            vec!["`snapshot-every`", "at least 1"],
        ),
        (
            vec!["--snapshot-every", "10", "--snapshots", file_s],
            vec!["file.txt: snapshot directory is not a directory"],
        ),
        (
            vec![
                "--snapshot-every",
                "10",
                "--snapshots",
                frames_s,
                "--animate",
                png.to_str().unwrap(),
            ],
            vec!["a.png", "for an animation", ".gif"],
        ),
        (
            vec!["--animate", gif.to_str().unwrap()],
            vec!["--snapshots <DIR>"],
        ),
        (vec!["--snapshots", frames_s], vec!["--snapshot-every <N>"]),
    ];
    for (extra, needles) in cases {
        let mut args = vec!["embed", "--demo", "--backend", "cpu", "-o", out_s];
        args.extend(extra);
        fails_cleanly_with(&args, &out, &needles);
        assert!(!frames.exists() && !gif.exists(), "{args:?} wrote");
    }
    match unwritable_dir(dir.path()) {
        Some(ro) => {
            let ro_s = ro.to_str().unwrap();
            fails_cleanly_with(
                &[
                    "embed",
                    "--demo",
                    "-o",
                    out_s,
                    "--snapshot-every",
                    "10",
                    "--snapshots",
                    ro_s,
                ],
                &out,
                &[ro_s, "cannot write snapshots there"],
            );
        }
        None => eprintln!("no unwritable directory here: that case is not tested"),
    }
}
