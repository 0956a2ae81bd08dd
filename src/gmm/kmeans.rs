//! The initial clusters: greedy k-means++ seeding (Arthur and Vassilvitskii 2007, with
//! 2 + ⌊ln K⌋ candidates per centre as scikit-learn draws them), then Lloyd's iterations.
//!
//! Distances to the centres come from one K × d by d × b product per block of samples
//! (‖x − c‖² = ‖x‖² − 2 x·c + ‖c‖²); sums over samples are taken in a fixed order, so the
//! clusters do not depend on the threads.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef, Par};
use rand::rngs::StdRng;
use rand::Rng;
use rayon::prelude::*;

use super::estep::BLOCK;
use super::gaussian::squared_distance;
use super::{Real, Samples};
use crate::{Error, Result};

/// Lloyd's iterations at most; they stop earlier when no sample changes cluster.
pub const MAX_ITERS: usize = 100;

/// Cluster labels of the samples (each in 0..k, no cluster empty) by k-means seeded with
/// k-means++. Errors when the samples have fewer than `k` distinct values.
pub(crate) fn kmeans<T: Real>(x: &Samples<T>, k: usize, rng: &mut StdRng) -> Result<Vec<u32>> {
    let mut centres = plus_plus(x, k, rng)?;
    let mut labels = vec![u32::MAX; x.n];
    let mut dist = vec![0.0f64; x.n];
    // ‖x‖², the same in every iteration.
    let row_norms: Vec<f64> = (0..x.n)
        .into_par_iter()
        .map(|i| x.row(i).iter().map(|v| v.f64() * v.f64()).sum())
        .collect();
    for _ in 0..MAX_ITERS {
        let changed = assign(x, &row_norms, &centres, k, &mut labels, &mut dist);
        if changed == 0 {
            break;
        }
        centres = recentre(x, &labels, &dist, k);
    }
    Ok(labels)
}

/// Squared distances from every sample to `c`.
fn distances_to<T: Real>(x: &Samples<T>, c: &[T]) -> Vec<f64> {
    (0..x.n)
        .into_par_iter()
        .map(|i| squared_distance(x.row(i), c).f64())
        .collect()
}

/// k-means++: the first centre uniformly at random, each next one the best (lowest total
/// squared distance) of 2 + ⌊ln k⌋ samples drawn with probability ∝ squared distance.
fn plus_plus<T: Real>(x: &Samples<T>, k: usize, rng: &mut StdRng) -> Result<Vec<T>> {
    let d = x.d;
    let first = rng.random_range(0..x.n);
    let mut centres = x.row(first).to_vec();
    let mut closest = distances_to(x, x.row(first));
    let trials = 2 + (k as f64).ln().floor() as usize;
    for chosen in 1..k {
        let total: f64 = closest.iter().sum();
        // NaN cannot occur (finite samples): zero means every sample sits on a centre.
        if total <= 0.0 {
            return Err(Error::Data(format!(
                "the samples hold only {chosen} distinct points, fewer than the {k} \
                 components asked for: lower -k"
            )));
        }
        let mut best: Option<(f64, Vec<f64>, usize)> = None;
        for _ in 0..trials {
            let i = draw(&closest, total, rng);
            let to_i = distances_to(x, x.row(i));
            let merged: Vec<f64> = closest.iter().zip(&to_i).map(|(&a, &b)| a.min(b)).collect();
            let potential = merged.iter().sum::<f64>();
            if best.as_ref().is_none_or(|b| potential < b.0) {
                best = Some((potential, merged, i));
            }
        }
        let (_, merged, i) = best.expect("at least two trials");
        closest = merged;
        centres.extend_from_slice(&x.data[i * d..(i + 1) * d]);
    }
    Ok(centres)
}

/// A sample drawn with probability `weights[i] / total`.
fn draw(weights: &[f64], total: f64, rng: &mut StdRng) -> usize {
    let mut u = rng.random::<f64>() * total;
    for (i, &w) in weights.iter().enumerate() {
        if u < w {
            return i;
        }
        u -= w;
    }
    // Rounding left u ≥ the last weights: the last sample with any weight.
    weights.iter().rposition(|&w| w > 0.0).unwrap_or(0)
}

