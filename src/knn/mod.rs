//! k nearest neighbours of every point (DESIGN §1.3).
//!
//! Input: [`Points`] (n × d). Output: [`Neighbors`], for each point i its k nearest *other*
//! points j ≠ i by squared Euclidean distance $\lVert x_i - x_j \rVert^2$, ascending, or by
//! another [`Key`] (the inner product's $2(c - x_i \cdot x_j)$) where the `_by` forms or a
//! `key` argument ask for it.
//!
//! Interchangeable methods with the same contract:
//!
//! - [`exact`]: blocked GEMM, $D = \lVert q\rVert^2 + \lVert r\rVert^2 - 2\,Q R^\top$, tile by tile,
//!   with a bounded per-query selection; never materialises n × n. O(n²d) work, exact.
//! - [`hnsw`]: hierarchical navigable small-world graph (`hnsw_rs`), approximate,
//!   O(n log n) work; [`recall`] measures its quality against [`exact`].
//! - [`ivf`] (GPU, `--knn approx`): k-means cells and the exact kNN's tensor-core sweep over
//!   each query block's nearest cells, O(n^1.5 d); its recall is estimated on every run.
//!
//! Both return the final distances recomputed directly as $\sum_l (x_{il} - x_{jl})^2$, so
//! the distances of near neighbours carry no GEMM cancellation error, and both order a row by
//! (distance, index): equal distances keep the smaller index first.

#[cfg(test)]
mod bench;
mod exact;
pub mod gpu;
mod hnsw;
pub mod ivf;
pub mod ivf_cpu;
mod key;
mod order;
pub mod precomputed;
mod query;
mod scan;
mod select;

pub use exact::{exact, exact_by};
pub use hnsw::{hnsw, hnsw_with, HnswParams};
pub use key::Key;
pub use order::{pca_tree_order, pca_tree_order_in_blocks};
pub use query::query;

use crate::{Error, Points, Result};

/// The k nearest neighbours of every point.
///
/// # Invariants
/// - `indices.len() == distances.len() == n * k`
/// - row i (`indices[i * k..(i + 1) * k]`) never contains i and holds k distinct indices
/// - distances are squared Euclidean (or the [`Key`] searched by), ascending within a row;
///   equal distances are ordered by index
#[derive(Clone, Debug)]
pub struct Neighbors {
    /// Number of points (rows).
    pub n: usize,
    /// Neighbours per point.
    pub k: usize,
    /// Row-major n × k neighbour indices.
    pub indices: Vec<u32>,
    /// Row-major n × k squared Euclidean distances (or keys), matching `indices`.
    pub distances: Vec<f32>,
}

impl Neighbors {
    /// n rows of k neighbours, each filled by `fill(i, indices, distances)` on the pool's
    /// threads.
    pub fn from_rows(
        n: usize,
        k: usize,
        fill: impl Fn(usize, &mut [u32], &mut [f32]) + Sync,
    ) -> Self {
        use rayon::prelude::*;
        let mut nb = Neighbors {
            n,
            k,
            indices: vec![0; n * k],
            distances: vec![0.0; n * k],
        };
        nb.indices
            .par_chunks_mut(k.max(1))
            .zip(nb.distances.par_chunks_mut(k.max(1)))
            .enumerate()
            .for_each(|(i, (idx, dist))| fill(i, idx, dist));
        nb
    }

    /// The neighbour indices of point `i`.
    #[inline]
    pub fn row_indices(&self, i: usize) -> &[u32] {
        &self.indices[i * self.k..(i + 1) * self.k]
    }

    /// The squared distances of point `i` to its neighbours.
    #[inline]
    pub fn row_distances(&self, i: usize) -> &[f32] {
        &self.distances[i * self.k..(i + 1) * self.k]
    }
}

