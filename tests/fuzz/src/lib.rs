//! The readers under fuzzing, one function per target, shared by the libFuzzer targets
//! (`fuzz_targets/`) and the stable test suite's mutation pass (`tests/fuzz_readers.rs`
//! includes this file), so both exercise the same calls.
//!
//! Each function hands one input to a reader the way the tool would and ignores the result:
//! any input may be refused, none may panic or allocate far beyond its size. The readers
//! take the bytes as they would a file's contents (the file-based entry points wrap the
//! same parsers in a buffered reader); the `.h5ad` reader, which needs a file, gets one.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use sgtsne::io::h5ad::{describe, read_h5ad_labels, read_h5ad_obsp, read_h5ad_points, Rep};
use tempfile::TempDir;

/// A reader under fuzzing: the target's name (also its seed folder, `seeds/NAME`) and the
/// function that reads one input.
pub type Reader = (&'static str, fn(&[u8]));

/// Every reader under fuzzing.
pub const READERS: [Reader; 9] = [
    ("npy_points", npy_points),
    ("npy_labels", npy_labels),
    ("text_points", text_points),
    ("text_labels", text_labels),
    ("fvecs", fvecs),
    ("mtx", mtx),
    ("sweep_toml", sweep_toml),
    ("model", model),
    ("h5ad", h5ad),
];

/// Points from the bytes of an `.npy` file (any dtype, order and shape).
pub fn npy_points(data: &[u8]) {
    let _ = sgtsne::io::read_points_npy_bytes(data, "input.npy");
}

/// Labels from the bytes of an `.npy` file (integers, floats, bools, `U`/`S` strings).
pub fn npy_labels(data: &[u8]) {
    let _ = sgtsne::io::read_labels_npy_bytes(data, "input.npy");
}

/// Points from `.csv`, `.tsv` or `.txt` text; the first byte picks which.
pub fn text_points(data: &[u8]) {
    if let Some((ext, text)) = text_extension(data) {
        let _ = sgtsne::io::read_points_bytes(text, &format!("input.{ext}"));
    }
}

/// Labels from a one-column `.csv`, `.tsv` or `.txt` file; the first byte picks which.
pub fn text_labels(data: &[u8]) {
    if let Some((ext, text)) = text_extension(data) {
        let _ = sgtsne::io::read_labels_bytes(text, &format!("input.{ext}"));
    }
}

/// Points from an `.fvecs` file (an `i32` dimension and `f32` values per vector).
pub fn fvecs(data: &[u8]) {
    let _ = sgtsne::io::read_points_bytes(data, "input.fvecs");
}

/// A graph from a Matrix Market `.mtx` file (`--graph`).
pub fn mtx(data: &[u8]) {
    let _ = sgtsne::io::read_graph_bytes(data, "input.mtx");
}

/// A grid-size sweep configuration (`sgtsne sweep --config`), then the iterations it samples,
/// which a valid configuration sizes.
pub fn sweep_toml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = sgtsne::sweep::SweepConfig::parse(text, Path::new("input.toml"), "input");
    if let Ok(config) = parsed {
        let _ = config.sample_iterations();
    }
}

/// The model file of `embed --save-model`, as `sgtsne transform` reads it.
pub fn model(data: &[u8]) {
    let _ = sgtsne::transform::Model::decode(data, Path::new("input.sgtsne"));
}

/// AnnData `.h5ad` (HDF5): the points (`X` or `obsm`, dense or sparse), a label column of
/// `obs`, the neighbour graph of `obsp` and the listing `sgtsne info` prints.
pub fn h5ad(data: &[u8]) {
    with_file(data, "h5ad", |path| {
        let _ = read_h5ad_points(path, &Rep::Default);
        let _ = read_h5ad_points(path, &Rep::X);
        let _ = read_h5ad_labels(path, "cell_type");
        let _ = read_h5ad_obsp(path, "distances");
        let _ = describe(path);
    });
}

thread_local! {
    /// One directory per thread, removed when the thread ends; each input overwrites the
    /// file of its extension there, so millions of inputs leave no files behind.
    static DIR: RefCell<Option<TempDir>> = const { RefCell::new(None) };
}

/// Writes `bytes` to a file named `input.EXT` and calls `read` with its path.
///
/// The directory lies in `/dev/shm` where there is one: memory, not disk, so writing each
/// input costs little against the parsing under test.
fn with_file<T>(bytes: &[u8], ext: &str, read: impl FnOnce(&Path) -> T) -> T {
    let path: PathBuf = DIR.with_borrow_mut(|dir| {
        let dir = dir.get_or_insert_with(|| {
            let shm = Path::new("/dev/shm");
            let made = if shm.is_dir() {
                tempfile::tempdir_in(shm)
            } else {
                tempfile::tempdir()
            };
            made.expect("a temporary directory for the fuzz inputs")
        });
        dir.path().join(format!("input.{ext}"))
    });
    std::fs::write(&path, bytes).expect("writing the fuzz input");
    read(&path)
}

/// The extension the first byte picks for the text readers (`.csv`, `.tsv` or `.txt`), and
/// the rest of the input: one target covers the three delimiters.
fn text_extension(data: &[u8]) -> Option<(&'static str, &[u8])> {
    let (&first, rest) = data.split_first()?;
    Some((["csv", "tsv", "txt"][usize::from(first % 3)], rest))
}
