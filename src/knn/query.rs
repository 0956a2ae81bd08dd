//! Exact kNN of query points among reference points (placing new points into a map,
//! [`crate::transform`]): the same augmented-row GEMM and bounded selection as
//! [`super::exact`], over the rectangular query × reference table instead of the symmetric
//! one, with both sets centred on the reference mean (uncentred for the inner product,
//! [`super::Key`]).
//!
//! Work: m·n·d flops for m queries and n references; memory: one selector per query of a
//! block and one [`QB`] × [`RB`] tile per thread.

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;

use super::exact::{augment_about, column_mean, gemm_error_bound};
use super::select::TopK;
use super::{check_args, Key, Neighbors};
use crate::progress::Progress;
use crate::{Error, Points, Result};

/// Queries per parallel task.
const QB: usize = 256;
/// References per tile: a tile is QB × RB f32 (1 MiB).
const RB: usize = 1024;

/// The checks of a search for the `k` nearest `reference` points of `queries`, on the host
/// ([`query`]) and the device (`knn::gpu::query_gpu`) alike: 1 ≤ k ≤ n, one feature count,
/// finite values in both sets.
pub(crate) fn check_query(reference: &Points, queries: &Points, k: usize) -> Result<()> {
    if k == 0 {
        return Err(Error::param("k", "must be at least 1"));
    }
    // `check_args` wants k < n for a self-search; a query is not among the references.
    if reference.n < k {
        return Err(Error::param(
            "k",
            format!(
                "k = {k} neighbours, but only {} reference points",
                reference.n
            ),
        ));
    }
    if queries.d != reference.d {
        return Err(Error::Data(format!(
            "queries have {} features, the reference points {}",
            queries.d, reference.d
        )));
    }
    check_args(reference, k.min(reference.n - 1).max(1))?;
    if let Some(p) = queries.data.iter().position(|x| !x.is_finite()) {
        return Err(Error::Data(format!(
            "non-finite value at point {}, feature {}",
            p / queries.d.max(1),
            p % queries.d.max(1)
        )));
    }
    Ok(())
}

/// The `k` nearest reference points of every query, exactly (up to f32 rounding of
/// distances; survivors of the GEMM's bound are measured directly, ties broken by index).
/// Row i of the result holds query i's reference indices and squared distances (or keys:
/// `key` ranks, raised to cover the queries' norms for the inner product).
///
/// Errors: see `check_query`.
/// Progress: stage `"knn"`, one unit per block of queries.
pub fn query(
    reference: &Points,
    queries: &Points,
    k: usize,
    key: Key,
    progress: &dyn Progress,
) -> Result<Neighbors> {
    check_query(reference, queries, k)?;
    let (m, n, d) = (queries.n, reference.n, reference.d);
    let kd = d + 2;
    let key = key.covering(queries);
    let mean = if key.translation_invariant() {
        column_mean(reference)
    } else {
        vec![0.0; d]
    };
    let (_, ra) = augment_about(reference, &(0..n as u32).collect::<Vec<_>>(), &mean, key);
    let (qa, _) = augment_about(queries, &(0..m as u32).collect::<Vec<_>>(), &mean, key);
    let r2max = ra
        .chunks_exact(kd)
        .chain(qa.chunks_exact(kd))
        .map(|r| r[d].max(r[d + 1]))
        .fold(0f32, f32::max);
    let slack = 2.0 * gemm_error_bound(kd, r2max);
    let cap = k + k / 2 + 16;
    let mut indices = vec![0u32; m * k];
    let mut distances = vec![0f32; m * k];
    progress.begin("knn", m.div_ceil(QB) as u64);
    indices
        .par_chunks_mut(QB * k)
        .zip(distances.par_chunks_mut(QB * k))
        .enumerate()
        .for_each(|(b, (idx_out, dist_out))| {
            let q0 = b * QB;
            let rows = idx_out.len() / k;
            let mut tops: Vec<TopK> = (0..rows)
                .map(|_| {
                    let mut t = TopK::new(k, cap);
                    t.reset(slack);
                    t
                })
                .collect();
            let qblock = MatRef::from_row_major_slice(&qa[q0 * kd..(q0 + rows) * kd], rows, kd);
            let mut tile = vec![0f32; QB * RB];
            for r0 in (0..n).step_by(RB) {
                let cols = RB.min(n - r0);
                let rblock = MatRef::from_row_major_slice(&ra[r0 * kd..(r0 + cols) * kd], cols, kd);
                let t = &mut tile[..rows * cols];
                // Step 1: the tile of squared distances, rows × cols row-major.
                matmul(
                    MatMut::from_row_major_slice_mut(t, rows, cols),
                    Accum::Replace,
                    qblock,
                    rblock.transpose(),
                    1.0,
                    Par::Seq,
                );
                // Step 2: each query's selector takes its row.
                for (top, row) in tops.iter_mut().zip(t.chunks_exact(cols)) {
                    for (c, &v) in row.iter().enumerate() {
                        top.offer(v, (r0 + c) as u32);
                    }
                }
            }
            // Step 3: survivors measured directly, best k by (distance, index).
            let mut cand: Vec<(f32, u32)> = Vec::with_capacity(cap);
            for (q, top) in tops.iter_mut().enumerate() {
                top.refine(
                    key,
                    queries.row(q0 + q),
                    |j| reference.row(j as usize),
                    &mut cand,
                );
                for (l, &(dist, j)) in cand[..k].iter().enumerate() {
                    idx_out[q * k + l] = j;
                    dist_out[q * k + l] = dist;
                }
            }
            progress.advance(1);
        });
    progress.end();
    Ok(Neighbors {
        n: m,
        k,
        indices,
        distances,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knn::{by_dist_then_index, sq_dist};
    use crate::progress::Silent;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// Against brute force, for sizes around the block edges and k up to n.
    #[test]
    fn matches_brute_force() {
        let mut rng = StdRng::seed_from_u64(5);
        for (n, m, d, k) in [(30, 7, 3, 30), (1500, 300, 9, 10), (2100, 513, 50, 15)] {
            let mut gen = |c: usize| -> Vec<f32> {
                (0..c * d)
                    .map(|_| rng.random::<f32>() * 10.0 + 3.0)
                    .collect()
            };
            let r = Points::new(n, d, gen(n));
            let q = Points::new(m, d, gen(m));
            let nb = query(&r, &q, k, Key::SqEuclidean, &Silent).unwrap();
            for i in 0..m {
                let mut all: Vec<(f32, u32)> = (0..n)
                    .map(|j| (sq_dist(q.row(i), r.row(j)), j as u32))
                    .collect();
                all.sort_unstable_by(by_dist_then_index);
                let want: Vec<u32> = all[..k].iter().map(|p| p.1).collect();
                assert_eq!(nb.row_indices(i), &want[..], "n {n}, query {i}");
            }
        }
    }

    #[test]
    fn refuses_other_feature_counts_and_too_large_k() {
        let r = Points::new(4, 2, vec![0.0; 8]);
        let q = Points::new(1, 3, vec![0.0; 3]);
        assert!(query(&r, &q, 2, Key::SqEuclidean, &Silent)
            .unwrap_err()
            .to_string()
            .contains("3 features"));
        let q = Points::new(1, 2, vec![0.0; 2]);
        assert!(query(&r, &q, 5, Key::SqEuclidean, &Silent).is_err());
    }
}
