use std::process::{Command, Output};

fn sgtsne(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sgtsne"))
        .args(args)
        .output()
        .expect("the sgtsne binary runs")
}

const TINY: &str = r#"
name = "tiny"
dims = 2
backend = "cpu"
perplexity = 10

[data]
gen = { n = 3000, dim = 10, clusters = 5 }
n = [800, 1600]

[grid]
fixed = [16, 32, 64]

[optimise]
iters = 300
exaggeration_iters = 100
sample_every = 100

[measure]
targets = 300
repeats = 1
"#;

/// A tiny sweep (two n, three grid sizes, two samples each): the CSV has one row per
/// (n, grid, iteration) and, at each n, the mean error falls as the grid grows.
#[test]
fn tiny_sweep_writes_csv_and_heat_maps_and_error_falls_with_the_grid() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tiny.toml");
    std::fs::write(&config, TINY).unwrap();
    let out = dir.path().join("out");
    let run = sgtsne(&[
        "sweep",
        "--config",
        config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--threads",
        "2",
    ]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert!(
        err.contains("n 1600 · run 64 · iteration 300"),
        "no progress lines: {err}"
    );
    let csv = std::fs::read_to_string(out.join("tiny.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    assert_eq!(rows.len(), 2 * 3 * 2, "{csv}");
    assert!(rows.iter().all(|r| r.len() == header.len()));
    for n in ["800", "1600"] {
        let mean_error = |grid: &str| {
            let e: Vec<f64> = rows
                .iter()
                .filter(|r| r[col("n")] == n && r[col("grid")] == grid)
                .map(|r| r[col("force_error")].parse().unwrap())
                .collect();
            assert_eq!(e.len(), 2, "n {n}, grid {grid}");
            e.iter().sum::<f64>() / 2.0
        };
        let errors = [mean_error("16"), mean_error("32"), mean_error("64")];
        assert!(
            errors[0] > errors[1] && errors[1] > errors[2],
            "n {n}: {errors:?}"
        );
    }
    let iterations: Vec<&str> = rows.iter().map(|r| r[col("iteration")].as_str()).collect();
    assert!(iterations.iter().all(|i| *i == "200" || *i == "300"));
    for png in ["error", "time", "s2g", "g2g"] {
        let bytes = std::fs::read(out.join(format!("tiny-{png}.png"))).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    }
    assert!(out.join("tiny-fit.json").exists());
    // Nothing else: no temporary files left behind.
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 6);
}

/// A bad configuration fails before any work, naming the file and the key.
#[test]
fn bad_config_names_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for (edit, key) in [
        (
            ("sample_every = 100", "sample_every = 500"),
            "optimise.sample_every",
        ),
        (
            ("fixed = [16, 32, 64]", "fixed = [16, 32, 64, 5000]"),
            "grid.fixed",
        ),
        (("targets = 300", "targets = 300\nrepeat = 2"), "repeat"),
    ] {
        let config = dir.path().join("bad.toml");
        std::fs::write(&config, TINY.replace(edit.0, edit.1)).unwrap();
        let run = sgtsne(&["sweep", "--config", config.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success());
        assert!(
            err.contains("bad.toml") && err.contains(key) && !err.contains("panicked"),
            "{key}: {err}"
        );
    }
}
