//! Matrix Market graphs (`.mtx`) for SG-t-SNE graph mode: a square, non-negative weight
//! matrix read into CSR.
//!
//! Accepted: `%%MatrixMarket matrix coordinate {real|integer|pattern} {general|symmetric}`
//! (case-insensitive), `%` comment lines, blank lines, a size line `rows cols entries`, then
//! one `i j [w]` line per entry with 1-based indices. Pattern entries weigh 1. Duplicates are
//! summed (as [`sprs::TriMat::to_csr`] does); symmetric files list one triangle and get the
//! other mirrored, the diagonal once. Explicit zeros are dropped: an edge of weight 0 carries
//! no affinity. Weights must be finite and non-negative, since they become probabilities.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use sprs::{CsMat, TriMat};

use super::error::{IoError, Place};

/// What the banner declares about the entries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Real,
    Pattern,
}

/// Reads a Matrix Market graph into CSR (`sprs::CsMat<f64>`).
pub fn read_graph(path: &Path) -> Result<CsMat<f64>, IoError> {
    if super::error::extension(path) != "mtx" {
        return Err(super::error::unknown_extension(path, "a graph", ".mtx"));
    }
    let file = File::open(path).map_err(|e| IoError::read(path, e))?;
    let total = file.metadata().map_err(|e| IoError::read(path, e))?.len();
    read_mtx_from(BufReader::new(file), total, path)
}

/// [`read_graph`] of the bytes of a `.mtx` file; `name` stands for the path in errors.
pub fn read_graph_bytes(bytes: &[u8], name: &str) -> Result<CsMat<f64>, IoError> {
    read_mtx_from(bytes, bytes.len() as u64, Path::new(name))
}

/// Parses Matrix Market coordinate text: header, size line, then one entry a line, each
/// checked where it stands so that the error names its line; `total` is the input's length in
/// bytes. One function, long: a line-by-line parser with its checks in order.
fn read_mtx_from(r: impl BufRead, total: u64, path: &Path) -> Result<CsMat<f64>, IoError> {
    let err = |line: u64, reason: String| IoError::format(path, Some(Place::Line(line)), reason);
    let mut lines = r.lines().enumerate().map(|(i, l)| (i as u64 + 1, l));
    let Some((_, banner)) = lines.next() else {
        return Err(IoError::no_data(path, "the file is empty (0 bytes)"));
    };
    let banner = banner.map_err(|e| IoError::read(path, e))?;
    let (field, symmetric) = parse_banner(&banner).map_err(|r| err(1, r))?;

    // The size line: the first line that is neither a comment nor blank.
    let mut size = None;
    let mut tri = TriMat::new((0, 0));
    let mut seen = 0usize;
    let mut declared = 0usize;
    let mut n = 0usize;
    for (line, text) in lines {
        let text = text.map_err(|e| IoError::read(path, e))?;
        let t = text.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        let mut parts = t.split_whitespace();
        if size.is_none() {
            let nums: Vec<usize> = parts
                .map(str::parse)
                .collect::<Result<_, _>>()
                .map_err(|_| err(line, format!("expected `rows cols entries`, found `{t}`")))?;
            let [rows, cols, nnz] = nums[..] else {
                return Err(err(
                    line,
                    format!("expected `rows cols entries`, found `{t}`"),
                ));
            };
            if rows != cols {
                return Err(err(
                    line,
                    format!("the graph must be square, found {rows} × {cols}"),
                ));
            }
            if rows == 0 {
                return Err(IoError::no_data(path, "the graph has 0 nodes"));
            }
            (n, declared) = (rows, nnz);
            // Capacity from the file's own count, but no more entries than its bytes can hold
            // (a line `i j` takes 4 with its end), so a lying header claims no memory.
            let room = usize::try_from(total / 4).unwrap_or(usize::MAX);
            let mirrored = if symmetric { 2 } else { 1 };
            tri = TriMat::with_capacity((n, n), nnz.min(room).saturating_mul(mirrored));
            size = Some(line);
            continue;
        }
        if seen == declared {
            return Err(err(
                line,
                format!("more entries than the {declared} declared"),
            ));
        }
        let mut index = |what: &str| -> Result<usize, IoError> {
            let s = parts
                .next()
                .ok_or_else(|| err(line, format!("missing {what} index")))?;
            match s.parse::<usize>() {
                Ok(i) if (1..=n).contains(&i) => Ok(i - 1),
                _ => Err(err(line, format!("{what} index `{s}` is not in 1..={n}"))),
            }
        };
        let (i, j) = (index("row")?, index("column")?);
        let w = match field {
            Field::Pattern => 1.0,
            Field::Real => {
                let s = parts
                    .next()
                    .ok_or_else(|| err(line, "missing weight".into()))?;
                match s.parse::<f64>() {
                    Ok(w) if w.is_finite() && w >= 0.0 => w,
                    Ok(_) => return Err(err(line, format!("weight {s} must be finite and ≥ 0"))),
                    Err(_) => return Err(err(line, format!("weight `{s}` is not a number"))),
                }
            }
        };
        if let Some(extra) = parts.next() {
            return Err(err(line, format!("unexpected extra field `{extra}`")));
        }
        seen += 1;
        if w != 0.0 {
            tri.add_triplet(i, j, w);
            if symmetric && i != j {
                tri.add_triplet(j, i, w);
            }
        }
    }
    if size.is_none() {
        return Err(IoError::no_data(path, "no size line after the banner"));
    }
    if seen < declared {
        return Err(IoError::Truncated {
            path: path.into(),
            detail: format!("{declared} entries declared, {seen} found"),
        });
    }
    // CSR keeps a row pointer per node, so the node count, not the file, would size it; the
    // entries touch at most 2 · seen nodes, and a graph with most nodes edgeless has nothing
    // to embed, so this bound refuses only such graphs.
    if n / 4 > seen {
        return Err(IoError::format(
            path,
            size.map(Place::Line),
            format!(
                "{n} nodes, but its {seen} entries touch at most {}: more than half of the \
                 nodes would have no edge",
                2 * seen
            ),
        ));
    }
    if tri.nnz() == 0 {
        return Err(IoError::no_data(
            path,
            "the graph has no edges of positive weight",
        ));
    }
    Ok(tri.to_csr())
}

