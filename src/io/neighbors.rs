//! Neighbour lists in files: read for `embed --knn-from`, written by `sgtsne knn`.
//!
//! Three sources, as other tools leave them:
//! - `FILE.npz` with two n × k arrays `indices` and `distances` (what `sgtsne knn` writes;
//!   `knn_indices` / `knn_dists`, umap-learn's names, are read too);
//! - `INDICES.npy,DISTANCES.npy`, the same two arrays as separate files (scikit-learn's
//!   `kneighbors`, FAISS, pynndescent);
//! - `FILE.h5ad`, whose `obsp['distances']` is scanpy's neighbour graph (a CSR matrix whose
//!   row i holds point i's neighbours and their distances, the point itself left out).
//!
//! Every row and index is checked here against the number of points, each error naming the
//! file and the row and column (1-based) with the value found. An index of −1 is an absent
//! neighbour (FAISS and pynndescent pad short rows with it) and is skipped with its distance.
//! Distances are read as they are written: plain distances, not squared.

use std::path::{Path, PathBuf};

use super::error::{extension, unknown_extension, IoError, Place};
use super::h5ad::read_h5ad_obsp;
use super::npy::{read_matrix_from, MatrixShape};
use super::npz::write_npz;

/// Neighbour lists of n points, row by row, as read: rows may differ in length, may hold the
/// point itself, and need not be sorted ([`crate::knn::precomputed`] makes them a graph).
#[derive(Clone, Debug, PartialEq)]
pub struct NeighborLists {
    /// Row i is `indices[indptr[i]..indptr[i + 1]]`.
    pub indptr: Vec<usize>,
    /// Neighbour indices, counted from 0, each below n.
    pub indices: Vec<u32>,
    /// The distances matching `indices`: finite, not negative.
    pub distances: Vec<f64>,
}

impl NeighborLists {
    /// Number of points (rows).
    pub fn n(&self) -> usize {
        self.indptr.len().saturating_sub(1)
    }
}

/// Array names tried in an `.npz`, in order: ours, then umap-learn's.
const NPZ_NAMES: [(&str, &str); 2] = [("indices", "distances"), ("knn_indices", "knn_dists")];

/// Reads the neighbour lists of `n` points from `spec`: `FILE.npz`, `FILE.h5ad` or
/// `INDICES.npy,DISTANCES.npy` (see the module doc).
pub fn read_neighbors(spec: &Path, n: usize) -> Result<NeighborLists, IoError> {
    if let Some((a, b)) = spec.to_str().and_then(|s| s.split_once(',')) {
        let (ipath, dpath) = (Path::new(a), Path::new(b));
        for p in [ipath, dpath] {
            if extension(p) != "npy" {
                return Err(unknown_extension(p, "a pair of neighbour arrays", ".npy"));
            }
        }
        let open = |p: &Path| -> Result<(std::fs::File, u64), IoError> {
            let f = std::fs::File::open(p).map_err(|e| IoError::read(p, e))?;
            let len = f.metadata().map_err(|e| IoError::read(p, e))?.len();
            Ok((f, len))
        };
        let (fi, li) = open(ipath)?;
        let (fd, ld) = open(dpath)?;
        return from_arrays(n, (fi, li, ipath), (fd, ld, dpath));
    }
    match extension(spec).as_str() {
        "npz" => read_npz(spec, n),
        "h5ad" => from_obsp(spec, n),
        _ => Err(unknown_extension(
            spec,
            "neighbours",
            ".npz, .h5ad (obsp['distances']), or INDICES.npy,DISTANCES.npy",
        )),
    }
}

