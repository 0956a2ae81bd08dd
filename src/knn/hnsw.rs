//! Approximate kNN with a hierarchical navigable small-world graph (Malkov & Yashunin 2018),
//! built and searched with `hnsw_rs`.
//!
//! Every point is inserted (in parallel, in a seeded random order), then every point is
//! searched for its k + 1 nearest, and the point itself is removed by index (its duplicates,
//! at distance 0, stay). The graph ranks by *squared* Euclidean distance
//! ([`Key::SqEuclidean`]): the same order as `hnsw_rs`' `DistL2` (which returns the root),
//! without the square root.
//! The returned distances are recomputed directly and rows sorted by (distance, index).
//!
//! [`hnsw_with`] ranks by any [`Key`] (the graph's distance is the key itself, through its
//! [`Distance`] impl): for the inner product, $2(c - x \cdot y)$, the maximum inner product
//! search of hnswlib's `ip` space (which ranks by 1 − x · y; the constant and the factor do
//! not change the order, and keep the distance non-negative). A point need not be its own
//! best match then; the search for k + 1 drops it by index wherever it comes, and keeps k
//! when it does not come at all.
//!
//! Determinism: `hnsw_rs` draws levels from its own fixed-seed generator, and parallel
//! insertion races between threads, so two runs can differ in a few neighbours (recall stays
//! the same). `seed` fixes the insertion order, which is what we control.
//!
//! A row that comes back short (fewer than k other points found; rare, seen only on tiny or
//! degenerate inputs) is completed by an exact linear scan for that point, so every row holds
//! k distinct true points.

use hnsw_rs::prelude::{Distance, Hnsw};
use rand::{rngs::StdRng, seq::SliceRandom, SeedableRng};
use rayon::prelude::*;

use super::select::TopK;
use super::{by_dist_then_index, check_args, Key, Neighbors};
use crate::progress::Progress;
use crate::{Points, Result};

/// Graph and search parameters of [`hnsw_with`].
#[derive(Clone, Debug)]
pub struct HnswParams {
    /// Links per node and layer (`M`); hnsw_rs allows at most 256. Default 16: with the
    /// widths below, recall 0.996 at k = 90 on MNIST (70000 × 50, PCA); M = 24 with
    /// `ef_construction` 128 reached 0.9985 at 1.4× the time.
    pub max_nb_connection: usize,
    /// Candidate list width while building. Default 64.
    pub ef_construction: usize,
    /// Candidate list width while searching; raised to at least k + 1. Default 0 (= auto,
    /// see [`HnswParams::ef_search_for`]).
    pub ef_search: usize,
    /// Maximum number of layers (hnsw_rs caps it at 16). Default 16.
    pub max_layer: usize,
}

impl Default for HnswParams {
    fn default() -> Self {
        HnswParams {
            max_nb_connection: 16,
            ef_construction: 64,
            ef_search: 0,
            max_layer: 16,
        }
    }
}

impl HnswParams {
    /// The search width used for k neighbours: `ef_search` if set, else `k + 1 + k / 2`,
    /// never below k + 1.
    pub fn ef_search_for(&self, k: usize) -> usize {
        let auto = k + 1 + k / 2;
        let ef = if self.ef_search == 0 {
            auto
        } else {
            self.ef_search
        };
        ef.max(k + 1)
    }
}

/// The key as `hnsw_rs`' distance: the graph is built and searched by the ranking the
/// result reports.
impl Distance<f32> for Key {
    #[inline]
    fn eval(&self, va: &[f32], vb: &[f32]) -> f32 {
        Key::eval(*self, va, vb)
    }
}

/// Approximate k nearest other points of every point by squared Euclidean distance, with
/// [`HnswParams::default`].
///
/// Errors: `k == 0`, `k ≥ n` ([`crate::Error::Param`]); non-finite values
/// ([`crate::Error::Data`]). Progress: stage `"knn"`, n units for the build, n for the
/// queries.
pub fn hnsw(points: &Points, k: usize, seed: u64, progress: &dyn Progress) -> Result<Neighbors> {
    hnsw_with(
        points,
        k,
        seed,
        &HnswParams::default(),
        Key::SqEuclidean,
        progress,
    )
}

/// [`hnsw`] with explicit parameters, ranking by `key`.
pub fn hnsw_with(
    points: &Points,
    k: usize,
    seed: u64,
    params: &HnswParams,
    key: Key,
    progress: &dyn Progress,
) -> Result<Neighbors> {
    check_args(points, k)?;
    if params.max_nb_connection == 0 || params.max_nb_connection > 256 {
        return Err(crate::Error::param(
            "max_nb_connection",
            "must be in 1..=256",
        ));
    }
    let n = points.n;
    progress.begin("knn", 2 * n as u64);

    // Step 1: build, in a seeded random order (data sorted by class builds a worse graph).
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut StdRng::seed_from_u64(seed));
    let mut graph: Hnsw<f32, Key> = Hnsw::new(
        params.max_nb_connection,
        n,
        params.max_layer,
        params.ef_construction.max(params.max_nb_connection),
        key,
    );
    const CHUNK: usize = 8192;
    for part in order.chunks(CHUNK) {
        let items: Vec<(&[f32], usize)> = part.iter().map(|&i| (points.row(i), i)).collect();
        graph.parallel_insert_slice(&items);
        progress.advance(part.len() as u64);
    }
    graph.set_searching_mode(true);

    // Step 2: query k + 1, drop self, recompute distances, complete short rows.
    let ef = params.ef_search_for(k);
    let mut indices = vec![0u32; n * k];
    let mut distances = vec![0f32; n * k];
    let rows_per_task = 256;
    indices
        .par_chunks_mut(rows_per_task * k)
        .zip(distances.par_chunks_mut(rows_per_task * k))
        .enumerate()
        .for_each(|(b, (idx_out, dist_out))| {
            let mut row: Vec<(f32, u32)> = Vec::with_capacity(k + 1);
            let i0 = b * rows_per_task;
            for (r, (io, dout)) in idx_out
                .chunks_exact_mut(k)
                .zip(dist_out.chunks_exact_mut(k))
                .enumerate()
            {
                let i = i0 + r;
                let x = points.row(i);
                row.clear();
                row.extend(
                    graph
                        .search(x, k + 1, ef)
                        .iter()
                        .map(|nb| nb.get_origin_id())
                        .filter(|&j| j != i && j < n)
                        .map(|j| (key.eval(x, points.row(j)), j as u32)),
                );
                row.sort_unstable_by(by_dist_then_index);
                row.dedup_by_key(|e| e.1);
                if row.len() < k {
                    scan_row(points, key, i, k, &mut row);
                }
                for (l, &(dd, j)) in row[..k].iter().enumerate() {
                    io[l] = j;
                    dout[l] = dd;
                }
            }
            progress.advance((idx_out.len() / k) as u64);
        });
    progress.end();
    Ok(Neighbors {
        n,
        k,
        indices,
        distances,
    })
}

