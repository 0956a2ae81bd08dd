//! NumPy `.npy` reading: header through `npyz`, data decoded here.
//!
//! `npyz` parses the header (magic, dtype, shape, order); the data is then decoded in large
//! chunks with `from_le_bytes`/`from_be_bytes` instead of `npyz`'s per-element iterator, so a
//! 1.3M × 50 file costs one pass and one output buffer (no intermediate `Vec<u8>` of the whole
//! file). Supported element types: `f2 f4 f8`, `i1 i2 i4 i8`, `u1 u2 u4 u8`, `b1` (as 0/1),
//! either byte order; labels also accept `U` and `S` strings.

use std::io::Read;
use std::path::Path;

use npyz::{DType, Endianness, NpyHeader, Order, TypeChar};

use super::error::{to_f32, IoError, Place};
use super::labels::RawLabels;
use crate::Points;

/// Elements decoded per chunk when streaming point data (4 MiB of `f8`).
const CHUNK_ELEMS: usize = 1 << 19;

/// The numeric element types this reader converts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Num {
    F16,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
}

/// Element type of an array: a number (with its byte order) or a fixed-width string.
#[derive(Clone, Copy, Debug)]
enum Elem {
    Num {
        num: Num,
        big: bool,
    },
    /// `U<n>`: n UTF-32 code units per element.
    Unicode {
        chars: usize,
        big: bool,
    },
    /// `S<n>`: n bytes per element, zero-padded.
    Bytes {
        len: usize,
    },
}

impl Elem {
    fn size(self) -> usize {
        match self {
            Elem::Num { num, .. } => match num {
                Num::I8 | Num::U8 => 1,
                Num::F16 | Num::I16 | Num::U16 => 2,
                Num::F32 | Num::I32 | Num::U32 => 4,
                Num::F64 | Num::I64 | Num::U64 => 8,
            },
            Elem::Unicode { chars, .. } => 4 * chars,
            Elem::Bytes { len } => len,
        }
    }
}

/// A parsed header: shape as rows × columns, element type, order, and bytes of data present.
struct Header {
    rows: usize,
    cols: usize,
    elem: Elem,
    fortran: bool,
    dtype: String,
    shape: Vec<u64>,
    available: u64,
}

impl Header {
    /// Reads the header from `r`, whose total length is `total` bytes.
    fn read(r: &mut impl Read, total: u64, path: &Path) -> Result<(Header, u64), IoError> {
        if total == 0 {
            return Err(IoError::no_data(path, "the file is empty (0 bytes)"));
        }
        let mut counted = CountingReader { inner: r, count: 0 };
        let h = NpyHeader::from_reader(&mut counted).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                IoError::Truncated {
                    path: path.into(),
                    detail: format!("the .npy header is cut short ({total} bytes in all)"),
                }
            } else {
                IoError::format(path, None, format!("not a valid .npy file: {e}"))
            }
        })?;
        let header_len = counted.count;
        let (elem, dtype) = elem_of(&h.dtype(), path)?;
        let shape = h.shape().to_vec();
        let (rows, cols) = match shape[..] {
            [n] => (n, 1),
            [n, d] => (n, d),
            _ => {
                return Err(IoError::format(
                    path,
                    None,
                    format!("expected a 1-D or 2-D array, found shape {shape:?}"),
                ))
            }
        };
        let too_big = || IoError::format(path, None, format!("shape {shape:?} is too large"));
        let header = Header {
            rows: usize::try_from(rows).map_err(|_| too_big())?,
            cols: usize::try_from(cols).map_err(|_| too_big())?,
            elem,
            fortran: h.order() == Order::Fortran,
            dtype,
            shape,
            available: total.saturating_sub(header_len),
        };
        Ok((header, header_len))
    }

    /// Checks that the data holds every element the shape announces; returns the byte count.
    fn data_bytes(&self, path: &Path) -> Result<usize, IoError> {
        let count = self.rows.checked_mul(self.cols);
        let bytes = count.and_then(|c| c.checked_mul(self.elem.size()));
        let (Some(count), Some(bytes)) = (count, bytes) else {
            return Err(IoError::format(
                path,
                None,
                format!("shape {:?} is too large", self.shape),
            ));
        };
        if (bytes as u64) > self.available {
            let whole = self.available / self.elem.size().max(1) as u64;
            return Err(IoError::Truncated {
                path: path.into(),
                detail: format!(
                    "shape {:?} of dtype {} needs {count} elements = {bytes} bytes of data, \
                     found {} bytes ({whole} whole elements)",
                    self.shape, self.dtype, self.available
                ),
            });
        }
        // Bytes past the announced data are ignored, as numpy's own `np.load` does.
        Ok(bytes)
    }

    /// Row and column (0-based) of the `k`-th stored element.
    fn cell(&self, k: usize) -> (usize, usize) {
        if self.fortran {
            (k % self.rows, k / self.rows)
        } else {
            (k / self.cols, k % self.cols)
        }
    }
}

