//! The points of an `.h5ad`: `X` or an `obsm` matrix, dense or sparse.

use std::path::Path;

use hdf5_pure::{DType, File};

use super::{encoding_type, h5_error, listing, members, open};
use crate::csr_points::CsrPoints;
use crate::io::error::{to_f32, IoError, Place};
use crate::Points;

/// Which matrix of an AnnData file holds the points (`--use-rep`, as scanpy calls it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Rep {
    /// `obsm['X_pca']` when the file has it, else `X` (scanpy's choice for `X_pca`).
    #[default]
    Default,
    /// The data matrix `X`.
    X,
    /// `obsm[KEY]`.
    Obsm(String),
}

impl Rep {
    /// The representation `--use-rep` names: none for the default, `X`, or an obsm key.
    pub fn from_flag(flag: Option<&str>) -> Rep {
        match flag {
            None => Rep::Default,
            Some("X") => Rep::X,
            Some(key) => Rep::Obsm(key.to_string()),
        }
    }
}

/// A matrix as stored: dense rows, or sparse rows never densified.
#[derive(Clone, Debug, PartialEq)]
pub enum H5adMatrix {
    /// A dense n × d matrix.
    Dense(Points),
    /// A CSR or CSC matrix, as rows.
    Sparse(CsrPoints),
}

impl H5adMatrix {
    /// Rows and columns.
    pub fn shape(&self) -> (usize, usize) {
        match self {
            H5adMatrix::Dense(p) => (p.n, p.d),
            H5adMatrix::Sparse(s) => (s.n, s.d),
        }
    }
}

/// The points read from an `.h5ad`, and where they were found.
#[derive(Clone, Debug)]
pub struct H5adPoints {
    /// The matrix.
    pub matrix: H5adMatrix,
    /// Where in the file: `X` or `obsm['KEY']`.
    pub source: String,
}

/// Reads the points of the AnnData file at `path`: the matrix `rep` names, dense (any float
/// or integer type, chunked and compressed included) or sparse (`csr_matrix` and
/// `csc_matrix` groups). Values are checked as every reader checks them (finite, within
/// `f32`), errors name the file, the element and the row and column.
pub fn read_h5ad_points(path: &Path, rep: &Rep) -> Result<H5adPoints, IoError> {
    let file = open(path)?;
    let obsm = members(&file, "obsm");
    let (element, source) = match rep {
        Rep::Default if obsm.iter().any(|k| k == "X_pca") => {
            ("obsm/X_pca".to_string(), "obsm['X_pca']".to_string())
        }
        Rep::Default | Rep::X => {
            if !members(&file, "/").iter().any(|k| k == "X") {
                let hint = if obsm.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; choose an obsm matrix with --use-rep ({})",
                        listing(&obsm)
                    )
                };
                return Err(IoError::format(
                    path,
                    None,
                    format!("no `X` matrix in this AnnData file{hint}"),
                ));
            }
            ("X".to_string(), "X".to_string())
        }
        Rep::Obsm(key) => {
            if !obsm.contains(key) {
                return Err(IoError::format(
                    path,
                    None,
                    format!("no obsm['{key}']; obsm holds: {}", listing(&obsm)),
                ));
            }
            (format!("obsm/{key}"), format!("obsm['{key}']"))
        }
    };
    let matrix = read_matrix(&file, path, &element, &source)?;
    let (n, d) = matrix.shape();
    if n == 0 || d == 0 {
        return Err(IoError::no_data(path, format!("{source} is {n} × {d}")));
    }
    Ok(H5adPoints { matrix, source })
}

