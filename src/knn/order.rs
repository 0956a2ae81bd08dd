//! A locality-preserving order of the points: the leaf order of a PCA tree.
//!
//! Each node splits its points at the median of their projection on the node's principal
//! direction (a few power iterations), down to leaves of at most [`LEAF`] points. Consecutive
//! points in this order are close, so a contiguous block of them is a compact cluster: the
//! exact search scans the nearest blocks first (tight thresholds early) and skips blocks that
//! a bounding-ball test proves useless. Deterministic: fixed start vectors, ties in the
//! projection broken by index.

use rayon::prelude::*;

/// Stop splitting at this many points.
const LEAF: usize = 32;
/// Power iterations per node (a rough direction is enough for a good split).
const POWER_ITERS: usize = 3;
/// Nodes at least this large split their work with rayon.
const PAR_MIN: usize = 8192;

/// A permutation of `0..n`: `order[p]` is the point at position p. `data` is n × d row-major.
pub fn pca_tree_order(data: &[f32], n: usize, d: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    if d > 0 {
        split(data, d, &mut order);
    }
    order
}

fn split(data: &[f32], d: usize, idx: &mut [u32]) {
    let len = idx.len();
    if len <= LEAF {
        return;
    }
    let row = |i: u32| &data[i as usize * d..(i as usize + 1) * d];
    // node mean
    let mut mean = vec![0f64; d];
    for &i in idx.iter() {
        for (m, &x) in mean.iter_mut().zip(row(i)) {
            *m += x as f64;
        }
    }
    mean.iter_mut().for_each(|m| *m /= len as f64);
    let mean: Vec<f32> = mean.iter().map(|&m| m as f32).collect();
    // start: the direction from the mean to the node's first point, or e_0 if they coincide
    let mut w: Vec<f32> = row(idx[0]).iter().zip(&mean).map(|(x, m)| x - m).collect();
    if normalise(&mut w) == 0.0 {
        w.iter_mut().for_each(|x| *x = 0.0);
        w[0] = 1.0;
    }
    for _ in 0..POWER_ITERS {
        // w ← Σ_i (x_i − μ) ((x_i − μ) · w)
        let acc = |chunk: &[u32]| {
            let mut a = vec![0f32; d];
            for &i in chunk {
                let x = row(i);
                let t: f32 = x
                    .iter()
                    .zip(&mean)
                    .zip(&w)
                    .map(|((x, m), w)| (x - m) * w)
                    .sum();
                for ((a, x), m) in a.iter_mut().zip(x).zip(&mean) {
                    *a += t * (x - m);
                }
            }
            a
        };
        let next = if len >= PAR_MIN {
            // The parts add in their order, so the split (and the order) repeats bit for
            // bit (`crate::ordered`).
            let parts: Vec<Vec<f32>> = idx.par_chunks(4096).map(acc).collect();
            parts.into_iter().fold(vec![0f32; d], |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(a, b)| *a += b);
                a
            })
        } else {
            acc(idx)
        };
        let mut next = next;
        if normalise(&mut next) == 0.0 {
            break; // all points equal along everything: any split will do
        }
        w = next;
    }
    // split at the median projection, ties by index
    let proj = |i: u32| -> f32 { row(i).iter().zip(&w).map(|(x, w)| x * w).sum() };
    let mut keyed: Vec<(f32, u32)> = idx.iter().map(|&i| (proj(i), i)).collect();
    let mid = len / 2;
    keyed.select_nth_unstable_by(mid, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (o, (_, i)) in idx.iter_mut().zip(keyed) {
        *o = i;
    }
    let (lo, hi) = idx.split_at_mut(mid);
    if len >= PAR_MIN {
        rayon::join(|| split(data, d, lo), || split(data, d, hi));
    } else {
        split(data, d, lo);
        split(data, d, hi);
    }
}

/// Scales `v` to unit length; returns its former norm.
fn normalise(v: &mut [f32]) -> f32 {
    let nr = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if nr > 0.0 && nr.is_finite() {
        v.iter_mut().for_each(|x| *x /= nr);
        nr
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_a_permutation_that_groups_clusters() {
        // two far clusters, interleaved in the input
        let (n, d) = (1000usize, 3usize);
        let data: Vec<f32> = (0..n * d)
            .map(|i| {
                let p = i / d;
                (if p % 2 == 0 { 100.0 } else { -100.0 }) + ((i * 37) % 11) as f32
            })
            .collect();
        let o = pca_tree_order(&data, n, d);
        let mut s = o.clone();
        s.sort_unstable();
        assert_eq!(s, (0..n as u32).collect::<Vec<_>>());
        // the first half holds one cluster, the second the other
        let first = o[0] % 2;
        assert!(o[..n / 2].iter().all(|&i| i % 2 == first));
        // deterministic
        assert_eq!(o, pca_tree_order(&data, n, d));
        // degenerate inputs
        assert_eq!(pca_tree_order(&[1.0; 300], 100, 3).len(), 100);
        assert_eq!(pca_tree_order(&[], 5, 0), vec![0, 1, 2, 3, 4]);
    }
}
