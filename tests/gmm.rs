use std::path::{Path, PathBuf};

use sgtsne::gmm::{self, CovarianceType, GmmParams, Samples};
use sgtsne::progress::Silent;
use sgtsne::Points;

use rand::SeedableRng;
use rand_distr::Distribution;

use crate::cli::{fails_cleanly_with, sgtsne, stderr, write};

const DIGITS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/demo/digits1797_64_u8.npy");
const DIGIT_LABELS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/src/demo/digits1797_labels_u8.npy"
);

fn run_ok(args: &[&str]) -> String {
    let o = sgtsne(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    stderr(&o)
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn labels(path: &Path) -> Vec<u32> {
    sgtsne::io::read_labels(path).unwrap().codes
}

/// Four Gaussian clusters in 2-D (σ = 1), 100 points each, 40 apart; seeded.
fn four_blobs(dir: &Path) -> PathBuf {
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let normal = rand_distr::Normal::new(0.0f64, 1.0).unwrap();
    let mut text = String::new();
    for i in 0..400 {
        let (cx, cy) = [(0.0, 0.0), (40.0, 0.0), (0.0, 40.0), (40.0, 40.0)][i % 4];
        let (dx, dy) = (normal.sample(&mut rng), normal.sample(&mut rng));
        text += &format!("{},{}\n", cx + dx, cy + dy);
    }
    let p = dir.join("blobs.csv");
    std::fs::write(&p, text).unwrap();
    p
}

/// `gmm` on the digits writes labels, responsibilities, the model and a report that agree
/// with each other.
#[test]
fn gmm_writes_labels_proba_model_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let p = |f: &str| dir.path().join(f).to_str().unwrap().to_string();
    run_ok(&[
        "gmm",
        DIGITS,
        "-k",
        "10",
        "-o",
        &p("l.npy"),
        "--proba",
        &p("p.npy"),
        "--model",
        &p("m.json"),
        "--report",
        &p("r.json"),
        "--labels",
        DIGIT_LABELS,
    ]);
    let l = labels(&dir.path().join("l.npy"));
    assert_eq!(l.len(), 1797);
    assert!(l.iter().all(|&c| c < 10));
    let proba = sgtsne::io::read_points(&dir.path().join("p.npy")).unwrap();
    assert_eq!((proba.n, proba.d), (1797, 10));
    for (i, row) in proba.data.chunks(10).enumerate() {
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        let best = (0..10).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
        assert!(row[best] == row[l[i] as usize], "sample {i}");
    }
    let r = json(&dir.path().join("r.json"));
    let m = json(&dir.path().join("m.json"));
    let ari = r["adjusted_rand_index"].as_f64().unwrap();
    assert!(ari > 0.3 && ari <= 1.0, "{ari}");
    let history = r["log_likelihood_history"].as_array().unwrap();
    assert_eq!(history.len() as u64, r["iterations"].as_u64().unwrap());
    // EM never lowers the likelihood.
    let h: Vec<f64> = history.iter().map(|v| v.as_f64().unwrap()).collect();
    assert!(h.windows(2).all(|w| w[1] >= w[0] - 1e-9), "{h:?}");
    let score = r["mean_log_likelihood"].as_f64().unwrap();
    assert!(score >= *h.last().unwrap() - 1e-9);
    let sizes: Vec<u64> = r["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(sizes.iter().sum::<u64>(), 1797);
    assert_eq!(m["means"].as_array().unwrap().len(), 10);
    assert_eq!(m["covariances"][0].as_array().unwrap().len(), 64);
    let w: f64 = m["weights"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!((w - 1.0).abs() < 1e-12);
    assert!(m["initial"]["means"].is_array());
}

/// The fit is the same, bit for bit, on one thread and on three.
#[test]
fn gmm_does_not_depend_on_threads() {
    let dir = tempfile::tempdir().unwrap();
    let mut models = Vec::new();
    for threads in ["1", "3"] {
        let m = dir.path().join(format!("m{threads}.npz"));
        let l = dir.path().join(format!("l{threads}.npy"));
        run_ok(&[
            "gmm",
            DIGITS,
            "-k",
            "6",
            "--threads",
            threads,
            "-q",
            "-o",
            l.to_str().unwrap(),
            "--model",
            m.to_str().unwrap(),
        ]);
        models.push((std::fs::read(&m).unwrap(), std::fs::read(&l).unwrap()));
    }
    assert!(models[0] == models[1]);
}

/// `--backend gpu` fits the digits as the CPU does (the same labels, every iteration's
/// mean log-likelihood within 1e-10) and says so in the report; on a machine without a
/// usable GPU it fails with a message naming the GPU and writes nothing.
#[test]
fn gmm_on_the_gpu_matches_the_cpu_or_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let p = |f: &str| dir.path().join(f).to_str().unwrap().to_string();
    let run = |backend: &str| {
        vec![
            "gmm".to_string(),
            DIGITS.to_string(),
            "-k".into(),
            "10".into(),
            "--iters".into(),
            "20".into(),
            "--tol".into(),
            "0".into(),
            "--backend".into(),
            backend.into(),
            "-q".into(),
            "-o".into(),
            p(&format!("{backend}.npy")),
            "--report".into(),
            p(&format!("{backend}.json")),
        ]
    };
    let gpu_args = run("gpu");
    if !crate::cli::backends().contains(&sgtsne::backend::BackendKind::Gpu) {
        fails_cleanly_with(&strs(&gpu_args), Path::new(&p("gpu.npy")), &["GPU"]);
        return;
    }
    run_ok(&strs(&run("cpu")));
    run_ok(&strs(&gpu_args));
    let (cpu, gpu) = (
        json(Path::new(&p("cpu.json"))),
        json(Path::new(&p("gpu.json"))),
    );
    assert_eq!(gpu["backend"], "gpu");
    let history = |r: &serde_json::Value| -> Vec<f64> {
        r["log_likelihood_history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    for (a, b) in history(&cpu).iter().zip(history(&gpu)) {
        assert!((a - b).abs() <= 1e-10 * a.abs(), "cpu {a}, gpu {b}");
    }
    assert_eq!(
        labels(Path::new(&p("cpu.npy"))),
        labels(Path::new(&p("gpu.npy")))
    );
}

/// `-k auto` finds the four clusters there are, and writes the BIC curve beside -o.
#[test]
fn k_auto_picks_the_clusters_there_are() {
    let dir = tempfile::tempdir().unwrap();
    let input = four_blobs(dir.path());
    let out = dir.path().join("l.npy");
    let report = dir.path().join("r.json");
    run_ok(&[
        "gmm",
        input.to_str().unwrap(),
        "-k",
        "auto",
        "--k-range",
        "1..8",
        "-o",
        out.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    let r = json(&report);
    assert_eq!(r["k"], 4, "{}", r["k_selection"]);
    let csv = std::fs::read_to_string(dir.path().join("l.bic.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 8);
    assert!(csv.starts_with("k,bic,aic,mean_log_likelihood"));
    let png = std::fs::read(dir.path().join("l.bic.png")).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");
    // Each blob is one cluster.
    let l = labels(&out);
    for i in 4..400 {
        assert_eq!(l[i], l[i % 4]);
    }
}

/// `--precision f32` fits nearly the same model as f64.
#[test]
fn f32_is_close_to_f64() {
    let pts = sgtsne::demo::points().unwrap();
    let params = GmmParams {
        k: 10,
        covariance: CovarianceType::Diag,
        ..GmmParams::default()
    };
    let a = gmm::fit(
        &Samples::<f64>::from_points(&pts).unwrap(),
        &params,
        &Silent,
    )
    .unwrap();
    let b = gmm::fit(
        &Samples::<f32>::from_points(&pts).unwrap(),
        &params,
        &Silent,
    )
    .unwrap();
    let rel = (a.mean_log_likelihood - b.mean_log_likelihood).abs() / a.mean_log_likelihood.abs();
    assert!(
        rel < 1e-3,
        "f64 {} f32 {}",
        a.mean_log_likelihood,
        b.mean_log_likelihood
    );
    let ari = sgtsne::quality::adjusted_rand_index(&a.labels, &b.labels);
    assert!(ari > 0.95, "{ari}");
}

/// Linearly dependent features with no floor (`reg` 0): the covariance is raised until it
/// factors, with a note, instead of an error.
#[test]
fn singular_covariance_is_floored_with_a_note() {
    let n = 200;
    let data: Vec<f32> = (0..n)
        .flat_map(|i| {
            let t = (i % 50) as f32 + if i < 100 { 0.0 } else { 500.0 };
            [t, 2.0 * t, -t]
        })
        .collect();
    let x = Samples::<f64>::from_points(&Points::new(n, 3, data)).unwrap();
    let params = GmmParams {
        k: 2,
        reg: 0.0,
        ..GmmParams::default()
    };
    let fit = gmm::fit(&x, &params, &Silent).unwrap();
    assert!(
        fit.notes
            .iter()
            .any(|n| n.contains("not positive definite")),
        "{:?}",
        fit.notes
    );
    assert!(fit.mean_log_likelihood.is_finite());
    assert_eq!(fit.sizes(), vec![100, 100]);
}

/// `embed --clusters` fits the embedding, reports the sizes and the agreement with the
/// labels, and writes the cluster labels; `--clusters-on data` fits the reduced points.
#[test]
fn embed_clusters_the_embedding_or_the_data() {
    let dir = tempfile::tempdir().unwrap();
    for on in ["embedding", "data"] {
        let report = dir.path().join(format!("{on}.json"));
        let out = dir.path().join(format!("{on}.npy"));
        let plot = dir.path().join(format!("{on}.png"));
        let err = run_ok(&[
            "embed",
            DIGITS,
            "--labels",
            DIGIT_LABELS,
            "--backend",
            "cpu",
            "--iters",
            "300",
            "--early-exaggeration-iters",
            "100",
            "--clusters",
            "10",
            "--clusters-on",
            on,
            "--clusters-out",
            out.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
            "--plot",
            plot.to_str().unwrap(),
        ]);
        assert!(err.contains(&format!("10 clusters of the {on}")), "{err}");
        let r = json(&report);
        let c = &r["clusters"];
        assert_eq!(c["on"], on);
        let sizes: u64 = c["sizes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(sizes, 1797);
        let ari = c["adjusted_rand_index"].as_f64().unwrap();
        assert!(ari > 0.5, "{on}: ARI {ari}");
        assert_eq!(labels(&out).len(), 1797);
    }
}

/// Bad requests fail with one clear message and write nothing.
#[test]
fn gmm_refuses_bad_requests() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("l.npy");
    let o = out.to_str().unwrap();
    let small = write(&dir, "small.csv", b"1,2\n3,4\n5,6\n");
    let s = small.to_str().unwrap();
    fails_cleanly_with(
        &["gmm", s, "-k", "4", "-o", o],
        &out,
        &["4 components", "3 samples"],
    );
    fails_cleanly_with(
        &["gmm", s, "-k", "0", "-o", o],
        &out,
        &["`k`", "at least 1"],
    );
    fails_cleanly_with(
        &["gmm", s, "-k", "auto", "--k-range", "2..9", "-o", o],
        &out,
        &["9 components", "3 samples"],
    );
    fails_cleanly_with(
        &["gmm", s, "-k", "auto", "--k-range", "5..2", "-o", o],
        &out,
        &["LOW..HIGH"],
    );
    fails_cleanly_with(
        &["gmm", s, "-k", "2", "--iters", "0", "-o", o],
        &out,
        &["`iters`"],
    );
    fails_cleanly_with(
        &["gmm", s, "-k", "2", "--reg", "-1", "-o", o],
        &out,
        &["`reg`"],
    );
    let lab = write(&dir, "lab.csv", b"0\n1\n");
    let l = lab.to_str().unwrap();
    fails_cleanly_with(
        &["gmm", s, "-k", "2", "--labels", l, "-o", o],
        &out,
        &["2 labels for 3 samples"],
    );
    let clash = sgtsne(&["gmm", s, "-k", "2", "--labels", l, "-o", l]);
    assert!(!clash.status.success() && stderr(&clash).contains("is the --labels file"));
    assert_eq!(std::fs::read(&lab).unwrap(), b"0\n1\n");
    let same = sgtsne(&["gmm", s, "-k", "2", "-o", s]);
    assert!(!same.status.success() && stderr(&same).contains("is the input file"));
    assert_eq!(std::fs::read(&small).unwrap(), b"1,2\n3,4\n5,6\n");
    fails_cleanly_with(
        &["gmm", s, "-k", "2", "-o", o, "--bic-csv", "b.csv"],
        &out,
        &["-k auto only"],
    );
    let same = write(&dir, "same.csv", b"1,1\n1,1\n1,1\n2,2\n");
    fails_cleanly_with(
        &["gmm", same.to_str().unwrap(), "-k", "3", "-o", o],
        &out,
        &["only 2 distinct points", "lower -k"],
    );
    let nan = write(&dir, "nan.csv", b"1,2\n3,nan\n5,6\n");
    let o2 = sgtsne(&["gmm", nan.to_str().unwrap(), "-k", "2", "-o", o]);
    assert!(!o2.status.success() && !out.exists());
    assert!(
        stderr(&o2).contains("line 2") || stderr(&o2).contains("row 1"),
        "{}",
        stderr(&o2)
    );
}

/// scikit-learn's GaussianMixture, started from our initial model, follows the same
/// log-likelihood within 1e-8 relative at every iteration and ends with the same labels
/// (scripts/gmm/sklearn_check.py), for each covariance type. Needs a Python with
/// scikit-learn: `SGTSNE_SKLEARN_PYTHON`, else `python3`; skipped without one unless
/// `SGTSNE_REQUIRE_SKLEARN=1` (as `.ci/run` sets).
#[test]
fn gmm_matches_scikit_learn_on_the_digits() {
    let python = std::env::var("SGTSNE_SKLEARN_PYTHON").unwrap_or_else(|_| "python3".into());
    let has = std::process::Command::new(&python)
        .args(["-c", "import sklearn"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        assert!(
            std::env::var_os("SGTSNE_REQUIRE_SKLEARN").is_none_or(|v| v != "1"),
            "no Python with scikit-learn ({python}), and SGTSNE_REQUIRE_SKLEARN=1 requires one"
        );
        eprintln!("skipped: no Python with scikit-learn ({python})");
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/gmm/sklearn_check.py");
    for cov in ["full", "diag", "spherical"] {
        let o = std::process::Command::new(&python)
            .args([
                script,
                env!("CARGO_BIN_EXE_sgtsne"),
                DIGITS,
                "10",
                "--iters",
                "25",
            ])
            .args(["--covariance", cov])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{cov}: {text}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(text.contains("PASS"), "{text}");
    }
}
