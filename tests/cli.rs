use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The backends this machine runs: `cpu`, and `gpu` and `hybrid` where a GPU is usable. With
/// `SGTSNE_REQUIRE_GPU=1` (the device runs) a missing GPU fails the test instead, as the
/// library's GPU tests do.
pub(crate) fn backends() -> Vec<sgtsne::backend::BackendKind> {
    use sgtsne::backend::BackendKind;
    match sgtsne::gpu::Gpu::get() {
        Ok(_) => vec![BackendKind::Cpu, BackendKind::Gpu, BackendKind::Hybrid],
        Err(e) => {
            let required = std::env::var_os("SGTSNE_REQUIRE_GPU").is_some_and(|v| v == "1");
            assert!(!required, "SGTSNE_REQUIRE_GPU=1, but {e}");
            vec![BackendKind::Cpu]
        }
    }
}

pub(crate) fn sgtsne(args: &[&str]) -> Output {
    sgtsne_env(args, &[])
}

/// `sgtsne ARGS` with the environment variables `env` set.
pub(crate) fn sgtsne_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sgtsne"))
        .args(args)
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .output()
        .expect("the sgtsne binary runs")
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `embed INPUT -o OUT.npy` (plus `extra`) and checks that it fails cleanly: non-zero
/// exit, no panic, a message containing each of `needles`, and no output file.
pub(crate) fn fails_cleanly(input: &Path, extra: &[&str], needles: &[&str]) {
    let dir = input.parent().unwrap();
    let out_path = dir.join("out.npy");
    let mut args = vec![
        "embed",
        input.to_str().unwrap(),
        "-o",
        out_path.to_str().unwrap(),
        "-q",
    ];
    args.extend_from_slice(extra);
    fails_cleanly_with(&args, &out_path, needles);
}

/// Runs `sgtsne ARGS`, whose output is `out_path`, and checks that it fails cleanly: non-zero
/// exit, no panic, a message containing each of `needles`, no output file and no temporary
/// file beside it.
pub(crate) fn fails_cleanly_with(args: &[&str], out_path: &Path, needles: &[&str]) {
    fails_cleanly_env(args, &[], out_path, needles)
}

