//! HYB = ELL + COO (Bell & Garland 2009), the GPU layout of P: [`Hyb`] on the host, built
//! from CSR, and its device sibling [`gpu::HybGpu`].

pub mod gpu;

use super::SparseError;
use crate::affinity::Affinities;

/// Rows needed at a width before ELL beats COO for them (cusp's break-even count).
const BREAKEVEN_ROWS: usize = 4096;
/// ELL is worth a slot when at least 1/`RELATIVE_SPEED` of the rows fill it (cusp).
const RELATIVE_SPEED: usize = 3;

/// P as an ELL block of width K plus a COO tail.
///
/// # Invariants
/// - `ell_cols.len() == ell_vals.len() == k * n`; slot s of row i is at `s * n + i`
///   (column-major: a warp reading rows i..i+32 of one slot reads consecutive words)
/// - unused slots have column i and value 0 (they contribute exactly nothing)
/// - `coo_rows`, `coo_cols`, `coo_vals` have equal length, sorted by row
#[derive(Clone, Debug)]
pub struct Hyb {
    pub n: usize,
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
            k,
            ell_cols,
            ell_vals,
            coo_rows,
            coo_cols,
            coo_vals,
        })
    }

    /// Bytes one attraction pass streams (indices and values; padding included).
    pub fn stream_bytes(&self) -> usize {
        (self.ell_vals.len() + self.coo_vals.len()) * 8 + self.coo_rows.len() * 4
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
        let mut t = sprs::TriMatI::<f32, u32>::new((50, 50));
        for i in 0..50usize {
            for d in 1..=(i % 7 + 1) {
                t.add_triplet(i, (i + d * 3) % 50, (i * 100 + d) as f32);
            }
        }
        let p: Affinities = t.to_csr();
        for width in [None, Some(0), Some(2), Some(10)] {
            let h = Hyb::from_csr(&p, width).unwrap();
            let mut dense = vec![0f32; 50 * 50];
            for s in 0..h.k {
                for i in 0..50 {
                    let j = h.ell_cols[s * 50 + i] as usize;
                    dense[i * 50 + j] += h.ell_vals[s * 50 + i];
                }
            }
            for e in 0..h.coo_vals.len() {
                dense[h.coo_rows[e] as usize * 50 + h.coo_cols[e] as usize] += h.coo_vals[e];
            }
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
}
