//! Ctrl-C (SIGINT) sent to `sgtsne embed` (issue 17): during the optimisation the run stops
//! after the current iteration and writes nothing, or with `--on-interrupt save` writes the
//! embedding reached and marks the report; a second SIGINT, or one before the optimisation,
//! ends the process at once. No temporary file is ever left.
#![cfg(unix)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cli::{backends, stderr};

/// A run on the digits on `backend` that cannot end by itself within a test's patience:
/// SIGINT ends it. Snapshots at every iteration show when the optimisation has begun.
fn endless(dir: &Path, backend: &str, extra: &[&str]) -> Child {
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    Command::new(env!("CARGO_BIN_EXE_sgtsne"))
        .args([
            "embed",
            "--demo",
            "--iters",
            "1000000",
            "--backend",
            backend,
        ])
        .args(["--threads", "2", "--snapshot-every", "1"])
        .args(["-o", &path("y.npy"), "--report", &path("r.json")])
        .args(["--snapshots", &path("snaps")])
        .args(extra)
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the sgtsne binary runs")
}

/// Waits until `path` exists (the run got there), failing after a minute.
fn wait_for(path: &Path, run: &mut Child) {
    let start = Instant::now();
    while !path.exists() {
        if start.elapsed() > Duration::from_secs(60) || run.try_wait().unwrap().is_some() {
            let _ = run.kill();
            panic!("{} never appeared", path.display());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn interrupt(run: &Child) {
    let status = Command::new("kill")
        .args(["-INT", &run.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

/// The run's output once it has ended, failing (and killing it) after a minute.
fn finish(mut run: Child) -> Output {
    let start = Instant::now();
    while run.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = run.kill();
            panic!("the run did not end after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    run.wait_with_output().unwrap()
}

/// Reads `pipe` to its end on a thread of its own, into the buffer returned, so that a test
/// can watch what the run says while it runs.
fn collect(mut pipe: impl Read + Send + 'static) -> Arc<Mutex<Vec<u8>>> {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let into = Arc::clone(&buffer);
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(got @ 1..) = pipe.read(&mut chunk) {
            into.lock().unwrap().extend_from_slice(&chunk[..got]);
        }
    });
    buffer
}

/// Temporary files (`.sgtsne-…`) in `dirs`.
fn temp_files(dirs: &[PathBuf]) -> Vec<PathBuf> {
    dirs.iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|entries| entries.flatten())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".sgtsne-"))
        .map(|e| e.path())
        .collect()
}

/// Checks an interrupted run that had to write nothing: status 130, the message, no
/// output, no report, no temporary file.
fn nothing_written(out: &Output, dir: &Path, needles: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for needle in needles {
        assert!(err.contains(needle), "`{needle}` not in {err}");
    }
    assert!(!dir.join("y.npy").exists() && !dir.join("r.json").exists());
    let temps = temp_files(&[dir.to_path_buf(), dir.join("snaps")]);
    assert!(temps.is_empty(), "left behind: {temps:?}");
}

/// A first SIGINT during the optimisation stops the run after the iteration: status 130,
/// "interrupted at iteration i of N; nothing written", no output; on every backend the
/// machine has.
#[test]
fn sigint_during_the_optimisation_writes_nothing() {
    for backend in backends() {
        let dir = tempfile::tempdir().unwrap();
        let mut run = endless(dir.path(), backend.name(), &["-q"]);
        wait_for(&dir.path().join("snaps/iter_0000002.npy"), &mut run);
        interrupt(&run);
        let out = finish(run);
        nothing_written(
            &out,
            dir.path(),
            &["interrupted at iteration", "of 1000000; nothing written"],
        );
    }
}

/// `--on-interrupt save`: the run ends normally with the embedding reached in every output,
/// the report's `optimise.interrupted_at` and a line of the summary saying where; on every
/// backend the machine has.
#[test]
fn sigint_with_on_interrupt_save_writes_the_embedding_reached() {
    for backend in backends() {
        interrupted_save_on(backend.name());
    }
}

fn interrupted_save_on(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut run = endless(dir.path(), backend, &["--on-interrupt", "save"]);
    wait_for(&dir.path().join("snaps/iter_0000002.npy"), &mut run);
    interrupt(&run);
    let out = finish(run);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("interrupted at iteration"), "{err}");
    let y = sgtsne::io::read_points(&dir.path().join("y.npy")).unwrap();
    assert_eq!((y.n, y.d), (1797, 2));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    let at = report["optimise"]["interrupted_at"].as_u64().unwrap();
    assert!((2..1_000_000).contains(&at), "interrupted_at {at}");
    assert_eq!(
        report["optimise"]["kl_history"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()[0],
        at
    );
    assert!(temp_files(&[dir.path().to_path_buf(), dir.path().join("snaps")]).is_empty());
}

/// A second SIGINT ends the process at once, with nothing written and no temporary file.
/// The first lands within milliseconds of a snapshot, at the start of an iteration of the
/// exact repulsion on 16,000 distinct points (about 0.4 s on two threads); the second is
/// sent once the run has said it saw the first (two SIGINTs pending at once would count as
/// one), long before that iteration ends.
#[test]
fn a_second_sigint_ends_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let points = dir.path().join("pts.npy");
    let data: Vec<f32> = (0u64..16_000 * 5)
        .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as f32 / (1u64 << 24) as f32)
        .collect();
    sgtsne::io::write_embedding(&points, &data, 5).unwrap();
    let y = dir.path().join("y.npy");
    let mut run = Command::new(env!("CARGO_BIN_EXE_sgtsne"))
        .args(["embed", points.to_str().unwrap(), "-o", y.to_str().unwrap()])
        .args([
            "--iters",
            "1000000",
            "--repulsion",
            "exact",
            "--backend",
            "cpu",
        ])
        .args([
            "--threads",
            "2",
            "--snapshot-every",
            "1",
            "-q",
            "--snapshots",
        ])
        .arg(dir.path().join("snaps"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = collect(run.stderr.take().unwrap());
    wait_for(&dir.path().join("snaps/iter_0000001.npy"), &mut run);
    interrupt(&run);
    let start = Instant::now();
    while !String::from_utf8_lossy(&err.lock().unwrap()).contains("stopping after") {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no word of the first SIGINT"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    interrupt(&run);
    let mut out = finish(run);
    // The reader ends with the pipe, which closed with the process.
    while Arc::strong_count(&err) > 1 {
        std::thread::sleep(Duration::from_millis(1));
    }
    out.stderr = std::mem::take(&mut *err.lock().unwrap());
    nothing_written(
        &out,
        dir.path(),
        &[
            "stopping after this iteration",
            "interrupted; nothing written",
        ],
    );
}

/// SIGINT before the optimisation (here while the neighbours of 200,000 points are
/// searched) ends the run at once with nothing written.
#[test]
fn sigint_before_the_optimisation_ends_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let points = dir.path().join("pts.npy");
    let data: Vec<f32> = (0..200_000 * 20)
        .map(|i| ((i * 7919) % 1013) as f32)
        .collect();
    sgtsne::io::write_embedding(&points, &data, 20).unwrap();
    let y = dir.path().join("y.npy");
    let run = Command::new(env!("CARGO_BIN_EXE_sgtsne"))
        .args(["embed", points.to_str().unwrap(), "-o", y.to_str().unwrap()])
        .args(["--knn", "exact", "--backend", "cpu", "--threads", "2", "-q"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let start = Instant::now();
    interrupt(&run);
    let out = finish(run);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    nothing_written(&out, dir.path(), &["interrupted; nothing written"]);
}
