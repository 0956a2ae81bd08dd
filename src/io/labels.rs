//! Class labels: one per point, as integer codes into a list of names.
//!
//! Labels colour the plot and feed the quality measures (kNN accuracy). Files give them as
//! numbers or as strings; both become [`Labels`], so the rest of the engine never cares which.
//! Codes follow the **sorted** order of the distinct values — numeric order for numbers,
//! byte-wise (Unicode code point) order for strings — so the legend reads in a predictable
//! order whatever the order of the rows.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::path::Path;

use super::error::{extension, unknown_extension, IoError};
use super::{npy, text};
use rayon::prelude::*;

/// Labels of n points: `codes[i]` indexes `names`.
///
/// # Invariants
/// - every `codes[i] < names.len()`
/// - `names` are distinct, in sorted order of the original values (numeric or textual)
/// - every name is used by at least one point
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Labels {
    /// One code per point, in point order.
    pub codes: Vec<u32>,
    /// The distinct labels as text (numbers written in decimal, e.g. "7", "-1").
    pub names: Vec<String>,
}

impl Labels {
    /// Number of points labelled.
    pub fn len(&self) -> usize {
        self.codes.len()
    }

    /// True when no point is labelled.
    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    /// Builds labels from integers: codes in increasing numeric order.
    pub fn from_ints(values: &[i128]) -> Labels {
        Self::from_ordered(values)
    }

    /// Builds labels from strings: codes in sorted (code point) order.
    pub fn from_strings(values: &[String]) -> Labels {
        Self::from_ordered(values)
    }

    /// The distinct values found chunk by chunk in parallel (a hash set each, merged),
    /// sorted, then every value coded through a hash map. (A sorted map of all n values
    /// took about 1.5 s of the load stage for 10M integer labels on 32 cores,
    /// `benches/RESULTS.md`.)
    fn from_ordered<T: Ord + Hash + ToString + Sync>(values: &[T]) -> Labels {
        let distinct: HashSet<&T> = values
            .par_chunks(LABEL_CHUNK)
            .map(|chunk| chunk.iter().collect::<HashSet<&T>>())
            .reduce(HashSet::new, |mut a, b| {
                a.extend(b);
                a
            });
        let mut sorted: Vec<&T> = distinct.into_iter().collect();
        sorted.sort_unstable();
        // At most n distinct values, and n < 2^32 for any data set this engine embeds;
        // saturating keeps this panic-free regardless.
        let index: HashMap<&T, u32> = sorted
            .iter()
            .enumerate()
            .map(|(code, &v)| (v, u32::try_from(code).unwrap_or(u32::MAX)))
            .collect();
        let names = sorted.iter().map(|v| v.to_string()).collect();
        let codes = values.par_iter().map(|v| index[v]).collect();
        Labels { codes, names }
    }
}

/// Labels per parallel task when the distinct values are gathered.
const LABEL_CHUNK: usize = 1 << 16;

/// Label values as decoded from a file, before coding.
pub(crate) enum RawLabels {
    Ints(Vec<i128>),
    Strings(Vec<String>),
}

impl RawLabels {
    fn into_labels(self) -> Labels {
        match self {
            RawLabels::Ints(v) => Labels::from_ints(&v),
            RawLabels::Strings(v) => Labels::from_strings(&v),
        }
    }
}

/// Reads labels by extension: `.npy`, or one column of `.csv`, `.tsv` or `.txt`.
///
/// `.npy`: 1-D, n × 1 or 1 × n; any integer dtype, bool, floats with whole values, or
/// `U`/`S` strings. Text: one label per line (`.txt` takes the whole trimmed line, so labels
/// may contain spaces); blank lines are skipped. A header is detected as described in
/// `parse_label_column`.
pub fn read_labels(path: &Path) -> Result<Labels, IoError> {
    let raw = match extension(path).as_str() {
        "npy" => {
            let bytes = std::fs::read(path).map_err(|e| IoError::read(path, e))?;
            npy::read_labels_from(&bytes, path)?
        }
        "csv" | "tsv" | "txt" => {
            let fields = text::read_label_fields(path)?;
            parse_label_column(fields, path)?
        }
        _ => return Err(unknown_extension(path, "labels", ".npy, .csv, .tsv, .txt")),
    };
    Ok(raw.into_labels())
}

