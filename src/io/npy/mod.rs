//! NumPy `.npy` reading: header through `npyz`, data decoded here.
//!
//! `npyz` parses the header (magic, dtype, shape, order); the data is then decoded in large
//! chunks with `from_le_bytes`/`from_be_bytes` instead of `npyz`'s per-element iterator, so a
//! 1.3M × 50 file costs one pass and one output buffer (no intermediate `Vec<u8>` of the whole
//! file). Supported element types: `f2 f4 f8`, `i1 i2 i4 i8`, `u1 u2 u4 u8`, `b1` (as 0/1),
//! either byte order; labels also accept `U` and `S` strings. Fortran-order arrays are
//! transposed to row-major while decoding.
//!
//! This file holds the header and the element decoding shared by [`points`] and [`labels`].

mod labels;
mod matrix;
mod points;

use std::io::Read;
use std::path::Path;

use npyz::{DType, Endianness, NpyHeader, Order, TypeChar};

use super::error::IoError;

pub(crate) use labels::read_labels_from;
pub(crate) use matrix::{read_matrix_from, MatrixShape};
pub use points::read_points_npy_bytes;
pub(crate) use points::{read_points_npy, read_points_npy_as};

/// The numeric element types this reader converts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Num {
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
pub(super) enum Elem {
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
    pub(super) fn size(self) -> usize {
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
pub(super) struct Header {
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
    pub(super) fn read(
        r: &mut impl Read,
        total: u64,
        path: &Path,
    ) -> Result<(Header, u64), IoError> {
        if total == 0 {
            return Err(IoError::no_data(path, "the file is empty (0 bytes)"));
        }
        let preamble = check_header_length(r, total, path)?;
        let mut chained = preamble.as_slice().chain(r);
        let mut counted = CountingReader {
            inner: &mut chained,
            count: 0,
        };
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
    pub(super) fn data_bytes(&self, path: &Path) -> Result<usize, IoError> {
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
    pub(super) fn cell(&self, k: usize) -> (usize, usize) {
        if self.fortran {
            (k % self.rows, k / self.rows)
        } else {
            (k / self.cols, k % self.cols)
        }
    }
}

/// Brackets a header may nest: a dict holding a shape tuple is 2 deep, a structured dtype's
/// list of tuples 3 (refused later, by its dtype, with a message of its own).
const MAX_NESTING: usize = 4;

/// Reads the preamble (magic, version, header length) and the header, and refuses a header
/// longer than the file, or with brackets nested deeper than [`MAX_NESTING`]: `npyz`
/// allocates the length the preamble declares before reading the header, so a few bytes
/// declaring a 4 GiB header would claim 4 GiB, and its parser of the header's Python literal
/// backtracks exponentially in the nesting (a 160-byte file with 18 open braces kept it busy
/// past libFuzzer's timeout). Returns the bytes read, for `npyz` to parse again; anything that
/// is not a preamble is left to `npyz` to refuse.
fn check_header_length(r: &mut impl Read, total: u64, path: &Path) -> Result<Vec<u8>, IoError> {
    const MAGIC: &[u8] = b"\x93NUMPY";
    let mut pre = Vec::with_capacity(12);
    r.by_ref()
        .take(12)
        .read_to_end(&mut pre)
        .map_err(|e| IoError::read(path, e))?;
    if pre.len() < 10 || !pre.starts_with(MAGIC) {
        return Ok(pre);
    }
    // Version 1 stores the header's length in 2 bytes, versions 2 and 3 in 4.
    let declared = match pre[6] {
        1 => 10 + u64::from(u16::from_le_bytes([pre[8], pre[9]])),
        2 | 3 if pre.len() == 12 => {
            12 + u64::from(u32::from_le_bytes([pre[8], pre[9], pre[10], pre[11]]))
        }
        _ => return Ok(pre),
    };
    if declared > total {
        return Err(IoError::Truncated {
            path: path.into(),
            detail: format!(
                "the .npy header is cut short: it declares {declared} bytes with its \
                 preamble, the file has {total} in all"
            ),
        });
    }
    r.by_ref()
        .take(declared.saturating_sub(pre.len() as u64))
        .read_to_end(&mut pre)
        .map_err(|e| IoError::read(path, e))?;
    let (mut depth, mut deepest) = (0usize, 0usize);
    for &b in &pre[pre.len().min(10)..] {
        match b {
            b'(' | b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if deepest > MAX_NESTING {
        return Err(IoError::format(
            path,
            None,
            format!(
                "not a valid .npy file: its header nests brackets {deepest} deep (a NumPy \
                 header nests at most {MAX_NESTING})"
            ),
        ));
    }
    if let Some(dims) = bad_shape(&pre[pre.len().min(10)..]) {
        return Err(IoError::format(
            path,
            None,
            format!(
                "not a valid .npy file: its shape ({dims}) is not a tuple of whole numbers \
                 whose product fits 64 bits"
            ),
        ));
    }
    Ok(pre)
}

/// The inside of a header's `'shape': (…)` tuple when it is not what NumPy writes (whole
/// numbers separated by commas) or when its sizes multiply past 64
/// bits: `npyz` reads more liberal literals (`1+2`) and multiplies the sizes unchecked (a
/// panic in a debug build, a wrapped count in a release one; both found by fuzzing). Every
/// `shape` key of the header is checked, so a second one cannot slip past.
fn bad_shape(header: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(header);
    let mut rest: &str = &text;
    while let Some(at) = rest.find("shape") {
        rest = &rest[at + "shape".len()..];
        if !rest.starts_with(['\'', '"']) {
            continue;
        }
        let Some(open) = rest.find('(') else {
            continue;
        };
        let Some(len) = rest[open..].find(')') else {
            continue;
        };
        let dims = &rest[open + 1..open + len];
        let mut product = Some(1u64);
        for size in dims.split(',').map(str::trim).filter(|d| !d.is_empty()) {
            let whole = size.bytes().all(|b| b.is_ascii_digit());
            product = product
                .filter(|_| whole)
                .and_then(|p| p.checked_mul(size.parse().ok()?));
        }
        if product.is_none() {
            return Some(dims.trim().to_string());
        }
    }
    None
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
pub(super) fn for_each_f64<E>(
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

#[cfg(test)]
pub(crate) mod tests {
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

    #[test]
    fn half_precision_is_exact() {
        assert_eq!(super::f16_to_f64(0x3c00), 1.0);
        assert_eq!(super::f16_to_f64(0xfc00), f64::NEG_INFINITY);
        assert!(super::f16_to_f64(0x7e00).is_nan());
        assert_eq!(super::f16_to_f64(0x0001), 2f64.powi(-24));
    }
}
