//! Delimited text: points from `.csv` (comma), `.tsv` (tab) or `.txt` (any whitespace), and
//! the single column of a text label file.
//!
//! Points: the first non-blank row is a header when any of its fields is not a number (so a
//! header made only of numbers, like `0,1,2`, is read as data). Blank lines and lines starting
//! with `#` are skipped. Every row must have as many fields as the first data row. Values are
//! parsed as `f64` and rounded to `f32`.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use super::error::{to_f32, IoError, Place};
use crate::Points;

/// Row-major values gathered row by row, checking width, numbers and finiteness.
struct Table<'a> {
    path: &'a Path,
    /// Width of the first data row, once seen.
    cols: Option<usize>,
    /// Whether a first row (header or data) has been seen.
    started: bool,
    rows: usize,
    data: Vec<f32>,
}

impl<'a> Table<'a> {
    fn new(path: &'a Path) -> Self {
        Table {
            path,
            cols: None,
            started: false,
            rows: 0,
            data: Vec::new(),
        }
    }

    /// Adds one row (already split and trimmed); skips it when blank or the header.
    fn push(&mut self, line: u64, fields: &[&str]) -> Result<(), IoError> {
        let found = fields.len();
        if fields.iter().all(|f| f.is_empty()) {
            return Ok(());
        }
        if !self.started {
            self.started = true;
            if fields.iter().any(|f| f.parse::<f64>().is_err()) {
                return Ok(());
            }
        }
        let expected = *self.cols.get_or_insert(found);
        if found != expected {
            return Err(IoError::Ragged {
                path: self.path.into(),
                line,
                expected,
                found,
            });
        }
        self.rows += 1;
        for (j, text) in fields.iter().enumerate() {
            let v: f64 = text.parse().map_err(|_| IoError::Parse {
                path: self.path.into(),
                line,
                col: j + 1,
                text: text.to_string(),
            })?;
            let at = Place::Cell {
                row: self.rows,
                col: j + 1,
                line: Some(line),
            };
            self.data.push(to_f32(v, self.path, at, Some(text))?);
        }
        Ok(())
    }

    fn finish(self) -> Result<Points, IoError> {
        match self.cols {
            None if self.started => Err(IoError::no_data(self.path, "only a header row")),
            None => Err(IoError::no_data(self.path, "no rows")),
            Some(d) => Ok(Points::new(self.rows, d, self.data)),
        }
    }
}

fn open(path: &Path) -> Result<BufReader<File>, IoError> {
    let file = File::open(path).map_err(|e| IoError::read(path, e))?;
    Ok(BufReader::with_capacity(1 << 20, file))
}

/// Calls `f(line_number, text)` for each line of `r`, the contents of `path` (1-based,
/// without the line end).
///
/// Lines are read here rather than by the `csv` reader because `csv` does not count the
/// blank lines it skips, and errors must name the line an editor shows.
fn for_each_line(
    mut r: impl BufRead,
    path: &Path,
    mut f: impl FnMut(u64, &str) -> Result<(), IoError>,
) -> Result<(), IoError> {
    let mut buf = String::new();
    let mut line = 0;
    loop {
        buf.clear();
        let got = r.read_line(&mut buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => {
                IoError::format(path, Some(Place::Line(line + 1)), "not valid UTF-8 text")
            }
            _ => IoError::read(path, e),
        })?;
        if got == 0 {
            return Ok(());
        }
        line += 1;
        f(line, buf.trim_end_matches(['\n', '\r']))?;
    }
}

/// Splits `delimiter`-separated lines into trimmed fields. A line holding a `"` goes
/// through a CSV parser (`csv-core`: RFC 4180 quoting, `"a,b"` one field and `""` a quote),
/// made once per file and reset for each line, as it allocates nothing; lines without quotes
/// (all lines of numbers) are split directly, which is faster. A quoted field cannot span
/// lines.
struct Splitter {
    delimiter: u8,
    quoted: Option<csv_core::Reader>,
    /// The parsed bytes of the last quoted line and their field ends.
    out: Vec<u8>,
    ends: Vec<usize>,
}

impl Splitter {
    fn new(delimiter: u8) -> Self {
        Splitter {
            delimiter,
            quoted: None,
            out: Vec::new(),
            ends: Vec::new(),
        }
    }