/// Runs `sgtsne` with `args` and `-o DIR/NAME.npy --report DIR/NAME.json`, which must
/// succeed; returns the embedding and the report.
pub(crate) fn embed_report(dir: &Path, name: &str, args: &[&str]) -> (Vec<f32>, serde_json::Value) {
    let out = dir.join(format!("{name}.npy"));
    let report = dir.join(format!("{name}.json"));
    let mut all = args.to_vec();
    all.extend([
        "-o",
        out.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    let o = sgtsne(&all);
    assert!(o.status.success(), "{}", stderr(&o));
    let y = sgtsne::io::read_points(&out).unwrap().data.into_vec();
    let r = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    (y, r)
}

/// [`fails_cleanly_with`] with the environment variables `env` set.
pub(crate) fn fails_cleanly_env(
    args: &[&str],
    env: &[(&str, &str)],
    out_path: &Path,
    needles: &[&str],
) {
    let out = sgtsne_env(args, env);
    let err = stderr(&out);
    assert!(!out.status.success(), "expected failure for {args:?}");
    assert!(!err.contains("panicked"), "panic for {args:?}: {err}");
    for needle in needles {
        assert!(
            err.contains(needle),
            "message for {args:?} lacks `{needle}`: {err}"
        );
    }
    assert!(
        !out_path.exists(),
        "partial output left behind for {args:?}"
    );
    let leftovers: Vec<PathBuf> = std::fs::read_dir(out_path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

pub(crate) fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// A CSV of `n` rows × 3 columns of distinct values.
pub(crate) fn csv_rows(n: usize) -> String {
    (0..n)
        .map(|i| format!("{},{},{}\n", i, i * i % 7, i % 5))
        .collect()
}

#[test]
fn demo_writes_embedding_plot_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo.npy");
    let plot = dir.path().join("demo.png");
    let report = dir.path().join("demo.json");
    let run = sgtsne(&[
        "embed",
        "--demo",
        "--backend",
        "cpu",
        "--threads",
        "2",
        "-o",
        out.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let npy = std::fs::read(&out).unwrap();
    assert_eq!(&npy[..6], b"\x93NUMPY");
    assert!(npy.len() > 1797 * 2 * 4);
    let png = std::fs::read(&plot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    for key in [
        "version",
        "input",
        "params",
        "backend",
        "threads",
        "seconds",
        "optimise",
        "peak_rss_bytes",
    ] {
        assert!(json.get(key).is_some(), "report lacks `{key}`");
    }
    for stage in ["load", "pca", "knn", "affinities", "optimise", "total"] {
        assert!(
            json["seconds"][stage].as_f64().is_some(),
            "no seconds.{stage}"
        );
    }
    assert_eq!(json["threads"], 2);
    assert_eq!(json["input"]["n"], 1797);
    assert_eq!(json["params"]["perplexity"], 30.0);
    let kl = json["optimise"]["kl_history"].as_array().unwrap();
    assert_eq!(kl.len(), 21);
    assert!(json["quality"]["knn_accuracy_10"].as_f64().unwrap() >= 0.95);
}

#[test]
fn csv_input_with_header_and_csv_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        &dir,
        "pts.csv",
        format!("a,b,c\n{}", csv_rows(200)).as_bytes(),
    );
    let out = dir.path().join("y.csv");
    let run = sgtsne(&[
        "embed",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--perplexity",
        "10",
        "--iters",
        "100",
        "--early-exaggeration-iters",
        "50",
        "--backend",
        "cpu",
        "-q",
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 201, "header + 200 rows");
}

#[test]
fn empty_file() {
    let dir = tempfile::tempdir().unwrap();
    fails_cleanly(&write(&dir, "empty.csv", b""), &[], &["empty.csv"]);
    fails_cleanly(&write(&dir, "empty.npy", b""), &[], &["empty.npy"]);
}

#[test]
fn nan_and_inf_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = csv_rows(200);
    text.push_str("1,NaN,3\n");
    fails_cleanly(
        &write(&dir, "nan.csv", text.as_bytes()),
        &[],
        &["nan.csv", "201"],
    );
    let mut text = csv_rows(200);
    text.insert_str(0, "1,2,inf\n");
    fails_cleanly(&write(&dir, "inf.csv", text.as_bytes()), &[], &["inf.csv"]);
}

#[test]
fn ragged_csv() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = csv_rows(50);
    text.push_str("1,2\n");
    text.push_str(&csv_rows(50));
    fails_cleanly(
        &write(&dir, "ragged.csv", text.as_bytes()),
        &[],
        &["ragged.csv", "51"],
    );
}

#[test]
fn truncated_npy() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.npy");
    sgtsne::io::write_embedding(&full, &vec![1.5f32; 500 * 2], 2).unwrap();
    let bytes = std::fs::read(&full).unwrap();
    std::fs::remove_file(&full).unwrap();
    let cut = write(&dir, "cut.npy", &bytes[..bytes.len() - 100]);
    fails_cleanly(&cut, &[], &["cut.npy"]);
}

#[test]
fn too_few_points_for_the_perplexity() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(&dir, "small.csv", csv_rows(90).as_bytes());
    fails_cleanly(&input, &[], &["90 points", "perplexity"]);
}

/// A run whose memory estimate passes what the machine has (here capped to 1 MB) fails
/// before the work, saying how much it needs and which flags lower it; nothing is written.
#[test]
fn too_big_for_the_memory_fails_before_work() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(&dir, "points.csv", csv_rows(3000).as_bytes());
    let out_path = dir.path().join("out.npy");
    let report = dir.path().join("report.json");
    let args = [
        "embed",
        input.to_str().unwrap(),
        "-o",
        out_path.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
        "--backend",
        "cpu",
        "-q",
    ];
    fails_cleanly_env(
        &args,
        &[("SGTSNE_MAX_HOST_BYTES", "1000000")],
        &out_path,
        &["GiB of host memory", "available", "--perplexity"],
    );
    assert!(!report.exists(), "a report was written");
}

/// Under cosine a row of zeros has no distance to anything: refused by its number, before
/// any output; a graph, whose edges are given, takes no metric.
#[test]
fn cosine_refuses_a_zero_row_and_a_graph() {
    let dir = tempfile::tempdir().unwrap();
    // Rows 0 … 199 point somewhere (csv_rows' first row is all zeros), row 200 does not.
    let mut rows: String = (1..=200)
        .map(|i| format!("{},{},{}\n", i, i * i % 7, i % 5))
        .collect();
    rows.push_str("0,0,0\n");
    let input = write(&dir, "points.csv", rows.as_bytes());
    fails_cleanly(
        &input,
        &["--metric", "cosine"],
        &["row 200", "all zeros", "--metric euclidean"],
    );
    let graph = write(
        &dir,
        "g.mtx",
        b"%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1\n2 3 1\n",
    );
    let out = dir.path().join("out.npy");
    fails_cleanly_with(
        &[
            "embed",
            "--graph",
            graph.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "-q",
            "--metric",
            "correlation",
        ],
        &out,
        &["metric", "graph"],
    );
}

