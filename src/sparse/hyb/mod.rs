//! HYB = ELL + COO (Bell & Garland 2009), the GPU layout of P: [`Hyb`] on the host, built
//! from CSR, and its device sibling [`gpu::HybGpu`].

pub mod gpu;

use super::SparseError;
use crate::affinity::Affinities;

/// Rows needed at a width before ELL beats COO for them (cusp's break-even count).
const BREAKEVEN_ROWS: usize = 4096;
/// ELL is worth a slot when at least 1/`RELATIVE_SPEED` of the rows fill it (cusp).
const RELATIVE_SPEED: usize = 3;

/// P as an ELL block of width K plus a COO tail: the whole P, or rows `row0 .. row0 + n`
/// of it (a GPU's block in a run over several GPUs, [`Hyb::row_block`]), whose row i is
/// point `row0 + i` and whose columns number the points of the whole P.
///
/// # Invariants
/// - `ell_cols.len() == ell_vals.len() == k * n`; slot s of row i is at `s * n + i`
///   (column-major: a warp reading rows i..i+32 of one slot reads consecutive words)
/// - unused slots have column `row0 + i` (the row's own point) and value 0 (they
///   contribute exactly nothing)
/// - `coo_rows`, `coo_cols`, `coo_vals` have equal length, sorted by row; rows are whole-P
///   numbers (`row0 ..`), so that a block's COO part is a slice of the whole's
#[derive(Clone, Debug)]
pub struct Hyb {
    /// Rows held.
    pub n: usize,
    /// The whole P's number of the first row held (0: all of P).
    pub row0: usize,
    pub k: usize,
    pub ell_cols: Vec<i32>,
    pub ell_vals: Vec<f32>,
    pub coo_rows: Vec<i32>,
    pub coo_cols: Vec<i32>,
    pub coo_vals: Vec<f32>,
}

impl Hyb {
    /// ELL width from the row-length histogram (cusp's rule): the largest K such that at
    /// least max(4096, n/3) rows have K or more entries — wider slots would be mostly
    /// padding, whose bytes cost as much as real entries.
    pub fn choose_width(row_lengths: &[usize]) -> usize {
        let n = row_lengths.len();
        let max_len = row_lengths.iter().copied().max().unwrap_or(0);
        // at_least[k] = rows with length ≥ k.
        let mut hist = vec![0usize; max_len + 2];
        for &l in row_lengths {
            hist[l] += 1;
        }
        let mut at_least = 0;
        let threshold = BREAKEVEN_ROWS.max(n / RELATIVE_SPEED).min(n);
        for k in (1..=max_len).rev() {
            at_least += hist[k];
            if at_least >= threshold {
                return k;
            }
        }
        0
    }

    /// Converts canonical CSR; `width` = `None` uses [`Hyb::choose_width`].
    pub fn from_csr(p: &Affinities, width: Option<usize>) -> Result<Hyb, SparseError> {
        let n = p.rows();
        if n > i32::MAX as usize {
            return Err(SparseError::Invariant {
                what: format!("{n} rows exceed the GPU's 32-bit indices"),
            });
        }
        let lengths: Vec<usize> = p.outer_iterator().map(|r| r.nnz()).collect();
        let k = width.unwrap_or_else(|| Hyb::choose_width(&lengths));
        let mut ell_cols: Vec<i32> = (0..k * n).map(|e| (e % n.max(1)) as i32).collect();
        let mut ell_vals = vec![0f32; k * n];
        let mut coo_rows = Vec::new();
        let mut coo_cols = Vec::new();
        let mut coo_vals = Vec::new();
        for (i, row) in p.outer_iterator().enumerate() {
            for (s, (j, &v)) in row.iter().enumerate() {
                if s < k {
                    ell_cols[s * n + i] = j as i32;
                    ell_vals[s * n + i] = v;
                } else {
                    coo_rows.push(i as i32);
                    coo_cols.push(j as i32);
                    coo_vals.push(v);
                }
            }
        }
        Ok(Hyb {
            n,
            row0: 0,
            k,
            ell_cols,
            ell_vals,
            coo_rows,
            coo_cols,
            coo_vals,
        })
    }

    /// Rows `rows` of this P (of its own numbering), with their columns, as a [`Hyb`] of
    /// the same width whose `row0` places them in the whole P: the row block one GPU
    /// attracts in a run over several ([`crate::backend::multi`]). Copies the ELL slots'
    /// runs of the block and the COO entries of its rows ([`Hyb::coo_range`]).
    pub fn row_block(&self, rows: std::ops::Range<usize>) -> Hyb {
        let (lo, hi) = (rows.start.min(self.n), rows.end.min(self.n));
        let nb = hi.saturating_sub(lo);
        let mut ell_cols = Vec::with_capacity(nb * self.k);
        let mut ell_vals = Vec::with_capacity(nb * self.k);
        for s in 0..self.k {
            ell_cols.extend_from_slice(&self.ell_cols[s * self.n + lo..s * self.n + lo + nb]);
            ell_vals.extend_from_slice(&self.ell_vals[s * self.n + lo..s * self.n + lo + nb]);
        }
        let coo = self.coo_range(lo..hi);
        let (first, last) = (coo.start, coo.end);
        Hyb {
            n: nb,
            row0: self.row0 + lo,
            k: self.k,
            ell_cols,
            ell_vals,
            coo_rows: self.coo_rows[first..last].to_vec(),
            coo_cols: self.coo_cols[first..last].to_vec(),
            coo_vals: self.coo_vals[first..last].to_vec(),
        }
    }

