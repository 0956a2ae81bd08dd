//! [`Map`]: an embedding and its columns packed for the page — coordinates quantised to 16
//! bits per axis over the map's box, category codes in the fewest bytes that hold them,
//! numbers as `f32` — with a manifest (JSON) that tells the page how to read the buffers.
//!
//! 16 bits per axis split the box into 65,536 steps: with the whole map on a 4,000-pixel
//! screen a step is 1/16 of a pixel, and it stays below a pixel up to a 16× zoom, for 4
//! bytes a point in 2-D instead of 8 (`f32`), 5⅓ once base64 inlines them in the page.

use rayon::prelude::*;
use serde::Serialize;

use super::column::{Column, Values};
use super::error::ViewError;

/// The largest quantised coordinate.
const Q_MAX: f64 = 65535.0;

/// An embedding packed for the page: the manifest and the binary buffers it indexes.
///
/// # Invariants
/// - `buffers[manifest.coords]` holds `n × dims` little-endian `u16`, row-major
/// - each column's buffer holds `n` values of its width
#[derive(Debug)]
pub struct Map {
    pub(super) manifest: Manifest,
    pub(super) buffers: Vec<Vec<u8>>,
}

/// What the page reads before the buffers: the box, and each column's kind and buffer.
#[derive(Debug, Serialize)]
pub(super) struct Manifest {
    pub title: String,
    pub n: usize,
    pub dims: usize,
    /// The box: per axis the least and the greatest coordinate.
    pub lo: Vec<f64>,
    pub hi: Vec<f64>,
    /// The buffer of the quantised coordinates.
    pub coords: usize,
    pub columns: Vec<ColumnInfo>,
    /// Whether the buffers are inlined in the page (base64) or fetched from `buffer/I`.
    pub inline: bool,
}

/// One column as the page sees it.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub(super) enum ColumnInfo {
    /// Codes (of `bytes` bytes each) into `names`; `counts[c]` points have code `c`.
    Categories {
        name: String,
        names: Vec<String>,
        counts: Vec<u64>,
        bytes: u8,
        buffer: usize,
    },
    /// `f32` values; `lo`/`hi` span the finite ones (equal when there are none).
    Numbers {
        name: String,
        lo: f64,
        hi: f64,
        buffer: usize,
    },
}

impl Map {
    /// Packs the embedding `y` (n × `dims`, row-major) and its `columns`, after checking
    /// them: 1–3 dimensions, at least one point, every coordinate finite, one value per point
    /// in every column, column names distinct.
    pub fn new(y: &[f32], dims: usize, columns: &[Column], title: &str) -> Result<Map, ViewError> {
        if !(1..=3).contains(&dims) {
            return Err(ViewError::Dims { dims });
        }
        if !y.len().is_multiple_of(dims) {
            return Err(ViewError::Ragged { len: y.len(), dims });
        }
        let n = y.len() / dims;
        if n == 0 {
            return Err(ViewError::Empty);
        }
        if let Some(i) = y.par_iter().position_first(|v| !v.is_finite()) {
            return Err(ViewError::NotFinite {
                row: i / dims + 1,
                col: i % dims + 1,
                value: y[i],
            });
        }
        for (i, c) in columns.iter().enumerate() {
            if c.len() != n {
                return Err(ViewError::Length {
                    name: c.name.clone(),
                    len: c.len(),
                    n,
                });
            }
            if columns[..i].iter().any(|o| o.name == c.name) {
                return Err(ViewError::DuplicateName {
                    name: c.name.clone(),
                });
            }
        }
        let (lo, hi) = bounds(y, dims);
        let mut buffers = vec![quantise(y, dims, &lo, &hi)];
        let mut infos = Vec::with_capacity(columns.len());
        for c in columns {
            let buffer = buffers.len();
            let (info, bytes) = pack_column(c, buffer);
            infos.push(info);
            buffers.push(bytes);
        }
        Ok(Map {
            manifest: Manifest {
                title: title.to_string(),
                n,
                dims,
                lo,
                hi,
                coords: 0,
                columns: infos,
                inline: true,
            },
            buffers,
        })
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.manifest.n
    }

    /// Always false: a map holds at least one point.
    pub fn is_empty(&self) -> bool {
        self.manifest.n == 0
    }
}

/// Per axis, the least and greatest coordinate (in parallel: 10M points in a few ms).
fn bounds(y: &[f32], dims: usize) -> (Vec<f64>, Vec<f64>) {
    let init = || (vec![f64::INFINITY; dims], vec![f64::NEG_INFINITY; dims]);
    y.par_chunks(dims * 4096)
        .fold(init, |(mut lo, mut hi), chunk| {
            for row in chunk.chunks_exact(dims) {
                for (k, &v) in row.iter().enumerate() {
                    lo[k] = lo[k].min(f64::from(v));
                    hi[k] = hi[k].max(f64::from(v));
                }
            }
            (lo, hi)
        })
        .reduce(init, |(mut lo, mut hi), (l, h)| {
            for k in 0..dims {
                lo[k] = lo[k].min(l[k]);
                hi[k] = hi[k].max(h[k]);
            }
            (lo, hi)
        })
}

