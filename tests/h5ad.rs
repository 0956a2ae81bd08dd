use std::path::{Path, PathBuf};
use std::process::Command;

use sgtsne::io::h5ad::{read_h5ad_labels, read_h5ad_obsp, read_h5ad_points, H5adMatrix, Rep};

use crate::cli::{fails_cleanly_with, sgtsne, stderr};

/// The fixtures `scripts/h5ad_fixtures.py` wrote with the real anndata package.
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/h5ad")
        .join(name)
}

/// A short run: the fixtures have 300 points.
const SHORT: [&str; 5] = ["--iters", "200", "--early-exaggeration-iters", "80", "-q"];

fn dense(m: H5adMatrix) -> Vec<f32> {
    match m {
        H5adMatrix::Dense(p) => p.data.into_vec(),
        H5adMatrix::Sparse(s) => s.to_dense().data.into_vec(),
    }
}

/// A Python with anndata for the round trips: `SGTSNE_ANNDATA_PYTHON`, else `python3` when
/// it imports anndata. None (and a note) when there is none, unless
/// `SGTSNE_REQUIRE_ANNDATA=1` (as `.ci/run` sets) makes that a failure.
fn anndata_python() -> Option<String> {
    let python = std::env::var("SGTSNE_ANNDATA_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&python)
        .args(["-c", "import anndata"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(python);
    }
    assert!(
        std::env::var_os("SGTSNE_REQUIRE_ANNDATA").is_none_or(|v| v != "1"),
        "no Python with anndata ({python}), and SGTSNE_REQUIRE_ANNDATA=1 requires one"
    );
    eprintln!("note: no Python with anndata ({python}); the anndata round trip is skipped");
    None
}

/// `scripts/check_h5ad.py`: anndata opens `out`, finds `obsm[key]` of n × `dims`, and
/// everything else equal to `src`.
fn check_with_anndata(python: &str, src: &Path, out: &Path, key: &str, dims: usize) {
    let check = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check_h5ad.py"))
        .args([src, out])
        .args([key, &dims.to_string()])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}: anndata: {}{}",
        out.display(),
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
fn dense_csr_csc_and_integer_x_read_as_the_same_matrix() {
    let read = |f: &str| read_h5ad_points(&fixture(f), &Rep::X).unwrap();
    let reference = read("dense_gzip.h5ad");
    assert_eq!(reference.source, "X");
    assert_eq!(reference.matrix.shape(), (300, 20));
    assert!(matches!(reference.matrix, H5adMatrix::Dense(_)));
    let x = dense(reference.matrix);
    for f in ["csr.h5ad", "csc.h5ad"] {
        let m = read(f).matrix;
        assert!(matches!(m, H5adMatrix::Sparse(_)), "{f}");
        assert_eq!(dense(m), x, "{f}");
    }
    let counts = dense(read("counts.h5ad").matrix);
    let rounded: Vec<f32> = x.iter().map(|v| v.abs().round()).collect();
    assert_eq!(counts, rounded);
    // The default representation is obsm['X_pca'] where there is one.
    let pca = read_h5ad_points(&fixture("dense_gzip.h5ad"), &Rep::Default).unwrap();
    assert_eq!(pca.source, "obsm['X_pca']");
    assert_eq!(pca.matrix.shape(), (300, 5));
    let csr = read_h5ad_points(&fixture("csr.h5ad"), &Rep::Default).unwrap();
    assert_eq!(csr.source, "X");
}

#[test]
fn obs_columns_become_labels() {
    let cell_type = read_h5ad_labels(&fixture("dense_gzip.h5ad"), "cell_type").unwrap();
    assert_eq!(cell_type.names, ["B cell", "Monocyte", "NK", "T cell"]);
    assert_eq!(cell_type.len(), 300);
    let batch = read_h5ad_labels(&fixture("csr.h5ad"), "batch").unwrap();
    assert_eq!(batch.names, ["0", "1", "2"]);
    let donor = read_h5ad_labels(&fixture("csc.h5ad"), "donor").unwrap();
    assert_eq!(donor.names.len(), 5);
    // A missing category (code −1) is "NA"; booleans are named.
    let with_missing = read_h5ad_labels(&fixture("counts.h5ad"), "cell_type").unwrap();
    assert!(with_missing.names.contains(&"NA".to_string()));
    assert_eq!(
        with_missing.codes[..3]
            .iter()
            .map(|&c| with_missing.names[c as usize].as_str())
            .collect::<Vec<_>>(),
        ["NA"; 3]
    );
    let stimulated = read_h5ad_labels(&fixture("counts.h5ad"), "stimulated").unwrap();
    assert_eq!(stimulated.names, ["False", "True"]);
}

#[test]
fn embed_adds_obsm_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let python = anndata_python();
    for (input, key) in [
        ("dense_gzip.h5ad", "X_tsne"),
        ("csr.h5ad", "X_tsne"),
        ("csc.h5ad", "X_sgtsne"),
        ("counts.h5ad", "X_tsne"),
    ] {
        let src = fixture(input);
        let out = dir.path().join(input);
        let mut args = vec![
            "embed",
            src.to_str().unwrap(),
            "--use-rep",
            "X",
            "--labels",
            "obs:cell_type",
            "--key",
            key,
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend(SHORT);
        let run = sgtsne(&args);
        assert!(run.status.success(), "{input}: {}", stderr(&run));
        let y = read_h5ad_points(&out, &Rep::Obsm(key.into())).unwrap();
        assert_eq!(y.matrix.shape(), (300, 2), "{input}");
        // Everything read before reads the same after.
        assert_eq!(
            dense(read_h5ad_points(&out, &Rep::X).unwrap().matrix),
            dense(read_h5ad_points(&src, &Rep::X).unwrap().matrix),
        );
        assert_eq!(
            read_h5ad_labels(&out, "cell_type").unwrap(),
            read_h5ad_labels(&src, "cell_type").unwrap()
        );
        if let Some(python) = &python {
            check_with_anndata(python, &src, &out, key, 2);
        }
    }
}

#[test]
fn in_place_replaces_an_earlier_embedding() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.h5ad");
    std::fs::copy(fixture("dense_gzip.h5ad"), &file).unwrap();
    for dims in ["2", "3"] {
        let mut args = vec![
            "embed",
            file.to_str().unwrap(),
            "--in-place",
            "--dims",
            dims,
        ];
        args.extend(SHORT);
        let run = sgtsne(&args);
        assert!(run.status.success(), "{}", stderr(&run));
    }
    let y = read_h5ad_points(&file, &Rep::Obsm("X_tsne".into())).unwrap();
    assert_eq!(y.matrix.shape(), (300, 3));
    let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(leftovers, 1, "temporary files left beside the input");
    if let Some(python) = anndata_python() {
        check_with_anndata(&python, &fixture("dense_gzip.h5ad"), &file, "X_tsne", 3);
    }
}

/// A sparse X with no PCA (fewer features than --pca keeps) embeds exactly as the same
/// matrix stored dense: the sparse path densifies it and changes nothing else (on the cpu
/// backend, whose runs are reproducible bit for bit).
#[test]
fn sparse_and_dense_x_embed_alike() {
    let dir = tempfile::tempdir().unwrap();
    let mut outs = Vec::new();
    for input in ["dense_gzip.h5ad", "csr.h5ad"] {
        let out = dir.path().join(format!("{input}.npy"));
        let src = fixture(input);
        let mut args = vec![
            "embed",
            src.to_str().unwrap(),
            "--use-rep",
            "X",
            "--backend",
            "cpu",
            "--threads",
            "1",
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend(SHORT);
        let run = sgtsne(&args);
        assert!(run.status.success(), "{}", stderr(&run));
        outs.push(std::fs::read(&out).unwrap());
    }
    assert_eq!(outs[0], outs[1]);
}

#[test]
fn a_new_h5ad_from_other_input() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("digits.h5ad");
    let mut args = vec!["embed", "--demo", "-o", out.to_str().unwrap()];
    args.extend(SHORT);
    let run = sgtsne(&args);
    assert!(run.status.success(), "{}", stderr(&run));
    let y = read_h5ad_points(&out, &Rep::Obsm("X_tsne".into())).unwrap();
    assert_eq!(y.matrix.shape(), (1797, 2));
    if let Some(python) = anndata_python() {
        let check = Command::new(python)
            .arg("-c")
            .arg(
                "import sys, anndata; a = anndata.read_h5ad(sys.argv[1]); \
                 assert a.obsm['X_tsne'].shape == (1797, 2), a",
            )
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{}",
            String::from_utf8_lossy(&check.stderr)
        );
    }
}

