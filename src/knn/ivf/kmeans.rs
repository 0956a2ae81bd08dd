//! k-means on the host: the seeded sample, the first centroids, Lloyd's update of the
//! centroids (the assignment runs on the device, or on the CPU twin's threads), and the
//! cells renumbered in a locality order.

use rand::{rngs::StdRng, seq::index::sample, Rng, SeedableRng};

use crate::knn::order::pca_tree_order;

/// The k-means sample: `min(n, lists · per_list)` distinct rows, seeded, ascending.
pub fn kmeans_sample(n: usize, lists: usize, per_list: usize, seed: u64) -> Vec<u32> {
    let m = (lists.saturating_mul(per_list)).min(n);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut rows: Vec<u32> = sample(&mut rng, n, m)
        .into_iter()
        .map(|i| i as u32)
        .collect();
    rows.sort_unstable();
    rows
}

/// The first centroids: `lists` distinct rows of the sample `x` (m × d), seeded.
pub fn initial_centroids(x: &[f32], d: usize, lists: usize, seed: u64) -> Vec<f32> {
    let m = x.len() / d.max(1);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut c = Vec::with_capacity(lists * d);
    for i in sample(&mut rng, m, lists.min(m)) {
        c.extend_from_slice(&x[i * d..(i + 1) * d]);
    }
    c
}

/// Lloyd's update: each centroid becomes the mean of the sample points `x` (m × d) assigned
/// to it (`labels`). An emptied cell takes a point of the largest cell, drawn with `rng`,
/// so that no cell is wasted. Returns the number of emptied cells.
pub fn update_centroids(
    x: &[f32],
    d: usize,
    labels: &[u32],
    centroids: &mut [f32],
    rng: &mut StdRng,
) -> usize {
    let lists = centroids.len() / d;
    let mut sums = vec![0f64; lists * d];
    let mut counts = vec![0usize; lists];
    for (row, &l) in x.chunks_exact(d).zip(labels) {
        let l = l as usize;
        counts[l] += 1;
        for (s, &v) in sums[l * d..(l + 1) * d].iter_mut().zip(row) {
            *s += v as f64;
        }
    }
    let largest = (0..lists).max_by_key(|&l| counts[l]).unwrap_or(0);
    let members: Vec<usize> = (0..labels.len())
        .filter(|&i| labels[i] as usize == largest)
        .collect();
    let mut emptied = 0;
    for l in 0..lists {
        let c = &mut centroids[l * d..(l + 1) * d];
        if counts[l] > 0 {
            for (c, &s) in c.iter_mut().zip(&sums[l * d..(l + 1) * d]) {
                *c = (s / counts[l] as f64) as f32;
            }
        } else if !members.is_empty() {
            let i = members[rng.random_range(0..members.len())];
            c.copy_from_slice(&x[i * d..(i + 1) * d]);
            emptied += 1;
        }
    }
    emptied
}

/// The centroids (`lists` × d) renumbered in a locality order ([`pca_tree_order`]), so that
/// near cells get near numbers and the points sorted by cell keep neighbours close.
pub fn order_cells(centroids: &[f32], d: usize) -> Vec<f32> {
    let lists = centroids.len() / d;
    pca_tree_order(centroids, lists, d)
        .iter()
        .flat_map(|&c| {
            centroids[c as usize * d..(c as usize + 1) * d]
                .iter()
                .copied()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kmeans_update_means_and_refills_empty_cells() {
        let x = [0.0, 1.0, 2.0, 12.0];
        let mut c = vec![1.5, 11.0, 100.0];
        let mut rng = StdRng::seed_from_u64(0);
        let emptied = update_centroids(&x, 1, &[0, 0, 0, 1], &mut c, &mut rng);
        assert_eq!(emptied, 1);
        assert_eq!(&c[..2], &[1.0, 12.0]);
        assert!(
            [0.0, 1.0, 2.0].contains(&c[2]),
            "refilled from the largest cell: {}",
            c[2]
        );
    }
}
