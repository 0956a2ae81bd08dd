use crate::cli::{embed_report, fails_cleanly_with};

/// `--near-field on` in 3-D on the cpu backend (a fixed grid: the near field everywhere)
/// times its sums in the report and changes the forces, not the picture's quality; `off`
/// and the cpu default (no near field) agree bit for bit; a heavy-tailed kernel is refused
/// with the parameter named. (The GPU's near field against the host's:
/// `repulse::fft::gpu::tests::gpu_near_field_equals_cpu_and_mends_a_coarse_grid`.)
#[test]
fn near_field_on_the_cpu_in_3d() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let mut args = vec![
            "embed",
            "--demo",
            "--dims",
            "3",
            "--backend",
            "cpu",
            "--grid",
            "24",
            "--iters",
            "300",
            "-q",
        ];
        args.extend(extra);
        embed_report(dir.path(), name, &args)
    };
    let (plain, r_plain) = run("plain", &[]);
    let (off, _) = run("off", &["--near-field", "off"]);
    assert_eq!(plain, off);
    let (near, r_near) = run("near", &["--near-field", "on"]);
    assert_ne!(plain, near);
    let seconds = |r: &serde_json::Value| r["optimise"]["repulse_split"]["near"].as_f64().unwrap();
    assert_eq!(seconds(&r_plain), 0.0);
    assert!(seconds(&r_near) > 0.0);
    let acc = |r: &serde_json::Value| r["quality"]["knn_accuracy_10"].as_f64().unwrap();
    assert!(
        acc(&r_near) > acc(&r_plain) - 0.02,
        "{} against {}",
        acc(&r_near),
        acc(&r_plain)
    );
    let out = dir.path().join("heavy.npy");
    fails_cleanly_with(
        &[
            "embed",
            "--demo",
            "--dims",
            "3",
            "--near-field",
            "on",
            "--dof",
            "0.5",
            "-q",
            "-o",
            out.to_str().unwrap(),
        ],
        &out,
        &["near-field", "--dof 0.5"],
    );
}

/// `--iters auto` in 2-D holds the adaptive grid to 4 nodes a point on the host with the
/// near field on (the demo's 1,797 points: 7,188 nodes, 81² on its ladder), and the picture keeps
/// its quality; `--near-field off` keeps the grid as it was, with no budget, and a fixed
/// count has none either. A budget given is used as it is.
#[test]
fn auto_iters_holds_the_grid_to_a_budget() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let mut args = vec!["embed", "--demo", "--backend", "cpu", "-q"];
        args.extend(extra);
        embed_report(dir.path(), name, &args)
    };
    let budget = |r: &serde_json::Value| r["params"]["grid_max_nodes"].as_u64();
    let grid = |r: &serde_json::Value| r["optimise"]["final_grid"].as_u64().unwrap();
    let near = |r: &serde_json::Value| r["optimise"]["repulse_split"]["near"].as_f64().unwrap();
    let acc = |r: &serde_json::Value| r["quality"]["knn_accuracy_10"].as_f64().unwrap();
    let (_, held) = run("held", &["--iters", "auto", "--iters-cap", "600"]);
    assert_eq!(budget(&held), Some(4 * 1797));
    assert_eq!(held["params"]["near_field"], true);
    assert!(grid(&held).pow(2) <= 4 * 1797, "grid {}", grid(&held));
    assert!(near(&held) > 0.0);
    let (_, free) = run(
        "free",
        &[
            "--iters",
            "auto",
            "--iters-cap",
            "600",
            "--near-field",
            "off",
        ],
    );
    assert_eq!(budget(&free), None);
    assert!(grid(&free) > grid(&held));
    assert_eq!(near(&free), 0.0);
    assert!(
        acc(&held) > acc(&free) - 0.01,
        "{} against {}",
        acc(&held),
        acc(&free)
    );
    let (_, fixed) = run("fixed", &["--iters", "300"]);
    assert_eq!(budget(&fixed), None);
    assert_eq!(fixed["params"]["near_field"], false);
    let (_, given) = run("given", &["--iters", "300", "--grid-max-nodes", "3000"]);
    assert_eq!(budget(&given), Some(3000));
    assert!(grid(&given).pow(2) <= 3000, "grid {}", grid(&given));
}
