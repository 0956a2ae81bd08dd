use crate::cli::{backends, sgtsne, stderr};

/// `--deterministic`: two runs with one seed give the same embedding bit for bit, and the
/// same KL, on every backend the machine has (on the cpu backend every run does; on gpu and
/// hybrid the device sums its forces in fixed point), with the approximate kNN as well as
/// the exact one; the report says the flag was on.
#[test]
fn deterministic_runs_repeat_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    for backend in backends() {
        for knn in ["exact", "approx"] {
            let run = |name: &str| -> (Vec<u32>, serde_json::Value) {
                let out = dir.path().join(format!("{name}.npy"));
                let report = dir.path().join(format!("{name}.json"));
                let o = sgtsne(&[
                    "embed",
                    "--demo",
                    "--iters",
                    "300",
                    "--deterministic",
                    "--backend",
                    backend.name(),
                    "--knn",
                    knn,
                    "-q",
                    "-o",
                    out.to_str().unwrap(),
                    "--report",
                    report.to_str().unwrap(),
                ]);
                assert!(o.status.success(), "{}", stderr(&o));
                let y = sgtsne::io::read_points(&out).unwrap().data;
                let r = std::fs::read_to_string(&report).unwrap();
                (
                    y.iter().map(|v| v.to_bits()).collect(),
                    serde_json::from_str(&r).unwrap(),
                )
            };
            let (a, ra) = run("a");
            let (b, rb) = run("b");
            let what = format!("{} with the {knn} kNN", backend.name());
            assert!(a == b, "{what}: the embeddings differ");
            assert_eq!(
                ra["optimise"]["final_kl"], rb["optimise"]["final_kl"],
                "{what}"
            );
            assert_eq!(ra["params"]["optim"]["deterministic"], true, "{what}");
        }
    }
}