/// The sparse n × n matrix `obsp[key]` of the AnnData file at `path`: scanpy's neighbour
/// graph is `obsp['distances']` (each row holds a point's neighbours and their Euclidean
/// distances; the point itself is not stored). A missing key is an error listing the obsp
/// keys there are.
pub fn read_h5ad_obsp(path: &Path, key: &str) -> Result<CsrPoints, IoError> {
    let file = open(path)?;
    let obsp = members(&file, "obsp");
    if !obsp.iter().any(|k| k == key) {
        return Err(IoError::format(
            path,
            None,
            format!(
                "no obsp['{key}'] (scanpy's sc.pp.neighbors writes obsp['distances']); obsp \
                 holds: {}",
                listing(&obsp)
            ),
        ));
    }
    let source = format!("obsp['{key}']");
    match read_matrix(&file, path, &format!("obsp/{key}"), &source)? {
        H5adMatrix::Sparse(graph) if graph.n == graph.d => Ok(graph),
        H5adMatrix::Sparse(graph) => Err(IoError::format(
            path,
            None,
            format!("{source} is {} × {}, not square", graph.n, graph.d),
        )),
        H5adMatrix::Dense(_) => Err(IoError::format(
            path,
            None,
            format!("{source} is dense; a neighbour graph is a csr_matrix"),
        )),
    }
}

/// A dense dataset or a sparse group at `element`.
fn read_matrix(
    file: &File,
    path: &Path,
    element: &str,
    source: &str,
) -> Result<H5adMatrix, IoError> {
    if let Ok(ds) = file.dataset(element) {
        let shape = ds
            .shape()
            .map_err(|e| h5_error(path, &format!("{source}: shape"), e))?;
        let (n, d) = match shape[..] {
            [n] => (n as usize, 1),
            [n, d] => (n as usize, d as usize),
            _ => {
                return Err(IoError::format(
                    path,
                    None,
                    format!(
                        "{source} has {} dimensions; a matrix needs 1 or 2",
                        shape.len()
                    ),
                ))
            }
        };
        let values = read_values(&ds, path, source)?;
        check_finite(&values, path, source, d)?;
        return Ok(H5adMatrix::Dense(Points::new(n, d, values)));
    }
    match encoding_type(file, element).as_deref() {
        Some(kind @ ("csr_matrix" | "csc_matrix")) => {
            read_sparse(file, path, element, source, kind == "csc_matrix").map(H5adMatrix::Sparse)
        }
        Some(other) => Err(IoError::format(
            path,
            None,
            format!("{source} is a `{other}`; expected a dense array or a csr/csc matrix"),
        )),
        None => Err(IoError::format(
            path,
            None,
            format!("{source} is neither a dataset nor a group with an encoding-type"),
        )),
    }
}

/// A numeric dataset's values as `f32`: f64 values are checked against `f32`'s range
/// (row and column named), integers converted.
fn read_values(ds: &hdf5_pure::Dataset, path: &Path, source: &str) -> Result<Vec<f32>, IoError> {
    let dtype = ds
        .dtype()
        .map_err(|e| h5_error(path, &format!("{source}: datatype"), e))?;
    let err = |e| h5_error(path, &format!("{source}: reading"), e);
    match dtype {
        DType::F32
        | DType::I8
        | DType::I16
        | DType::I32
        | DType::I64
        | DType::U8
        | DType::U16
        | DType::U32
        | DType::U64 => ds.read_f32().map_err(err),
        DType::F64 => {
            let width = ds.shape().ok().and_then(|s| s.get(1).copied()).unwrap_or(1) as usize;
            let wide = ds.read_f64().map_err(err)?;
            wide.iter()
                .enumerate()
                .map(|(i, &v)| to_f32(v, path, cell(i, width), None))
                .collect()
        }
        other => Err(IoError::Dtype {
            path: path.into(),
            dtype: format!("{other} in {source}"),
            reason: "points must be numbers",
        }),
    }
}

/// The place of flat element `i` of a matrix `width` wide.
fn cell(i: usize, width: usize) -> Place {
    let width = width.max(1);
    Place::Cell {
        row: i / width + 1,
        col: i % width + 1,
        line: None,
    }
}

/// Every value finite; the first that is not is named by row and column.
fn check_finite(values: &[f32], path: &Path, source: &str, width: usize) -> Result<(), IoError> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(IoError::NotFinite {
            path: path.into(),
            what: "non-finite",
            value: format!("{} in {source}", values[i]),
            at: cell(i, width),
        }),
    }
}