#[test]
fn bad_h5ad_input_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.npy");
    let o = out.to_str().unwrap();
    let no_x = fixture("no_x.h5ad");
    let dense = fixture("dense_gzip.h5ad");
    let cases: [(Vec<&str>, &[&str]); 5] = [
        (
            vec!["embed", no_x.to_str().unwrap(), "--use-rep", "X", "-o", o],
            &["no_x.h5ad", "no `X` matrix", "--use-rep (X_pca)"],
        ),
        (
            vec![
                "embed",
                dense.to_str().unwrap(),
                "--use-rep",
                "X_umap",
                "-o",
                o,
            ],
            &["no obsm['X_umap']", "obsm holds: X_pca"],
        ),
        (
            vec![
                "embed",
                dense.to_str().unwrap(),
                "--labels",
                "obs:celltype",
                "-o",
                o,
            ],
            &[
                "no obs column `celltype`",
                "obs has: batch, cell_type, donor",
            ],
        ),
        (
            vec!["embed", "--demo", "--use-rep", "X", "-o", o],
            &["--use-rep applies to an .h5ad input only"],
        ),
        (
            vec![
                "embed",
                dense.to_str().unwrap(),
                "-o",
                dense.to_str().unwrap(),
            ],
            &["is the input file", "--in-place"],
        ),
    ];
    for (args, needles) in cases {
        fails_cleanly_with(&args, &out, needles);
    }
    // Not HDF5 at all.
    let fake = dir.path().join("fake.h5ad");
    std::fs::write(&fake, b"not an hdf5 file").unwrap();
    fails_cleanly_with(
        &["embed", fake.to_str().unwrap(), "-o", o],
        &out,
        &["fake.h5ad", "cannot open as HDF5"],
    );
}

