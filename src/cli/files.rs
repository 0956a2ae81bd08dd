//! The files the subcommands read and write alike: points (with an `.h5ad`'s matrix chosen
//! by `--use-rep`), labels (with `obs:COLUMN`), embeddings (with `-` for standard output),
//! and the guard that no output replaces an input; one place, so that `embed`, `knn`,
//! `gmm` and `transform` read and write the same files the same way.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use sgtsne::embed::Input;
use sgtsne::io::h5ad::{H5adMatrix, Rep};
use sgtsne::io::{self, Labels};

/// The points of a file: of an `.h5ad`, the matrix `use_rep` (`--use-rep`) names, dense or
/// sparse (what was read is said on stderr unless `quiet`).
pub(super) fn read_input(path: &Path, use_rep: Option<&str>, quiet: bool) -> Result<Input> {
    if !is_h5ad(path) {
        return Ok(Input::Points(io::read_points(path)?));
    }
    let read = io::h5ad::read_h5ad_points(path, &Rep::from_flag(use_rep))?;
    let (n, d) = read.matrix.shape();
    Ok(match read.matrix {
        H5adMatrix::Dense(points) => {
            if !quiet {
                eprintln!("{}: {} ({n} × {d})", path.display(), read.source);
            }
            Input::Points(points)
        }
        H5adMatrix::Sparse(rows) => {
            if !quiet {
                eprintln!(
                    "{}: {} ({n} × {d}, sparse: {} stored values, {:.2} %)",
                    path.display(),
                    read.source,
                    rows.nnz(),
                    100.0 * rows.nnz() as f64 / (n as f64 * d as f64)
                );
            }
            Input::Sparse(rows)
        }
    })
}

/// The name of the file at `path` in summaries and reports: its file name, else the path.
pub(super) fn display_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    )
}

/// `--labels`: `obs:COLUMN` of the `.h5ad` `input`, or a labels file.
pub(super) fn read_labels_for(labels: &Path, input: Option<&Path>) -> Result<Labels> {
    Ok(match (obs_column(labels), input) {
        (Some(column), Some(input)) => io::h5ad::read_h5ad_labels(input, column)?,
        _ => io::read_labels(labels)?,
    })
}

/// The column of `--labels obs:COLUMN`.
pub(super) fn obs_column(labels: &Path) -> Option<&str> {
    labels.to_str()?.strip_prefix("obs:")
}

/// Writes an embedding `y` (n × `dims`) to `out`: CSV on standard output for `-` (a reader
/// that closes the pipe early took what it wanted: no error), an `.h5ad` (a copy of
/// `h5ad_input` with it as obsm[`key`], or a new file), or any other [`io::write_embedding`]
/// format.
pub(super) fn write_y(
    out: &Path,
    h5ad_input: Option<&Path>,
    key: &str,
    y: &[f32],
    dims: usize,
) -> Result<()> {
    if is_stdout(out) {
        let mut w = std::io::BufWriter::new(std::io::stdout().lock());
        match io::write_embedding_text(&mut w, y, dims, b',').and_then(|()| w.flush()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            r => r.context("writing the embedding to standard output")?,
        }
    } else if is_h5ad(out) {
        io::h5ad::write_h5ad(h5ad_input, out, key, y, dims)?;
    } else {
        io::write_embedding(out, y, dims)?;
    }
    Ok(())
}

/// `-o -`: the embedding goes to standard output as CSV.
pub(super) fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

pub(super) fn is_h5ad(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("h5ad"))
}

/// Refuses any of `outputs` (flag, path) that names one of `inputs` (what, path), through
/// links too, with `hint(flag, what)` as the way round; `-` (standard output) is no file.
pub(super) fn refuse_outputs_over_inputs(
    outputs: &[(&str, Option<&Path>)],
    inputs: &[(&str, Option<&Path>)],
    hint: impl Fn(&str, &str) -> &'static str,
) -> Result<()> {
    for &(flag, out) in outputs {
        let Some(out) = out.filter(|p| !is_stdout(p)) else {
            continue;
        };
        for &(what, input) in inputs {
            if input.is_some_and(|input| same_file(out, input)) {
                anyhow::bail!(
                    "{flag} {} is {what}: the output would replace it; {}",
                    out.display(),
                    hint(flag, what)
                );
            }
        }
    }
    Ok(())
}

/// Whether two paths name one file (the second may not exist yet): on Unix the same device
/// and inode, so that a hard or symbolic link to the file is caught too.
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
