//! Any numeric 2-D `.npy` array streamed value by value, for readers that check and convert
//! as they go (neighbour indices and distances): no buffer of the whole array in another
//! type, and the first bad value reported with its row and column.

use std::io::Read;
use std::path::Path;

use super::{for_each_f64, Elem, Header, Num};
use crate::io::error::IoError;

/// Bytes read per chunk.
const CHUNK_BYTES: usize = 8 << 20;

/// The shape and element type of an array, known before its values are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MatrixShape {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    /// Whether the element type is an integer one.
    pub(crate) integer: bool,
}

/// Reads a numeric 1-D (as n × 1) or 2-D array from `r` (`total` bytes long): `start` sees
/// the shape first and makes the reader's state (its error stops the read before any data),
/// then `each(state, row, col, value)` sees every value in storage order, rows and columns
/// counted from 0. Returns the shape and the state.
pub(crate) fn read_matrix_from<S, E: From<IoError>>(
    mut r: impl Read,
    total: u64,
    path: &Path,
    start: impl FnOnce(MatrixShape) -> Result<S, E>,
    mut each: impl FnMut(&mut S, usize, usize, f64) -> Result<(), E>,
) -> Result<(MatrixShape, S), E> {
    let (h, _) = Header::read(&mut r, total, path)?;
    let Elem::Num { num, big } = h.elem else {
        return Err(IoError::Dtype {
            path: path.into(),
            dtype: h.dtype.clone(),
            reason: "expected a numeric array",
        }
        .into());
    };
    let shape = MatrixShape {
        rows: h.rows,
        cols: h.cols,
        integer: !matches!(num, Num::F16 | Num::F32 | Num::F64),
    };
    let mut state = start(shape)?;
    let size = h.elem.size();
    let len = h.data_bytes(path)? / size;
    let per_chunk = (CHUNK_BYTES / size).max(1);
    let mut buf = vec![0u8; per_chunk.min(len) * size];
    let mut done = 0;
    while done < len {
        let m = per_chunk.min(len - done);
        let chunk = &mut buf[..m * size];
        r.read_exact(chunk).map_err(|e| IoError::read(path, e))?;
        for_each_f64(num, big, chunk, |k, v| {
            let (row, col) = h.cell(done + k);
            each(&mut state, row, col, v)
        })?;
        done += m;
    }
    Ok((shape, state))
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
            |_| Ok::<_, IoError>(Vec::new()),
            |seen, r, c, v| {
                seen.push((r, c, v));
                Ok(())
            },
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
        // The same bytes in Fortran order are the transpose's storage: [[1, 3, 5], [2, 4, 6]].
        let (_, f) = collect(&npy_file("<i8", true, "(2, 3)", &data)).unwrap();
        assert_eq!(f[1], (1, 0, 2.0));
        assert_eq!(f[2], (0, 1, 3.0));
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
