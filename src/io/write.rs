//! Writers: atomic file replacement, embeddings (`.npy`, `.csv`), and the up-front check of
//! output paths.
//!
//! A run can take minutes; an output path with a typo must fail before it starts
//! ([`check_output_path`]), and a write that fails half-way must not leave a truncated file
//! that looks like a result ([`write_atomic`]).

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::error::{extension, unknown_extension, IoError};

/// What an output file will hold; decides which extensions are accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// The embedding Y: `.npy`, `.csv`, `.tsv` or `.h5ad`.
    Embedding,
    /// The scatter plot: `.png`.
    Plot,
    /// The animation of snapshots ([`super::plot::animate_gif`]): `.gif`.
    Animation,
    /// The JSON run report: `.json`.
    Report,
    /// Integer labels ([`write_labels`]): `.npy`.
    Labels,
    /// Neighbour lists ([`super::write_neighbors`]): `.npz`.
    Neighbors,
    /// A map for placing new points ([`crate::transform::Model`]): `.sgtsne`.
    Model,
    /// A Gaussian mixture ([`crate::gmm::Model`]): `.json` or `.npz`.
    Mixture,
    /// A numeric matrix ([`super::write_matrix`]): `.npy`.
    Matrix,
    /// A table: `.csv`.
    Table,
    /// The interactive map ([`crate::view`]): `.html`.
    Map,
}

impl OutputKind {
    fn what(self) -> &'static str {
        match self {
            OutputKind::Embedding => "an embedding",
            OutputKind::Plot => "a plot",
            OutputKind::Animation => "an animation",
            OutputKind::Report => "a report",
            OutputKind::Labels => "labels",
            OutputKind::Neighbors => "neighbours",
            OutputKind::Model => "a model",
            OutputKind::Mixture => "a mixture model",
            OutputKind::Matrix => "a matrix",
            OutputKind::Table => "a table",
            OutputKind::Map => "a map",
        }
    }

    fn extensions(self) -> &'static [&'static str] {
        match self {
            OutputKind::Embedding => &["npy", "csv", "tsv", "h5ad"],
            OutputKind::Plot => &["png"],
            OutputKind::Animation => &["gif"],
            OutputKind::Report => &["json"],
            OutputKind::Labels => &["npy"],
            OutputKind::Neighbors => &["npz"],
            OutputKind::Model => &["sgtsne"],
            OutputKind::Mixture => &["json", "npz"],
            OutputKind::Matrix => &["npy"],
            OutputKind::Table => &["csv"],
            OutputKind::Map => &["html"],
        }
    }

    fn expected(self) -> &'static str {
        match self {
            OutputKind::Embedding => ".npy, .csv, .tsv, .h5ad",
            OutputKind::Plot => ".png",
            OutputKind::Animation => ".gif",
            OutputKind::Report => ".json",
            OutputKind::Labels => ".npy",
            OutputKind::Neighbors => ".npz",
            OutputKind::Model => ".sgtsne",
            OutputKind::Mixture => ".json, .npz",
            OutputKind::Matrix => ".npy",
            OutputKind::Table => ".csv",
            OutputKind::Map => ".html",
        }
    }
}

/// The directory a file at `path` goes in (`.` for a bare file name).
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Checks, before a long run, that `path` can take an output of `kind`: the extension fits,
/// the directory exists, `path` is not a directory, and a file can be created there.
pub fn check_output_path(path: &Path, kind: OutputKind) -> Result<(), IoError> {
    if !kind.extensions().contains(&extension(path).as_str()) {
        return Err(unknown_extension(path, kind.what(), kind.expected()));
    }
    let dir = parent_dir(path);
    if !dir.is_dir() {
        return Err(IoError::NoOutputDir {
            path: path.into(),
            dir,
        });
    }
    if path.is_dir() {
        return Err(IoError::Invalid {
            path: path.into(),
            reason: "is a directory".into(),
        });
    }
    // Creating (and at once deleting) a temporary file proves write permission.
    temp_in(&dir, path, "").map(drop)
}

/// The name every temporary file of this process starts with: `.sgtsne-<pid>-`. The process
/// id lets [`remove_temp_files`] clear this process's files, should it have to end in the
/// middle of a write, without touching those of another run writing to the same directory.
pub(crate) fn temp_prefix() -> String {
    format!(".sgtsne-{}-", std::process::id())
}

