//! [`read_points`]: the point readers, chosen by extension.

use std::path::Path;

use super::error::{extension, unknown_extension, IoError};
use super::{fvecs, npy, text};
use crate::Points;

/// Reads n points × d features by extension (case-insensitive):
///
/// | extension | format |
/// |---|---|
/// | `.npy` | NumPy array, 2-D (or 1-D = n × 1); float, int, uint or bool; C or Fortran order |
/// | `.csv` / `.tsv` | comma / tab separated text, optional header row |
/// | `.txt` | whitespace separated text, optional header row |
/// | `.fvecs` | little-endian `i32` dimension + `f32` values per vector |
///
/// Values become `f32` (doubles are rounded; see [`crate::Points`]); NaN, ±inf and values
/// beyond `f32`'s range are errors naming the row and column. Empty input is an error.
pub fn read_points(path: &Path) -> Result<Points, IoError> {
    match extension(path).as_str() {
        "npy" => npy::read_points_npy(path),
        "csv" => text::read_points_delimited(path, b','),
        "tsv" => text::read_points_delimited(path, b'\t'),
        "txt" => text::read_points_whitespace(path),
        "fvecs" => fvecs::read_points_fvecs(path),
        _ => Err(unknown_extension(
            path,
            "points",
            ".npy, .csv, .tsv, .txt, .fvecs",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_extension_and_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("data.xlsx");
        std::fs::write(&p, "1,2\n").unwrap();
        let e = read_points(&p).unwrap_err();
        assert!(e.to_string().ends_with(
            "data.xlsx: unsupported extension `.xlsx` for points; expected one of .npy, .csv, .tsv, .txt, .fvecs"
        ), "{e}");
        let e = read_points(&dir.path().join("noext")).unwrap_err();
        assert!(
            e.to_string().contains("unsupported extension (none)"),
            "{e}"
        );
        for ext in ["npy", "csv", "tsv", "txt", "fvecs"] {
            let p = dir.path().join(format!("missing.{ext}"));
            let e = read_points(&p).unwrap_err();
            assert!(matches!(e, IoError::NotFound { .. }), "{e}");
            assert_eq!(e.to_string(), format!("{}: no such file", p.display()));
        }
        // A directory with a data extension is a read error, not a panic.
        let d = dir.path().join("dir.csv");
        std::fs::create_dir(&d).unwrap();
        assert!(matches!(read_points(&d), Err(IoError::Read { .. })));
    }

    #[test]
    fn empty_files_are_no_data() {
        let dir = tempfile::tempdir().unwrap();
        for ext in ["npy", "csv", "tsv", "txt", "fvecs"] {
            let p = dir.path().join(format!("empty.{ext}"));
            std::fs::write(&p, "").unwrap();
            let e = read_points(&p).unwrap_err();
            assert!(matches!(e, IoError::NoData { .. }), "{ext}: {e}");
            assert!(e.to_string().contains(": no data ("), "{e}");
        }
    }
}
