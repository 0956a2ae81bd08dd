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
