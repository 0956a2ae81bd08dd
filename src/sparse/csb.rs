//! Compressed sparse blocks (Buluç, Fineman, Frigo, Gilbert, Leiserson 2009).

use rayon::prelude::*;

use super::{split_at_bounds, SparseError};
use crate::affinity::Affinities;

/// One block row of a [`Csb`] under construction: its non-empty block columns, the end of
/// each block's entries (relative to the row's first), and the entries.
struct BlockRow {
    cols: Vec<u32>,
    ends: Vec<usize>,
    coords: Vec<u32>,
    values: Vec<f32>,
}

/// P split into β×β blocks with block-local 16-bit coordinates.
///
/// Block row b covers rows `b·β .. min((b+1)·β, n)`. Its non-empty blocks are
/// `blocks[block_ptr[b] .. block_ptr[b+1]]`, in increasing block column; block t holds the
/// entries `entry_ptr[t] .. entry_ptr[t+1]`, each a packed `(local_row << 16) | local_col`
/// in `coords` and a value in `values`, sorted by (row, col).
///
/// # Invariants (checked by [`Csb::from_csr`])
/// - β is a power of two, 2 ≤ β ≤ 2¹⁶, so local coordinates fit in 16 bits
/// - `block_ptr.len() == n_block_rows + 1`, `entry_ptr.len() == blocks.len() + 1`
/// - `coords.len() == values.len() == nnz`
/// - every (block row, block column, local row, local col) maps to an index < n
#[derive(Clone, Debug)]
pub struct Csb {
    n: usize,
    beta_log2: u32,
    block_ptr: Vec<usize>,
    block_cols: Vec<u32>,
    entry_ptr: Vec<usize>,
    coords: Vec<u32>,
    values: Vec<f32>,
}

/// One block of a block row: its block column and its entries.
pub struct Block<'a> {
    /// Block column index.
    pub col: usize,
    /// Packed `(local_row << 16) | local_col` per entry.
    pub coords: &'a [u32],
    /// Values per entry.
    pub values: &'a [f32],
}

impl Csb {
    /// A block size for n rows and `threads` workers: enough block rows (8 per worker) for
    /// rayon to balance, and at most 2¹⁶ so that local indices fit in `u16`; 2¹⁴ rows of
    /// 3-D `f32` coordinates (192 KiB) still sit in a core's L2.
    pub fn default_beta(n: usize, threads: usize) -> usize {
        let want = n.div_ceil(8 * threads.max(1)).max(2);
        want.next_power_of_two().clamp(256, 1 << 14)
    }

    /// Converts canonical CSR to CSB with block size `beta`.
    pub fn from_csr(p: &Affinities, beta: usize) -> Result<Csb, SparseError> {
        let (n, m) = p.shape();
        if n != m {
            return Err(SparseError::Invariant {
                what: format!("P must be square, it is {n} × {m}"),
            });
        }
        if !beta.is_power_of_two() || !(2..=1 << 16).contains(&beta) {
            return Err(SparseError::Invariant {
                what: format!("block size β = {beta} must be a power of two in 2..=65536"),
            });
        }
        let beta_log2 = beta.trailing_zeros();
        let n_block_rows = n.div_ceil(beta).max(1);
        let indptr = p.indptr();
        let indptr = indptr.to_proper();
        let (indptr, indices, data) = (&indptr[..], p.indices(), p.data());
        // Block rows are independent: each sorts its entries by block column (a counting
        // sort, stable, so they stay in (row, col) order), in parallel; then they are joined.
        let parts: Vec<BlockRow> = (0..n_block_rows)
            .into_par_iter()
            .map(|b| {
                let rows = b * beta..((b + 1) * beta).min(n);
                let span = indptr[rows.start]..indptr[rows.end];
                let mut counts = vec![0usize; n_block_rows + 1];
                for &j in &indices[span.clone()] {
                    counts[(j as usize >> beta_log2) + 1] += 1;
                }
                for c in 1..counts.len() {
                    counts[c] += counts[c - 1];
                }
                let cols: Vec<u32> = (0..n_block_rows)
                    .filter(|&c| counts[c + 1] > counts[c])
                    .map(|c| c as u32)
                    .collect();
                let ends: Vec<usize> = cols.iter().map(|&c| counts[c as usize + 1]).collect();
                let mut coords = vec![0u32; span.len()];
                let mut values = vec![0f32; span.len()];
                let mut next = counts;
                for i in rows.clone() {
                    let local_row = ((i - rows.start) as u32) << 16;
                    for e in indptr[i]..indptr[i + 1] {
                        let j = indices[e] as usize;
                        let at = &mut next[j >> beta_log2];
                        coords[*at] = local_row | (j & (beta - 1)) as u32;
                        values[*at] = data[e];
                        *at += 1;
                    }
                }
                BlockRow {
                    cols,
                    ends,
                    coords,
                    values,
                }
            })
            .collect();
        let mut block_ptr = Vec::with_capacity(n_block_rows + 1);
        let mut block_cols = Vec::new();
        let mut entry_ptr = vec![0usize];
        let mut bounds = vec![0usize];
        block_ptr.push(0);
        for part in &parts {
            let base = *bounds.last().expect("starts at 0");
            block_cols.extend_from_slice(&part.cols);
            entry_ptr.extend(part.ends.iter().map(|e| base + e));
            block_ptr.push(block_cols.len());
            bounds.push(base + part.coords.len());
        }
        // The entries joined in parallel (one thread copying 1.6 GB took most of the
        // conversion's second at 1.3M points).
        let mut coords = vec![0u32; p.nnz()];
        let mut values = vec![0f32; p.nnz()];
        split_at_bounds(&mut coords, &bounds)
            .into_par_iter()
            .zip(split_at_bounds(&mut values, &bounds))
            .zip(&parts)
            .for_each(|((c, v), part)| {
                c.copy_from_slice(&part.coords);
                v.copy_from_slice(&part.values);
            });
        Ok(Csb {
            n,
            beta_log2,
            block_ptr,
            block_cols,
            entry_ptr,
            coords,
            values,
        })
    }

