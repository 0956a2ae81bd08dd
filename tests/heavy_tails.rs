use crate::cli::{embed_report, fails_cleanly_with, sgtsne, stderr};

/// `--dof`: α = 1 is the default run bit for bit; α = 0.5 spreads the same data further
/// (heavier tails push clusters apart), and the report holds α; bad α is refused with the
/// parameter named. (The gpu and hybrid backends against the cpu's, α = 0.5 included:
/// `backend::hybrid::tests::embed_gpu_hybrid_cpu_agree`.)
#[test]
fn dof_changes_the_kernel_on_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let mut args = vec![
            "embed",
            "--demo",
            "--iters",
            "300",
            "--early-exaggeration-iters",
            "100",
            "-q",
        ];
        args.extend(extra);
        embed_report(dir.path(), name, &args)
    };
    let (base, _) = run("base", &["--backend", "cpu"]);
    let (one, _) = run("one", &["--backend", "cpu", "--dof", "1"]);
    assert_eq!(base, one);
    let (heavy, r) = run("heavy", &["--backend", "cpu", "--dof", "0.5"]);
    assert_eq!(r["params"]["kernel"]["dof"], 0.5);
    // Heavier tails tighten each digit's cluster against the spread of the whole map:
    // the share of the variance within classes falls.
    let codes = sgtsne::demo::labels().unwrap().codes;
    let within = |y: &[f32]| -> f64 {
        let n = codes.len();
        let classes = *codes.iter().max().unwrap() as usize + 1;
        let mut sum = vec![[0f64; 3]; classes + 1];
        for (i, &c) in codes.iter().enumerate() {
            for (slot, entry) in [(c as usize, 1.0), (classes, 1.0)] {
                sum[slot][0] += entry * y[2 * i] as f64;
                sum[slot][1] += entry * y[2 * i + 1] as f64;
                sum[slot][2] += entry;
            }
        }
        let var = |slot: usize, i: usize| -> f64 {
            (0..2)
                .map(|a| (y[2 * i + a] as f64 - sum[slot][a] / sum[slot][2]).powi(2))
                .sum()
        };
        let w: f64 = (0..n).map(|i| var(codes[i] as usize, i)).sum();
        let t: f64 = (0..n).map(|i| var(classes, i)).sum();
        w / t
    };
    let (wh, wb) = (within(&heavy), within(&base));
    assert!(wh < 0.9 * wb, "within-class share {wh} vs {wb}");
    assert!(r["quality"]["knn_preservation_10"].as_f64().unwrap() > 0.3);

    // `kl --dof 0.5` scores the heavy-tailed map on its own kernel, as the run did.
    let points = dir.path().join("digits.npy");
    let demo = sgtsne::demo::points().unwrap();
    sgtsne::io::write_embedding(&points, &demo.data, demo.d).unwrap();
    let heavy_path = dir.path().join("heavy.npy");
    let k = sgtsne(&[
        "kl",
        points.to_str().unwrap(),
        heavy_path.to_str().unwrap(),
        "--dof",
        "0.5",
    ]);
    assert!(k.status.success(), "{}", stderr(&k));
    let scored: f64 = String::from_utf8_lossy(&k.stdout).trim().parse().unwrap();
    let own = r["optimise"]["final_kl"].as_f64().unwrap();
    assert!((scored - own).abs() < 2e-3 * own, "{scored} vs {own}");

    let out = dir.path().join("bad.npy");
    let o = out.to_str().unwrap();
    for (extra, needles) in [
        (vec!["--dof", "0"], vec!["dof", "positive"]),
        (vec!["--dof", "-1"], vec!["dof", "-1"]),
        (vec!["--dof", "NaN"], vec!["dof", "NaN"]),
    ] {
        let mut args = vec!["embed", "--demo", "-q", "-o", o];
        args.extend(extra);
        fails_cleanly_with(&args, &out, &needles);
    }
}
