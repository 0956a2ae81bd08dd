//! `sgtsne view` through the binary: the page's manifest for each input kind, and bad
//! input refused with one message and nothing written (issue 53). What the page does in a
//! browser is tested in `tests/browser/`.

use std::path::Path;

use crate::cli::{fails_cleanly_with, sgtsne, stderr, write};

/// The manifest (JSON) of a written page.
fn manifest(page: &Path) -> serde_json::Value {
    let html = std::fs::read_to_string(page).unwrap();
    let start = html.find("id=\"sgtsne-manifest\">").unwrap() + "id=\"sgtsne-manifest\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).unwrap()
}

fn names(m: &serde_json::Value) -> Vec<String> {
    m["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}:{}",
                c["name"].as_str().unwrap(),
                c["kind"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn view_writes_a_page_with_labels_and_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let y = write(&dir, "y.csv", b"x,y\n0,0\n1,2\n2,4\n");
    let labels = write(&dir, "cell.csv", b"T\nB\nT\n");
    let meta = write(&dir, "meta.tsv", b"depth\tbatch\n0.5\t1\n1.5\t2\n\t1\n");
    let out = dir.path().join("map.html");
    let run = sgtsne(&[
        "view",
        y.to_str().unwrap(),
        "--labels",
        labels.to_str().unwrap(),
        "--meta",
        meta.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let m = manifest(&out);
    assert_eq!((m["n"].as_u64(), m["dims"].as_u64()), (Some(3), Some(2)));
    assert_eq!(
        names(&m),
        ["cell:categories", "depth:numbers", "batch:categories"]
    );
    assert_eq!(m["columns"][0]["names"], serde_json::json!(["B", "T"]));
    assert_eq!(m["hi"], serde_json::json!([2.0, 4.0]));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
}

#[test]
fn view_of_an_h5ad_takes_its_obs_columns() {
    let dir = tempfile::tempdir().unwrap();
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/h5ad/dense_gzip.h5ad");
    let with_tsne = dir.path().join("a.h5ad");
    let y: Vec<f32> = (0..600).map(|i| (i % 17) as f32).collect();
    sgtsne::io::h5ad::write_h5ad(Some(&input), &with_tsne, "X_tsne", &y, 2).unwrap();
    let out = dir.path().join("map.html");
    let run = sgtsne(&[
        "view",
        with_tsne.to_str().unwrap(),
        "--labels",
        "obs:donor",
        "-o",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(
        names(&manifest(&out)),
        [
            "donor:categories",
            "batch:categories",
            "cell_type:categories"
        ]
    );
}

#[test]
fn view_refuses_bad_input_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let y = write(&dir, "y.csv", b"0,0\n1,2\n2,4\n");
    let wide = write(&dir, "wide.csv", b"0,0,0,0\n1,2,3,4\n");
    let nan = write(&dir, "nan.csv", b"0,0\nnan,2\n");
    let short = write(&dir, "short.csv", b"a\nb\n");
    let ragged = write(&dir, "ragged.csv", b"a,b\n1\n");
    let h5ad = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/h5ad/no_x.h5ad");
    let out = dir.path().join("map.html");
    let no_dir = dir.path().join("no/map.html");
    let (y, o) = (y.to_str().unwrap(), out.to_str().unwrap());
    let cases: [(Vec<&str>, &[&str]); 8] = [
        (
            vec!["view", y, "--labels", short.to_str().unwrap(), "-o", o],
            &["column `short` has 2 values for 3 points"],
        ),
        (
            vec!["view", wide.to_str().unwrap(), "-o", o],
            &["wide.csv", "4 columns; a map shows 1, 2 or 3"],
        ),
        (
            vec!["view", nan.to_str().unwrap(), "-o", o],
            &["nan.csv", "non-finite", "row 2"],
        ),
        (
            vec!["view", h5ad.to_str().unwrap(), "-o", o],
            &["no obsm['X_tsne']; obsm holds: X_pca"],
        ),
        (
            vec!["view", h5ad.to_str().unwrap(), "--key", "X_pca", "-o", o],
            &["5 columns"],
        ),
        (
            vec!["view", y, "--meta", ragged.to_str().unwrap(), "-o", o],
            &["ragged.csv", "line 2"],
        ),
        (
            vec!["view", y, "--labels", "obs:cell_type", "-o", o],
            &["obs columns need an .h5ad"],
        ),
        (
            vec!["view", y, "-o", no_dir.to_str().unwrap()],
            &["does not exist"],
        ),
    ];
    for (args, needles) in cases {
        fails_cleanly_with(&args, &out, needles);
    }
    fails_cleanly_with(
        &["view", y, "-o", &o.replace(".html", ".png")],
        &out,
        &["expected one of .html"],
    );
}