    /// Number of rows (and columns).
    pub fn n(&self) -> usize {
        self.n
    }

    /// Block size β.
    pub fn beta(&self) -> usize {
        1 << self.beta_log2
    }

    /// Number of stored non-zeros.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// Number of block rows.
    pub fn n_block_rows(&self) -> usize {
        self.block_ptr.len() - 1
    }

    /// Rows covered by block row `b`.
    pub fn block_rows(&self, b: usize) -> std::ops::Range<usize> {
        let beta = self.beta();
        b * beta..((b + 1) * beta).min(self.n)
    }

    /// The non-empty blocks of block row `b`, by increasing block column.
    pub fn blocks(&self, b: usize) -> impl Iterator<Item = Block<'_>> {
        (self.block_ptr[b]..self.block_ptr[b + 1]).map(move |t| {
            let e = self.entry_ptr[t]..self.entry_ptr[t + 1];
            Block {
                col: self.block_cols[t] as usize,
                coords: &self.coords[e.clone()],
                values: &self.values[e],
            }
        })
    }

    /// Bytes the attraction streams per pass (coordinates and values).
    pub fn stream_bytes(&self) -> usize {
        self.nnz() * (std::mem::size_of::<u32>() + std::mem::size_of::<f32>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_entry() {
        let mut t = sprs::TriMatI::<f32, u32>::new((1000, 1000));
        let mut s = 1u64;
        for _ in 0..5000 {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let i = (s >> 33) as usize % 1000;
            let j = (s >> 13) as usize % 1000;
            t.add_triplet(i, j, (i * 1000 + j) as f32);
        }
        let p: Affinities = t.to_csr();
        for beta in [2, 64, 256, 1024] {
            let csb = Csb::from_csr(&p, beta).unwrap();
            assert_eq!(csb.nnz(), p.nnz());
            let mut seen = 0;
            for b in 0..csb.n_block_rows() {
                let r0 = csb.block_rows(b).start;
                for blk in csb.blocks(b) {
                    // Sorted by (row, col): the packed coordinates increase.
                    assert!(blk.coords.windows(2).all(|w| w[0] < w[1]), "β={beta}");
                    for (&c, &v) in blk.coords.iter().zip(blk.values) {
                        let i = r0 + (c >> 16) as usize;
                        let j = blk.col * beta + (c & 0xffff) as usize;
                        assert_eq!(p.get(i, j), Some(&v), "β={beta} ({i},{j})");
                        seen += 1;
                    }
                }
            }
            assert_eq!(seen, p.nnz());
        }
    }

    #[test]
    fn rejects_bad_beta() {
        let p: Affinities = sprs::CsMatI::eye(4);
        assert!(Csb::from_csr(&p, 3).is_err());
        assert!(Csb::from_csr(&p, 1 << 17).is_err());
    }
}
