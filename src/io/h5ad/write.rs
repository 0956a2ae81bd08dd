//! The embedding into an `.h5ad`: added to a copy of the input, or in a minimal new file.

use std::path::Path;

use hdf5_pure::{AttrValue, File, FileBuilder};

use super::{h5_error, members, open};
use crate::io::error::IoError;
use crate::io::write::{write_atomic, write_atomic_path};

/// anndata's encoding attributes of an element: (`encoding-type`, `encoding-version`).
fn encoding(kind: &str, version: &str) -> [(&'static str, AttrValue); 2] {
    [
        ("encoding-type", AttrValue::VarLenString(kind.into())),
        ("encoding-version", AttrValue::VarLenString(version.into())),
    ]
}

/// Writes the embedding `y` (n × `dims`, row-major) as `obsm[key]` of the AnnData file
/// `path`, atomically.
///
/// With `source` (an `.h5ad` whose `obs` has n rows), `path` becomes a copy of it with
/// `obsm[key]` added (replacing an earlier one of that name) and every other element as it
/// was; `source` may be `path` itself (`--in-place`): the copy is edited and renamed over
/// it. Without `source`, `path` is a new AnnData file holding only `obs` names `0..n` and
/// `obsm[key]`.
pub fn write_h5ad(
    source: Option<&Path>,
    path: &Path,
    key: &str,
    y: &[f32],
    dims: usize,
) -> Result<(), IoError> {
    if dims == 0 || !y.len().is_multiple_of(dims) {
        return Err(IoError::Invalid {
            path: path.into(),
            reason: format!("{} values do not form rows of {dims} dimensions", y.len()),
        });
    }
    if key.is_empty() || key.contains('/') {
        return Err(IoError::Invalid {
            path: path.into(),
            reason: format!("`{key}` cannot name an obsm entry (empty, or holds a `/`)"),
        });
    }
    let n = y.len() / dims;
    match source {
        Some(source) => add_to_copy(source, path, key, y, n, dims),
        None => write_new(path, key, y, n, dims),
    }
}

/// The rows of the AnnData file's `obs`: the length of its index.
fn obs_rows(file: &File, path: &Path) -> Result<usize, IoError> {
    let index = file
        .group("obs")
        .ok()
        .and_then(|g| g.attrs().ok())
        .and_then(|a| a.get("_index").and_then(super::attr_string))
        .unwrap_or_else(|| "_index".into());
    let shape = file
        .dataset(&format!("obs/{index}"))
        .and_then(|d| d.shape())
        .map_err(|e| h5_error(path, "reading the obs index", e))?;
    Ok(shape.first().copied().unwrap_or(0) as usize)
}

fn add_to_copy(
    source: &Path,
    path: &Path,
    key: &str,
    y: &[f32],
    n: usize,
    dims: usize,
) -> Result<(), IoError> {
    let rows = obs_rows(&open(source)?, source)?;
    if rows != n {
        return Err(IoError::Invalid {
            path: path.into(),
            reason: format!(
                "the embedding has {n} rows but {} has {rows} observations",
                source.display()
            ),
        });
    }
    write_atomic_path(path, ".h5ad", |tmp| {
        let werr = |e: std::io::Error| IoError::Write {
            path: path.into(),
            source: e,
        };
        std::fs::copy(source, tmp).map_err(werr)?;
        let h5 = |e| h5_error(path, "adding the embedding", e);
        let file = File::open_rw(tmp).map_err(h5)?;
        let root = file.root();
        if !members(&file, "/").iter().any(|m| m == "obsm") {
            root.create_group_with("obsm", |g| {
                for (name, value) in encoding("dict", "0.1.0") {
                    g.set_attr(name, value);
                }
            })
            .map_err(h5)?;
        } else if members(&file, "obsm").iter().any(|m| m == key) {
            root.delete(&format!("obsm/{key}")).map_err(h5)?;
        }
        root.create_dataset(&format!("obsm/{key}"), |b| {
            b.with_f32_data(y).with_shape(&[n as u64, dims as u64]);
            for (name, value) in encoding("array", "0.2.0") {
                b.set_attr(name, value);
            }
        })
        .map_err(h5)?;
        file.commit().map_err(h5)?;
        file.close().map_err(h5)?;
        std::fs::File::open(tmp)
            .and_then(|f| f.sync_all())
            .map_err(werr)
    })
}

fn write_new(path: &Path, key: &str, y: &[f32], n: usize, dims: usize) -> Result<(), IoError> {
    let mut b = FileBuilder::new();
    for (name, value) in encoding("anndata", "0.1.0") {
        b.set_attr(name, value);
    }
    let names: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    for (frame, index) in [("obs", &names[..]), ("var", &[][..])] {
        let mut g = b.create_group(frame);
        for (name, value) in encoding("dataframe", "0.2.0") {
            g.set_attr(name, value);
        }
        g.set_attr("_index", AttrValue::VarLenString("_index".into()));
        g.set_attr("column-order", AttrValue::VarLenStringArray(Vec::new()));
        let refs: Vec<&str> = index.iter().map(String::as_str).collect();
        let ds = g.create_dataset("_index");
        ds.with_vlen_strings(&refs)
            .with_shape(&[index.len() as u64]);
        for (name, value) in encoding("string-array", "0.2.0") {
            ds.set_attr(name, value);
        }
        b.add_group(g.finish());
    }
    let mut g = b.create_group("obsm");
    for (name, value) in encoding("dict", "0.1.0") {
        g.set_attr(name, value);
    }
    let ds = g.create_dataset(key);
    ds.with_f32_data(y).with_shape(&[n as u64, dims as u64]);
    for (name, value) in encoding("array", "0.2.0") {
        ds.set_attr(name, value);
    }
    b.add_group(g.finish());
    write_atomic(path, |w| b.finish_to(w).map_err(std::io::Error::other))
}
