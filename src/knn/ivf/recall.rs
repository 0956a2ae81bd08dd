//! The recall of an approximate graph on a seeded sample of rows, against their exact
//! neighbours: the estimate every approximate run reports.

use rand::{rngs::StdRng, seq::index::sample, SeedableRng};
use rayon::prelude::*;

use crate::knn::{Key, Neighbors};
use crate::Points;

/// Rows of the recall sample: `min(n, size)` distinct rows, seeded, ascending.
pub fn recall_sample(n: usize, size: usize, seed: u64) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed_5a3f_1e00_0001);
    let mut rows: Vec<u32> = sample(&mut rng, n, size.min(n))
        .into_iter()
        .map(|i| i as u32)
        .collect();
    rows.sort_unstable();
    rows
}

/// The recall on the sample `rows`: `approx` holds their approximate neighbours (k per
/// row, in order), `candidates[s]` any superset of row s's exact k nearest by `key`, whose
/// keys are recomputed from `points` so that the k smallest are the exact neighbours. A
/// neighbour of the approximate row counts as found when its distance is at most the exact
/// k-th distance, so that ties (duplicate points) do not count as misses. Mean over the
/// sample; 1 for an empty one.
pub fn sample_recall(
    points: &Points,
    key: Key,
    k: usize,
    rows: &[u32],
    approx: &[u32],
    candidates: &[Vec<u32>],
) -> f64 {
    if rows.is_empty() || k == 0 {
        return 1.0;
    }
    let found: f64 = rows
        .par_iter()
        .zip(approx.par_chunks(k))
        .zip(candidates)
        .map(|((&i, found), cand)| {
            let q = points.row(i as usize);
            let mut dist: Vec<f32> = cand
                .iter()
                .filter(|&&j| j != i)
                .map(|&j| key.eval_f64(q, points.row(j as usize)))
                .collect();
            dist.sort_unstable_by(f32::total_cmp);
            let kth = dist.get(k - 1).copied().unwrap_or(f32::INFINITY);
            let hits = found
                .iter()
                .filter(|&&j| j != i && key.eval_f64(q, points.row(j as usize)) <= kth)
                .count();
            hits.min(k) as f64 / k as f64
        })
        .sum();
    found / rows.len() as f64
}

/// The recall of the neighbours `nb` of `points` by `key` on a seeded sample of `size`
/// rows, each row's exact neighbours found by a scan of all points (`scan_candidates`): the
/// CPU's recall estimate, O(n · size · d). Returns (recall, sample size).
pub fn recall_by_scan(
    points: &Points,
    key: Key,
    nb: &Neighbors,
    size: usize,
    seed: u64,
) -> (f64, usize) {
    let rows = recall_sample(points.n, size, seed);
    let candidates = scan_candidates(points, key, &rows, nb.k);
    let found: Vec<u32> = rows
        .iter()
        .flat_map(|&i| nb.row_indices(i as usize).iter().copied())
        .collect();
    let recall = sample_recall(points, key, nb.k, &rows, &found, &candidates);
    (recall, rows.len())
}

/// Exact k nearest of each sampled row by a scan of all points (the CPU's recall sample):
/// O(n · |rows| · d).
pub(crate) fn scan_candidates(points: &Points, key: Key, rows: &[u32], k: usize) -> Vec<Vec<u32>> {
    rows.par_iter()
        .map(|&i| {
            let q = points.row(i as usize);
            // A margin over k, so that f32 rounding of the scan's distances cannot push an
            // exact neighbour out: sample_recall ranks these again in f64.
            let keep = k + 8;
            let mut top = crate::knn::select::TopK::new(keep, 4 * keep);
            for j in 0..points.n {
                if j != i as usize {
                    top.offer(key.eval(q, points.row(j)), j as u32);
                }
            }
            top.sorted().iter().map(|&(_, j)| j).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_counts_ties_as_found() {
        // Points 0, 1, 1, 5 on a line; the exact 1 nearest of row 0 is row 1 or 2 (a tie).
        let points = Points::new(4, 1, vec![0.0, 1.0, 1.0, 5.0]);
        let candidates = vec![vec![1, 2, 3]];
        assert_eq!(
            sample_recall(&points, Key::SqEuclidean, 1, &[0], &[2], &candidates),
            1.0
        );
        assert_eq!(
            sample_recall(&points, Key::SqEuclidean, 1, &[0], &[3], &candidates),
            0.0
        );
        let nb = Neighbors {
            n: 4,
            k: 1,
            indices: vec![2, 2, 1, 1],
            distances: vec![1.0, 0.0, 0.0, 16.0],
        };
        assert_eq!(
            recall_by_scan(&points, Key::SqEuclidean, &nb, 10, 1),
            (1.0, 4)
        );
    }
}