/// Mean over points of the fraction of the exact neighbours that `approx` found.
///
/// Both sets must describe the same points; `approx.k` may differ from `exact.k` (the
/// fraction is taken over `exact.k`). Returns 0 for empty or mismatched inputs.
pub fn recall(approx: &Neighbors, exact: &Neighbors) -> f64 {
    if approx.n != exact.n || exact.n == 0 || exact.k == 0 {
        return 0.0;
    }
    let mut found = 0usize;
    let mut row: Vec<u32> = Vec::with_capacity(approx.k);
    for i in 0..exact.n {
        row.clear();
        row.extend_from_slice(approx.row_indices(i));
        row.sort_unstable();
        found += exact
            .row_indices(i)
            .iter()
            .filter(|j| row.binary_search(j).is_ok())
            .count();
    }
    found as f64 / (exact.n * exact.k) as f64
}

/// Checks `k` against the data: 1 ≤ k < n, n fits in `u32`, finite values.
fn check_args(points: &Points, k: usize) -> Result<()> {
    if points.data.len() != points.n * points.d {
        return Err(Error::Data(format!(
            "points hold {} values, expected n·d = {}·{}",
            points.data.len(),
            points.n,
            points.d
        )));
    }
    if k == 0 {
        return Err(Error::param("k", "must be at least 1"));
    }
    if k >= points.n {
        return Err(Error::param(
            "k",
            format!(
                "k = {k} needs at least k + 1 = {} points, got n = {}",
                k + 1,
                points.n
            ),
        ));
    }
    if points.n > u32::MAX as usize {
        return Err(Error::Data(format!(
            "{} points exceed the u32 index range",
            points.n
        )));
    }
    if let Some(p) = points.data.iter().position(|x| !x.is_finite()) {
        return Err(Error::Data(format!(
            "non-finite value at point {}, feature {}",
            p / points.d.max(1),
            p % points.d.max(1)
        )));
    }
    Ok(())
}

/// Squared Euclidean distance, accumulated in 8 independent f32 lanes (vectorises, and keeps
/// the rounding error at about √(d/8)·ε relative).
#[inline]
pub(crate) fn sq_dist(a: &[f32], b: &[f32]) -> f32 {
    Key::SqEuclidean.eval(a, b)
}

/// Orders (distance, index) pairs: by distance, then by index.
#[inline]
pub(crate) fn by_dist_then_index(a: &(f32, u32), b: &(f32, u32)) -> std::cmp::Ordering {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nb(n: usize, k: usize, indices: Vec<u32>) -> Neighbors {
        Neighbors {
            n,
            k,
            distances: vec![0.0; indices.len()],
            indices,
        }
    }

    #[test]
    fn recall_counts_found_neighbours() {
        let e = nb(2, 2, vec![1, 2, 0, 2]);
        let a = nb(2, 2, vec![2, 1, 2, 3]);
        assert_eq!(recall(&a, &e), 0.75);
        assert_eq!(recall(&e, &e), 1.0);
    }

    #[test]
    fn sq_dist_matches_f64() {
        for d in [1usize, 7, 8, 9, 50, 784] {
            let a: Vec<f32> = (0..d).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..d).map(|i| (i as f32 * 0.11).cos()).collect();
            let r: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (*x as f64 - *y as f64).powi(2))
                .sum();
            assert!(
                (sq_dist(&a, &b) as f64 - r).abs() <= 1e-5 * r.max(1e-30),
                "d={d}"
            );
        }
    }

    #[test]
    fn bad_k_is_an_error() {
        let p = Points::new(3, 1, vec![0.0, 1.0, 2.0]);
        assert!(matches!(
            check_args(&p, 0),
            Err(Error::Param { name: "k", .. })
        ));
        assert!(matches!(
            check_args(&p, 3),
            Err(Error::Param { name: "k", .. })
        ));
        assert!(check_args(&p, 2).is_ok());
        let bad = Points::new(3, 1, vec![0.0, f32::NAN, 2.0]);
        assert!(matches!(check_args(&bad, 1), Err(Error::Data(_))));
    }
}
