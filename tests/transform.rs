use std::path::{Path, PathBuf};

use sgtsne::transform::{Model, MAGIC};

use crate::cli::{csv_rows, fails_cleanly_with, sgtsne, stderr, write};

/// `embed --demo --save-model` into `dir`: the model's path and the reference embedding.
fn demo_model(dir: &Path) -> (PathBuf, Vec<f32>) {
    let model = dir.join("ref.sgtsne");
    let out = dir.join("ref.npy");
    let o = sgtsne(&[
        "embed",
        "--demo",
        "--backend",
        "cpu",
        "--iters",
        "300",
        "--early-exaggeration-iters",
        "100",
        "-q",
        "-o",
        out.to_str().unwrap(),
        "--save-model",
        model.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    (
        model,
        sgtsne::io::read_points(&out).unwrap().data.into_vec(),
    )
}

/// The first `n` demo points as a CSV (their 64 features, integers).
fn demo_csv(dir: &Path, n: usize) -> PathBuf {
    let pts = sgtsne::demo::points().unwrap();
    let text: String = (0..n)
        .map(|i| {
            let row: Vec<String> = pts.row(i).iter().map(|v| v.to_string()).collect();
            row.join(",") + "\n"
        })
        .collect();
    let p = dir.join("new.csv");
    std::fs::write(&p, text).unwrap();
    p
}

/// The model holds what the run had (64 features reduced by PCA to 50, the embedding in
/// input order) and survives a save and load unchanged.
#[test]
fn model_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let (path, y) = demo_model(dir.path());
    let m = Model::load(&path).unwrap();
    assert_eq!((m.n, m.d_in, m.d, m.dims), (1797, 64, 50, 2));
    assert_eq!(m.y, y);
    assert_eq!(m.perplexity, 30.0);
    let pca = m.pca.as_ref().expect("PCA ran on 64 features");
    assert_eq!((pca.d, pca.m), (64, 50));
    let again = dir.path().join("again.sgtsne");
    m.save(&again).unwrap();
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(&path).unwrap()
    );
    assert_eq!(&std::fs::read(&path).unwrap()[..8], MAGIC);
}

/// New points equal to reference points land near those points: within a few percent of
/// the map's extent, and among their own point's nearest in the map.
#[test]
fn reference_points_land_near_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let (model, y) = demo_model(dir.path());
    let n = 300;
    let new = demo_csv(dir.path(), n);
    let out = dir.path().join("new.npy");
    let o = sgtsne(&[
        "transform",
        model.to_str().unwrap(),
        new.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let placed = sgtsne::io::read_points(&out).unwrap();
    assert_eq!((placed.n, placed.d), (n, 2));
    let extent = (0..2)
        .map(|a| {
            let axis = y.iter().skip(a).step_by(2);
            let hi = axis.clone().fold(f32::MIN, |m, &v| m.max(v));
            let lo = axis.fold(f32::MAX, |m, &v| m.min(v));
            hi - lo
        })
        .fold(0f32, f32::max);
    let mut dist: Vec<f32> = (0..n)
        .map(|i| {
            let (a, b) = (placed.row(i), &y[2 * i..2 * i + 2]);
            ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt()
        })
        .collect();
    dist.sort_by(f32::total_cmp);
    let median = dist[n / 2];
    assert!(median < 0.03 * extent, "median {median}, extent {extent}");
}

/// Bad models and bad new points: one message naming the file or both feature counts, no
/// panic, nothing written.
#[test]
fn bad_inputs_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let (model, _) = demo_model(dir.path());
    let bytes = std::fs::read(&model).unwrap();
    let outdir = tempfile::tempdir().unwrap();
    let out = outdir.path().join("new.npy");
    let new = demo_csv(dir.path(), 20);
    let run = |model: &Path, points: &Path, needles: &[&str]| {
        fails_cleanly_with(
            &[
                "transform",
                model.to_str().unwrap(),
                points.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
                "-q",
            ],
            &out,
            needles,
        );
    };
    // Three features where the reference had 64.
    let narrow = write(&dir, "narrow.csv", csv_rows(10).as_bytes());
    run(&model, &narrow, &["3 features", "64"]);
    // Truncated.
    let cut = write(&dir, "cut.sgtsne", &bytes[..bytes.len() / 2]);
    run(&cut, &new, &["cut.sgtsne", "truncated"]);
    let header_only = write(&dir, "header.sgtsne", &bytes[..10]);
    run(&header_only, &new, &["header.sgtsne", "truncated"]);
    // Another version.
    let mut other = bytes.clone();
    other[8..12].copy_from_slice(&99u32.to_le_bytes());
    let other = write(&dir, "v99.sgtsne", &other);
    run(&other, &new, &["v99.sgtsne", "version 99"]);
    // Not a model at all.
    let foreign = write(&dir, "foreign.sgtsne", b"1,2,3\n4,5,6\n");
    run(&foreign, &new, &["foreign.sgtsne", "not an sgtsne model"]);
    // Trailing bytes.
    let mut long = bytes.clone();
    long.extend_from_slice(b"extra");
    let long = write(&dir, "long.sgtsne", &long);
    run(&long, &new, &["long.sgtsne", "5 bytes follow"]);
    // Missing.
    run(
        &dir.path().join("missing.sgtsne"),
        &new,
        &["missing.sgtsne", "no such file"],
    );
    // `--backend gpu` places the points on a GPU where there is one, and without one
    // fails with the probe's reason and writes nothing.
    let args = [
        "transform",
        model.to_str().unwrap(),
        new.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--backend",
        "gpu",
    ];
    let o = sgtsne(&args);
    if o.status.success() {
        assert!(stderr(&o).contains("on the gpu"), "{}", stderr(&o));
        assert!(out.exists());
    } else {
        fails_cleanly_with(&args, &out, &["GPU"]);
    }
}

/// A model of input that has no reference points to keep is refused before the work.
#[test]
fn save_model_needs_points() {
    let dir = tempfile::tempdir().unwrap();
    let graph = write(
        &dir,
        "g.mtx",
        b"%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1.0\n2 3 1.0\n",
    );
    let model = dir.path().join("m.sgtsne");
    fails_cleanly_with(
        &[
            "embed",
            "--graph",
            graph.to_str().unwrap(),
            "--save-model",
            model.to_str().unwrap(),
            "-q",
        ],
        &model,
        &["save-model", "dense points"],
    );
}