/// Reads labels from the bytes of an `.npy` file; `name` stands for the path in errors.
pub fn read_labels_npy_bytes(bytes: &[u8], name: &str) -> Result<Labels, IoError> {
    Ok(npy::read_labels_from(bytes, Path::new(name))?.into_labels())
}

/// Reads labels from the bytes of a file named `name` (`.npy`, `.csv`, `.tsv` or `.txt`, as
/// [`read_labels`]; `name` stands for the path in errors), without touching the file system.
pub fn read_labels_bytes(bytes: &[u8], name: &str) -> Result<Labels, IoError> {
    let path = Path::new(name);
    let raw = match extension(path).as_str() {
        "npy" => npy::read_labels_from(bytes, path)?,
        "csv" | "tsv" | "txt" => {
            parse_label_column(text::read_label_fields_from(bytes, path)?, path)?
        }
        _ => return Err(unknown_extension(path, "labels", ".npy, .csv, .tsv, .txt")),
    };
    Ok(raw.into_labels())
}

/// Turns a text column (line number, text) into numbers or strings.
///
/// Numbers (whole numbers, also written `3.0`) when every row but possibly the first is one.
/// The first row is a header when it is not a number while the rest are, or — for a column
/// of strings — when its value occurs nowhere else (a class with a single point at the very
/// top is far rarer than a header such as `label`). A wrong guess is caught later, since the
/// label count then differs from the point count by one.
fn parse_label_column(fields: Vec<(u64, String)>, path: &Path) -> Result<RawLabels, IoError> {
    let Some((first, rest)) = fields.split_first() else {
        return Err(IoError::no_data(path, "no labels"));
    };
    let as_int = |s: &str| s.parse::<i128>().ok().or_else(|| whole(s));
    let rest_numeric = rest.iter().all(|(_, s)| as_int(s).is_some());
    let header = if rest_numeric {
        as_int(&first.1).is_none()
    } else {
        rest.len() >= 2 && !rest.iter().any(|(_, s)| *s == first.1)
    };
    let body = if header { rest } else { &fields[..] };
    if body.is_empty() {
        return Err(IoError::no_data(path, "only a header, no labels"));
    }
    if rest_numeric {
        // Every row of `body` is a number here (the first one too, unless it is the header).
        return Ok(RawLabels::Ints(
            body.iter().filter_map(|(_, s)| as_int(s)).collect(),
        ));
    }
    Ok(RawLabels::Strings(
        body.iter().map(|(_, s)| s.clone()).collect(),
    ))
}

/// `s` as an integer when it is a float with a whole value ("3.0", "1e3").
fn whole(s: &str) -> Option<i128> {
    integral(s.parse().ok()?)
}

