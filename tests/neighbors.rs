use std::path::{Path, PathBuf};

use sgtsne::io::{read_neighbors, write_neighbors, IndexType};

use crate::cli::{backends, fails_cleanly_with, sgtsne, stderr};

/// A short run of a few hundred points.
const SHORT: [&str; 5] = ["--iters", "150", "--early-exaggeration-iters", "60", "-q"];

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `sgtsne gen` points: n × d, seeded.
fn points(dir: &Path, n: usize, d: usize) -> PathBuf {
    let path = dir.join(format!("points_{n}_{d}.npy"));
    let out = sgtsne(&[
        "gen",
        "--n",
        &n.to_string(),
        "--dim",
        &d.to_string(),
        "--clusters",
        "6",
        "-q",
        "-o",
        s(&path),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    path
}

/// An array as an .npy file.
fn write_npy<T: npyz::AutoSerialize + npyz::Serialize + Copy>(path: &Path, shape: &[u64], v: &[T]) {
    use npyz::WriterBuilder;
    let file = std::fs::File::create(path).unwrap();
    let mut w = npyz::WriteOptions::<T>::new()
        .default_dtype()
        .shape(shape)
        .writer(file)
        .begin_nd()
        .unwrap();
    w.extend(v.iter().copied()).unwrap();
    w.finish().unwrap();
}

fn run_ok(args: &[&str]) -> String {
    let out = sgtsne(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stderr(&out)
}

/// `embed --knn-from` on the output of `sgtsne knn` builds the same P as the run that
/// searched inline, so the embeddings are equal bit for bit on the CPU: for the exact and
/// the approximate kNN, in the locality order the cpu backend renumbers points by.
#[test]
fn knn_from_our_own_knn_equals_the_inline_search() {
    let dir = tempfile::tempdir().unwrap();
    let x = points(dir.path(), 700, 60);
    for method in ["exact", "approx"] {
        let knn = dir.path().join(format!("{method}.npz"));
        let err = run_ok(&[
            "knn",
            s(&x),
            "-k",
            "45",
            "--knn",
            method,
            "--backend",
            "cpu",
            "-o",
            s(&knn),
        ]);
        if method == "approx" {
            assert!(err.contains("recall"), "{err}");
        }
        let inline = dir.path().join("inline.npy");
        let given = dir.path().join("given.npy");
        let common = ["--backend", "cpu", "--perplexity", "15", "--knn", method];
        let mut a = vec!["embed", s(&x), "-o", s(&inline)];
        a.extend(common);
        a.extend(SHORT);
        run_ok(&a);
        let mut b = vec!["embed", s(&x), "-o", s(&given), "--knn-from", s(&knn)];
        b.extend(common);
        b.extend(SHORT);
        run_ok(&b);
        assert_eq!(
            std::fs::read(&inline).unwrap(),
            std::fs::read(&given).unwrap(),
            "{method}"
        );
    }
}

/// On the gpu backend `embed --knn-from` makes P on the device from the neighbours given, as
/// after its own search: the same run as the inline search's but for the bisection's
/// rounding (the file's distances are in the input's units, the search's a power of two
/// apart), so the final KL agrees closely. Skipped without a GPU.
#[test]
fn knn_from_on_the_gpu_matches_the_inline_search() {
    if !backends().contains(&sgtsne::backend::BackendKind::Gpu) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let x = points(dir.path(), 700, 60);
    let knn = dir.path().join("exact.npz");
    let gpu = ["--backend", "gpu", "--knn", "exact"];
    let mut a = vec!["knn", s(&x), "-k", "45", "-o", s(&knn)];
    a.extend(gpu);
    run_ok(&a);
    // The same numbering both ways (with neighbours given the default is a PCA tree's).
    let order = ["--order", "input"];
    let kl = |given: bool| {
        let (out, report) = (dir.path().join("y.npy"), dir.path().join("r.json"));
        let mut b = vec!["embed", s(&x), "-o", s(&out), "--report", s(&report)];
        b.extend(gpu);
        b.extend(order);
        b.extend(["--perplexity", "15", "--deterministic"]);
        if given {
            b.extend(["--knn-from", s(&knn)]);
        }
        b.extend(SHORT);
        run_ok(&b);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        assert_eq!(json["knn"]["method"], if given { "given" } else { "exact" });
        json["optimise"]["final_kl"].as_f64().unwrap()
    };
    let (inline, given) = (kl(false), kl(true));
    assert!(
        ((inline - given) / inline).abs() < 1e-4,
        "KL {given} with the neighbours given against {inline} inline"
    );
}

/// Each row scaled to unit length, in f64.
fn unit_rows(p: &sgtsne::Points) -> Vec<Vec<f64>> {
    (0..p.n)
        .map(|i| {
            let row: Vec<f64> = p.row(i).iter().map(|&x| x as f64).collect();
            let norm = row.iter().map(|x| x * x).sum::<f64>().sqrt();
            row.into_iter().map(|x| x / norm).collect()
        })
        .collect()
}

/// `knn --metric cosine` finds the brute-force cosine neighbours, and writes the Euclidean
/// distances of the unit rows, √(2 · (1 − cos)).
#[test]
fn cosine_knn_equals_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let x = points(dir.path(), 300, 12);
    let knn = dir.path().join("cos.npz");
    run_ok(&[
        "knn",
        s(&x),
        "-k",
        "9",
        "--metric",
        "cosine",
        "--backend",
        "cpu",
        "-q",
        "-o",
        s(&knn),
    ]);
    let unit = unit_rows(&sgtsne::io::read_points(&x).unwrap());
    let cos =
        |i: usize, j: usize| -> f64 { unit[i].iter().zip(&unit[j]).map(|(a, b)| a * b).sum() };
    let got = read_neighbors(&knn, 300).unwrap();
    for i in 0..300 {
        let mut by_cos: Vec<(f64, usize)> = (0..300)
            .filter(|&j| j != i)
            .map(|j| (1.0 - cos(i, j), j))
            .collect();
        by_cos.sort_by(|a, b| a.0.total_cmp(&b.0));
        let row = got.indptr[i]..got.indptr[i + 1];
        let want: Vec<u32> = by_cos[..9].iter().map(|&(_, j)| j as u32).collect();
        assert_eq!(&got.indices[row.clone()], &want[..], "row {i}");
        for (&d, &(cd, _)) in got.distances[row].iter().zip(&by_cos) {
            assert!((d * d - 2.0 * cd).abs() < 1e-5, "row {i}: {d} vs {cd}");
        }
    }
}

/// Neighbours as scikit-learn's `kneighbors` leaves them, the point itself first, in a
/// pair of .npy files, give the embedding of our own .npz; scanpy's obsp['distances'] is
/// read from an .h5ad, and its 30 neighbours lower the perplexity, with a note.
#[test]
fn npy_pairs_and_scanpy_graphs_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let x = points(dir.path(), 400, 20);
    let knn = dir.path().join("k.npz");
    run_ok(&[
        "knn",
        s(&x),
        "-k",
        "30",
        "--backend",
        "cpu",
        "-q",
        "-o",
        s(&knn),
    ]);
    let lists = read_neighbors(&knn, 400).unwrap();
    let (mut idx, mut dist) = (Vec::new(), Vec::new());
    for i in 0..400 {
        idx.push(i as i64);
        dist.push(0.0);
        let row = lists.indptr[i]..lists.indptr[i + 1];
        idx.extend(lists.indices[row.clone()].iter().map(|&j| j as i64));
        dist.extend_from_slice(&lists.distances[row]);
    }
    let (ip, dp) = (dir.path().join("idx.npy"), dir.path().join("dist.npy"));
    write_npy(&ip, &[400, 31], &idx);
    write_npy(&dp, &[400, 31], &dist);
    let pair = format!("{},{}", s(&ip), s(&dp));
    let (a, b) = (dir.path().join("a.npy"), dir.path().join("b.npy"));
    for (from, out) in [(s(&knn), &a), (pair.as_str(), &b)] {
        let mut args = vec![
            "embed",
            s(&x),
            "--backend",
            "cpu",
            "--perplexity",
            "10",
            "--knn-from",
            from,
            "-o",
            s(out),
        ];
        args.extend(SHORT);
        run_ok(&args);
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());

    let h5ad = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/h5ad/dense_gzip.h5ad");
    let out = dir.path().join("h.npy");
    let err = run_ok(&[
        "embed",
        s(&h5ad),
        "--use-rep",
        "X",
        "--backend",
        "cpu",
        "--knn-from",
        s(&h5ad),
        "--iters",
        "150",
        "--early-exaggeration-iters",
        "60",
        "-o",
        s(&out),
    ]);
    assert!(
        err.contains("note:") && err.contains("30 per point") && err.contains("lowered to 10"),
        "{err}"
    );
    assert!(out.exists());
}

/// Neighbour files that do not fit the points fail with one message naming the file and
/// the place, and leave nothing behind.
#[test]
fn bad_neighbour_files_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let x = points(dir.path(), 200, 8);
    let out = dir.path().join("out.npy");
    let bad = dir.path().join("bad.npz");
    let idx: Vec<u32> = (0..200 * 5)
        .map(|t| ((t / 5 + 1 + t % 5) % 200) as u32)
        .collect();
    let dist: Vec<f64> = (0..200 * 5).map(|t| 1.0 + (t % 5) as f64).collect();
    let embed = |extra: &[&str], needles: &[&str]| {
        let mut args = vec!["embed", s(&x), "-o", s(&out), "-q", "--backend", "cpu"];
        args.extend(extra);
        fails_cleanly_with(&args, &out, needles);
    };
    write_neighbors(&bad, 150, 5, &idx[..750], &dist[..750], IndexType::I64).unwrap();
    embed(
        &["--knn-from", s(&bad)],
        &["bad.npz", "150 rows", "points are 200"],
    );
    let mut wrong = idx.clone();
    wrong[17] = 200;
    write_neighbors(&bad, 200, 5, &wrong, &dist, IndexType::U32).unwrap();
    embed(
        &["--knn-from", s(&bad)],
        &["row 4, column 3", "index 200 is out of range"],
    );
    for (v, needle) in [(-2.0, "distance -2"), (f64::NAN, "distance NaN")] {
        let mut d = dist.clone();
        d[6] = v;
        write_neighbors(&bad, 200, 5, &idx, &d, IndexType::I64).unwrap();
        embed(&["--knn-from", s(&bad)], &["row 2, column 2", needle]);
    }
    // Good neighbours, but no search to number the points by its cells.
    write_neighbors(&bad, 200, 5, &idx, &dist, IndexType::I64).unwrap();
    embed(
        &["--knn-from", s(&bad), "--order", "cells"],
        &["`cells`", "--knn-from there is none", "--order locality"],
    );
    let txt = dir.path().join("k.txt");
    std::fs::write(&txt, "0 1\n").unwrap();
    embed(&["--knn-from", s(&txt)], &["k.txt", ".npz"]);
    embed(
        &["--knn-from", s(&x)],
        &["points_200_8.npy", "unsupported extension"],
    );

    // The knn tool's own checks.
    let k_out = dir.path().join("k.npz");
    fails_cleanly_with(
        &["knn", s(&x), "-k", "2", "-o", s(&k_out)],
        &k_out,
        &["`k`", "at least 3"],
    );
    fails_cleanly_with(
        &[
            "knn",
            s(&x),
            "-k",
            "200",
            "-o",
            s(&k_out),
            "--backend",
            "cpu",
        ],
        &k_out,
        &["200 points are too few"],
    );
    let wrong_ext = dir.path().join("k.npy");
    fails_cleanly_with(
        &["knn", s(&x), "-o", s(&wrong_ext)],
        &wrong_ext,
        &["k.npy", ".npz"],
    );
}

