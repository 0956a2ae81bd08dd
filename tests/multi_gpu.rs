use std::path::Path;

use crate::cli::{fails_cleanly_env, sgtsne, sgtsne_env, stderr};

/// Whether the host shows at least `want` GPUs; below that the test is skipped with a note,
/// unless `SGTSNE_REQUIRE_GPUS` asks for as many (then it fails, so that a run on a
/// multi-GPU host cannot pass by skipping).
fn gpus_at_least(want: usize) -> bool {
    let have = sgtsne::gpu::device_count().unwrap_or(0);
    if have >= want {
        return true;
    }
    let required: usize = std::env::var("SGTSNE_REQUIRE_GPUS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!(
        required < want,
        "SGTSNE_REQUIRE_GPUS={required}, but the host shows {have} GPUs"
    );
    eprintln!("skipped: needs {want} GPUs, the host shows {have}");
    false
}

/// 200,000 points of a 50-dimensional mixture and a random initial layout, in `dir`.
fn inputs(dir: &Path) -> (String, String) {
    let points = dir.join("points.npy");
    let o = sgtsne(&[
        "gen",
        "--n",
        "200000",
        "--dim",
        "50",
        "-q",
        "-o",
        points.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut state = 12345u64;
    let y0: Vec<f32> = (0..200_000 * 2)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 1e-2
        })
        .collect();
    let init = dir.join("y0.npy");
    sgtsne::io::write_embedding(&init, &y0, 2).unwrap();
    (
        points.to_str().unwrap().to_string(),
        init.to_str().unwrap().to_string(),
    )
}

