//! Labels from `.npy`: integers (any width), bool, floats with whole values, `U`/`S` strings.

use std::path::Path;

use super::{for_each_f64, Elem, Header, Num};
use crate::io::error::{IoError, Place};
use crate::io::labels::{integral, RawLabels};

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