#[test]
fn unknown_extensions() {
    let dir = tempfile::tempdir().unwrap();
    fails_cleanly(
        &write(&dir, "points.xyz", csv_rows(200).as_bytes()),
        &[],
        &["points.xyz"],
    );
    let input = write(&dir, "ok.csv", csv_rows(200).as_bytes());
    let bad_out = dir.path().join("y.xyz");
    let run = sgtsne(&[
        "embed",
        input.to_str().unwrap(),
        "-o",
        bad_out.to_str().unwrap(),
        "-q",
    ]);
    assert!(!run.status.success());
    assert!(stderr(&run).contains("y.xyz"), "{}", stderr(&run));
    assert!(!bad_out.exists());
}

#[test]
fn missing_file() {
    let dir = tempfile::tempdir().unwrap();
    fails_cleanly(&dir.path().join("nowhere.npy"), &[], &["nowhere.npy"]);
}

#[test]
fn mismatched_label_count() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(&dir, "pts.csv", csv_rows(200).as_bytes());
    let labels = write(&dir, "labels.csv", "label\n1\n2\n3\n".as_bytes());
    fails_cleanly(
        &input,
        &["--labels", labels.to_str().unwrap()],
        &["labels.csv", "3 labels", "200"],
    );
}

#[test]
fn dims_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(&dir, "pts.csv", csv_rows(200).as_bytes());
    fails_cleanly(&input, &["--dims", "4"], &["--dims", "4"]);
}