/// `embed` of `points` from `init` on `gpus` GPUs for `iters` steps, deterministic (so
/// that P, made on the first GPU, is the same in every run): the embedding and the report.
fn run(dir: &Path, points: &str, init: &str, gpus: usize, iters: usize) -> (Vec<f32>, f64) {
    let out = dir.join(format!("y_{gpus}_{iters}.npy"));
    let report = dir.join(format!("r_{gpus}_{iters}.json"));
    let (g, it) = (gpus.to_string(), iters.to_string());
    let o = sgtsne_env(
        &[
            "embed",
            points,
            "--backend",
            "gpu",
            "--gpus",
            &g,
            "--iters",
            &it,
            "--init",
            init,
            "--deterministic",
            "-q",
            "-o",
            out.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ],
        &[("NCCL_NVLS_ENABLE", "0")],
    );
    assert!(o.status.success(), "{gpus} GPUs: {}", stderr(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["params"]["gpus"], gpus, "the report's GPUs");
    match gpus {
        1 => assert!(r["optimise"].get("per_gpu").is_none()),
        _ => assert_eq!(r["optimise"]["per_gpu"].as_array().unwrap().len(), gpus),
    }
    let y = sgtsne::io::read_points(&out).unwrap().data.into_vec();
    (y, r["optimise"]["final_kl"].as_f64().unwrap())
}

/// Two GPUs against one on 200,000 points: the first step (the gradient, scaled by the
/// learning rate) equal within float rounding, and after the whole run the KL within
/// 0.5 % (the grids' float sums differ in order, and the descent carries that on).
#[test]
fn two_gpus_follow_one() {
    if !gpus_at_least(2) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (points, init) = inputs(dir.path());
    let y0 = sgtsne::io::read_points(Path::new(&init))
        .unwrap()
        .data
        .into_vec();
    let (one, _) = run(dir.path(), &points, &init, 1, 1);
    let (two, _) = run(dir.path(), &points, &init, 2, 1);
    let step = |y: &[f32]| -> Vec<f32> { y.iter().zip(&y0).map(|(a, b)| a - b).collect() };
    let e = sgtsne::repulse::relative_error(&step(&one), &step(&two));
    eprintln!("first step on 2 GPUs against 1: relative difference {e:.3e}");
    assert!(e < 1e-4, "first step: relative difference {e}");
    let (_, kl1) = run(dir.path(), &points, &init, 1, 1000);
    let (_, kl2) = run(dir.path(), &points, &init, 2, 1000);
    eprintln!("KL after 1000 iterations: {kl1} on 1 GPU, {kl2} on 2");
    assert!(
        (kl1 - kl2).abs() <= 5e-3 * kl1,
        "KL on 1 GPU {kl1}, on 2 GPUs {kl2}"
    );
}

/// More GPUs than the host shows, one GPU short of memory, and NCCL missing: each ends the
/// run with one message, nothing written, no hang.
#[test]
fn multi_gpu_faults_end_cleanly() {
    if !gpus_at_least(2) {
        return;
    }
    let have = sgtsne::gpu::device_count().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (points, _) = inputs(dir.path());
    let out = dir.path().join("out.npy");
    let args = |gpus: &str| {
        [
            "embed",
            points.as_str(),
            "--backend",
            "gpu",
            "--gpus",
            gpus,
            "--iters",
            "50",
            "-q",
            "-o",
            out.to_str().unwrap(),
        ]
        .map(str::to_string)
    };
    let too_many = (have + 1).to_string();
    let a = args(&too_many);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let shows = format!("this host shows {have}");
    fails_cleanly_env(&a, &[], &out, &["--gpus", &shows]);

    // GPU 1 keeps 40 MB: its block of P, which the affinity stage moves there, does not fit.
    let a = args("2");
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let start = std::time::Instant::now();
    fails_cleanly_env(
        &a,
        &[
            ("SGTSNE_GPU_MEMORY_LIMIT", "1:40000000"),
            ("NCCL_NVLS_ENABLE", "0"),
        ],
        &out,
        &["out of GPU memory during affinities", "GPU 1's block of P"],
    );
    assert!(
        start.elapsed().as_secs() < 120,
        "the failure took {:?}",
        start.elapsed()
    );

    // The library path without the directories that hold NCCL.
    let path = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let kept: Vec<&str> = path
        .split(':')
        .filter(|d| !Path::new(d).join("libnccl.so").exists())
        .collect();
    let o = sgtsne_env(&a, &[("LD_LIBRARY_PATH", &kept.join(":"))]);
    eprintln!("NCCL hidden: exit {:?}", o.status.code());
    if o.status.success() {
        eprintln!("NCCL is found outside LD_LIBRARY_PATH here: its absence is not tried");
        std::fs::remove_file(&out).unwrap();
    } else {
        fails_cleanly_env(
            &a,
            &[("LD_LIBRARY_PATH", &kept.join(":"))],
            &out,
            &["NCCL (libnccl.so) not found", "--gpus 1"],
        );
    }
}

/// `--gpus` with a backend that does not use it, and zero GPUs, are refused by name.
#[test]
fn gpus_flag_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.npy");
    let o = out.to_str().unwrap();
    for backend in ["cpu", "hybrid"] {
        fails_cleanly_env(
            &[
                "embed",
                "--demo",
                "--backend",
                backend,
                "--gpus",
                "2",
                "-o",
                o,
            ],
            &[],
            &out,
            &["--gpus applies to --backend gpu"],
        );
    }
    let (points, _) = inputs(dir.path());
    let lists = dir.path().join("knn.npz");
    fails_cleanly_env(
        &[
            "knn",
            &points,
            "-k",
            "10",
            "--backend",
            "cpu",
            "--gpus",
            "2",
            "-o",
            lists.to_str().unwrap(),
        ],
        &[],
        &lists,
        &["--gpus applies to --backend gpu"],
    );
    // No GPU at all is not "one": refused by the flag's name with or without a GPU, on
    // any backend.
    for backend in ["auto", "gpu", "cpu"] {
        fails_cleanly_env(
            &[
                "embed",
                "--demo",
                "--backend",
                backend,
                "--gpus",
                "0",
                "-o",
                o,
            ],
            &[],
            &out,
            &["--gpus", "must be at least 1"],
        );
    }
    fails_cleanly_env(
        &[
            "knn",
            &points,
            "-k",
            "10",
            "--gpus",
            "0",
            "-o",
            lists.to_str().unwrap(),
        ],
        &[],
        &lists,
        &["--gpus", "must be at least 1"],
    );
}

/// `sgtsne knn --gpus 2` finds the neighbours `--gpus 1` finds (the approximate sweep and
/// refinement, made to run whatever the sweep's recall, split over the GPUs give the one-GPU
/// graph exactly).
#[test]
fn knn_over_two_gpus_equals_one() {
    if !gpus_at_least(2) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (points, _) = inputs(dir.path());
    let lists = |gpus: &str| {
        let out = dir.path().join(format!("knn{gpus}.npz"));
        let o = sgtsne_env(
            &[
                "knn",
                &points,
                "-k",
                "30",
                "--knn",
                "approx",
                "--knn-refine-below",
                "2",
                "--backend",
                "gpu",
                "--gpus",
                gpus,
                "-q",
                "-o",
                out.to_str().unwrap(),
            ],
            &[("NCCL_NVLS_ENABLE", "0")],
        );
        assert!(o.status.success(), "{gpus} GPUs: {}", stderr(&o));
        sgtsne::io::read_neighbors(&out, 200_000).unwrap()
    };
    let (one, two) = (lists("1"), lists("2"));
    assert_eq!(one.indices, two.indices);
    assert_eq!(one.distances, two.distances);
}