/// The two arrays of an `.npz` archive.
fn read_npz(path: &Path, n: usize) -> Result<NeighborLists, IoError> {
    let file = std::fs::File::open(path).map_err(|e| IoError::read(path, e))?;
    let mut zip = zip::ZipArchive::new(file)
        .map_err(|e| IoError::format(path, None, format!("not a valid .npz (zip) file: {e}")))?;
    let names: Vec<String> = zip
        .file_names()
        .filter_map(|f| f.ok()?.strip_suffix(".npy").map(str::to_string))
        .collect();
    let Some((iname, dname)) = NPZ_NAMES
        .iter()
        .find(|(i, d)| names.iter().any(|x| x == i) && names.iter().any(|x| x == d))
    else {
        return Err(IoError::format(
            path,
            None,
            format!(
                "expected arrays `indices` and `distances` (n × k); the archive holds: {}",
                if names.is_empty() {
                    "no arrays".to_string()
                } else {
                    names.join(", ")
                }
            ),
        ));
    };
    // Each entry is read once, in turn; a zip entry is a stream, not a file to seek in.
    let entry_path = |name: &str| PathBuf::from(format!("{}[{name}]", path.display()));
    let (ipath, dpath) = (entry_path(iname), entry_path(dname));
    let mut lists = NeighborLists {
        indptr: Vec::new(),
        indices: Vec::new(),
        distances: Vec::new(),
    };
    let (e, size) = npz_entry(&mut zip, iname, &ipath)?;
    let ishape = read_indices(e, size, &ipath, n, &mut lists)?;
    let (e, size) = npz_entry(&mut zip, dname, &dpath)?;
    read_distances(e, size, &dpath, ishape, &mut lists)?;
    Ok(compact(lists))
}

/// The array `name` of an `.npz` archive, as a stream, and its length.
fn npz_entry<'a>(
    zip: &'a mut zip::ZipArchive<std::fs::File>,
    name: &str,
    path: &Path,
) -> Result<(zip::read::ZipFile<'a, std::fs::File>, u64), IoError> {
    let e = zip
        .by_name(&format!("{name}.npy"))
        .map_err(|e| IoError::format(path, None, format!("cannot open the array: {e}")))?;
    let size = e.size();
    Ok((e, size))
}

/// The lists from an index array and a distance array, each a `(reader, length, path)`.
fn from_arrays(
    n: usize,
    (ir, ilen, ipath): (impl std::io::Read, u64, &Path),
    (dr, dlen, dpath): (impl std::io::Read, u64, &Path),
) -> Result<NeighborLists, IoError> {
    let mut lists = NeighborLists {
        indptr: Vec::new(),
        indices: Vec::new(),
        distances: Vec::new(),
    };
    let shape = read_indices(ir, ilen, ipath, n, &mut lists)?;
    read_distances(dr, dlen, dpath, shape, &mut lists)?;
    Ok(compact(lists))
}

/// Reads the n × k index array into `lists` (k slots per row, −1 kept as `u32::MAX` until
/// [`compact`]); checks the row count and every index.
fn read_indices(
    r: impl std::io::Read,
    len: u64,
    path: &Path,
    n: usize,
    lists: &mut NeighborLists,
) -> Result<MatrixShape, IoError> {
    let (shape, indices) = read_matrix_from(
        r,
        len,
        path,
        |s| {
            if !s.integer {
                return Err(IoError::format(
                    path,
                    None,
                    "neighbour indices must be an integer array",
                ));
            }
            if s.rows != n {
                return Err(IoError::format(
                    path,
                    None,
                    format!(
                        "{} rows of neighbours, but the points are {n}: the kNN was computed \
                         for other data",
                        s.rows
                    ),
                ));
            }
            Ok(())
        },
        |row, col, v| {
            if v == -1.0 {
                Ok(u32::MAX)
            } else if v >= 0.0 && v < n as f64 {
                Ok(v as u32)
            } else {
                Err(IoError::format(
                    path,
                    Some(cell(row, col)),
                    format!("index {v} is out of range for {n} points (indices count from 0)"),
                ))
            }
        },
    )?;
    lists.indices = indices;
    Ok(shape)
}

/// Reads the distance array, which must have the index array's shape.
fn read_distances(
    r: impl std::io::Read,
    len: u64,
    path: &Path,
    ishape: MatrixShape,
    lists: &mut NeighborLists,
) -> Result<(), IoError> {
    let cols = ishape.cols;
    let (_, distances) = read_matrix_from(
        r,
        len,
        path,
        |s| {
            if (s.rows, s.cols) != (ishape.rows, ishape.cols) {
                return Err(IoError::format(
                    path,
                    None,
                    format!(
                        "the distances are {} × {}, the indices {} × {}",
                        s.rows, s.cols, ishape.rows, ishape.cols
                    ),
                ));
            }
            Ok(())
        },
        |row, col, v| {
            check_distance(v, path, row, col)?;
            Ok(v)
        },
    )?;
    lists.distances = distances;
    lists.indptr = (0..=ishape.rows).map(|i| i * cols).collect();
    Ok(())
}