#[test]
fn info_lists_what_the_file_holds() {
    let file = fixture("dense_gzip.h5ad");
    let run = sgtsne(&["info", file.to_str().unwrap(), "--read"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let text = String::from_utf8(run.stdout).unwrap();
    for needle in [
        "X: dense 300 × 20 f32",
        "obsm['X_pca']: dense 300 × 5 f64",
        "obs['cell_type']: categorical of 4 categories",
        "read obsm['X_pca']: 300 × 5 in",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    let run = sgtsne(&["info", fixture("csc.h5ad").to_str().unwrap()]);
    let text = String::from_utf8(run.stdout).unwrap();
    assert!(text.contains("X: csc_matrix 300 × 20, "), "{text}");
}

#[test]
fn obsp_distances_read_as_a_sparse_graph() {
    let graph = read_h5ad_obsp(&fixture("dense_gzip.h5ad"), "distances").unwrap();
    assert_eq!((graph.n, graph.d, graph.nnz()), (300, 300, 300 * 30));
    // Row 0's distances are the Euclidean distances to its neighbours in X.
    let x = dense(
        read_h5ad_points(&fixture("dense_gzip.h5ad"), &Rep::X)
            .unwrap()
            .matrix,
    );
    for (j, dist) in graph.row(0) {
        let want: f64 = (0..20)
            .map(|c| (x[c] as f64 - x[j * 20 + c] as f64).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!((dist as f64 - want).abs() < 1e-4 * want.max(1.0), "{j}");
    }
    let e = read_h5ad_obsp(&fixture("csr.h5ad"), "distances").unwrap_err();
    assert!(e.to_string().contains("no obsp['distances']"), "{e}");
    assert!(e.to_string().contains("obsp holds: none"), "{e}");
}