/// Parses the `%%MatrixMarket` banner into (field, symmetric), or says what is wrong.
fn parse_banner(line: &str) -> Result<(Field, bool), String> {
    let words: Vec<String> = line
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    let [banner, "matrix", format, field, symmetry] = w[..] else {
        return Err(format!(
            "expected `%%MatrixMarket matrix coordinate <field> <symmetry>`, found `{line}`"
        ));
    };
    if banner != "%%matrixmarket" {
        return Err(format!(
            "not a Matrix Market file: the first line is `{line}`"
        ));
    }
    if format != "coordinate" {
        return Err(format!(
            "format `{format}` is not supported; use `coordinate`"
        ));
    }
    let field = match field {
        "real" | "integer" | "double" => Field::Real,
        "pattern" => Field::Pattern,
        _ => {
            return Err(format!(
                "field `{field}` is not supported; use real, integer or pattern"
            ))
        }
    };
    let symmetric = match symmetry {
        "general" => false,
        "symmetric" => true,
        _ => {
            return Err(format!(
                "symmetry `{symmetry}` is not supported; use general or symmetric"
            ))
        }
    };
    Ok((field, symmetric))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<CsMat<f64>, IoError> {
        read_mtx_from(text.as_bytes(), text.len() as u64, Path::new("g.mtx"))
    }

    fn dense(m: &CsMat<f64>) -> Vec<Vec<f64>> {
        let mut d = vec![vec![0.0; m.cols()]; m.rows()];
        for (&v, (i, j)) in m.iter() {
            d[i][j] = v;
        }
        d
    }

    #[test]
    fn general_symmetric_pattern_integer() {
        let g = read(
            "%%MatrixMarket matrix coordinate real general\n% a comment\n\n3 3 4\n1 2 0.5\n2 1 1.5\n3 3 2\n1 2 0.25\n",
        )
        .unwrap();
        assert!(g.is_csr());
        assert_eq!(
            dense(&g),
            [[0.0, 0.75, 0.0], [1.5, 0.0, 0.0], [0.0, 0.0, 2.0]]
        );
        let g = read(
            "%%MatrixMarket matrix coordinate integer symmetric\n3 3 3\n2 1 4\n3 3 1\n3 1 0\n",
        )
        .unwrap();
        assert_eq!(
            dense(&g),
            [[0.0, 4.0, 0.0], [4.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
        );
        assert_eq!(g.nnz(), 3, "explicit zero dropped, diagonal once");
        let g =
            read("%%MatrixMarket Matrix Coordinate Pattern General\n2 2 2\n1 2\n2 1\n").unwrap();
        assert_eq!(dense(&g), [[0.0, 1.0], [1.0, 0.0]]);
    }

    #[test]
    fn file_round_trip_and_extension() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("g.mtx");
        std::fs::write(
            &p,
            "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 3\n",
        )
        .unwrap();
        assert_eq!(dense(&read_graph(&p).unwrap()), [[0.0, 3.0], [0.0, 0.0]]);
        let e = read_graph(&dir.path().join("g.txt")).unwrap_err();
        assert!(matches!(e, IoError::UnknownExtension { .. }), "{e}");
        let e = read_graph(&dir.path().join("none.mtx")).unwrap_err();
        assert!(e.to_string().ends_with("none.mtx: no such file"), "{e}");
    }

    #[test]
    fn bad_lines_are_named() {
        let head = "%%MatrixMarket matrix coordinate real general\n3 3 2\n";
        let cases = [
            (
                "1 2 -1\n2 1 1\n",
                "g.mtx: line 3 (1-based): weight -1 must be finite and ≥ 0",
            ),
            (
                "1 2 1\n2 1 nan\n",
                "g.mtx: line 4 (1-based): weight nan must be finite and ≥ 0",
            ),
            (
                "1 2 inf\n",
                "g.mtx: line 3 (1-based): weight inf must be finite and ≥ 0",
            ),
            (
                "1 4 1\n",
                "g.mtx: line 3 (1-based): column index `4` is not in 1..=3",
            ),
            (
                "0 1 1\n",
                "g.mtx: line 3 (1-based): row index `0` is not in 1..=3",
            ),
            (
                "1 2 x\n",
                "g.mtx: line 3 (1-based): weight `x` is not a number",
            ),
            ("1 2\n", "g.mtx: line 3 (1-based): missing weight"),
            (
                "1 2 1 9\n",
                "g.mtx: line 3 (1-based): unexpected extra field `9`",
            ),
            (
                "1 2 1\n2 1 1\n3 3 1\n",
                "g.mtx: line 5 (1-based): more entries than the 2 declared",
            ),
            ("1 2 1\n", "g.mtx: truncated: 2 entries declared, 1 found"),
        ];
        for (body, want) in cases {
            let e = read(&format!("{head}{body}")).unwrap_err();
            assert_eq!(e.to_string(), want);
        }
    }

    #[test]
    fn bad_headers() {
        let cases = [
            ("", "no data"),
            ("hello\n", "expected `%%MatrixMarket"),
            (
                "%%MatrixMarket matrix array real general\n",
                "format `array`",
            ),
            (
                "%%MatrixMarket matrix coordinate complex general\n",
                "field `complex`",
            ),
            (
                "%%MatrixMarket matrix coordinate real skew-symmetric\n",
                "symmetry `skew-symmetric`",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n2 3 1\n",
                "line 2 (1-based): the graph must be square, found 2 × 3",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n2 2\n",
                "line 2 (1-based): expected `rows cols entries`",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n% only comments\n",
                "no size line",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n0 0 0\n",
                "0 nodes",
            ),
            (
                "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 0\n",
                "no edges",
            ),
        ];
        for (text, want) in cases {
            let e = read(text).unwrap_err().to_string();
            assert!(e.starts_with("g.mtx: "), "{e}");
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