/// Gives each sample its nearest centre (lowest index on ties) and its squared distance
/// (`row_norms`: each sample's ‖x‖²); returns how many labels changed.
fn assign<T: Real>(
    x: &Samples<T>,
    row_norms: &[f64],
    centres: &[T],
    k: usize,
    labels: &mut [u32],
    dist: &mut [f64],
) -> usize {
    let d = x.d;
    let c = MatRef::from_column_major_slice(centres, d, k);
    let norms: Vec<f64> = centres
        .chunks_exact(d)
        .map(|c| c.iter().map(|v| v.f64() * v.f64()).sum())
        .collect();
    labels
        .par_chunks_mut(BLOCK)
        .zip(dist.par_chunks_mut(BLOCK))
        .enumerate()
        .map_init(
            || Mat::<T>::zeros(0, 0),
            |dots, (b, (labels, dist))| {
                let start = b * BLOCK;
                let rows = &x.data[start * d..(start + labels.len()) * d];
                let xb = MatRef::from_column_major_slice(rows, d, labels.len());
                dots.resize_with(k, labels.len(), |_, _| T::zero());
                matmul(
                    dots.as_mut(),
                    Accum::Replace,
                    c.transpose(),
                    xb,
                    T::one(),
                    Par::Seq,
                );
                let mut changed = 0;
                for (i, (label, dist)) in labels.iter_mut().zip(dist.iter_mut()).enumerate() {
                    let xx = row_norms[start + i];
                    let (mut best, mut best_d) = (0, f64::INFINITY);
                    for (j, &nc) in norms.iter().enumerate() {
                        let dj = nc - 2.0 * dots[(j, i)].f64();
                        if dj < best_d {
                            (best, best_d) = (j as u32, dj);
                        }
                    }
                    changed += usize::from(*label != best);
                    *label = best;
                    *dist = (xx + best_d).max(0.0);
                }
                changed
            },
        )
        .sum()
}

/// The mean of each cluster; an empty cluster takes the sample farthest from its centre
/// (not already taken).
fn recentre<T: Real>(x: &Samples<T>, labels: &[u32], dist: &[f64], k: usize) -> Vec<T> {
    let d = x.d;
    let mut sums = vec![0.0f64; k * d];
    let mut counts = vec![0usize; k];
    for (i, &l) in labels.iter().enumerate() {
        let l = l as usize;
        counts[l] += 1;
        for (s, v) in sums[l * d..(l + 1) * d].iter_mut().zip(x.row(i)) {
            *s += v.f64();
        }
    }
    // Samples by decreasing distance to their centre, sorted only when a cluster is empty.
    let mut far = None;
    let mut centres = Vec::with_capacity(k * d);
    for c in 0..k {
        if counts[c] == 0 {
            let order = far.get_or_insert_with(|| {
                let mut order: Vec<usize> = (0..x.n).collect();
                order.sort_by(|&a, &b| dist[b].total_cmp(&dist[a]));
                order.into_iter()
            });
            let i = order.next().expect("k ≤ n");
            centres.extend_from_slice(x.row(i));
        } else {
            let inv = 1.0 / counts[c] as f64;
            centres.extend(sums[c * d..(c + 1) * d].iter().map(|&s| T::of(s * inv)));
        }
    }
    centres
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    fn blobs() -> Samples<f64> {
        // Three tight blobs of 50 points in 3-D, far apart.
        let mut rng = StdRng::seed_from_u64(1);
        let centres = [[0.0, 0.0, 0.0], [20.0, 0.0, 0.0], [0.0, 20.0, 5.0]];
        let mut data = Vec::new();
        for i in 0..150 {
            for &c in &centres[i % 3] {
                data.push(c + rng.random::<f64>() - 0.5);
            }
        }
        Samples { n: 150, d: 3, data }
    }

    #[test]
    fn finds_separated_blobs() {
        let x = blobs();
        let labels = kmeans(&x, 3, &mut StdRng::seed_from_u64(7)).unwrap();
        for i in 3..150 {
            assert_eq!(labels[i], labels[i % 3], "sample {i}");
        }
        assert_ne!(labels[0], labels[1]);
        assert_ne!(labels[1], labels[2]);
        assert_ne!(labels[0], labels[2]);
    }

    #[test]
    fn too_few_distinct_points_is_an_error() {
        let x = Samples {
            n: 6,
            d: 1,
            data: vec![1.0, 2.0, 1.0, 2.0, 1.0, 2.0],
        };
        let e = kmeans(&x, 3, &mut StdRng::seed_from_u64(0)).unwrap_err();
        assert!(e.to_string().contains("only 2 distinct points"), "{e}");
        assert!(kmeans(&x, 2, &mut StdRng::seed_from_u64(0)).is_ok());
    }
}
