//! The command-line reference page is what the command prints: a flag added, removed or
//! reworded without the page regenerated fails here, saying how to regenerate it.

use std::path::Path;

use crate::cli::{sgtsne, stderr};

#[test]
fn cli_reference_page_is_current() {
    let out = sgtsne(&["reference"]);
    assert!(
        out.status.success(),
        "sgtsne reference failed: {}",
        stderr(&out)
    );
    let printed = String::from_utf8(out.stdout).unwrap();
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/reference/cli.md");
    let committed = std::fs::read_to_string(&page).unwrap_or_default();
    if committed != printed {
        let line = committed
            .lines()
            .zip(printed.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(committed.lines().count().min(printed.lines().count()));
        panic!(
            "{} differs from what `sgtsne reference` prints (first at line {}); regenerate it: \
             cargo run --release -- reference > docs/reference/cli.md",
            page.display(),
            line + 1
        );
    }
}