/// A P given as .mtx is used as given: a symmetric one that sums to 1 without notes, an
/// unfinished one symmetrised and normalised with notes; with --lambda it is a graph. Bad
/// matrices fail cleanly.
#[test]
fn affinities_are_taken_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let n = 120;
    // A ring: each node linked to its two neighbours on each side.
    let mut entries = Vec::new();
    for i in 0..n {
        for step in [1, 2] {
            let j = (i + step) % n;
            entries.push((i, j));
            entries.push((j, i));
        }
    }
    let mtx = |name: &str, rows: usize, cols: usize, list: &[(usize, usize, f64)]| {
        let mut text = format!(
            "%%MatrixMarket matrix coordinate real general\n{rows} {cols} {}\n",
            list.len()
        );
        for &(i, j, v) in list {
            text += &format!("{} {} {v}\n", i + 1, j + 1);
        }
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let total = entries.len() as f64;
    let finished: Vec<_> = entries.iter().map(|&(i, j)| (i, j, 1.0 / total)).collect();
    let p = mtx("p.mtx", n, n, &finished);
    let out = dir.path().join("y.npy");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "embed",
            "--affinities",
            s(&p),
            "-o",
            s(&out),
            "--backend",
            "cpu",
            "--iters",
            "150",
            "--early-exaggeration-iters",
            "60",
        ];
        args.extend(extra);
        run_ok(&args)
    };
    let err = run(&[]);
    assert!(!err.contains("note:"), "{err}");
    let y = sgtsne::io::read_points(&out).unwrap();
    assert_eq!((y.n, y.d), (n, 2));
    let unfinished: Vec<_> = entries
        .iter()
        .filter(|&&(i, j)| i < j || (i + j) % 3 == 0)
        .map(|&(i, j)| (i, j, 2.0))
        .collect();
    std::fs::write(&p, std::fs::read(mtx("u.mtx", n, n, &unfinished)).unwrap()).unwrap();
    let err = run(&[]);
    assert!(
        err.contains("not symmetric") && err.contains("normalised to 1"),
        "{err}"
    );
    let err = run(&["--lambda", "1"]);
    assert!(!err.contains("note:"), "{err}");

    let bad_out = dir.path().join("bad.npy");
    for (file, needles) in [
        (
            mtx("wide.mtx", n, n + 1, &finished),
            vec!["square", "120 × 121"],
        ),
        (
            mtx("neg.mtx", n, n, &[(0, 1, 0.5), (1, 0, -0.5)]),
            vec!["neg.mtx", "line 4", "-0.5"],
        ),
    ] {
        fails_cleanly_with(
            &["embed", "--affinities", s(&file), "-o", s(&bad_out), "-q"],
            &bad_out,
            &needles,
        );
    }
}

