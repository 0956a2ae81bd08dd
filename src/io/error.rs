//! [`IoError`]: what can go wrong reading or writing a file.
//!
//! Every message starts with the file's path (or the name given to a byte reader) and, where
//! a position applies, says where: rows, columns, lines and vectors are counted from 1 and
//! the message says so, because these errors are read by people who open the file in an editor.

use std::fmt;
use std::path::{Path, PathBuf};

/// Errors of reading and writing files; each names the file and, where it applies, the place.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IoError {
    /// The input file does not exist.
    #[error("{}: no such file", path.display())]
    NotFound { path: PathBuf },
    /// The operating system refused to read the file (permissions, a directory, …).
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The operating system refused to write the file or its temporary sibling.
    #[error("{}: cannot write: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The extension does not name a format this reader or writer knows.
    #[error("{}: unsupported extension {ext} for {what}; expected one of {expected}", path.display())]
    UnknownExtension {
        path: PathBuf,
        /// The extension as found, quoted (`` `.xlsx` ``), or "(none)".
        ext: String,
        /// What was being read or written ("points", "labels", "an embedding", …).
        what: &'static str,
        /// The accepted extensions, e.g. ".npy, .csv".
        expected: &'static str,
    },
    /// The directory that should hold an output does not exist or is not a directory.
    #[error("{}: the output directory {} does not exist", path.display(), dir.display())]
    NoOutputDir { path: PathBuf, dir: PathBuf },
    /// The input holds no values (0 bytes, 0 rows or 0 columns).
    #[error("{}: no data ({detail})", path.display())]
    NoData { path: PathBuf, detail: String },
    /// A value is NaN or ±infinity, or too large for `f32`.
    #[error("{}: {what} value {value} at {at}", path.display())]
    NotFinite {
        path: PathBuf,
        /// "non-finite" or "out of f32 range".
        what: &'static str,
        /// The value as read (text for text files).
        value: String,
        at: Place,
    },
    /// A text field is not a number.
    #[error("{}: line {line}, column {col} (1-based): cannot read `{text}` as a number", path.display())]
    Parse {
        path: PathBuf,
        line: u64,
        col: usize,
        text: String,
    },
    /// A text row has a different number of fields from the first data row.
    #[error("{}: line {line} (1-based) has {found} fields, expected {expected} as in the first data row", path.display())]
    Ragged {
        path: PathBuf,
        line: u64,
        expected: usize,
        found: usize,
    },
    /// A binary file ends before the data its header (or its own length fields) announce.
    #[error("{}: truncated: {detail}", path.display())]
    Truncated { path: PathBuf, detail: String },
    /// An `.npy` element type this reader does not convert.
    #[error("{}: unsupported dtype `{dtype}` ({reason})", path.display())]
    Dtype {
        path: PathBuf,
        dtype: String,
        reason: &'static str,
    },
    /// Any other malformed content; `at` says where when a place is known.
    #[error("{}: {}{reason}", path.display(), at.as_ref().map(|p| format!("{p}: ")).unwrap_or_default())]
    Format {
        path: PathBuf,
        at: Option<Place>,
        reason: String,
    },
    /// The caller passed data that cannot be written as asked (wrong length, bad `dims`, …).
    #[error("{}: {reason}", path.display())]
    Invalid { path: PathBuf, reason: String },
}

/// A place in a file, printed 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Data row and column (both 1-based), and the text line when the file is text.
    Cell {
        row: usize,
        col: usize,
        line: Option<u64>,
    },
    /// A line of a text file (1-based).
    Line(u64),
    /// A record of a binary file: vector `index` of an `.fvecs`, element `index` of labels
    /// (1-based).
    Item { kind: &'static str, index: usize },
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Place::Cell {
                row,
                col,
                line: Some(line),
            } => write!(f, "row {row}, column {col} (line {line}; all 1-based)"),
            Place::Cell {
                row,
                col,
                line: None,
            } => write!(f, "row {row}, column {col} (1-based)"),
            Place::Line(line) => write!(f, "line {line} (1-based)"),
            Place::Item { kind, index } => write!(f, "{kind} {index} (1-based)"),
        }
    }
}