/// Removes this process's temporary files (named by `temp_prefix`) from `dir`, for a process that
/// ends at once (a second interrupt) and so skips the destructors that would remove them.
/// Best effort: a file that cannot be listed or removed is left, as nothing more can be done
/// on the way out.
pub fn remove_temp_files(dir: &Path) {
    let prefix = temp_prefix();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A temporary file beside `path` (same directory, so the final rename stays on one file
/// system), readable by others as a normal output would be (subject to the umask).
pub(crate) fn temp_in(
    dir: &Path,
    path: &Path,
    suffix: &str,
) -> Result<tempfile::NamedTempFile, IoError> {
    let prefix = temp_prefix();
    let mut b = tempfile::Builder::new();
    b.prefix(&prefix).suffix(suffix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        b.permissions(std::fs::Permissions::from_mode(0o644));
    }
    b.tempfile_in(dir).map_err(|e| IoError::Write {
        path: path.into(),
        source: e,
    })
}

/// Writes `path` atomically: `f` writes into a temporary file in the same directory, which
/// is flushed, synced and then renamed over `path`. If `f` or any step fails, the temporary
/// file is removed and `path` is left as it was.
pub fn write_atomic(
    path: &Path,
    f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), IoError> {
    let dir = parent_dir(path);
    if !dir.is_dir() {
        return Err(IoError::NoOutputDir {
            path: path.into(),
            dir,
        });
    }
    let tmp = temp_in(&dir, path, ".tmp")?;
    let werr = |e| IoError::Write {
        path: path.into(),
        source: e,
    };
    let mut w = BufWriter::with_capacity(1 << 20, tmp);
    f(&mut w).map_err(werr)?;
    let tmp = w.into_inner().map_err(|e| werr(e.into_error()))?;
    tmp.as_file().sync_all().map_err(werr)?;
    persist(tmp, path)
}

/// Renames a finished temporary file to `path`.
pub(crate) fn persist(tmp: tempfile::NamedTempFile, path: &Path) -> Result<(), IoError> {
    tmp.persist(path).map(drop).map_err(|e| IoError::Write {
        path: path.into(),
        source: e.error,
    })
}

/// Same contract as [`write_atomic`], for writers that insist on opening a path themselves
/// (the PNG encoder): `f` gets the path of a temporary file ending in `suffix`.
pub(crate) fn write_atomic_path(
    path: &Path,
    suffix: &str,
    f: impl FnOnce(&Path) -> Result<(), IoError>,
) -> Result<(), IoError> {
    let dir = parent_dir(path);
    if !dir.is_dir() {
        return Err(IoError::NoOutputDir {
            path: path.into(),
            dir,
        });
    }
    let tmp = temp_in(&dir, path, suffix)?;
    f(tmp.path())?;
    persist(tmp, path)
}

/// Writes the embedding `y` (n × `dims`, row-major) as `.npy` (`<f4`, shape (n, dims),
/// C order), `.csv` / `.tsv` (header `y1,y2,…`, one point per line, shortest round-trip
/// decimals; [`write_embedding_text`]) or a new `.h5ad` holding it as `obsm['X_tsne']` (to
/// add it to a copy of an input `.h5ad`, see [`super::h5ad::write_h5ad`]).
pub fn write_embedding(path: &Path, y: &[f32], dims: usize) -> Result<(), IoError> {
    if dims == 0 || !y.len().is_multiple_of(dims) {
        return Err(IoError::Invalid {
            path: path.into(),
            reason: format!("{} values do not form rows of {dims} dimensions", y.len()),
        });
    }
    let n = y.len() / dims;
    match extension(path).as_str() {
        "npy" => write_atomic(path, |w| {
            super::npz::write_npy(w, &[n as u64, dims as u64], y.iter().copied())
        }),
        "csv" => write_atomic(path, |w| write_embedding_text(w, y, dims, b',')),
        "tsv" => write_atomic(path, |w| write_embedding_text(w, y, dims, b'\t')),
        "h5ad" => super::h5ad::write_h5ad(None, path, "X_tsne", y, dims),
        _ => Err(unknown_extension(
            path,
            "an embedding",
            ".npy, .csv, .tsv, .h5ad",
        )),
    }
}

/// The embedding as delimited text (`sep` = `,` or tab): a header `y1…`, then one point per
/// line in shortest round-trip decimals. Also what `-o -` writes to standard output.
pub fn write_embedding_text(
    w: &mut dyn Write,
    y: &[f32],
    dims: usize,
    sep: u8,
) -> std::io::Result<()> {
    let sep_text = [sep];
    let sep_text = std::str::from_utf8(&sep_text).map_err(std::io::Error::other)?;
    let header: Vec<String> = (1..=dims).map(|k| format!("y{k}")).collect();
    writeln!(w, "{}", header.join(sep_text))?;
    for row in y.chunks_exact(dims.max(1)) {
        for (k, v) in row.iter().enumerate() {
            if k > 0 {
                w.write_all(&[sep])?;
            }
            write!(w, "{v}")?;
        }
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// Writes integer labels as a 1-D `.npy` of `<u4` (the readers accept it back).
pub fn write_labels(path: &Path, codes: &[u32]) -> Result<(), IoError> {
    if extension(path) != "npy" {
        return Err(unknown_extension(path, "labels", ".npy"));
    }
    super::write_matrix(path, &[codes.len() as u64], codes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::read_points;
    use crate::Points;

    #[test]
    fn embedding_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let y = vec![1.0f32, -2.5, 3.25e-7, 4e9, f32::MIN_POSITIVE, 0.1];
        for dims in [1, 2, 3] {
            for ext in ["npy", "csv"] {
                let p = dir.path().join(format!("y{dims}.{ext}"));
                write_embedding(&p, &y, dims).unwrap();
                let back = read_points(&p).unwrap();
                assert_eq!(back, Points::new(6 / dims, dims, y.clone()), "{dims} {ext}");
            }
        }
        let text = std::fs::read_to_string(dir.path().join("y2.csv")).unwrap();
        assert!(text.starts_with("y1,y2\n1,-2.5\n"), "{text}");
        // Only the outputs are left: no temporary files.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 6);
    }

    #[test]
    fn labels_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.npy");
        write_labels(&p, &[3, 1, 3, 0]).unwrap();
        let back = crate::io::read_labels(&p).unwrap();
        assert_eq!(back.names, vec!["0", "1", "3"]);
        assert_eq!(back.codes, vec![2, 1, 2, 0]);
        assert!(write_labels(&dir.path().join("l.csv"), &[1]).is_err());
    }

    #[test]
    fn embedding_errors() {
        let dir = tempfile::tempdir().unwrap();
        let e = write_embedding(&dir.path().join("y.txt"), &[1.0], 1).unwrap_err();
        assert!(
            e.to_string()
                .contains("unsupported extension `.txt` for an embedding"),
            "{e}"
        );
        let e = write_embedding(&dir.path().join("y.npy"), &[1.0, 2.0, 3.0], 2).unwrap_err();
        assert!(
            e.to_string().contains("3 values do not form rows of 2"),
            "{e}"
        );
        let e = write_embedding(&dir.path().join("nope/y.npy"), &[1.0], 1).unwrap_err();
        assert!(e.to_string().contains("output directory"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn failed_write_leaves_nothing_and_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.csv");
        let e = write_atomic(&p, |w| {
            w.write_all(b"partial")?;
            Err(std::io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{}: cannot write: disk full", p.display())
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

        std::fs::write(&p, "old").unwrap();
        let _ = write_atomic(&p, |_| Err(std::io::Error::other("fail")));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        write_atomic(&p, |w| w.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        #[cfg(unix)]
        {
            // Same permissions as a plain `fs::write` would give, less execute/group write.
            use std::os::unix::fs::PermissionsExt;
            let plain = dir.path().join("plain.txt");
            std::fs::write(&plain, "x").unwrap();
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&p), mode(&plain) & 0o644);
        }
    }

    #[test]
    fn output_paths_are_checked_up_front() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        check_output_path(&d.join("y.npy"), OutputKind::Embedding).unwrap();
        check_output_path(&d.join("y.CSV"), OutputKind::Embedding).unwrap();
        check_output_path(&d.join("p.png"), OutputKind::Plot).unwrap();
        check_output_path(&d.join("r.json"), OutputKind::Report).unwrap();
        check_output_path(&d.join("l.npy"), OutputKind::Labels).unwrap();
        assert!(check_output_path(&d.join("l.csv"), OutputKind::Labels).is_err());
        let e = check_output_path(&d.join("p.jpg"), OutputKind::Plot).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("p.jpg: unsupported extension `.jpg` for a plot; expected one of .png"),
            "{e}"
        );
        let e = check_output_path(&d.join("y"), OutputKind::Embedding).unwrap_err();
        assert!(
            e.to_string().contains("unsupported extension (none)"),
            "{e}"
        );
        let e = check_output_path(&d.join("missing/r.json"), OutputKind::Report).unwrap_err();
        assert!(matches!(e, IoError::NoOutputDir { .. }), "{e}");
        std::fs::create_dir(d.join("x.npy")).unwrap();
        let e = check_output_path(&d.join("x.npy"), OutputKind::Embedding).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        // The probe leaves nothing behind.
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 1);
    }
}
