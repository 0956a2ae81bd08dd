//! Any numeric 2-D `.npy` array read into a row-major vector of the reader's own type,
//! each value checked and converted as it comes (neighbour indices and distances): no
//! buffer of the whole array in another type, and the first bad value in storage order
//! reported with its row and column.

use std::io::Read;
use std::path::Path;

use rayon::prelude::*;

use super::{for_each_f64, Elem, Header, Num};
use crate::io::error::IoError;

/// Bytes read per chunk.
const CHUNK_BYTES: usize = 8 << 20;

/// Values a thread converts at a time, within a chunk.
const PART: usize = 1 << 16;

/// The shape and element type of an array, known before its values are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MatrixShape {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    /// Whether the element type is an integer one.
    pub(crate) integer: bool,
}

/// Reads a numeric 1-D (as n × 1) or 2-D array from `r` (`total` bytes long): `start` sees
/// the shape first (its error stops the read before any data), then `convert(row, col,
/// value)` makes each element of the row-major result, rows and columns counted from 0; the
/// first error in storage order is returned. A C-order array's chunks are converted on all
/// the pool's threads (a 10M × 90 neighbour file holds 1.8 billion values: one thread took
/// about 5 ns a value), a Fortran-order one's on this thread.
pub(crate) fn read_matrix_from<T: Copy + Default + Send>(
    mut r: impl Read,
    total: u64,
    path: &Path,
    start: impl FnOnce(MatrixShape) -> Result<(), IoError>,
    convert: impl Fn(usize, usize, f64) -> Result<T, IoError> + Sync,
) -> Result<(MatrixShape, Vec<T>), IoError> {
    let (h, _) = Header::read(&mut r, total, path)?;
    let Elem::Num { num, big } = h.elem else {
        return Err(IoError::Dtype {
            path: path.into(),
            dtype: h.dtype.clone(),
            reason: "expected a numeric array",
        });
    };
    let shape = MatrixShape {
        rows: h.rows,
        cols: h.cols,
        integer: !matches!(num, Num::F16 | Num::F32 | Num::F64),
    };
    start(shape)?;
    let size = h.elem.size();
    let len = h.data_bytes(path)? / size;
    let mut out = vec![T::default(); len];
    let per_chunk = (CHUNK_BYTES / size).max(1);
    let mut buf = vec![0u8; per_chunk.min(len) * size];
    let mut done = 0;
    while done < len {
        let m = per_chunk.min(len - done);
        let chunk = &mut buf[..m * size];
        r.read_exact(chunk).map_err(|e| IoError::read(path, e))?;
        if h.fortran {
            for_each_f64(num, big, chunk, |k, v| {
                let (row, col) = h.cell(done + k);
                out[row * h.cols + col] = convert(row, col, v)?;
                Ok(())
            })?;
        } else {
            let parts: Vec<Result<(), IoError>> = out[done..done + m]
                .par_chunks_mut(PART)
                .zip(chunk.par_chunks(PART * size))
                .enumerate()
                .map(|(p, (dst, bytes))| {
                    let first = done + p * PART;
                    for_each_f64(num, big, bytes, |k, v| {
                        let (row, col) = h.cell(first + k);
                        dst[k] = convert(row, col, v)?;
                        Ok(())
                    })
                })
                .collect();
            parts.into_iter().collect::<Result<(), _>>()?;
        }
        done += m;
    }
    Ok((shape, out))
}

#[cfg(test)]
mod tests {
    use super::super::tests::npy_file;
    use super::*;

    /// Each value with its row and column.
    type Cells = Vec<(usize, usize, f64)>;

    fn collect(bytes: &[u8]) -> Result<(MatrixShape, Cells), IoError> {
        read_matrix_from(
            bytes,
            bytes.len() as u64,
            Path::new("m.npy"),
            |_| Ok(()),
            |r, c, v| Ok((r, c, v)),
        )
    }

    #[test]
    fn values_come_with_their_cells_in_either_order() {
        let data: Vec<u8> = [1i64, 2, 3, 4, 5, 6]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let (shape, c) = collect(&npy_file("<i8", false, "(2, 3)", &data)).unwrap();
        assert_eq!((shape.rows, shape.cols, shape.integer), (2, 3, true));
        assert_eq!(c[4], (1, 1, 5.0));
        // The same bytes in Fortran order are the transpose's storage: [[1, 3, 5], [2, 4, 6]],
        // given back row by row.
        let (_, f) = collect(&npy_file("<i8", true, "(2, 3)", &data)).unwrap();
        let rows = [
            (0, 0, 1.0),
            (0, 1, 3.0),
            (0, 2, 5.0),
            (1, 0, 2.0),
            (1, 1, 4.0),
        ];
        assert_eq!(f[..5], rows);
        assert_eq!(f[5], (1, 2, 6.0));
    }

    /// Over several chunks and threads' parts: every value in its place, and of two bad
    /// values the first in storage order is the error.
    #[test]
    fn large_arrays_convert_in_parallel_and_report_the_first_error() {
        let (rows, cols) = (CHUNK_BYTES / 4 / 7 + 5, 7);
        let values: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let file = npy_file("<f4", false, &format!("({rows}, {cols})"), &data);
        let (_, c) = collect(&file).unwrap();
        assert_eq!(c.len(), rows * cols);
        for i in [0, 1, PART - 1, PART, rows * cols / 2, rows * cols - 1] {
            assert_eq!(c[i], (i / cols, i % cols, i as f64));
        }
        let bad = |at: &[usize]| {
            let at = at.to_vec();
            read_matrix_from(
                &file[..],
                file.len() as u64,
                Path::new("m.npy"),
                |_| Ok(()),
                move |r, c, v| match at.contains(&(r * cols + c)) {
                    true => Err(IoError::format(
                        Path::new("m.npy"),
                        None,
                        format!("bad {v}"),
                    )),
                    false => Ok(v),
                },
            )
            .unwrap_err()
            .to_string()
        };
        let late = rows * cols - 3;
        assert!(bad(&[late, 3 * PART + 1]).contains(&format!("bad {}", 3 * PART + 1)));
        assert!(bad(&[5 * PART + 2, 3 * PART + 1]).contains(&format!("bad {}", 3 * PART + 1)));
        assert!(bad(&[late]).contains(&format!("bad {late}")));
    }

    #[test]
    fn strings_and_short_data_are_refused() {
        let s = npy_file("<U2", false, "(1,)", &[0; 8]);
        assert!(collect(&s).unwrap_err().to_string().contains("numeric"));
        let short = npy_file("<f4", false, "(2, 2)", &[0; 12]);
        assert!(collect(&short)
            .unwrap_err()
            .to_string()
            .contains("truncated"));
    }
}