/// A `csr_matrix` or `csc_matrix` group (anndata ≥ 0.7; `h5sparse_format` of older files is
/// not read), checked: `indptr` non-decreasing from 0 to nnz, indices within the shape,
/// values finite. A CSC matrix is transposed to rows ([`CsrPoints::transposed`], O(nnz)).
fn read_sparse(
    file: &File,
    path: &Path,
    element: &str,
    source: &str,
    csc: bool,
) -> Result<CsrPoints, IoError> {
    let bad = |reason: String| IoError::format(path, None, format!("{source}: {reason}"));
    let attrs = file
        .group(element)
        .and_then(|g| g.attrs())
        .map_err(|e| h5_error(path, &format!("{source}: attributes"), e))?;
    let shape: Vec<i64> = match attrs.get("shape") {
        Some(hdf5_pure::AttrValue::I64Array(v)) => v.clone(),
        Some(hdf5_pure::AttrValue::I32Array(v)) => v.iter().map(|&x| x as i64).collect(),
        Some(hdf5_pure::AttrValue::U64Array(v)) => v.iter().map(|&x| x as i64).collect(),
        Some(hdf5_pure::AttrValue::U32Array(v)) => v.iter().map(|&x| x as i64).collect(),
        _ => return Err(bad("no integer `shape` attribute".into())),
    };
    let [n, d] = shape[..] else {
        return Err(bad(format!("shape {shape:?} is not 2-D")));
    };
    if n < 0 || d < 0 || d > u32::MAX as i64 {
        return Err(bad(format!("shape {shape:?} out of range")));
    }
    let (n, d) = (n as usize, d as usize);
    let part = |name: &str| {
        file.dataset(&format!("{element}/{name}")).map_err(|_| {
            bad(format!(
                "no `{name}` array (members: {})",
                listing(&members(file, element))
            ))
        })
    };
    let data_ds = part("data")?;
    let data = read_values(&data_ds, path, &format!("{source}/data"))?;
    // Read straight as u32 (anndata writes int32 or int64, never negative): no 8-byte copy
    // of the largest array; a negative or too large index fails the range check below.
    let indices = part("indices")?
        .read_u32()
        .map_err(|e| h5_error(path, &format!("{source}/indices"), e))?;
    let indptr = part("indptr")?
        .read_i64()
        .map_err(|e| h5_error(path, &format!("{source}/indptr"), e))?;
    let (major, minor) = if csc { (d, n) } else { (n, d) };
    if indptr.len() != major + 1 {
        return Err(bad(format!(
            "indptr has {} entries; shape {n} × {d} needs {}",
            indptr.len(),
            major + 1
        )));
    }
    let nnz = data.len();
    if indices.len() != nnz {
        return Err(bad(format!("{} indices for {nnz} values", indices.len())));
    }
    if indptr[0] != 0 || indptr[major] != nnz as i64 || indptr.windows(2).any(|w| w[1] < w[0]) {
        return Err(bad(format!(
            "indptr must rise from 0 to the {nnz} values without falling"
        )));
    }
    if let Some(p) = indices.iter().position(|&j| j as usize >= minor) {
        let line = indptr.partition_point(|&s| s <= p as i64);
        return Err(bad(format!(
            "index {} of {} {line} (1-based) is outside 0..{minor}",
            indices[p],
            if csc { "column" } else { "row" }
        )));
    }
    if let Some(p) = data.iter().position(|v| !v.is_finite()) {
        return Err(bad(format!(
            "value {} (stored entry {}) is not finite",
            data[p],
            p + 1
        )));
    }
    let indptr: Vec<u64> = indptr.iter().map(|&x| x as u64).collect();
    // A CSC matrix is the CSR of its transpose.
    let stored = CsrPoints {
        n: major,
        d: minor,
        indptr,
        indices,
        data,
    };
    Ok(if csc { stored.transposed() } else { stored })
}
