//! [`read_points`]: the point readers, chosen by extension.

use std::path::Path;

use super::error::{extension, unknown_extension, IoError};
use super::{fvecs, h5ad, npy, text};
use crate::Points;

/// Reads n points × d features by extension (case-insensitive):
///
/// | extension | format |
/// |---|---|
/// | `.npy` | NumPy array, 2-D (or 1-D = n × 1); float, int, uint or bool; C or Fortran order |
/// | `.csv` / `.tsv` | comma / tab separated text, optional header row |
/// | `.txt` | whitespace separated text, optional header row |
/// | `.fvecs` | little-endian `i32` dimension + `f32` values per vector |
/// | `.h5ad` | AnnData: `obsm['X_pca']` when present, else `X` (see [`super::h5ad`]) |
///
/// A sparse `X` is densified here, up to 4 GiB dense; `embed` reads it sparse
/// instead ([`super::h5ad::read_h5ad_points`]) and reduces it without densifying.
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
        "h5ad" => {
            let read = h5ad::read_h5ad_points(path, &h5ad::Rep::Default)?;
            match read.matrix {
                h5ad::H5adMatrix::Dense(points) => Ok(points),
                h5ad::H5adMatrix::Sparse(rows) if rows.dense_bytes() <= DENSIFY_MAX_BYTES => {
                    Ok(rows.to_dense())
                }
                h5ad::H5adMatrix::Sparse(rows) => Err(IoError::Invalid {
                    path: path.into(),
                    reason: format!(
                        "{} is sparse, {} × {}: {:.1} GiB dense is more than this command \
                         reads; reduce it first (`sgtsne embed` does, or scanpy's pca)",
                        read.source,
                        rows.n,
                        rows.d,
                        rows.dense_bytes() as f64 / (1u64 << 30) as f64
                    ),
                }),
            }
        }
        _ => Err(unknown_extension(
            path,
            "points",
            ".npy, .csv, .tsv, .txt, .fvecs, .h5ad",
        )),
    }
}

/// The largest dense copy of a sparse input [`read_points`] makes.
const DENSIFY_MAX_BYTES: u64 = 4 << 30;

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
            "data.xlsx: unsupported extension `.xlsx` for points; expected one of .npy, .csv, .tsv, .txt, .fvecs, .h5ad"
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