/// Counts the bytes `npyz` consumes, so the data offset is known for files and slices alike.
struct CountingReader<'a, R> {
    inner: &'a mut R,
    count: u64,
}

impl<R: Read> Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

/// Maps an `npyz` dtype to [`Elem`], or an error naming the dtype.
fn elem_of(dtype: &DType, path: &Path) -> Result<(Elem, String), IoError> {
    let DType::Plain(ts) = dtype else {
        return Err(IoError::Dtype {
            path: path.into(),
            dtype: dtype.descr(),
            reason: "structured arrays are not supported; save a plain numeric array",
        });
    };
    let name = ts.to_string();
    let big = ts.endianness() == Endianness::Big;
    let size = ts.size_field();
    let num = |num| Ok((Elem::Num { num, big }, name.clone()));
    let unsupported = |reason| {
        Err(IoError::Dtype {
            path: path.into(),
            dtype: name.clone(),
            reason,
        })
    };
    match (ts.type_char(), size) {
        (TypeChar::Float, 2) => num(Num::F16),
        (TypeChar::Float, 4) => num(Num::F32),
        (TypeChar::Float, 8) => num(Num::F64),
        (TypeChar::Int, 1) => num(Num::I8),
        (TypeChar::Int, 2) => num(Num::I16),
        (TypeChar::Int, 4) => num(Num::I32),
        (TypeChar::Int, 8) => num(Num::I64),
        (TypeChar::Uint | TypeChar::Bool, 1) => num(Num::U8),
        (TypeChar::Uint, 2) => num(Num::U16),
        (TypeChar::Uint, 4) => num(Num::U32),
        (TypeChar::Uint, 8) => num(Num::U64),
        (TypeChar::UnicodeStr | TypeChar::ByteStr, 0) => unsupported("zero-width strings"),
        (TypeChar::UnicodeStr, n) => Ok((
            Elem::Unicode {
                chars: n as usize,
                big,
            },
            name.clone(),
        )),
        (TypeChar::ByteStr, n) => Ok((Elem::Bytes { len: n as usize }, name.clone())),
        (TypeChar::Float, _) => unsupported("only 2-, 4- and 8-byte floats are supported"),
        (TypeChar::Complex, _) => unsupported("complex numbers are not supported"),
        (TypeChar::Object, _) => unsupported("object (pickled) arrays are not supported"),
        (TypeChar::TimeDelta | TypeChar::DateTime, _) => {
            unsupported("dates and times are not supported")
        }
        _ => unsupported("not a numeric type"),
    }
}

/// Calls `f(k, v)` for each element of `bytes` (a whole number of elements), as `f64`.
///
/// The `match` sits outside the loop so each arm is a tight, monomorphised loop.
fn for_each_f64<E>(
    num: Num,
    big: bool,
    bytes: &[u8],
    mut f: impl FnMut(usize, f64) -> Result<(), E>,
) -> Result<(), E> {
    macro_rules! each {
        ($t:ty, $conv:expr) => {{
            const W: usize = std::mem::size_of::<$t>();
            for (k, c) in bytes.chunks_exact(W).enumerate() {
                let a: [u8; W] = c.try_into().expect("chunks_exact yields W bytes");
                let x = if big {
                    <$t>::from_be_bytes(a)
                } else {
                    <$t>::from_le_bytes(a)
                };
                #[allow(clippy::redundant_closure_call)]
                f(k, $conv(x))?;
            }
        }};
    }
    match num {
        Num::F16 => each!(u16, f16_to_f64),
        Num::F32 => each!(f32, f64::from),
        Num::F64 => each!(f64, |x| x),
        Num::I8 => each!(i8, f64::from),
        Num::I16 => each!(i16, f64::from),
        Num::I32 => each!(i32, f64::from),
        Num::I64 => each!(i64, |x| x as f64),
        Num::U8 => each!(u8, f64::from),
        Num::U16 => each!(u16, f64::from),
        Num::U32 => each!(u32, f64::from),
        Num::U64 => each!(u64, |x| x as f64),
    }
    Ok(())
}

/// IEEE half precision (bits) to `f64`, exactly.
fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    sign * match exp {
        0 => frac * 2f64.powi(-24),
        31 if frac == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    }
}