/// `v` as an integer when it is one: finite, no fractional part, and within ±2^63 (so
/// every such value converts exactly).
pub(crate) fn integral(v: f64) -> Option<i128> {
    (v.is_finite() && v.fract() == 0.0 && v.abs() < 9.2e18).then_some(v as i128)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn npy_bytes(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        crate::io::npy::tests::npy_file(descr, false, shape, data)
    }

    #[test]
    fn numeric_codes_follow_numeric_order() {
        let l = Labels::from_ints(&[10, -1, 2, 10, 2]);
        assert_eq!(l.names, ["-1", "2", "10"]);
        assert_eq!(l.codes, [2, 0, 1, 2, 1]);
        assert_eq!(l.len(), 5);
    }

    #[test]
    fn string_codes_follow_sorted_order() {
        let v: Vec<String> = ["b", "a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let l = Labels::from_strings(&v);
        assert_eq!(l.names, ["a", "b", "c"]);
        assert_eq!(l.codes, [1, 0, 1, 2]);
    }

    #[test]
    fn npy_int_dtypes_and_shapes() {
        for (descr, data) in [
            (
                "<i8",
                [3i64, 1, 3]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect::<Vec<_>>(),
            ),
            (
                ">i4",
                [3i32, 1, 3].iter().flat_map(|v| v.to_be_bytes()).collect(),
            ),
            ("|u1", vec![3u8, 1, 3]),
            (
                "<u2",
                [3u16, 1, 3].iter().flat_map(|v| v.to_le_bytes()).collect(),
            ),
            (
                "<f8",
                [3.0f64, 1.0, 3.0]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ),
            (
                "<f4",
                [3.0f32, 1.0, 3.0]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ),
        ] {
            for shape in ["(3,)", "(3, 1)", "(1, 3)"] {
                let l = read_labels_npy_bytes(&npy_bytes(descr, shape, &data), "l.npy").unwrap();
                assert_eq!(l.names, ["1", "3"], "{descr} {shape}");
                assert_eq!(l.codes, [1, 0, 1], "{descr} {shape}");
            }
        }
        let big = [u64::MAX, 0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<_>>();
        let l = read_labels_npy_bytes(&npy_bytes("<u8", "(2,)", &big), "l.npy").unwrap();
        assert_eq!(l.names, ["0", "18446744073709551615"]);
    }

    #[test]
    fn npy_string_labels() {
        let mut data = Vec::new();
        for s in ["cat", "dog", "cat"] {
            let mut u: Vec<u32> = s.chars().map(u32::from).collect();
            u.resize(4, 0);
            data.extend(u.iter().flat_map(|c| c.to_le_bytes()));
        }
        let l = read_labels_npy_bytes(&npy_bytes("<U4", "(3,)", &data), "l.npy").unwrap();
        assert_eq!(
            (l.names, l.codes),
            (vec!["cat".into(), "dog".into()], vec![0, 1, 0])
        );
        let l = read_labels_npy_bytes(&npy_bytes("|S3", "(2,)", b"ab\0xyz"), "l.npy").unwrap();
        assert_eq!(l.names, ["ab", "xyz"]);
    }

    #[test]
    fn npy_label_errors() {
        let data: Vec<u8> = [1.5f64].iter().flat_map(|v| v.to_le_bytes()).collect();
        let e = read_labels_npy_bytes(&npy_bytes("<f8", "(1,)", &data), "l.npy").unwrap_err();
        assert_eq!(
            e.to_string(),
            "l.npy: label 1 (1-based): label 1.5 is not a whole number"
        );
        let e = read_labels_npy_bytes(&npy_bytes("|u1", "(2, 2)", &[0; 4]), "l.npy").unwrap_err();
        assert!(e.to_string().contains("one column"), "{e}");
        let e = read_labels_npy_bytes(&npy_bytes("|u1", "(0,)", &[]), "l.npy").unwrap_err();
        assert!(matches!(e, IoError::NoData { .. }), "{e}");
        let e = read_labels_npy_bytes(&npy_bytes("<c8", "(1,)", &[0; 8]), "l.npy").unwrap_err();
        assert!(e.to_string().contains("`<c8`"), "{e}");
    }

    #[test]
    fn text_label_files() {
        let dir = tempfile::tempdir().unwrap();
        let cases: &[(&str, &str, &[&str], &[u32])] = &[
            ("a.csv", "label\n3\n1\n\n3\n", &["1", "3"], &[1, 0, 1]),
            ("b.csv", "3\n1\n3.0\n", &["1", "3"], &[1, 0, 1]),
            (
                "c.tsv",
                "cell type\nT cell\nB cell\nT cell\n",
                &["B cell", "T cell"],
                &[1, 0, 1],
            ),
            (
                "d.txt",
                "T cell\nB cell\nT cell\n",
                &["B cell", "T cell"],
                &[1, 0, 1],
            ),
            ("e.csv", "\"a,b\"\nc\n\"a,b\"\n", &["a,b", "c"], &[0, 1, 0]),
        ];
        for (name, body, names, codes) in cases {
            let p = dir.path().join(name);
            fs::write(&p, body).unwrap();
            let l = read_labels(&p).unwrap();
            assert_eq!(l.names, *names, "{name}");
            assert_eq!(l.codes, *codes, "{name}");
        }
    }

    #[test]
    fn text_label_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("two.csv");
        fs::write(&p, "1,2\n3,4\n").unwrap();
        let e = read_labels(&p).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("one column"), "{e}");
        let p = dir.path().join("empty.csv");
        fs::write(&p, "").unwrap();
        assert!(matches!(read_labels(&p), Err(IoError::NoData { .. })));
        let p = dir.path().join("only_header.csv");
        fs::write(&p, "label\n").unwrap();
        assert!(matches!(read_labels(&p), Err(IoError::NoData { .. })));
        let e = read_labels(&dir.path().join("l.xlsx")).unwrap_err();
        assert!(matches!(e, IoError::UnknownExtension { .. }), "{e}");
        let e = read_labels(&dir.path().join("missing.npy")).unwrap_err();
        assert!(e.to_string().ends_with("missing.npy: no such file"), "{e}");
    }
}