/// Replaces `row` by the exact k nearest other points of point `i` by `key` (linear scan).
fn scan_row(points: &Points, key: Key, i: usize, k: usize, row: &mut Vec<(f32, u32)>) {
    let x = points.row(i);
    let mut top = TopK::new(k, 2 * k + 16);
    for j in (0..points.n).filter(|&j| j != i) {
        top.offer(key.eval(x, points.row(j)), j as u32);
    }
    row.clear();
    row.extend_from_slice(top.sorted());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knn::{exact, recall};
    use crate::progress::Silent;
    use rand::Rng;
    use rand_distr::{Distribution, Normal};

    /// `c` Gaussian clusters in `d` dimensions, centres spread over [-10, 10]^d, unit spread.
    pub(crate) fn clustered(n: usize, d: usize, c: usize, seed: u64) -> Points {
        let mut rng = StdRng::seed_from_u64(seed);
        let centres: Vec<f32> = (0..c * d).map(|_| rng.random_range(-10.0..10.0)).collect();
        let g = Normal::new(0.0f32, 1.0).unwrap();
        let mut data = Vec::with_capacity(n * d);
        for i in 0..n {
            let cc = i % c;
            for l in 0..d {
                data.push(centres[cc * d + l] + g.sample(&mut rng));
            }
        }
        Points::new(n, d, data)
    }

    #[test]
    fn recall_at_k90_on_clustered_data() {
        let p = clustered(5000, 50, 10, 42);
        let k = 90;
        let e = exact(&p, k, &Silent).unwrap();
        let a = hnsw(&p, k, 1, &Silent).unwrap();
        let r = recall(&a, &e);
        println!("hnsw recall at k = {k}, n = 5000, d = 50: {r:.4}");
        assert!(r >= 0.9, "recall {r}");
        for i in 0..p.n {
            let row = a.row_indices(i);
            assert!(!row.contains(&(i as u32)));
            let dd = a.row_distances(i);
            assert!(dd.windows(2).all(|w| w[0] <= w[1]));
            let mut s = row.to_vec();
            s.sort_unstable();
            s.dedup();
            assert_eq!(s.len(), k, "row {i} has repeated neighbours");
        }
    }

    #[test]
    fn tiny_and_duplicate_inputs_give_full_rows() {
        // all points equal: every other point is a neighbour at distance 0
        let p = Points::new(20, 3, vec![1.5; 60]);
        let a = hnsw(&p, 19, 0, &Silent).unwrap();
        for i in 0..20 {
            let mut s = a.row_indices(i).to_vec();
            s.sort_unstable();
            let want: Vec<u32> = (0..20u32).filter(|&j| j != i as u32).collect();
            assert_eq!(s, want);
            assert!(a.row_distances(i).iter().all(|&x| x == 0.0));
        }
        let p = clustered(3, 2, 1, 3);
        let a = hnsw(&p, 2, 0, &Silent).unwrap();
        assert_eq!(recall(&a, &exact(&p, 2, &Silent).unwrap()), 1.0);
    }

    /// Inner product: the graph built and searched by the key finds the exact kNN's
    /// largest inner products (rows without self, ordered by the key).
    #[test]
    fn inner_product_recall() {
        let p = crate::knn::exact::tests::inner_product_points(3000, 16, 9);
        let k = 20;
        let key = Key::new(crate::prep::Metric::InnerProduct, &p);
        let e = crate::knn::exact_by(&p, k, key, &Silent).unwrap();
        let params = HnswParams {
            ef_search: 200,
            ..HnswParams::default()
        };
        let a = hnsw_with(&p, k, 1, &params, key, &Silent).unwrap();
        let r = recall(&a, &e);
        println!("hnsw inner-product recall at k = {k}, n = 3000, d = 16: {r:.4}");
        assert!(r >= 0.95, "recall {r}");
        for i in 0..p.n {
            assert!(!a.row_indices(i).contains(&(i as u32)));
            assert!(a.row_distances(i).windows(2).all(|w| w[0] <= w[1]));
        }
    }

    #[test]
    fn errors_on_bad_k() {
        let p = clustered(10, 2, 2, 0);
        assert!(hnsw(&p, 0, 0, &Silent).is_err());
        assert!(hnsw(&p, 10, 0, &Silent).is_err());
    }
}