#[test]
fn gpu_backend_without_a_gpu_fails_with_the_reason() {
    if sgtsne::gpu::probe().is_ok() {
        eprintln!(
            "skipped: a GPU is usable here, so `--backend gpu` does not fail for its absence"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = write(&dir, "pts.csv", csv_rows(200).as_bytes());
    fails_cleanly(&input, &["--backend", "gpu"], &["no usable GPU"]);
}

#[test]
fn info_reports_the_gpu_status() {
    let run = sgtsne(&["info"]);
    assert!(run.status.success());
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(text.contains("sgtsne "), "{text}");
    assert!(text.contains("gpu:"), "{text}");
}

/// `n` smooth s × s float images (`im.npy`) and labels i mod 3 (`lab.npy`) in `dir`.
fn image_files(dir: &tempfile::TempDir, n: usize, s: usize) -> (PathBuf, PathBuf) {
    let pixels: Vec<f32> = (0..n * s * s)
        .map(|k| {
            let (i, x, y) = (k / (s * s), k % s, k / s % s);
            ((x * (i + 1) + y * (i % 5)) % (2 * s)) as f32 / (2 * s) as f32
        })
        .collect();
    let images = dir.path().join("im.npy");
    sgtsne::io::write_embedding(&images, &pixels, s * s).unwrap();
    let labels = dir.path().join("lab.npy");
    let codes: Vec<u32> = (0..n as u32).map(|i| i % 3).collect();
    sgtsne::io::write_labels(&labels, &codes).unwrap();
    (images, labels)
}

/// `gen --deform-images IMAGES --image-labels LABELS -o OUT` and `extra`.
fn gen_args<'a>(
    images: &'a Path,
    labels: &'a Path,
    out: &'a Path,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "gen",
        "--deform-images",
        images.to_str().unwrap(),
        "--image-labels",
        labels.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn gen_deformed_images_writes_rows_and_labels() {
    let dir = tempfile::tempdir().unwrap();
    let (images, labels) = image_files(&dir, 20, 6);
    let run = |threads: &str, name: &str| {
        let out = dir.path().join(format!("{name}.npy"));
        let out_labels = dir.path().join(format!("{name}_labels.npy"));
        let extra = [
            "--n",
            "50",
            "--dim",
            "4",
            "--seed",
            "3",
            "--threads",
            threads,
            "--labels",
            out_labels.to_str().unwrap(),
            "-q",
        ];
        let status = sgtsne(&gen_args(&images, &labels, &out, &extra));
        assert!(status.status.success(), "{}", stderr(&status));
        (out, out_labels)
    };
    let (out, out_labels) = run("2", "a");
    let rows = sgtsne::io::read_points(&out).unwrap();
    assert_eq!((rows.n, rows.d), (50, 4));
    let l = sgtsne::io::read_labels(&out_labels).unwrap();
    assert_eq!(l.names, ["0", "1", "2"]);
    let want: Vec<u32> = (0..50).map(|i| (i % 20) % 3).collect();
    assert_eq!(l.codes, want);
    let (again, _) = run("1", "b");
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(again).unwrap());
}

#[test]
fn gen_deformed_images_bad_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let (images, labels) = image_files(&dir, 20, 4);
    let out = dir.path().join("out.npy");
    let gen = |images: &Path, labels: &Path, extra: &[&str], needles: &[&str]| {
        let mut args = gen_args(images, labels, &out, &["--n", "30"]);
        args.extend_from_slice(extra);
        fails_cleanly_with(&args, &out, needles);
    };
    // More components than pixels.
    gen(
        &images,
        &labels,
        &["--dim", "17"],
        &["im.npy", "17 principal components", "16-pixel"],
    );
    // Not square.
    let odd = dir.path().join("odd.npy");
    sgtsne::io::write_embedding(&odd, &[0.5; 30], 10).unwrap();
    gen(&odd, &labels, &[], &["odd.npy", "10 pixels", "not square"]);
    // Not images.
    let ints = write(&dir, "ints.npy", b"not an npy file at all");
    gen(&ints, &labels, &[], &["ints.npy"]);
    // A label count that does not match.
    let few = dir.path().join("few.npy");
    sgtsne::io::write_labels(&few, &[1, 2]).unwrap();
    gen(
        &images,
        &few,
        &[],
        &["few.npy", "2 labels for the 20 images"],
    );
    // A strength that makes no sense.
    gen(
        &images,
        &labels,
        &["--deform-strength=-1"],
        &["--deform-strength -1", "out of bounds", "rotation_deg"],
    );
    // --clusters has no meaning here (a usage error, exit code 2).
    let run = sgtsne(&gen_args(&images, &labels, &out, &["--clusters", "5"]));
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(stderr(&run).contains("--clusters"), "{}", stderr(&run));
    // --image-labels is required.
    let run = sgtsne(&[
        "gen",
        "--deform-images",
        images.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(stderr(&run).contains("--image-labels"), "{}", stderr(&run));
    assert!(!out.exists());
}

/// `SGTSNE_TRACE=1` writes the run's timeline to standard error: from `start` to `end`, the
/// input's load, each stage in the pipeline's order and the outputs' writing, each line with
/// the resident memory on Linux; without it, nothing of the kind.
#[test]
fn trace_shows_the_run_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo.npy");
    let args = [
        "embed",
        "--demo",
        "--backend",
        "cpu",
        "--threads",
        "2",
        "--iters",
        "60",
        "-q",
        "-o",
        out.to_str().unwrap(),
    ];
    let traced = sgtsne_env(&args, &[("SGTSNE_TRACE", "1")]);
    assert!(traced.status.success(), "{}", stderr(&traced));
    // "trace   1.2345 s  THREAD  EVENT …  [rss 0.01 GiB, peak 0.02]" (the memory on Linux)
    let text = stderr(&traced);
    if cfg!(target_os = "linux") {
        assert!(
            text.lines()
                .filter(|l| l.starts_with("trace"))
                .all(|l| l.ends_with(']') && l.contains("  [rss ")),
            "a trace line without its memory: {text}"
        );
    }
    let events: Vec<(f64, String)> = text
        .lines()
        .filter_map(|line| {
            let line = line.split_once("  [rss ").map_or(line, |(event, _)| event);
            let words: Vec<&str> = line.strip_prefix("trace")?.split_whitespace().collect();
            let time = words.first()?.parse().ok()?;
            (words.get(1) == Some(&"s") && words.len() > 3).then(|| (time, words[3..].join(" ")))
        })
        .collect();
    let names: Vec<&str> = events.iter().map(|(_, e)| e.as_str()).collect();
    assert_eq!(names.first(), Some(&"start"), "{names:?}");
    assert_eq!(names.last(), Some(&"end"), "{names:?}");
    assert!(events.iter().all(|(t, _)| t.is_finite() && *t >= 0.0));
    let at = |event: &str| {
        names
            .iter()
            .position(|e| *e == event)
            .unwrap_or_else(|| panic!("no `{event}` in {names:?}"))
    };
    let order = [
        "load",
        "stage setup",
        "stage knn",
        "stage affinities",
        "stage optimise",
        "stage quality",
        "write",
        "written",
    ];
    assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{names:?}");
    let quiet = sgtsne_env(&args, &[("SGTSNE_TRACE", "0")]);
    assert!(quiet.status.success(), "{}", stderr(&quiet));
    assert!(!stderr(&quiet).contains("trace "), "{}", stderr(&quiet));
}