/// Points too large for f32 squared distances (× 2^100) are rescaled exactly for the search,
/// and their distances written in the input's units: the same neighbours, distances × 2^100.
#[test]
fn knn_of_huge_values_is_the_scaled_knn() {
    let dir = tempfile::tempdir().unwrap();
    let x = points(dir.path(), 300, 10);
    let p = sgtsne::io::read_points(&x).unwrap();
    let scale = 2f32.powi(100);
    let big: Vec<f32> = p.data.iter().map(|&v| v * scale).collect();
    let xb = dir.path().join("big.npy");
    sgtsne::io::write_embedding(&xb, &big, 10).unwrap();
    let (k1, k2) = (dir.path().join("a.npz"), dir.path().join("b.npz"));
    for (input, out) in [(&x, &k1), (&xb, &k2)] {
        run_ok(&[
            "knn",
            s(input),
            "-k",
            "12",
            "--backend",
            "cpu",
            "-q",
            "-o",
            s(out),
        ]);
    }
    let (a, b) = (
        read_neighbors(&k1, 300).unwrap(),
        read_neighbors(&k2, 300).unwrap(),
    );
    assert_eq!(a.indices, b.indices);
    for (&da, &db) in a.distances.iter().zip(&b.distances) {
        assert_eq!(da * 2f64.powi(100), db);
    }
}

