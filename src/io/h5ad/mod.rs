//! AnnData `.h5ad` files (scanpy's format) in and out, through the pure-Rust `hdf5-pure`
//! crate: no system HDF5 library and nothing to build, so the README's two commands still
//! set everything up on a fresh machine.
//!
//! What anndata writes (format 0.1 / 0.2, `encoding-type` attributes on every element) and
//! what is read of it:
//!
//! | element | layout | read as |
//! |---|---|---|
//! | `X` dense | 2-D dataset, any float or integer type, chunked and gzip or not | [`Points`] |
//! | `X` sparse | group `csr_matrix` / `csc_matrix`: `data`, `indices`, `indptr`, attribute `shape` | [`CsrPoints`] (CSC is transposed to rows) |
//! | `obsm[KEY]` | 2-D dataset (dense) or a sparse group as `X` | as `X` |
//! | `obs[COL]` | categorical group (`codes`, `categories`), or a string / integer dataset | [`Labels`] |
//! | `obsp[KEY]` | sparse n × n group, e.g. scanpy's neighbour graph `obsp['distances']` | [`CsrPoints`] |
//!
//! Writing ([`write_h5ad`]) copies the input file and adds the embedding as `obsm[KEY]` in
//! place (`hdf5-pure`'s in-place editing appends the new objects and repoints the
//! superblock), so every other element stays byte for byte what it was; the copy is renamed
//! over the output at the end, so a failure leaves no partial file, and `--in-place` is the
//! same with the input as output. Without an `.h5ad` input, a minimal AnnData file is written
//! (`obs` names `0..n`, no `X`) that `anndata.read_h5ad` opens.

mod labels;
mod read;
mod write;

use std::path::Path;

pub use labels::{read_h5ad_labels, read_h5ad_numbers, read_h5ad_obs_columns};
pub use read::{read_h5ad_obsp, read_h5ad_points, H5adMatrix, H5adPoints, Rep};
pub use write::write_h5ad;

use super::error::IoError;
#[cfg(doc)]
use crate::{csr_points::CsrPoints, io::Labels, Points};

/// Opens `path` for reading, keeping "no such file" distinct.
fn open(path: &Path) -> Result<hdf5_pure::File, IoError> {
    if !path.exists() {
        return Err(IoError::NotFound { path: path.into() });
    }
    hdf5_pure::File::open(path).map_err(|e| h5_error(path, "cannot open as HDF5", e))
}

/// An error of the HDF5 layer, with what was being done.
fn h5_error(path: &Path, doing: &str, e: hdf5_pure::Error) -> IoError {
    match e {
        hdf5_pure::Error::Io(source) => IoError::Read {
            path: path.into(),
            source,
        },
        e => IoError::format(path, None, format!("{doing}: {e}")),
    }
}

/// The names of the members (datasets and groups) of the group at `group`, sorted; empty
/// when there is no such group.
fn members(file: &hdf5_pure::File, group: &str) -> Vec<String> {
    let Ok(g) = file.group(group) else {
        return Vec::new();
    };
    let mut names: Vec<String> = g.datasets().unwrap_or_default();
    names.extend(g.groups().unwrap_or_default());
    names.sort();
    names
}

/// The `encoding-type` attribute of the group at `path`, if it has one.
fn encoding_type(file: &hdf5_pure::File, path: &str) -> Option<String> {
    let attrs = file.group(path).ok()?.attrs().ok()?;
    attr_string(attrs.get("encoding-type")?)
}

/// A string attribute's value, whatever string type it was written with.
fn attr_string(v: &hdf5_pure::AttrValue) -> Option<String> {
    use hdf5_pure::AttrValue as A;
    match v {
        A::String(s) | A::AsciiString(s) | A::VarLenString(s) => Some(s.clone()),
        A::StringSized { value, .. } | A::AsciiStringSized { value, .. } => Some(value.clone()),
        _ => None,
    }
}

/// A list of names for an error message: `a, b, c`, or "none".
fn listing(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// What an AnnData file holds, as `sgtsne info FILE` shows it: one line per element
/// (`X`, each `obsm`, `obsp` and `layers` entry, each `obs` column), read from the metadata
/// only (shapes, types, attributes), so it is quick on any size.
pub fn describe(path: &Path) -> Result<Vec<(String, String)>, IoError> {
    let file = open(path)?;
    let mut lines = Vec::new();
    let rows = |ds: &hdf5_pure::Dataset| {
        let shape = ds.shape().unwrap_or_default();
        let dtype = ds.dtype().map(|t| t.to_string()).unwrap_or_default();
        let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
        format!("{} {dtype}", dims.join(" × "))
    };
    let matrix = |element: &str| match file.dataset(element) {
        Ok(ds) => format!("dense {}", rows(&ds)),
        Err(_) => {
            let kind = encoding_type(&file, element).unwrap_or_else(|| "group".into());
            let stored = file
                .dataset(&format!("{element}/data"))
                .and_then(|d| d.shape())
                .ok()
                .and_then(|s| s.first().copied());
            let shape = file
                .group(element)
                .and_then(|g| g.attrs())
                .ok()
                .and_then(|a| match a.get("shape") {
                    Some(hdf5_pure::AttrValue::I64Array(v)) => {
                        Some(v.iter().map(i64::to_string).collect::<Vec<_>>().join(" × "))
                    }
                    _ => None,
                });
            match (shape, stored) {
                (Some(shape), Some(nnz)) => format!("{kind} {shape}, {nnz} stored values"),
                _ => kind,
            }
        }
    };
    if members(&file, "/").iter().any(|m| m == "X") {
        lines.push(("X".to_string(), matrix("X")));
    }
    for group in ["obsm", "obsp", "layers"] {
        for key in members(&file, group) {
            let element = format!("{group}/{key}");
            lines.push((format!("{group}['{key}']"), matrix(&element)));
        }
    }
    for column in members(&file, "obs") {
        if column == "_index" || column == "__categories" {
            continue;
        }
        let element = format!("obs/{column}");
        let kind = match file.dataset(&element) {
            Ok(ds) => ds.dtype().map(|t| t.to_string()).unwrap_or_default(),
            Err(_) => {
                let kind = encoding_type(&file, &element).unwrap_or_else(|| "group".into());
                match file
                    .dataset(&format!("{element}/categories"))
                    .and_then(|d| d.shape())
                {
                    Ok(s) => format!("{kind} of {} categories", s.first().copied().unwrap_or(0)),
                    Err(_) => kind,
                }
            }
        };
        lines.push((format!("obs['{column}']"), kind));
    }
    Ok(lines)
}
