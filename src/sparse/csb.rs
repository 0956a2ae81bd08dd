//! Compressed sparse blocks (Buluç, Fineman, Frigo, Gilbert, Leiserson 2009).

use rayon::prelude::*;

use super::{split_at_bounds, SparseError};
use crate::affinity::Affinities;

/// One block row of a [`Csb`] under construction: its non-empty block columns, the end of
/// each block's runs and entries (relative to the row's first), and the runs and entries.
struct BlockRow {
    cols: Vec<u32>,
    run_ends: Vec<usize>,
    ends: Vec<usize>,
    runs: Vec<Run>,
    local_cols: Vec<u16>,
    values: Vec<f32>,
}

/// Consecutive entries of one block that share a row: the row (block-local) and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// Local row, `0..β`.
    pub row: u16,
    /// Entries in the run, at least 1.
    pub len: u16,
}

/// P split into β×β blocks with block-local 16-bit coordinates.
///
/// Block row b covers rows `b·β .. min((b+1)·β, n)`. Its non-empty blocks are
/// `blocks[block_ptr[b] .. block_ptr[b+1]]`, in increasing block column; block t holds the
/// entries `entry_ptr[t] .. entry_ptr[t+1]`, sorted by (row, col), each a local column in
/// `cols` and a value in `values`, and the runs `run_ptr[t] .. run_ptr[t+1]` say which row
/// the entries belong to, in order. A row is stored once per run rather than once per entry:
/// 6 bytes an entry instead of 8 for the attraction to stream, the pass that bounds it on
/// few cores (about 1 ns an entry per core on P of MNIST, what a core streams from memory).
///
/// # Invariants (checked by [`Csb::from_csr`])
/// - β is a power of two, 2 ≤ β ≤ 2¹⁶, so local coordinates fit in 16 bits
/// - `block_ptr.len() == n_block_rows + 1`, `entry_ptr.len() == run_ptr.len() == blocks.len() + 1`
/// - `cols.len() == values.len() == nnz`; each block's runs' lengths sum to its entries
/// - every (block row, block column, local row, local col) maps to an index < n
#[derive(Clone, Debug)]
pub struct Csb {
    n: usize,
    beta_log2: u32,
    block_ptr: Vec<usize>,
    block_cols: Vec<u32>,
    entry_ptr: Vec<usize>,
    run_ptr: Vec<usize>,
    runs: Vec<Run>,
    cols: Vec<u16>,
    values: Vec<f32>,
}

/// One block of a block row: its block column, its runs and its entries.
pub struct Block<'a> {
    /// Block column index.
    pub col: usize,
    /// The entries' rows, in order (their lengths sum to `cols.len()`).
    pub runs: &'a [Run],
    /// Local column per entry.
    pub cols: &'a [u16],
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
                let mut local_rows = vec![0u16; span.len()];
                let mut local_cols = vec![0u16; span.len()];
                let mut values = vec![0f32; span.len()];
                let mut next = counts;
                for i in rows.clone() {
                    for e in indptr[i]..indptr[i + 1] {
                        let j = indices[e] as usize;
                        let at = &mut next[j >> beta_log2];
                        local_rows[*at] = (i - rows.start) as u16;
                        local_cols[*at] = (j & (beta - 1)) as u16;
                        values[*at] = data[e];
                        *at += 1;
                    }
                }
                let (mut runs, mut run_ends, mut begin) = (Vec::new(), Vec::new(), 0);
                for &end in &ends {
                    push_runs(&local_rows[begin..end], &mut runs);
                    run_ends.push(runs.len());
                    begin = end;
                }
                BlockRow {
                    cols,
                    run_ends,
                    ends,
                    runs,
                    local_cols,
                    values,
                }
            })
            .collect();
        let mut block_ptr = vec![0usize];
        let mut block_cols = Vec::new();
        let (mut entry_ptr, mut run_ptr) = (vec![0usize], vec![0usize]);
        let mut bounds = vec![0usize];
        let mut runs = Vec::new();
        for part in &parts {
            let base = *bounds.last().expect("starts at 0");
            let run_base = runs.len();
            block_cols.extend_from_slice(&part.cols);
            entry_ptr.extend(part.ends.iter().map(|e| base + e));
            run_ptr.extend(part.run_ends.iter().map(|e| run_base + e));
            runs.extend_from_slice(&part.runs);
            block_ptr.push(block_cols.len());
            bounds.push(base + part.local_cols.len());
        }
        // The entries joined in parallel (one thread copying 1.6 GB took most of the
        // conversion's second at 1.3M points).
        let mut cols = vec![0u16; p.nnz()];
        let mut values = vec![0f32; p.nnz()];
        split_at_bounds(&mut cols, &bounds)
            .into_par_iter()
            .zip(split_at_bounds(&mut values, &bounds))
            .zip(&parts)
            .for_each(|((c, v), part)| {
                c.copy_from_slice(&part.local_cols);
                v.copy_from_slice(&part.values);
            });
        Ok(Csb {
            n,
            beta_log2,
            block_ptr,
            block_cols,
            entry_ptr,
            run_ptr,
            runs,
            cols,
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
                runs: &self.runs[self.run_ptr[t]..self.run_ptr[t + 1]],
                cols: &self.cols[e.clone()],
                values: &self.values[e],
            }
        })
    }
}

/// Appends the runs of equal consecutive `rows` (one block's entries) to `runs`, a run longer
/// than `u16::MAX` entries split in two (only a block of β = 2¹⁶ can hold one).
fn push_runs(rows: &[u16], runs: &mut Vec<Run>) {
    for chunk in rows.chunk_by(|a, b| a == b) {
        for part in chunk.chunks(u16::MAX as usize) {
            runs.push(Run {
                row: part[0],
                len: part.len() as u16,
            });
        }
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
                    let rows: Vec<usize> = blk
                        .runs
                        .iter()
                        .flat_map(|run| std::iter::repeat_n(run.row as usize, run.len as usize))
                        .collect();
                    assert_eq!(rows.len(), blk.cols.len(), "β={beta}");
                    // Sorted by (row, col), each run one row.
                    let at: Vec<(usize, u16)> =
                        rows.iter().copied().zip(blk.cols.iter().copied()).collect();
                    assert!(at.windows(2).all(|w| w[0] < w[1]), "β={beta}");
                    assert!(blk.runs.windows(2).all(|w| w[0].row < w[1].row), "β={beta}");
                    for ((r, c), &v) in at.into_iter().zip(blk.values) {
                        let (i, j) = (r0 + r, blk.col * beta + c as usize);
                        assert_eq!(p.get(i, j), Some(&v), "β={beta} ({i},{j})");
                        seen += 1;
                    }
                }
            }
            assert_eq!(seen, p.nnz());
        }
    }

    /// A row's entries in one block beyond `u16::MAX` (possible at β = 2¹⁶ only) take two runs.
    #[test]
    fn long_runs_split() {
        let mut runs = Vec::new();
        push_runs(&[[1u16; 2].as_slice(), &[3; 70_000]].concat(), &mut runs);
        let want = [
            (1, 2),
            (3, u16::MAX),
            (3, (70_000 - u16::MAX as usize) as u16),
        ];
        let got: Vec<(u16, u16)> = runs.iter().map(|r| (r.row, r.len)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn rejects_bad_beta() {
        let p: Affinities = sprs::CsMatI::eye(4);
        assert!(Csb::from_csr(&p, 3).is_err());
        assert!(Csb::from_csr(&p, 1 << 17).is_err());
    }
}