    /// The COO entries of the rows `rows` (of this P's numbering), found by bisection.
    pub fn coo_range(&self, rows: std::ops::Range<usize>) -> std::ops::Range<usize> {
        let at = |r: usize| {
            self.coo_rows
                .partition_point(|&c| (c as usize) < self.row0 + r)
        };
        at(rows.start)..at(rows.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn width_follows_the_histogram() {
        // 10,000 rows of 5 entries and 100 rows of 50: K = 5.
        let mut lengths = vec![5usize; 10_000];
        lengths.extend(std::iter::repeat_n(50, 100));
        assert_eq!(Hyb::choose_width(&lengths), 5);
        // Small matrices: the threshold is capped at n, so K is the shortest row's length.
        assert_eq!(Hyb::choose_width(&[3, 4, 9]), 3);
        assert_eq!(Hyb::choose_width(&[]), 0);
    }

    #[test]
    fn every_entry_lands_once() {
        let p = ragged(50);
        for width in [None, Some(0), Some(2), Some(10)] {
            let h = Hyb::from_csr(&p, width).unwrap();
            let mut dense = vec![0f32; 50 * 50];
            add_dense(&h, 50, &mut dense);
            for (i, row) in p.outer_iterator().enumerate() {
                for (j, &v) in row.iter() {
                    assert_eq!(dense[i * 50 + j], v);
                }
            }
            let total: f32 = dense.iter().sum();
            let want: f32 = p.data().iter().sum();
            assert_eq!(total, want);
        }
    }

    /// A 50 × 50-ish P whose rows have 1 to 7 entries, so that some spill into COO.
    fn ragged(n: usize) -> Affinities {
        let mut t = sprs::TriMatI::<f32, u32>::new((n, n));
        for i in 0..n {
            for d in 1..=(i % 7 + 1) {
                t.add_triplet(i, (i + d * 3) % n, (i * 100 + d) as f32);
            }
        }
        t.to_csr()
    }

    /// Adds the entries of `h` (rows row0 .. row0 + h.n of an n × n P) to `dense`, checking
    /// that every padding slot points at its own row with value 0.
    fn add_dense(h: &Hyb, n: usize, dense: &mut [f32]) {
        for s in 0..h.k {
            for i in 0..h.n {
                let (j, v) = (h.ell_cols[s * h.n + i] as usize, h.ell_vals[s * h.n + i]);
                if v == 0.0 {
                    assert_eq!(j, h.row0 + i, "padding of row {i}");
                }
                dense[(h.row0 + i) * n + j] += v;
            }
        }
        for e in 0..h.coo_vals.len() {
            let i = h.coo_rows[e] as usize;
            assert!((h.row0..h.row0 + h.n).contains(&i), "COO row {i}");
            dense[i * n + h.coo_cols[e] as usize] += h.coo_vals[e];
        }
    }

    /// Row blocks hold exactly their rows' entries (ELL and COO), placed by `row0`, and
    /// together the whole P, for blocks that cut anywhere, empty ones and those past the end
    /// included.
    #[test]
    fn row_blocks_hold_their_rows() {
        let n = 50;
        let p = ragged(n);
        for width in [Some(0), Some(2), Some(10)] {
            let whole = Hyb::from_csr(&p, width).unwrap();
            assert!(!whole.coo_vals.is_empty() || width == Some(10));
            let mut want = vec![0f32; n * n];
            add_dense(&whole, n, &mut want);
            for cuts in [
                vec![0, 50],
                vec![0, 17, 34, 50],
                vec![0, 1, 2, 49, 50],
                vec![0, 25, 60],
            ] {
                let mut got = vec![0f32; n * n];
                for w in cuts.windows(2) {
                    let block = whole.row_block(w[0]..w[1]);
                    assert_eq!(block.row0, w[0].min(n));
                    assert_eq!(block.n, w[1].min(n) - w[0].min(n));
                    assert_eq!(block.k, whole.k);
                    let mut mine = vec![0f32; n * n];
                    add_dense(&block, n, &mut mine);
                    for (r, row) in mine.chunks(n).enumerate() {
                        if !(w[0]..w[1]).contains(&r) {
                            assert!(row.iter().all(|&v| v == 0.0), "block {w:?} holds row {r}");
                        }
                    }
                    got.iter_mut().zip(&mine).for_each(|(g, m)| *g += m);
                }
                assert_eq!(got, want, "width {width:?}, cuts {cuts:?}");
            }
        }
    }
}
