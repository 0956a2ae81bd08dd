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

#[test]
fn embed_writes_the_map_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo.html");
    let o = out.to_str().unwrap();
    let run = sgtsne(&[
        "embed",
        "--demo",
        "--iters",
        "60",
        "--early-exaggeration-iters",
        "30",
        "--view",
        o,
        "-q",
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let m = manifest(&out);
    assert_eq!(m["n"].as_u64(), Some(1797));
    assert_eq!(names(&m), ["labels:categories"]);
    // A wrong extension is refused before the run.
    let png = dir.path().join("demo.png");
    fails_cleanly_with(
        &["embed", "--demo", "--view", png.to_str().unwrap(), "-q"],
        &png,
        &["expected one of .html"],
    );
}

/// `view --serve`: the page at `/` (without inline buffers) and each buffer as binary.
#[test]
fn served_map_answers_the_page_and_its_buffers() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let y = write(&dir, "y.csv", b"0,0\n1,2\n2,4\n");
    let mut server = Command::new(env!("CARGO_BIN_EXE_sgtsne"))
        .args(["view", y.to_str().unwrap(), "--serve", "--port", "0", "-q"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let addr = url
        .trim()
        .strip_prefix("http://")
        .and_then(|a| a.strip_suffix('/'))
        .unwrap()
        .to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{url}");
    let get = |path: &str| {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
        let mut body = Vec::new();
        s.read_to_end(&mut body).unwrap();
        body
    };
    let page = String::from_utf8(get("/")).unwrap();
    let buffer = get("/buffer/0");
    let missing = String::from_utf8(get("/buffer/9")).unwrap();
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(
        page.starts_with("HTTP/1.0 200") && page.contains("\"inline\":false"),
        "{page}"
    );
    assert!(!page.contains("sgtsne-buffer-0"));
    // 3 points × 2 axes × 2 bytes, the last point at the box's far corner.
    assert!(buffer.ends_with(&[0, 0, 0, 0, 0, 128, 0, 128, 255, 255, 255, 255]));
    assert!(missing.starts_with("HTTP/1.0 404"), "{missing}");
}