/// A distance must be a number, not negative.
fn check_distance(v: f64, path: &Path, row: usize, col: usize) -> Result<(), IoError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(IoError::format(
            path,
            Some(cell(row, col)),
            format!("distance {v}: distances must be finite and not negative"),
        ))
    }
}

fn cell(row: usize, col: usize) -> Place {
    Place::Cell {
        row: row + 1,
        col: col + 1,
        line: None,
    }
}

/// Drops the absent neighbours (index −1) from fixed-width rows.
fn compact(lists: NeighborLists) -> NeighborLists {
    if !lists.indices.contains(&u32::MAX) {
        return lists;
    }
    let mut out = NeighborLists {
        indptr: vec![0],
        indices: Vec::with_capacity(lists.indices.len()),
        distances: Vec::with_capacity(lists.indices.len()),
    };
    for w in lists.indptr.windows(2) {
        for t in w[0]..w[1] {
            if lists.indices[t] != u32::MAX {
                out.indices.push(lists.indices[t]);
                out.distances.push(lists.distances[t]);
            }
        }
        out.indptr.push(out.indices.len());
    }
    out
}

/// scanpy's `obsp['distances']` as neighbour lists.
fn from_obsp(path: &Path, n: usize) -> Result<NeighborLists, IoError> {
    let graph = read_h5ad_obsp(path, "distances")?;
    if graph.n != n {
        return Err(IoError::format(
            path,
            None,
            format!(
                "obsp['distances'] is {0} × {0}, but the points are {n}: the neighbours were \
                 computed for other data",
                graph.n
            ),
        ));
    }
    for i in 0..graph.n {
        let (a, b) = (graph.indptr[i] as usize, graph.indptr[i + 1] as usize);
        for t in a..b {
            check_distance(graph.data[t] as f64, path, i, graph.indices[t] as usize)?;
        }
    }
    Ok(NeighborLists {
        indptr: graph.indptr.iter().map(|&p| p as usize).collect(),
        indices: graph.indices,
        distances: graph.data.iter().map(|&d| d as f64).collect(),
    })
}

impl NeighborLists {
    /// Lists given in memory (the Python package's `neighbors=` and sparse kNN graphs):
    /// row i is `indices[indptr[i]..indptr[i + 1]]` among `n` points, an index of −1 an
    /// absent neighbour (dropped), distances plain. Every row and value is checked as the
    /// files' are, each error naming `source` and the (1-based) row and column.
    pub fn from_rows(
        n: usize,
        indptr: Vec<usize>,
        indices: &[i64],
        distances: Vec<f64>,
        source: &str,
    ) -> crate::Result<NeighborLists> {
        let bad = |what: String| crate::Error::Data(format!("{source}: {what}"));
        if indptr.len() != n + 1 || indptr.first() != Some(&0) {
            return Err(bad(format!(
                "{} row starts for {n} points (n + 1 expected, the first 0)",
                indptr.len()
            )));
        }
        if indptr.windows(2).any(|w| w[0] > w[1]) || indptr[n] != indices.len() {
            return Err(bad(
                "row starts must ascend to the number of neighbours".into()
            ));
        }
        if distances.len() != indices.len() {
            return Err(bad(format!(
                "{} distances for {} neighbour indices",
                distances.len(),
                indices.len()
            )));
        }
        let mut checked = Vec::with_capacity(indices.len());
        for (row, w) in indptr.windows(2).enumerate() {
            let row_values = indices[w[0]..w[1]].iter().zip(&distances[w[0]..w[1]]);
            for (col, (&v, &dist)) in row_values.enumerate() {
                let col = col + 1;
                if v == -1 {
                    checked.push(u32::MAX);
                } else if (0..n as i64).contains(&v) {
                    checked.push(v as u32);
                } else {
                    return Err(bad(format!(
                        "row {}, column {col}: index {v} is out of range for {n} points \
                         (indices count from 0)",
                        row + 1
                    )));
                }
                if !(dist.is_finite() && dist >= 0.0) {
                    return Err(bad(format!(
                        "row {}, column {col}: distance {dist}: distances must be finite and \
                         not negative",
                        row + 1
                    )));
                }
            }
        }
        let lists = NeighborLists {
            indptr,
            indices: checked,
            distances,
        };
        Ok(compact(lists))
    }
}

