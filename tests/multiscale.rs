use crate::cli::{backends, fails_cleanly_with, sgtsne, stderr};

fn demo_report(extra: &[&str]) -> (serde_json::Value, String) {
    demo_report_on("cpu", extra)
}

fn demo_report_on(backend: &str, extra: &[&str]) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let mut args = vec![
        "embed",
        "--demo",
        "--backend",
        backend,
        "--iters",
        "200",
        "--early-exaggeration-iters",
        "80",
        "--report",
        report.to_str().unwrap(),
    ];
    args.extend(extra);
    let out = sgtsne(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    (r, stderr(&out))
}

/// `--perplexity 10,40` calibrates at both scales over k = 120 neighbours and says so in the
/// report, on every backend the machine has; the order given does not matter.
#[test]
fn multiscale_perplexity_runs_and_is_reported() {
    for backend in backends().into_iter().map(|b| b.name()) {
        let (r, _) = demo_report_on(backend, &["--perplexity", "40,10"]);
        assert_eq!(r["backend"]["kind"], backend);
        assert_eq!(r["params"]["multiscale"], serde_json::json!([10.0, 40.0]));
        assert_eq!(r["params"]["perplexity"], 40.0);
        assert_eq!(r["knn"]["k"], 120);
        assert!(
            r["quality"]["knn_accuracy_10"].as_f64().unwrap() > 0.9,
            "{backend}"
        );
        let (single, _) = demo_report_on(backend, &["--perplexity", "40"]);
        assert_eq!(single["params"]["multiscale"], serde_json::json!([]));
        assert_ne!(r["optimise"]["final_kl"], single["optimise"]["final_kl"]);
    }
}

/// `--max-neighbors` caps k with a note; a cap at or below the perplexity is refused.
#[test]
fn max_neighbors_caps_k_with_a_note() {
    let (r, err) = demo_report(&["--perplexity", "30", "--max-neighbors", "50"]);
    assert_eq!(r["knn"]["k"], 50);
    assert!(err.contains("note: k capped at 50"), "{err}");
    assert_eq!(r["notes"].as_array().unwrap().len(), 1);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("y.npy");
    let o = out.to_str().unwrap();
    for (extra, needles) in [
        (
            vec!["--max-neighbors", "30"],
            vec!["max-neighbors", "cannot carry perplexity 30"],
        ),
        (
            vec!["--perplexity", "30,0.5"],
            vec!["`perplexity`", "at least 1", "0.5"],
        ),
        (vec!["--perplexity", "30,,300"], vec!["is not a number"]),
        (
            vec!["--perplexity", "-4"],
            vec!["`perplexity`", "at least 1", "-4"],
        ),
    ] {
        let mut args = vec!["embed", "--demo", "-o", o, "-q"];
        args.extend(extra);
        fails_cleanly_with(&args, &out, &needles);
    }
}