/// Reads a 2-D (or 1-D, as n × 1) numeric array as row-major, finite `f32` points.
fn read_points_from(mut r: impl Read, total: u64, path: &Path) -> Result<Points, IoError> {
    let (h, _) = Header::read(&mut r, total, path)?;
    let Elem::Num { num, big } = h.elem else {
        return Err(IoError::Dtype {
            path: path.into(),
            dtype: h.dtype,
            reason: "points must be numeric",
        });
    };
    if h.rows == 0 || h.cols == 0 {
        return Err(IoError::no_data(
            path,
            format!("the array has shape {:?}", h.shape),
        ));
    }
    let len = h.data_bytes(path)? / h.elem.size();
    let mut data = vec![0f32; len];
    let mut buf = vec![0u8; CHUNK_ELEMS.min(len) * h.elem.size()];
    let mut done = 0;
    while done < len {
        let m = CHUNK_ELEMS.min(len - done);
        let chunk = &mut buf[..m * h.elem.size()];
        r.read_exact(chunk).map_err(|e| IoError::read(path, e))?;
        for_each_f64(num, big, chunk, |k, v| {
            let (row, col) = h.cell(done + k);
            let at = Place::Cell {
                row: row + 1,
                col: col + 1,
                line: None,
            };
            data[row * h.cols + col] = to_f32(v, path, at, None)?;
            Ok::<(), IoError>(())
        })?;
        done += m;
    }
    Ok(Points::new(h.rows, h.cols, data))
}

/// Reads points from an `.npy` file (see the module doc for dtypes).
pub(crate) fn read_points_npy(path: &Path) -> Result<Points, IoError> {
    let file = std::fs::File::open(path).map_err(|e| IoError::read(path, e))?;
    let total = file.metadata().map_err(|e| IoError::read(path, e))?.len();
    read_points_from(file, total, path)
}

/// Reads points from the bytes of an `.npy` file; `name` stands for the path in errors.
pub fn read_points_npy_bytes(bytes: &[u8], name: &str) -> Result<Points, IoError> {
    read_points_from(bytes, bytes.len() as u64, Path::new(name))
}

/// Reads a label array: 1-D, n × 1 or 1 × n; integers, integral floats or strings.
pub(crate) fn read_labels_from(bytes: &[u8], path: &Path) -> Result<RawLabels, IoError> {
    let mut r = bytes;
    let (h, header_len) = Header::read(&mut r, bytes.len() as u64, path)?;
    if h.rows != 1 && h.cols != 1 {
        return Err(IoError::format(
            path,
            None,
            format!(
                "labels must be 1-D or have one column, found shape {:?}",
                h.shape
            ),
        ));
    }
    let n = h.rows * h.cols;
    if n == 0 {
        return Err(IoError::no_data(
            path,
            format!("the array has shape {:?}", h.shape),
        ));
    }
    let data = &bytes[header_len as usize..][..h.data_bytes(path)?];
    let at = |k: usize| Place::Item {
        kind: "label",
        index: k + 1,
    };
    match h.elem {
        Elem::Num { num, big } => {
            let mut out = Vec::with_capacity(n);
            if matches!(num, Num::I64 | Num::U64) {
                // Decoded apart so values above 2^53 keep every digit.
                for c in data.chunks_exact(8) {
                    let a: [u8; 8] = c.try_into().expect("chunks of 8");
                    out.push(match (num, big) {
                        (Num::I64, false) => i128::from(i64::from_le_bytes(a)),
                        (Num::I64, true) => i128::from(i64::from_be_bytes(a)),
                        (_, false) => i128::from(u64::from_le_bytes(a)),
                        (_, true) => i128::from(u64::from_be_bytes(a)),
                    });
                }
            } else {
                for_each_f64(num, big, data, |k, v| {
                    out.push(integral(v).ok_or_else(|| {
                        IoError::format(
                            path,
                            Some(at(k)),
                            format!("label {v} is not a whole number"),
                        )
                    })?);
                    Ok::<(), IoError>(())
                })?;
            }
            Ok(RawLabels::Ints(out))
        }
        Elem::Unicode { chars, big } => {
            let mut out = Vec::with_capacity(n);
            for (k, c) in data.chunks_exact(4 * chars).enumerate() {
                let s: Option<String> = c
                    .chunks_exact(4)
                    .map(|u| {
                        let a: [u8; 4] = u.try_into().expect("chunks of 4");
                        if big {
                            u32::from_be_bytes(a)
                        } else {
                            u32::from_le_bytes(a)
                        }
                    })
                    .take_while(|&u| u != 0)
                    .map(char::from_u32)
                    .collect();
                out.push(s.ok_or_else(|| {
                    IoError::format(path, Some(at(k)), "invalid unicode code point")
                })?);
            }
            Ok(RawLabels::Strings(out))
        }
        Elem::Bytes { len } => {
            let out = data
                .chunks_exact(len)
                .map(|c| {
                    let end = c.iter().position(|&b| b == 0).unwrap_or(c.len());
                    String::from_utf8_lossy(&c[..end]).into_owned()
                })
                .collect();
            Ok(RawLabels::Strings(out))
        }
    }
}