/// The integer type of the indices `write_neighbors` stores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IndexType {
    /// `<i8`: numpy's default integer, what scikit-learn and scanpy use.
    #[default]
    I64,
    /// `<u4`: half the size; enough below 4,294,967,295 points.
    U32,
}

/// Writes n × k neighbours as an `.npz` (uncompressed, as `numpy.savez`): `indices`
/// (`index_type`) and `distances` (`<f8`), atomically. `distances` are plain distances:
/// stored in `f64`, so that squaring them gives back the search's `f32` squared distances
/// exactly, and `embed --knn-from` on this file equals the run that searched inline.
pub fn write_neighbors(
    path: &Path,
    n: usize,
    k: usize,
    indices: &[u32],
    distances: &[f64],
    index_type: IndexType,
) -> Result<(), IoError> {
    if extension(path) != "npz" {
        return Err(unknown_extension(path, "neighbours", ".npz"));
    }
    if indices.len() != n * k || distances.len() != n * k {
        return Err(IoError::Invalid {
            path: path.into(),
            reason: format!(
                "{} indices and {} distances do not form {n} rows of {k}",
                indices.len(),
                distances.len()
            ),
        });
    }
    let shape = [n as u64, k as u64];
    write_npz(path, n * k * 8 >= u32::MAX as usize, |npz| {
        match index_type {
            IndexType::I64 => npz.array("indices", &shape, indices.iter().map(|&j| j as i64)),
            IndexType::U32 => npz.array("indices", &shape, indices.iter().copied()),
        }?;
        npz.array("distances", &shape, distances.iter().copied())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lists(n: usize, k: usize) -> (Vec<u32>, Vec<f64>) {
        let idx = (0..n * k)
            .map(|t| ((t / k + 1 + t % k) % n) as u32)
            .collect();
        let dist = (0..n * k).map(|t| (t % k) as f64 * 0.5 + 0.25).collect();
        (idx, dist)
    }

    #[test]
    fn npz_round_trips_in_both_index_types() {
        let dir = tempfile::tempdir().unwrap();
        let (idx, dist) = lists(7, 3);
        for t in [IndexType::I64, IndexType::U32] {
            let p = dir.path().join("knn.npz");
            write_neighbors(&p, 7, 3, &idx, &dist, t).unwrap();
            let back = read_neighbors(&p, 7).unwrap();
            assert_eq!(back.indices, idx);
            assert_eq!(back.distances, dist);
            assert_eq!(back.indptr, vec![0, 3, 6, 9, 12, 15, 18, 21]);
        }
    }

    #[test]
    fn bad_files_are_refused_with_their_place() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("knn.npz");
        let (mut idx, mut dist) = lists(5, 2);
        write_neighbors(&p, 5, 2, &idx, &dist, IndexType::I64).unwrap();
        let err = read_neighbors(&p, 6).unwrap_err().to_string();
        assert!(err.contains("5 rows") && err.contains("are 6"), "{err}");
        idx[3] = 9;
        write_neighbors(&p, 5, 2, &idx, &dist, IndexType::I64).unwrap();
        let err = read_neighbors(&p, 5).unwrap_err().to_string();
        assert!(
            err.contains("row 2, column 2") && err.contains("index 9"),
            "{err}"
        );
        idx[3] = 0;
        dist[4] = -1.0;
        write_neighbors(&p, 5, 2, &idx, &dist, IndexType::I64).unwrap();
        let err = read_neighbors(&p, 5).unwrap_err().to_string();
        assert!(
            err.contains("row 3, column 1") && err.contains("-1"),
            "{err}"
        );
        dist[4] = f64::NAN;
        write_neighbors(&p, 5, 2, &idx, &dist, IndexType::I64).unwrap();
        let err = read_neighbors(&p, 5).unwrap_err().to_string();
        assert!(err.contains("NaN"), "{err}");
        let err = read_neighbors(&dir.path().join("knn.txt"), 5)
            .unwrap_err()
            .to_string();
        assert!(err.contains(".npz, .h5ad"), "{err}");
    }

    #[test]
    fn absent_neighbours_are_dropped() {
        let l = compact(NeighborLists {
            indptr: vec![0, 2, 4],
            indices: vec![1, u32::MAX, 0, 1],
            distances: vec![0.5, 0.0, 0.5, 0.0],
        });
        assert_eq!(l.indptr, vec![0, 1, 3]);
        assert_eq!(l.indices, vec![1, 0, 1]);
    }
}
