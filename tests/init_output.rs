use std::path::Path;

use npyz::WriterBuilder;

use crate::cli::{fails_cleanly_with, sgtsne, stderr};

/// A short run of the built-in digits (1,797 points).
const SHORT: [&str; 7] = [
    "embed",
    "--demo",
    "--iters",
    "10",
    "--early-exaggeration-iters",
    "5",
    "--backend",
];

/// Writes an n × dims `.npy` of f32.
fn npy(path: &Path, n: usize, dims: usize, value: impl Fn(usize) -> f32) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = npyz::WriteOptions::<f32>::new()
        .default_dtype()
        .shape(&[n as u64, dims as u64])
        .writer(std::io::BufWriter::new(file))
        .begin_nd()
        .unwrap();
    w.extend((0..n * dims).map(value)).unwrap();
    w.finish().unwrap();
}

fn read_npy(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap();
    npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap()
}

/// A given initialisation is taken in input order, whatever the internal numbering: the
/// locality order and the input order agree up to rounding after 10 iterations.
#[test]
fn init_from_file_follows_the_input_order() {
    let dir = tempfile::tempdir().unwrap();
    let init = dir.path().join("init.npy");
    npy(&init, 1797, 2, |i| ((i * 7919) % 1000) as f32 / 100.0 - 5.0);
    let mut runs = Vec::new();
    for order in ["locality", "input"] {
        let out = dir.path().join(format!("{order}.npy"));
        let mut args = SHORT.to_vec();
        args.extend([
            "cpu",
            "--order",
            order,
            "--init",
            init.to_str().unwrap(),
            "--init-rescale",
            "-q",
            "-o",
            out.to_str().unwrap(),
        ]);
        let run = sgtsne(&args);
        assert!(run.status.success(), "{}", stderr(&run));
        runs.push(read_npy(&out));
    }
    let scale = runs[1].iter().fold(0f32, |m, v| m.max(v.abs()));
    let worst = runs[0]
        .iter()
        .zip(&runs[1])
        .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(worst < 1e-4 * scale, "worst {worst} of {scale}");
    // Rescaled to std 1e-4, the run starts where a PCA start would: tiny coordinates.
    assert!(scale < 1e-2, "{scale}");
}

#[test]
fn init_from_file_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.npy");
    let o = out.to_str().unwrap();
    let three = dir.path().join("three.npy");
    npy(&three, 1797, 3, |_| 0.0);
    let short = dir.path().join("short.npy");
    npy(&short, 100, 2, |i| i as f32);
    let big = dir.path().join("big.npy");
    npy(&big, 1797, 2, |i| (i % 13) as f32);
    fails_cleanly_with(
        &[
            "embed",
            "--demo",
            "--init",
            three.to_str().unwrap(),
            "-o",
            o,
        ],
        &out,
        &["three.npy", "3 columns", "--dims 2"],
    );
    fails_cleanly_with(
        &[
            "embed",
            "--demo",
            "--init",
            short.to_str().unwrap(),
            "-o",
            o,
        ],
        &out,
        &["`init`", "100 rows of 2", "1797 points"],
    );
    fails_cleanly_with(
        &["embed", "--demo", "--init-rescale", "-o", o],
        &out,
        &["--init-rescale applies to --init FILE only"],
    );
    // A large given scale runs as given, with a note.
    let mut args = SHORT.to_vec();
    args.extend(["cpu", "--init", big.to_str().unwrap(), "-o", o]);
    let run = sgtsne(&args);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stderr(&run).contains("used as given; --init-rescale"));
}

#[test]
fn embedding_to_stdout_and_tsv() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = SHORT.to_vec();
    args.extend(["cpu", "-q", "-o", "-"]);
    let run = sgtsne(&args);
    assert!(run.status.success(), "{}", stderr(&run));
    let text = String::from_utf8(run.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("y1,y2"));
    let rows: Vec<Vec<f32>> = lines
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 1797);
    assert!(rows.iter().all(|r| r.len() == 2));

    let tsv = dir.path().join("y.tsv");
    let mut args = SHORT.to_vec();
    args.extend(["cpu", "-q", "--dims", "3", "-o", tsv.to_str().unwrap()]);
    let run = sgtsne(&args);
    assert!(run.status.success(), "{}", stderr(&run));
    let text = std::fs::read_to_string(&tsv).unwrap();
    assert!(text.starts_with("y1\ty2\ty3\n"), "{}", &text[..20]);
    assert_eq!(text.lines().count(), 1798);
}

#[test]
fn no_output_warns() {
    let mut args = SHORT.to_vec();
    args.extend(["cpu", "-q"]);
    let run = sgtsne(&args);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stderr(&run).contains("warning: no -o, --plot, --view or --report"));
}

#[test]
fn completions_and_man_page() {
    for (shell, needles) in [
        ("bash", ["_sgtsne()", "--perplexity"]),
        ("zsh", ["#compdef sgtsne", "--perplexity"]),
        ("fish", ["complete -c sgtsne", "-l perplexity"]),
    ] {
        let run = sgtsne(&["completions", shell]);
        assert!(run.status.success(), "{}", stderr(&run));
        let text = String::from_utf8(run.stdout).unwrap();
        for needle in needles {
            assert!(text.contains(needle), "{shell}: {needle}");
        }
    }
    let run = sgtsne(&["man"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let text = String::from_utf8(run.stdout).unwrap();
    assert!(text.contains(".TH sgtsne 1"));
    assert!(text.contains("embed"));
}