    /// Calls `f` with the trimmed fields of `text`, line `line` of `path`.
    fn split<T>(
        &mut self,
        path: &Path,
        line: u64,
        text: &str,
        f: impl FnOnce(&[&str]) -> Result<T, IoError>,
    ) -> Result<T, IoError> {
        if !text.contains('"') {
            return f(&text
                .split(char::from(self.delimiter))
                .map(str::trim)
                .collect::<Vec<_>>());
        }
        let fields = self.parse_quoted(text);
        let fields = fields
            .iter()
            .map(|b| std::str::from_utf8(b).map(str::trim))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| IoError::format(path, Some(Place::Line(line)), "not valid UTF-8 text"))?;
        f(&fields)
    }

    /// The fields of one line holding quotes, unquoted and untrimmed.
    fn parse_quoted(&mut self, text: &str) -> Vec<&[u8]> {
        let delimiter = self.delimiter;
        let reader = self
            .quoted
            .get_or_insert_with(|| csv_core::ReaderBuilder::new().delimiter(delimiter).build());
        reader.reset();
        // The fields are the line's bytes less quotes: as many bytes and at most one field
        // per byte, plus one.
        self.out.resize(text.len() + 1, 0);
        self.ends.resize(text.len() + 2, 0);
        let (mut input, mut n_out, mut n_ends) = (text.as_bytes(), 0, 0);
        loop {
            let (result, read, wrote, ended) =
                reader.read_record(input, &mut self.out[n_out..], &mut self.ends[n_ends..]);
            input = &input[read..];
            n_out += wrote;
            n_ends += ended;
            match result {
                // The line is all given: an empty input next ends the record.
                csv_core::ReadRecordResult::InputEmpty => {}
                csv_core::ReadRecordResult::OutputFull => self.out.resize(2 * self.out.len(), 0),
                csv_core::ReadRecordResult::OutputEndsFull => {
                    self.ends.resize(2 * self.ends.len(), 0)
                }
                csv_core::ReadRecordResult::Record | csv_core::ReadRecordResult::End => break,
            }
        }
        let mut start = 0;
        self.ends[..n_ends]
            .iter()
            .map(|&end| {
                let field = &self.out[start..end];
                start = end;
                field
            })
            .collect()
    }
}

/// Reads points from `.csv` (`delimiter = b','`) or `.tsv` (`b'\t'`).
pub(crate) fn read_points_delimited(path: &Path, delimiter: u8) -> Result<Points, IoError> {
    read_points_delimited_from(open(path)?, path, delimiter)
}

/// [`read_points_delimited`] of the contents `r` of `path`.
pub(crate) fn read_points_delimited_from(
    r: impl BufRead,
    path: &Path,
    delimiter: u8,
) -> Result<Points, IoError> {
    let mut table = Table::new(path);
    let mut splitter = Splitter::new(delimiter);
    for_each_line(r, path, |line, text| {
        if text.trim_start().starts_with('#') {
            return Ok(());
        }
        splitter.split(path, line, text, |fields| table.push(line, fields))
    })?;
    table.finish()
}

/// Reads points from whitespace-separated `.txt`.
pub(crate) fn read_points_whitespace(path: &Path) -> Result<Points, IoError> {
    read_points_whitespace_from(open(path)?, path)
}

/// [`read_points_whitespace`] of the contents `r` of `path`.
pub(crate) fn read_points_whitespace_from(r: impl BufRead, path: &Path) -> Result<Points, IoError> {
    let mut table = Table::new(path);
    for_each_line(r, path, |line, text| {
        if text.trim_start().starts_with('#') {
            return Ok(());
        }
        table.push(line, &text.split_whitespace().collect::<Vec<_>>())
    })?;
    table.finish()
}

/// Reads a one-column label file as (line, text) pairs, skipping blank lines.
///
/// In `.csv`/`.tsv` a label may be quoted (and then hold the delimiter); `.txt` takes each
/// trimmed line whole.
pub(crate) fn read_label_fields(path: &Path) -> Result<Vec<(u64, String)>, IoError> {
    read_label_fields_from(open(path)?, path)
}

/// [`read_label_fields`] of the contents `r` of `path` (whose extension picks the format).
pub(crate) fn read_label_fields_from(
    r: impl BufRead,
    path: &Path,
) -> Result<Vec<(u64, String)>, IoError> {
    let delimiter = match super::error::extension(path).as_str() {
        "csv" => Some(b','),
        "tsv" => Some(b'\t'),
        _ => None,
    };
    let mut out = Vec::new();
    let mut splitter = delimiter.map(Splitter::new);
    for_each_line(r, path, |line, text| {
        if text.trim().is_empty() {
            return Ok(());
        }
        let Some(splitter) = splitter.as_mut() else {
            out.push((line, text.trim().to_string()));
            return Ok(());
        };
        splitter.split(path, line, text, |fields| match fields {
            [one] => {
                out.push((line, one.to_string()));
                Ok(())
            }
            _ => Err(IoError::format(
                path,
                Some(Place::Line(line)),
                format!(
                    "expected one column of labels, found {} fields",
                    fields.len()
                ),
            )),
        })
    })?;
    Ok(out)
}