/// `--metric inner-product` on the digits (1797 × 64, pixel counts 0–16: many tied inner
/// products): `knn` finds the largest inner products and writes
/// √(2(c − x · y)), c the largest squared norm; `embed --knn-from` on that file gives the
/// inline run's embedding bit for bit; and the default run (uncentred PCA to 50) embeds the
/// digits well, its report naming the metric.
#[test]
fn inner_product_knn_and_embed_on_the_digits() {
    let dir = tempfile::tempdir().unwrap();
    let digits = sgtsne::demo::points().unwrap();
    let n = digits.n;
    let x = dir.path().join("digits.npy");
    write_npy(&x, &[n as u64, digits.d as u64], &digits.data);
    let knn = dir.path().join("ip.npz");
    let search = [
        "--metric",
        "inner-product",
        "--pca",
        "none",
        "--backend",
        "cpu",
    ];
    let mut a = vec!["knn", s(&x), "-k", "30", "-q", "-o", s(&knn)];
    a.extend(search);
    run_ok(&a);
    let dot = |i: usize, j: usize| -> f64 {
        digits
            .row(i)
            .iter()
            .zip(digits.row(j))
            .map(|(&a, &b)| a as f64 * b as f64)
            .sum()
    };
    let c = (0..n).map(|i| dot(i, i)).fold(0.0, f64::max);
    let got = read_neighbors(&knn, n).unwrap();
    for i in 0..n {
        let mut by_dot: Vec<(f64, usize)> = (0..n)
            .filter(|&j| j != i)
            .map(|j| (-dot(i, j), j))
            .collect();
        by_dot.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        // Ties fall by the search's internal numbering (a locality order), so rank by rank
        // the inner products must be the brute force's, not the indices.
        let row = got.indptr[i]..got.indptr[i + 1];
        assert_eq!(row.len(), 30);
        let mut seen = std::collections::HashSet::new();
        for ((&j, &d), &(neg_dot, _)) in got.indices[row.clone()]
            .iter()
            .zip(&got.distances[row])
            .zip(&by_dot)
        {
            assert!(
                j as usize != i && seen.insert(j),
                "row {i}: {j} repeated or self"
            );
            assert_eq!(-dot(i, j as usize), neg_dot, "row {i}");
            assert_eq!((d * d) as f32, (2.0 * (c + neg_dot)) as f32, "row {i}");
        }
    }
    let inline = dir.path().join("inline.npy");
    let given = dir.path().join("given.npy");
    let mut a = vec!["embed", s(&x), "-o", s(&inline), "--perplexity", "10"];
    let mut b = vec!["embed", s(&x), "-o", s(&given), "--perplexity", "10"];
    b.extend(["--knn-from", s(&knn)]);
    for v in [&mut a, &mut b] {
        v.extend(search);
        v.extend(SHORT);
    }
    run_ok(&a);
    run_ok(&b);
    assert_eq!(
        std::fs::read(&inline).unwrap(),
        std::fs::read(&given).unwrap()
    );
    let report = dir.path().join("ip.json");
    let out = dir.path().join("demo.npy");
    run_ok(&[
        "embed",
        "--demo",
        "--metric",
        "inner-product",
        "--backend",
        "cpu",
        "-q",
        "-o",
        s(&out),
        "--report",
        s(&report),
    ]);
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let text = json.to_string();
    assert!(text.contains("\"inner-product\""), "{text}");
    let acc = json["quality"]["knn_accuracy_10"]
        .as_f64()
        .unwrap_or(f64::NAN);
    assert!(acc > 0.85, "10-NN accuracy {acc}: {text}");
}

/// What `--metric inner-product` cannot do is refused by name: exact affinities (calibrated
/// on Euclidean distances).
#[test]
fn inner_product_refusals_name_the_way_round() {
    let dir = tempfile::tempdir().unwrap();
    let x = points(dir.path(), 200, 8);
    let out = dir.path().join("y.npy");
    let embed = |extra: &[&str], needles: &[&str]| {
        let mut args = vec!["embed", s(&x), "-o", s(&out), "--metric", "inner-product"];
        args.extend(extra);
        fails_cleanly_with(&args, &out, needles);
    };
    embed(
        &["--affinities", "exact", "--backend", "cpu"],
        &["affinities", "--affinities knn"],
    );
}
