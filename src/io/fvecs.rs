//! `.fvecs` (the TEXMEX / ANN-benchmark format): each vector is a little-endian `i32`
//! dimension followed by that many little-endian `f32` values. Every vector must have the
//! dimension of the first one; errors name the vector (1-based).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use super::error::{to_f32, IoError, Place};
use crate::Points;

/// Reads as many bytes as `buf` holds or the input has left; returns how many.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Reads points from an `.fvecs` file.
pub(crate) fn read_points_fvecs(path: &Path) -> Result<Points, IoError> {
    let file = File::open(path).map_err(|e| IoError::read(path, e))?;
    let total = file.metadata().map_err(|e| IoError::read(path, e))?.len();
    read_fvecs_from(BufReader::with_capacity(1 << 20, file), total, path)
}

pub(crate) fn read_fvecs_from(
    mut r: impl Read,
    total: u64,
    path: &Path,
) -> Result<Points, IoError> {
    let rd = |e| IoError::read(path, e);
    let mut head = [0u8; 4];
    let got = read_full(&mut r, &mut head).map_err(rd)?;
    if got == 0 {
        return Err(IoError::no_data(path, "the file is empty (0 bytes)"));
    }
    let at = |k: usize| {
        Some(Place::Item {
            kind: "vector",
            index: k,
        })
    };
    let truncated = |k: usize, want: usize, got: usize| IoError::Truncated {
        path: path.into(),
        detail: format!("vector {k} (1-based) needs {want} bytes, found {got}"),
    };
    if got < 4 {
        return Err(truncated(1, 4, got));
    }
    let dim = i32::from_le_bytes(head);
    let d = match usize::try_from(dim) {
        Ok(0) => return Err(IoError::no_data(path, "vector 1 has dimension 0")),
        Ok(d) if (d as u64) * 4 < total => d,
        _ => {
            return Err(IoError::format(
                path,
                at(1),
                format!("dimension {dim} is impossible for a file of {total} bytes"),
            ))
        }
    };
    let record = 4 + 4 * d;
    let mut data = Vec::with_capacity((total / record as u64) as usize * d);
    // Vector k's values followed by vector k+1's dimension: one read per vector.
    let mut buf = vec![0u8; record];
    let mut k = 1;
    loop {
        let got = read_full(&mut r, &mut buf).map_err(rd)?;
        if got < 4 * d {
            return Err(truncated(k, record, 4 + got));
        }
        for (j, c) in buf[..4 * d].chunks_exact(4).enumerate() {
            let v = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            let place = Place::Cell {
                row: k,
                col: j + 1,
                line: None,
            };
            data.push(to_f32(f64::from(v), path, place, None)?);
        }
        match got - 4 * d {
            0 => break,
            4 => {}
            partial => return Err(truncated(k + 1, record, partial)),
        }
        let next = i32::from_le_bytes([buf[4 * d], buf[4 * d + 1], buf[4 * d + 2], buf[4 * d + 3]]);
        k += 1;
        if next != dim {
            return Err(IoError::format(
                path,
                at(k),
                format!("dimension {next} differs from the first vector's {dim}"),
            ));
        }
    }
    Ok(Points::new(k, d, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fvecs(rows: &[&[f32]]) -> Vec<u8> {
        let mut out = Vec::new();
        for r in rows {
            out.extend((r.len() as i32).to_le_bytes());
            out.extend(r.iter().flat_map(|v| v.to_le_bytes()));
        }
        out
    }

    fn read(bytes: &[u8]) -> Result<Points, IoError> {
        read_fvecs_from(bytes, bytes.len() as u64, Path::new("v.fvecs"))
    }

    #[test]
    fn round_trip_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v.fvecs");
        std::fs::write(&p, fvecs(&[&[1.0, 2.0, 3.0], &[4.0, 5.0, -6.5]])).unwrap();
        let pts = crate::io::read_points(&p).unwrap();
        assert_eq!(pts, Points::new(2, 3, vec![1.0, 2.0, 3.0, 4.0, 5.0, -6.5]));
        let one = read(&fvecs(&[&[7.0]])).unwrap();
        assert_eq!(one, Points::new(1, 1, vec![7.0]));
    }

    #[test]
    fn truncation_and_bad_dims_name_the_vector() {
        let good = fvecs(&[&[1.0, 2.0], &[3.0, 4.0], &[5.0, 6.0]]);
        let e = read(&good[..good.len() - 3]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "v.fvecs: truncated: vector 3 (1-based) needs 12 bytes, found 9"
        );
        let e = read(&good[..good.len() - 10]).unwrap_err();
        assert!(
            e.to_string()
                .contains("vector 3 (1-based) needs 12 bytes, found 2"),
            "{e}"
        );
        let e = read(&good[..2]).unwrap_err();
        assert!(
            e.to_string()
                .contains("vector 1 (1-based) needs 4 bytes, found 2"),
            "{e}"
        );
        let bad = fvecs(&[&[1.0, 2.0], &[3.0, 4.0, 5.0]]);
        let e = read(&bad).unwrap_err();
        assert_eq!(
            e.to_string(),
            "v.fvecs: vector 2 (1-based): dimension 3 differs from the first vector's 2"
        );
        let e = read(&(-1i32).to_le_bytes()).unwrap_err();
        assert!(e.to_string().contains("dimension -1 is impossible"), "{e}");
        let e = read(&1_000_000i32.to_le_bytes()).unwrap_err();
        assert!(
            e.to_string()
                .contains("vector 1 (1-based): dimension 1000000"),
            "{e}"
        );
    }

    #[test]
    fn empty_and_non_finite() {
        assert!(matches!(read(&[]), Err(IoError::NoData { .. })));
        assert!(matches!(
            read(&0i32.to_le_bytes()),
            Err(IoError::NoData { .. })
        ));
        let e = read(&fvecs(&[&[1.0, 2.0], &[f32::INFINITY, 0.0]])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "v.fvecs: non-finite value inf at row 2, column 1 (1-based)"
        );
    }
}