/// A table with a header row: its column names and, per column, one text field per row
/// (blank lines skipped). `.csv` or `.tsv`; a row with another number of fields than the
/// header is an error naming its line.
pub fn read_table(path: &Path) -> Result<Vec<(String, Vec<String>)>, IoError> {
    let delimiter = match super::error::extension(path).as_str() {
        "csv" => b',',
        "tsv" => b'\t',
        _ => {
            return Err(super::error::unknown_extension(
                path,
                "a table",
                ".csv, .tsv",
            ))
        }
    };
    let mut splitter = Splitter::new(delimiter);
    let mut columns: Vec<(String, Vec<String>)> = Vec::new();
    for_each_line(open(path)?, path, |line, text| {
        if text.trim().is_empty() {
            return Ok(());
        }
        splitter.split(path, line, text, |fields| {
            if columns.is_empty() {
                columns = fields.iter().map(|f| (f.to_string(), Vec::new())).collect();
                return Ok(());
            }
            if fields.len() != columns.len() {
                return Err(IoError::format(
                    path,
                    Some(Place::Line(line)),
                    format!(
                        "{} fields where the header has {}",
                        fields.len(),
                        columns.len()
                    ),
                ));
            }
            for (c, f) in columns.iter_mut().zip(fields) {
                c.1.push(f.to_string());
            }
            Ok(())
        })
    })?;
    if columns.first().is_none_or(|c| c.1.is_empty()) {
        return Err(IoError::no_data(path, "no rows under a header"));
    }
    Ok(columns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::read_points;
    use std::fs;

    fn write(dir: &tempfile::TempDir, name: &str, body: &str) -> std::path::PathBuf {
        let p = dir.path().join(name);
        fs::write(&p, body).unwrap();
        p
    }

    #[test]
    fn csv_tsv_txt_with_and_without_header() {
        let dir = tempfile::tempdir().unwrap();
        let expect = Points::new(3, 2, vec![1.0, 2.0, -3.5, 4e-3, 5.0, 6.0]);
        for (name, body) in [
            ("a.csv", "x,y\n1,2\n-3.5,4e-3\n5,6\n"),
            ("b.csv", "1, 2\n\n-3.5 ,4e-3\n# comment\n5,6"),
            ("c.tsv", "x\ty\n1\t2\n-3.5\t4e-3\n5\t6\n"),
            ("d.txt", "# x y\n1 2\n  -3.5\t 4e-3  \n\n5 6\n"),
            ("e.CSV", "\"x\",\"y\"\r\n1,2\r\n-3.5,4e-3\r\n5,6\r\n"),
        ] {
            assert_eq!(
                read_points(&write(&dir, name, body)).unwrap(),
                expect,
                "{name}"
            );
        }
    }

    #[test]
    fn ragged_rows_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_points(&write(&dir, "r.csv", "a,b\n1,2\n\n3,4,5\n")).unwrap_err();
        let m = e.to_string();
        assert!(
            m.ends_with(
                "r.csv: line 4 (1-based) has 3 fields, expected 2 as in the first data row"
            ),
            "{m}"
        );
        let e = read_points(&write(&dir, "r.txt", "1 2\n3\n")).unwrap_err();
        assert!(
            matches!(
                e,
                IoError::Ragged {
                    line: 2,
                    expected: 2,
                    found: 1,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn bad_values_name_line_column_and_text() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_points(&write(&dir, "p.csv", "a,b\n1,2\n3,x7\n")).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("p.csv: line 3, column 2 (1-based): cannot read `x7` as a number"),
            "{e}"
        );
        let e = read_points(&write(&dir, "n.csv", "1,2\n3,NaN\n")).unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("non-finite value NaN at row 2, column 2 (line 2; all 1-based)"),
            "{m}"
        );
        let e = read_points(&write(&dir, "i.tsv", "h\tk\n1\t2\n-inf\t0\n")).unwrap_err();
        assert!(
            e.to_string().contains("-inf at row 2, column 1 (line 3"),
            "{e}"
        );
        let e = read_points(&write(&dir, "big.csv", "1e39\n")).unwrap_err();
        assert!(e.to_string().contains("out of f32 range value 1e39"), "{e}");
        let e = read_points(&write(&dir, "empty_field.csv", "1,2\n3,\n")).unwrap_err();
        assert!(
            matches!(
                e,
                IoError::Parse {
                    line: 2,
                    col: 2,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn empty_inputs_are_no_data() {
        let dir = tempfile::tempdir().unwrap();
        for (name, body) in [
            ("e.csv", ""),
            ("h.csv", "x,y\n"),
            ("b.tsv", "\n\n"),
            ("w.txt", " \n# c\n"),
        ] {
            let e = read_points(&write(&dir, name, body)).unwrap_err();
            assert!(matches!(e, IoError::NoData { .. }), "{name}: {e}");
            assert!(e.to_string().contains("no data"), "{e}");
        }
    }

    #[test]
    fn tables_have_a_header_and_even_rows() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(&dir, "t.csv", "type,depth\nT,1.5\n\n\"B, naive\",2\n");
        let t = read_table(&p).unwrap();
        assert_eq!(
            t[0],
            (
                "type".to_string(),
                vec!["T".to_string(), "B, naive".to_string()]
            )
        );
        assert_eq!(t[1].1, ["1.5", "2"]);
        let p = write(&dir, "r.tsv", "a\tb\n1\n");
        let e = read_table(&p).unwrap_err().to_string();
        assert!(
            e.contains("line 2") && e.contains("1 fields where the header has 2"),
            "{e}"
        );
        let p = write(&dir, "h.csv", "a,b\n");
        assert!(matches!(read_table(&p), Err(IoError::NoData { .. })));
    }
}