/// The coordinates as little-endian `u16` steps over the box (an axis of zero width is all
/// step 0).
fn quantise(y: &[f32], dims: usize, lo: &[f64], hi: &[f64]) -> Vec<u8> {
    let scale: Vec<f64> = (0..dims)
        .map(|k| {
            let span = hi[k] - lo[k];
            if span > 0.0 {
                Q_MAX / span
            } else {
                0.0
            }
        })
        .collect();
    let mut out = vec![0u8; y.len() * 2];
    out.par_chunks_mut(2 * dims * 4096)
        .zip(y.par_chunks(dims * 4096))
        .for_each(|(out, y)| {
            for (i, (o, &v)) in out.chunks_exact_mut(2).zip(y).enumerate() {
                let k = i % dims;
                let q = ((f64::from(v) - lo[k]) * scale[k])
                    .round()
                    .clamp(0.0, Q_MAX) as u16;
                o.copy_from_slice(&q.to_le_bytes());
            }
        });
    out
}

/// A column's manifest entry and its buffer.
fn pack_column(c: &Column, buffer: usize) -> (ColumnInfo, Vec<u8>) {
    match &c.values {
        Values::Categories(labels) => {
            let mut counts = vec![0u64; labels.names.len()];
            for &code in &labels.codes {
                counts[code as usize] += 1;
            }
            let bytes: u8 = match labels.names.len() {
                0..=256 => 1,
                257..=65536 => 2,
                _ => 4,
            };
            let data = match bytes {
                1 => labels.codes.iter().map(|&c| c as u8).collect(),
                2 => labels
                    .codes
                    .iter()
                    .flat_map(|&c| (c as u16).to_le_bytes())
                    .collect(),
                _ => labels.codes.iter().flat_map(|&c| c.to_le_bytes()).collect(),
            };
            let info = ColumnInfo::Categories {
                name: c.name.clone(),
                names: labels.names.clone(),
                counts,
                bytes,
                buffer,
            };
            (info, data)
        }
        Values::Numbers(v) => {
            let finite = v.iter().copied().filter(|x| x.is_finite());
            let lo = finite.clone().fold(f64::INFINITY, f64::min);
            let hi = finite.fold(f64::NEG_INFINITY, f64::max);
            let (lo, hi) = if lo <= hi { (lo, hi) } else { (0.0, 0.0) };
            let data = v.iter().flat_map(|&x| (x as f32).to_le_bytes()).collect();
            let info = ColumnInfo::Numbers {
                name: c.name.clone(),
                lo,
                hi,
                buffer,
            };
            (info, data)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::Labels;

    #[test]
    fn coordinates_span_the_steps() {
        let y = [0.0, 10.0, 1.0, 20.0, 0.5, 15.0];
        let map = Map::new(&y, 2, &[], "t").unwrap();
        let q: Vec<u16> = map.buffers[0]
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        assert_eq!(q, [0, 0, 65535, 65535, 32768, 32768]);
        assert_eq!(
            (map.manifest.lo.clone(), map.manifest.hi.clone()),
            (vec![0.0, 10.0], vec![1.0, 20.0])
        );
    }

    #[test]
    fn bad_input_is_refused() {
        let e = |y: &[f32], dims, cols: &[Column]| {
            Map::new(y, dims, cols, "t").unwrap_err().to_string()
        };
        assert_eq!(
            e(&[1.0; 4], 4, &[]),
            "the embedding has 4 columns; a map shows 1, 2 or 3"
        );
        assert_eq!(e(&[], 2, &[]), "the embedding has no points");
        assert!(e(&[0.0, 1.0, f32::NAN, 0.0], 2, &[]).contains("row 2, column 1"));
        let short = Column::categorical("l", Labels::from_ints(&[1]));
        assert_eq!(
            e(&[0.0; 4], 2, &[short]),
            "column `l` has 1 values for 2 points"
        );
        let a = Column::numeric("a", vec![1.0, 2.0]);
        assert!(e(&[0.0; 4], 2, &[a.clone(), a]).contains("two columns"));
    }

    #[test]
    fn categories_take_the_fewest_bytes() {
        let ints: Vec<i128> = (0..300).collect();
        let y = vec![0.0f32; 300];
        let map = Map::new(
            &y,
            1,
            &[Column::categorical("c", Labels::from_ints(&ints))],
            "t",
        )
        .unwrap();
        assert!(matches!(
            map.manifest.columns[0],
            ColumnInfo::Categories { bytes: 2, .. }
        ));
        assert_eq!(map.buffers[1].len(), 600);
    }
}
