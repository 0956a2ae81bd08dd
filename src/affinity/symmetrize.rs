//! Symmetrisation $P = (C + C^T) / \sum_{ij} (C + C^T)_{ij}$ of a sparse conditional matrix C.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

use rayon::prelude::*;

use super::Affinities;
use crate::sparse::{split_at_bounds, SparseError};

/// Symmetrises the n × n conditional matrix C given in CSR (`indptr`, `indices`,
/// `values`; row i is the distribution of point i, duplicates allowed) into a canonical
/// CSR matrix summing to 1: $P = (C + C^T)/s$. For t-SNE's row-stochastic C, s = 2n and
/// this is $(p_{j|i} + p_{i|j}) / 2n$ (van der Maaten 2014, Eq. 1).
///
/// Built without a general sparse transpose, every pass parallel: count each row's
/// entries (its own plus those pointing at it), place its own entries at its front and the
/// mirrored ones after them (at slots taken with atomics, so in no fixed order), then sort
/// each row by (column, value), merge its duplicates in that order and compact. The sort
/// fixes the order the duplicates add in, so the result is the same bits whatever the
/// threads did. (One thread scattered and compacted before: at 1.3M points, k = 90, the
/// affinity stage took 7–8.5 s on 16 cores.) Zero entries are dropped so that isolated
/// nodes give empty rows, never NaN.
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
    if let Some(&bad) = indices.par_iter().find_first(|&&j| j as usize >= n) {
        return Err(SparseError::Invariant {
            what: format!("column index {bad} out of range for n = {n}"),
        });
    }
    // Pass 1: row lengths of C + Cᵀ (before merging duplicates): own entries, then the
    // entries pointing at the row.
    let pointing: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
    indices.par_iter().for_each(|&j| {
        pointing[j as usize].fetch_add(1, Relaxed);
    });
    let mut starts = vec![0usize; n + 1];
    for i in 0..n {
        let own = indptr[i + 1] - indptr[i];
        starts[i + 1] = starts[i] + own + pointing[i].load(Relaxed) as usize;
    }
    drop(pointing);
    // Pass 2: own entries at each row's front; each entry (i, j) mirrored into row j after
    // that row's own entries, at the slot its cursor gives. Values travel as f64 bits.
    let total = starts[n];
    let cols: Vec<AtomicU32> = (0..total)
        .into_par_iter()
        .map(|_| AtomicU32::new(0))
        .collect();
    let vals: Vec<AtomicU64> = (0..total)
        .into_par_iter()
        .map(|_| AtomicU64::new(0))
        .collect();
    let cursor: Vec<AtomicUsize> = (0..n)
        .into_par_iter()
        .map(|i| AtomicUsize::new(starts[i] + indptr[i + 1] - indptr[i]))
        .collect();
    (0..n).into_par_iter().for_each(|i| {
        for (slot, e) in (starts[i]..).zip(indptr[i]..indptr[i + 1]) {
            let (j, v) = (indices[e], values[e].to_bits());
            cols[slot].store(j, Relaxed);
            vals[slot].store(v, Relaxed);
            let mirror = cursor[j as usize].fetch_add(1, Relaxed);
            cols[mirror].store(i as u32, Relaxed);
            vals[mirror].store(v, Relaxed);
        }
    });
    drop(cursor);
    // Pass 3: each row sorted and merged, written back to its front; its length and sum.
    let merged: Vec<(usize, f64)> = (0..n)
        .into_par_iter()
        .map_init(Vec::new, |pairs, i| {
            let slots = starts[i]..starts[i + 1];
            pairs.clear();
            pairs.extend(
                slots
                    .clone()
                    .map(|s| (cols[s].load(Relaxed), f64::from_bits(vals[s].load(Relaxed)))),
            );
            merge_row(pairs);
            for (s, &(c, v)) in slots.zip(pairs.iter()) {
                cols[s].store(c, Relaxed);
                vals[s].store(v.to_bits(), Relaxed);
            }
            (pairs.len(), pairs.iter().map(|&(_, v)| v).sum::<f64>())
        })
        .collect();
    let sum = crate::ordered::sum_in_order(merged.par_iter().map(|&(_, s)| s));
    if sum <= 0.0 || !sum.is_finite() {
        return Err(SparseError::Invariant {
            what: format!("affinities sum to {sum}; the graph has no positive weight"),
        });
    }
    // Compact into the final CSR, in parallel over rows.
    let mut out_ptr = Vec::with_capacity(n + 1);
    out_ptr.push(0usize);
    for (i, &(len, _)) in merged.iter().enumerate() {
        out_ptr.push(out_ptr[i] + len);
    }
    let mut out_idx = vec![0u32; out_ptr[n]];
    let mut out_val = vec![0f32; out_ptr[n]];
    let scale = 1.0 / sum;
    split_at_bounds(&mut out_idx, &out_ptr)
        .into_par_iter()
        .zip(split_at_bounds(&mut out_val, &out_ptr))
        .enumerate()
        .for_each(|(i, (idx, val))| {
            for ((c, v), s) in idx.iter_mut().zip(val.iter_mut()).zip(starts[i]..) {
                *c = cols[s].load(Relaxed);
                *v = (f64::from_bits(vals[s].load(Relaxed)) * scale) as f32;
            }
        });
    Affinities::try_new((n, n), out_ptr, out_idx, out_val).map_err(|e| SparseError::Invariant {
        what: format!("symmetrised P: {}", e.3),
    })
}

/// Sorts one row's (column, value) entries by column, then value, sums the duplicates of
/// a column in that order and drops zeros, in place.
fn merge_row(pairs: &mut Vec<(u32, f64)>) {
    pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut len = 0;
    for e in 0..pairs.len() {
        let (c, v) = pairs[e];
        if len > 0 && pairs[len - 1].0 == c {
            pairs[len - 1].1 += v;
        } else {
            pairs[len] = (c, v);
            len += 1;
        }
    }
    pairs.truncate(len);
    // Drop entries that are exactly zero (zero weights), keeping the order.
    pairs.retain(|&(_, v)| v != 0.0);
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

    /// Rows with duplicates (three or more terms for one pair) come out the same bits on any
    /// number of threads, although the mirrored entries land in a different order each time.
    #[test]
    fn the_same_bits_on_any_pool() {
        let (n, k) = (2000, 30);
        let mut rng = StdRng::seed_from_u64(11);
        let indices: Vec<u32> = (0..n * k)
            .map(|e| ((e / k + 1 + rng.random_range(0..40)) % n) as u32)
            .collect();
        let values: Vec<f64> = (0..n * k).map(|_| rng.random::<f64>()).collect();
        let indptr: Vec<usize> = (0..=n).map(|i| i * k).collect();
        let on = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| symmetrize(n, &indptr, &indices, &values).unwrap())
        };
        let one = on(1);
        assert!(one.nnz() < 2 * n * k, "the rows should hold duplicates");
        for threads in [2, 3, 8] {
            let other = on(threads);
            assert_eq!(one.indptr().raw_storage(), other.indptr().raw_storage());
            assert_eq!(one.indices(), other.indices());
            let bits = |p: &Affinities| p.data().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&one), bits(&other), "{threads} threads");
        }
    }

    #[test]
    fn out_of_range_index_is_an_error() {
        let err = symmetrize(2, &[0, 1, 2], &[1, 5], &[1.0, 1.0]).unwrap_err();
        assert!(err.to_string().contains("out of range"));
    }
}