/// `v` as an integer when it is one (finite, no fractional part, within ±2^63).
fn integral(v: f64) -> Option<i128> {
    (v.is_finite() && v.fract() == 0.0 && v.abs() < 9.3e18).then_some(v as i128)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::io::read_points;

    /// A version-1.0 `.npy` file with the given header fields and raw data.
    pub(crate) fn npy_file(descr: &str, fortran: bool, shape: &str, data: &[u8]) -> Vec<u8> {
        let f = if fortran { "True" } else { "False" };
        let mut dict = format!("{{'descr': '{descr}', 'fortran_order': {f}, 'shape': {shape}, }}");
        while (10 + dict.len() + 1) % 64 != 0 {
            dict.push(' ');
        }
        dict.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((dict.len() as u16).to_le_bytes());
        out.extend(dict.as_bytes());
        out.extend(data);
        out
    }

    /// The 2 × 3 matrix [[1, 2, 3], [4, 5, 6]] in every supported dtype, byte order and
    /// storage order.
    #[test]
    fn every_dtype_and_order_round_trips() {
        let want = Points::new(2, 3, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let c_order = [1u8, 2, 3, 4, 5, 6];
        let f_order = [1u8, 4, 2, 5, 3, 6];
        macro_rules! case {
            ($t:ty, $code:literal) => {
                for (fortran, vals) in [(false, c_order), (true, f_order)] {
                    let le: Vec<u8> = vals.iter().flat_map(|&v| (v as $t).to_le_bytes()).collect();
                    let be: Vec<u8> = vals.iter().flat_map(|&v| (v as $t).to_be_bytes()).collect();
                    let size = std::mem::size_of::<$t>();
                    let (l, b) = if size == 1 { ("|", "|") } else { ("<", ">") };
                    for (descr, data) in [
                        (format!("{l}{}{size}", $code), le),
                        (format!("{b}{}{size}", $code), be),
                    ] {
                        let bytes = npy_file(&descr, fortran, "(2, 3)", &data);
                        let got = read_points_npy_bytes(&bytes, "t.npy").unwrap();
                        assert_eq!(got, want, "{descr} fortran={fortran}");
                    }
                }
            };
        }
        case!(f32, "f");
        case!(f64, "f");
        case!(i8, "i");
        case!(i16, "i");
        case!(i32, "i");
        case!(i64, "i");
        case!(u8, "u");
        case!(u16, "u");
        case!(u32, "u");
        case!(u64, "u");
        // Half precision: 1.0, -2.0, 0.5, 65504 (largest), 2^-24 (smallest subnormal), 0.
        let halves: [u16; 6] = [0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001, 0x0000];
        let data: Vec<u8> = halves.iter().flat_map(|h| h.to_le_bytes()).collect();
        let got = read_points_npy_bytes(&npy_file("<f2", false, "(3, 2)", &data), "h.npy").unwrap();
        assert_eq!(got.data, [1.0, -2.0, 0.5, 65504.0, 2f32.powi(-24), 0.0]);
        let got = read_points_npy_bytes(&npy_file("|b1", false, "(2,)", &[1, 0]), "b.npy").unwrap();
        assert_eq!(got, Points::new(2, 1, vec![1.0, 0.0]));
    }

    #[test]
    fn one_dimensional_is_a_column_and_files_work() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v.NPY");
        let data: Vec<u8> = [0.5f64, 1.5, 2.5]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        std::fs::write(&p, npy_file("<f8", false, "(3,)", &data)).unwrap();
        assert_eq!(
            read_points(&p).unwrap(),
            Points::new(3, 1, vec![0.5, 1.5, 2.5])
        );
        // Large enough to take several chunks, Fortran order.
        let (n, d) = (CHUNK_ELEMS / 3 + 7, 5);
        let vals: Vec<f32> = (0..n * d).map(|k| k as f32).collect();
        let data: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let p = dir.path().join("big.npy");
        std::fs::write(&p, npy_file("<f4", true, &format!("({n}, {d})"), &data)).unwrap();
        let got = read_points(&p).unwrap();
        assert_eq!((got.n, got.d), (n, d));
        assert_eq!(
            got.row(3),
            [
                3.0,
                (n + 3) as f32,
                (2 * n + 3) as f32,
                (3 * n + 3) as f32,
                (4 * n + 3) as f32
            ]
        );
    }

    #[test]
    fn demo_digits_read() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/demo/digits1797_64_u8.npy");
        let pts = read_points(&p).unwrap();
        assert_eq!((pts.n, pts.d), (1797, 64));
        let l = crate::io::read_labels(&p.with_file_name("digits1797_labels_u8.npy")).unwrap();
        assert_eq!(l.names, ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]);
        assert_eq!(l.len(), 1797);
    }

    #[test]
    fn truncated_files_say_expected_and_found() {
        let data = [0u8; 20];
        let e =
            read_points_npy_bytes(&npy_file("<f4", false, "(2, 3)", &data), "t.npy").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.npy: truncated: shape [2, 3] of dtype <f4 needs 6 elements = 24 bytes of data, \
             found 20 bytes (5 whole elements)"
        );
        let full = npy_file("<f4", false, "(2, 3)", &[0; 24]);
        let e = read_points_npy_bytes(&full[..40], "t.npy").unwrap_err();
        assert!(matches!(e, IoError::Truncated { .. }), "{e}");
        assert!(e.to_string().contains("header is cut short"), "{e}");
        let e = read_points_npy_bytes(&full[..5], "t.npy").unwrap_err();
        assert!(
            matches!(e, IoError::Truncated { .. } | IoError::Format { .. }),
            "{e}"
        );
        // A header claiming an absurd shape fails on the length check, before allocating.
        let huge = npy_file("<f8", false, "(1000000000000, 1000000)", &[0; 8]);
        assert!(read_points_npy_bytes(&huge, "t.npy").is_err());
    }

    #[test]
    fn bad_content_is_named() {
        let cases: [(&str, &str, &[u8], &str); 7] = [
            (
                "<c8",
                "(1, 1)",
                &[0; 8],
                "unsupported dtype `<c8` (complex numbers",
            ),
            ("<f16", "(1, 1)", &[0; 16], "unsupported dtype `<f16`"),
            (
                "<U3",
                "(1, 1)",
                &[0; 12],
                "unsupported dtype `<U3` (points must be numeric)",
            ),
            ("<M8[s]", "(1, 1)", &[0; 8], "dates and times"),
            (
                "<f4",
                "(2, 2, 2)",
                &[0; 32],
                "expected a 1-D or 2-D array, found shape [2, 2, 2]",
            ),
            ("<f4", "(0, 3)", &[], "no data (the array has shape [0, 3])"),
            ("<f4", "(3, 0)", &[], "no data"),
        ];
        for (descr, shape, data, want) in cases {
            let e =
                read_points_npy_bytes(&npy_file(descr, false, shape, data), "x.npy").unwrap_err();
            assert!(e.to_string().starts_with("x.npy: "), "{e}");
            assert!(e.to_string().contains(want), "{descr}: {e}");
        }
        let e = read_points_npy_bytes(b"not numpy at all", "x.npy").unwrap_err();
        assert!(
            e.to_string().starts_with("x.npy: not a valid .npy file"),
            "{e}"
        );
        let e = read_points_npy_bytes(&[], "x.npy").unwrap_err();
        assert_eq!(
            e.to_string(),
            "x.npy: no data (the file is empty (0 bytes))"
        );
    }

    #[test]
    fn non_finite_values_name_row_and_column() {
        let vals = [1.0f64, 2.0, 3.0, f64::NAN];
        let data: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let e =
            read_points_npy_bytes(&npy_file("<f8", false, "(2, 2)", &data), "x.npy").unwrap_err();
        assert_eq!(
            e.to_string(),
            "x.npy: non-finite value NaN at row 2, column 2 (1-based)"
        );
        // Fortran order: the 2nd stored value is row 2, column 1.
        let vals = [1.0f32, f32::NEG_INFINITY, 3.0, 4.0];
        let data: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let e =
            read_points_npy_bytes(&npy_file("<f4", true, "(2, 2)", &data), "x.npy").unwrap_err();
        assert_eq!(
            e.to_string(),
            "x.npy: non-finite value -inf at row 2, column 1 (1-based)"
        );
        let data: Vec<u8> = [1e300f64].iter().flat_map(|v| v.to_le_bytes()).collect();
        let e = read_points_npy_bytes(&npy_file("<f8", false, "(1,)", &data), "x.npy").unwrap_err();
        assert!(
            e.to_string()
                .contains("out of f32 range value 1e300 at row 1, column 1"),
            "{e}"
        );
    }
}
