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

/// Reads points from the bytes of a file named `name` (whose extension picks the format, as
/// [`read_points`]'s; `name` stands for the path in errors), without touching the file
/// system: `.npy`, `.csv`, `.tsv`, `.txt` and `.fvecs` (an `.h5ad` needs a file).
pub fn read_points_bytes(bytes: &[u8], name: &str) -> Result<Points, IoError> {
    let path = Path::new(name);
    match extension(path).as_str() {
        "npy" => npy::read_points_npy_bytes(bytes, name),
        "csv" => text::read_points_delimited_from(bytes, path, b','),
        "tsv" => text::read_points_delimited_from(bytes, path, b'\t'),
        "txt" => text::read_points_whitespace_from(bytes, path),
        "fvecs" => fvecs::read_fvecs_from(bytes, bytes.len() as u64, path),
        _ => Err(unknown_extension(
            path,
            "points from bytes",
            ".npy, .csv, .tsv, .txt, .fvecs",
        )),
    }
}

/// The largest dense copy of a sparse input [`read_points`] makes.
const DENSIFY_MAX_BYTES: u64 = 4 << 30;

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte readers give what the file readers give for the same contents, graphs and
    /// labels included, and name the given name in their errors.
    #[test]
    fn bytes_read_as_files_do() {
        let dir = tempfile::tempdir().unwrap();
        let mut fvecs = Vec::new();
        for row in [[1f32, 2.0], [3.0, -4.5]] {
            fvecs.extend(2i32.to_le_bytes());
            row.iter().for_each(|v| fvecs.extend(v.to_le_bytes()));
        }
        let cases: [(&str, &[u8]); 4] = [
            ("a.csv", b"x,y\n1,2\n3,-4.5\n"),
            ("a.tsv", b"1\t2\n3\t-4.5\n"),
            ("a.txt", b"# two points\n1 2\n\n3 -4.5\n"),
            ("a.fvecs", &fvecs),
        ];
        for (name, bytes) in cases {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let want = read_points(&path).unwrap();
            let got = read_points_bytes(bytes, name).unwrap();
            assert_eq!(
                (got.n, got.d, &got.data),
                (want.n, want.d, &want.data),
                "{name}"
            );
            assert_eq!(got.data, [1.0, 2.0, 3.0, -4.5]);
        }
        let e = read_points_bytes(b"1,2\n3\n", "bad.csv")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("bad.csv") && e.contains("line 2"), "{e}");
        let labels = crate::io::read_labels_bytes(b"cell\nB\nT\nB\n", "l.csv").unwrap();
        assert_eq!(labels.len(), 3);
        let graph = b"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 0.5\n";
        let g = crate::io::read_graph_bytes(graph, "g.mtx").unwrap();
        assert_eq!((g.rows(), g.nnz()), (2, 1));
        assert!(read_points_bytes(b"", "a.h5ad").is_err());
    }

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