impl IoError {
    /// Maps an error of opening or reading `path`, keeping "no such file" distinct.
    pub(crate) fn read(path: &Path, source: std::io::Error) -> Self {
        if source.kind() == std::io::ErrorKind::NotFound {
            IoError::NotFound { path: path.into() }
        } else {
            IoError::Read {
                path: path.into(),
                source,
            }
        }
    }

    /// Shorthand for [`IoError::Format`].
    pub(crate) fn format(path: &Path, at: Option<Place>, reason: impl Into<String>) -> Self {
        IoError::Format {
            path: path.into(),
            at,
            reason: reason.into(),
        }
    }

    /// Shorthand for [`IoError::NoData`].
    pub(crate) fn no_data(path: &Path, detail: impl Into<String>) -> Self {
        IoError::NoData {
            path: path.into(),
            detail: detail.into(),
        }
    }
}

/// Converts one input value to `f32`, rejecting NaN, ±inf and values beyond `f32`'s range.
///
/// All point readers store `f32` (see [`crate::Points`]): `f64` inputs are rounded to the
/// nearest `f32`, which keeps ~7 significant digits — plenty for t-SNE, whose result does not
/// depend on the 8th digit of the input. A finite `f64` above `f32::MAX` would silently
/// become infinite, so it is an error here instead.
pub(crate) fn to_f32(v: f64, path: &Path, at: Place, text: Option<&str>) -> Result<f32, IoError> {
    let value = || match text {
        Some(t) => t.to_string(),
        None if v.abs() >= 1e16 => format!("{v:e}"),
        None => v.to_string(),
    };
    if !v.is_finite() {
        return Err(IoError::NotFinite {
            path: path.into(),
            what: "non-finite",
            value: value(),
            at,
        });
    }
    let x = v as f32;
    if x.is_finite() {
        Ok(x)
    } else {
        Err(IoError::NotFinite {
            path: path.into(),
            what: "out of f32 range",
            value: value(),
            at,
        })
    }
}

/// The extension of `path`, lower-cased, without the dot ("" when there is none).
pub(crate) fn extension(path: &Path) -> String {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Builds [`IoError::UnknownExtension`] for `path`.
pub(crate) fn unknown_extension(
    path: &Path,
    what: &'static str,
    expected: &'static str,
) -> IoError {
    let ext = match path.extension() {
        Some(e) => format!("`.{}`", e.to_string_lossy()),
        None => "(none)".to_string(),
    };
    IoError::UnknownExtension {
        path: path.into(),
        ext,
        what,
        expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_file_and_place() {
        let p = Path::new("data/x.csv");
        let e = to_f32(
            f64::NAN,
            p,
            Place::Cell {
                row: 3,
                col: 2,
                line: Some(4),
            },
            Some("nan"),
        )
        .unwrap_err();
        let m = e.to_string();
        assert!(
            m.starts_with("data/x.csv: non-finite value nan at row 3, column 2"),
            "{m}"
        );
        assert!(m.contains("line 4"), "{m}");
        let e = to_f32(
            1e300,
            p,
            Place::Cell {
                row: 1,
                col: 1,
                line: None,
            },
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("out of f32 range"), "{e}");
        assert_eq!(to_f32(0.5, p, Place::Line(1), None).unwrap(), 0.5);
        let e = IoError::format(p, Some(Place::Line(7)), "bad");
        assert_eq!(e.to_string(), "data/x.csv: line 7 (1-based): bad");
        let e = unknown_extension(Path::new("a.xlsx"), "points", ".npy, .csv");
        assert_eq!(
            e.to_string(),
            "a.xlsx: unsupported extension `.xlsx` for points; expected one of .npy, .csv"
        );
        let e = IoError::read(p, std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(e.to_string(), "data/x.csv: no such file");
    }
}
