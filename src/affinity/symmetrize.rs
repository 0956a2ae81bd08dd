//! Symmetrisation $P = (C + C^T) / \sum_{ij} (C + C^T)_{ij}$ of a sparse conditional matrix C.

use rayon::prelude::*;

use super::Affinities;
use crate::sparse::SparseError;

/// Symmetrises the n × n conditional matrix C given in CSR (`indptr`, `indices`,
/// `values`; row i is the distribution of point i, duplicates allowed) into a canonical
/// CSR matrix summing to 1: $P = (C + C^T)/s$. For t-SNE's row-stochastic C, s = 2n and
/// this is $(p_{j|i} + p_{i|j}) / 2n$ (van der Maaten 2014, Eq. 1).
///
/// Built in two passes without a general sparse transpose: count each row's entries
/// (its own plus those pointing at it), scatter, then sort and merge each row in parallel.
/// Zero entries are dropped so that isolated nodes give empty rows, never NaN.
pub fn symmetrize(
    n: usize,
    indptr: &[usize],
    indices: &[u32],
    values: &[f64],
) -> Result<Affinities, SparseError> {
    if indptr.len() != n + 1 || indices.len() != values.len() || indptr[n] != indices.len() {
        return Err(SparseError::Invariant {
            what: format!(
                "conditional matrix: indptr has {} entries for n = {n}, {} indices, {} values",
                indptr.len(),
                indices.len(),
                values.len()
            ),
        });
    }
    if let Some(&bad) = indices.iter().find(|&&j| j as usize >= n) {
        return Err(SparseError::Invariant {
            what: format!("column index {bad} out of range for n = {n}"),
        });
    }
    // Pass 1: row lengths of C + Cᵀ (before merging duplicates).
    let mut counts = vec![0usize; n + 1];
    for i in 0..n {
        counts[i + 1] += indptr[i + 1] - indptr[i];
    }
    for &j in indices {
        counts[j as usize + 1] += 1;
    }
    for i in 0..n {
        counts[i + 1] += counts[i];
    }
    // Pass 2: scatter (i, j, v) and its mirror (j, i, v).
    let total = counts[n];
    let mut cols = vec![0u32; total];
    let mut vals = vec![0f64; total];
    let mut fill = counts.clone();
    for i in 0..n {
        for e in indptr[i]..indptr[i + 1] {
            let j = indices[e] as usize;
            let v = values[e];
            cols[fill[i]] = j as u32;
            vals[fill[i]] = v;
            fill[i] += 1;
            cols[fill[j]] = i as u32;
            vals[fill[j]] = v;
            fill[j] += 1;
        }
    }
    // Pass 3: sort and merge each row, in parallel over rows.
    let mut row_len = vec![0usize; n];
    {
        let mut col_rows = split_rows(&mut cols, &counts);
        let mut val_rows = split_rows(&mut vals, &counts);
        col_rows
            .par_iter_mut()
            .zip(val_rows.par_iter_mut())
            .zip(row_len.par_iter_mut())
            .for_each(|((c, v), len)| *len = merge_row(c, v));
    }
    let sum = crate::ordered::sum_in_order(
        (0..n)
            .into_par_iter()
            .map(|i| vals[counts[i]..counts[i] + row_len[i]].iter().sum::<f64>()),
    );
    if sum <= 0.0 || !sum.is_finite() {
        return Err(SparseError::Invariant {
            what: format!("affinities sum to {sum}; the graph has no positive weight"),
        });
    }
    // Compact into the final CSR.
    let mut out_ptr = Vec::with_capacity(n + 1);
    out_ptr.push(0usize);
    for i in 0..n {
        out_ptr.push(out_ptr[i] + row_len[i]);
    }
    let mut out_idx = Vec::with_capacity(out_ptr[n]);
    let mut out_val = Vec::with_capacity(out_ptr[n]);
    let scale = 1.0 / sum;
    for i in 0..n {
        let r = counts[i]..counts[i] + row_len[i];
        out_idx.extend_from_slice(&cols[r.clone()]);
        out_val.extend(vals[r].iter().map(|&v| (v * scale) as f32));
    }
    Affinities::try_new((n, n), out_ptr, out_idx, out_val).map_err(|e| SparseError::Invariant {
        what: format!("symmetrised P: {}", e.3),
    })
}

/// Splits `data` into the per-row slices delimited by `bounds`.
fn split_rows<'a, T>(mut data: &'a mut [T], bounds: &[usize]) -> Vec<&'a mut [T]> {
    let mut rows = Vec::with_capacity(bounds.len() - 1);
    for w in bounds.windows(2) {
        let (row, rest) = data.split_at_mut(w[1] - w[0]);
        rows.push(row);
        data = rest;
    }
    rows
}

/// Sorts one row by column, sums duplicates and drops zeros, in place; returns the new
/// length (the merged entries are at the front).
fn merge_row(cols: &mut [u32], vals: &mut [f64]) -> usize {
    let mut pairs: Vec<(u32, f64)> = cols.iter().copied().zip(vals.iter().copied()).collect();
    pairs.sort_unstable_by_key(|&(c, _)| c);
    let mut len = 0;
    for (c, v) in pairs {
        if len > 0 && cols[len - 1] == c {
            vals[len - 1] += v;
        } else {
            cols[len] = c;
            vals[len] = v;
            len += 1;
        }
    }
    // Drop entries that are exactly zero (zero weights), keeping the order.
    let mut kept = 0;
    for e in 0..len {
        if vals[e] != 0.0 {
            cols[kept] = cols[e];
            vals[kept] = vals[e];
            kept += 1;
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    #[test]
    fn symmetric_sums_to_one_and_matches_dense() {
        for (n, k) in [(5, 2), (60, 7), (300, 20)] {
            let mut rng = StdRng::seed_from_u64(n as u64);
            let mut indices = Vec::new();
            let mut values = Vec::new();
            for i in 0..n {
                for _ in 0..k {
                    let mut j = rng.random_range(0..n);
                    if j == i {
                        j = (j + 1) % n;
                    }
                    indices.push(j as u32);
                    values.push(rng.random::<f64>());
                }
            }
            let indptr: Vec<usize> = (0..=n).map(|i| i * k).collect();
            let p = symmetrize(n, &indptr, &indices, &values).unwrap();
            let mut dense = vec![0f64; n * n];
            for i in 0..n {
                for e in indptr[i]..indptr[i + 1] {
                    dense[i * n + indices[e] as usize] += values[e];
                    dense[indices[e] as usize * n + i] += values[e];
                }
            }
            let s: f64 = dense.iter().sum();
            let mut total = 0f64;
            for (i, row) in p.outer_iterator().enumerate() {
                let mut last = None;
                for (j, &v) in row.iter() {
                    assert!(last < Some(j), "row {i} not strictly sorted");
                    last = Some(j);
                    let want = dense[i * n + j] / s;
                    assert!(((v as f64) - want).abs() <= 1e-6 * want, "P[{i},{j}]");
                    assert_eq!(p.get(j, i), Some(&v), "asymmetric at {i},{j}");
                    total += v as f64;
                }
            }
            assert!((total - 1.0).abs() < 1e-5, "sum {total}");
            let nnz_dense = dense.iter().filter(|&&v| v != 0.0).count();
            assert_eq!(p.nnz(), nnz_dense);
        }
    }

    #[test]
    fn out_of_range_index_is_an_error() {
        let err = symmetrize(2, &[0, 1, 2], &[1, 5], &[1.0, 1.0]).unwrap_err();
        assert!(err.to_string().contains("out of range"));
    }
}
