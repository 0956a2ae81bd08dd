//! Exact kNN on the CPU: blocked GEMM + bounded selection (DESIGN §1.3).
//!
//! With centred data and augmented rows $\hat q = [q, 1, \lVert q\rVert^2]$ and
//! $\hat r = [-2r, \lVert r\rVert^2, 1]$, one GEMM gives a whole tile of squared distances,
//!
//! $$ \hat q \cdot \hat r = \lVert q \rVert^2 + \lVert r \rVert^2 - 2\, q \cdot r
//!    = \lVert q - r \rVert^2 . $$
//!
//! The points are cut into blocks of [`BS`] (in a locality order, [`pca_tree_order`]), and
//! the tile of each pair of blocks (I, J), I ≤ J, is computed **once**: its columns feed the
//! selectors of I's points and its rows those of J's ([`scan`]), which halves the GEMM work.
//! Pairs are scheduled in rounds of increasing block offset J − I, each round in two phases
//! in which no block appears twice, so a phase runs in parallel with no locking contention
//! (each block's selectors sit behind their own mutex). Offset 0 (the blocks themselves,
//! compact clusters thanks to the order) comes first and gives tight thresholds early.
//!
//! Each point keeps its k smallest distances ([`TopK`]) plus every candidate within a slack
//! of $2e$, where $e$ bounds the GEMM's rounding error ([`gemm_error_bound`]): those are
//! all the points that can truly be among the k nearest. The survivors' distances are then
//! recomputed directly, $\sum_l (x_l - y_l)^2$, and the best k by (distance, index) kept: no
//! GEMM cancellation error in the output, and exact ties (duplicates, lattice data) resolved
//! by index as brute force would, whatever the order of arrival.
//!
//! [`exact_by`] ranks by another [`Key`]: the inner product's replaces both norms of the
//! augmented rows by the constant c and leaves the points uncentred, so that the same GEMM
//! gives $2(c - q \cdot r)$, and the survivors are measured by the key directly.
//!
//! Work: n²d flops (half of a non-symmetric blocked GEMM); memory: one selector per point
//! (about (1.5k + 16) · 8 bytes) and one BS × BS tile per thread; n × n is never stored.
//! The result does not depend on the number of threads.

use std::cell::RefCell;
use std::sync::Mutex;

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;

use super::order::pca_tree_order;
use super::scan;
use super::select::TopK;
use super::{by_dist_then_index, check_args, Key, Neighbors};
use crate::progress::Progress;
use crate::{Points, Result};

/// Points per block: a tile is BS × BS f32 (1 MiB at 512, inside a 2 MiB L2).
const BS: usize = 512;

/// The k nearest other points of every point, exactly (up to f32 rounding of distances).
///
/// Errors: `k == 0`, `k ≥ n` ([`crate::Error::Param`]); non-finite values
/// ([`crate::Error::Data`]). Progress: stage `"knn"`, one unit per pair of blocks.
pub fn exact(points: &Points, k: usize, progress: &dyn Progress) -> Result<Neighbors> {
    exact_impl(points, k, Key::SqEuclidean, progress, true)
}

/// [`exact`] ranking by `key` (for [`Key::InnerProduct`], the largest inner products),
/// distances being the keys.
pub fn exact_by(points: &Points, k: usize, key: Key, progress: &dyn Progress) -> Result<Neighbors> {
    exact_impl(points, k, key, progress, true)
}

/// [`exact_by`], with the AVX2 scans allowed (`wide`) or not (to test the portable path).
pub(crate) fn exact_impl(
    points: &Points,
    k: usize,
    key: Key,
    progress: &dyn Progress,
    wide: bool,
) -> Result<Neighbors> {
    check_args(points, k)?;
    let (n, d) = (points.n, points.d);
    let kd = d + 2;
    // Step 0: locality order (positions), augmented rows, selectors.
    let order = pca_tree_order(&points.data, n, d);
    let (qa, ra) = augment(points, &order, key);
    let r2max = qa.chunks_exact(kd).map(|q| q[d + 1]).fold(0f32, f32::max);
    let slack = 2.0 * gemm_error_bound(kd, r2max);
    let nb = n.div_ceil(BS);
    let cap = k + k / 2 + 16;
    let blocks: Vec<Mutex<Vec<TopK>>> = (0..nb)
        .map(|b| {
            let len = BS.min(n - b * BS);
            Mutex::new(
                (0..len)
                    .map(|_| {
                        let mut t = TopK::new(k, cap);
                        t.reset(slack);
                        t
                    })
                    .collect(),
            )
        })
        .collect();
    let tiles = |i: usize, j: usize| {
        TILE.with(|t| {
            let mut tile = t.borrow_mut();
            tile.resize(BS * BS, 0.0);
            pair(&qa, &ra, n, kd, i, j, &blocks, &mut tile, wide);
        });
        progress.advance(1);
    };
    progress.begin("knn", (nb * (nb + 1) / 2) as u64);
    // Step 1: the blocks themselves, then pairs by increasing offset, two phases per offset.
    (0..nb).into_par_iter().for_each(|i| tiles(i, i));
    for off in 1..nb {
        for phase in 0..2 {
            (0..nb - off)
                .into_par_iter()
                .filter(|i| (i / off) % 2 == phase)
                .for_each(|i| tiles(i, i + off));
        }
    }
    // Step 2: exact distances of the survivors, best k by (distance, index), by position.
    let mut pos_idx = vec![0u32; n * k];
    let mut pos_dist = vec![0f32; n * k];
    pos_idx
        .par_chunks_mut(BS * k)
        .zip(pos_dist.par_chunks_mut(BS * k))
        .zip(blocks.into_par_iter())
        .enumerate()
        .for_each(|(b, ((idx_out, dist_out), tops))| {
            let mut tops = tops.into_inner().unwrap_or_else(|e| e.into_inner());
            let mut cand: Vec<(f32, u32)> = Vec::with_capacity(cap);
            for (q, top) in tops.iter_mut().enumerate() {
                let x = points.row(order[b * BS + q] as usize);
                cand.clear();
                cand.extend(top.sorted().iter().map(|&(_, p)| {
                    let j = order[p as usize];
                    (key.eval(x, points.row(j as usize)), j)
                }));
                cand.sort_unstable_by(by_dist_then_index);
                for (l, &(dist, j)) in cand[..k].iter().enumerate() {
                    idx_out[q * k + l] = j;
                    dist_out[q * k + l] = dist;
                }
            }
        });
    // Step 3: rows back to the input order.
    let inv = crate::points::inverse_permutation(&order);
    let mut indices = vec![0u32; n * k];
    let mut distances = vec![0f32; n * k];
    indices
        .par_chunks_mut(k)
        .zip(distances.par_chunks_mut(k))
        .zip(inv.par_iter())
        .for_each(|((io, dout), &p)| {
            let p = p as usize;
            io.copy_from_slice(&pos_idx[p * k..(p + 1) * k]);
            dout.copy_from_slice(&pos_dist[p * k..(p + 1) * k]);
        });
    progress.end();
    Ok(Neighbors {
        n,
        k,
        indices,
        distances,
    })
}

thread_local! {
    /// Each worker's GEMM tile, reused across pairs.
    static TILE: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// One pair of blocks: the tile of distances between block j (rows) and block i (columns),
/// offered to i's selectors by column and, if j ≠ i, to j's by row.
#[allow(clippy::too_many_arguments)]
fn pair(
    qa: &[f32],
    ra: &[f32],
    n: usize,
    kd: usize,
    i: usize,
    j: usize,
    blocks: &[Mutex<Vec<TopK>>],
    tile: &mut [f32],
    wide: bool,
) {
    let (i0, j0) = (i * BS, j * BS);
    let (bi, bj) = (BS.min(n - i0), BS.min(n - j0));
    let tile = &mut tile[..bi * bj];
    matmul(
        MatMut::from_column_major_slice_mut(&mut *tile, bj, bi),
        Accum::Replace,
        MatRef::from_row_major_slice(&ra[j0 * kd..(j0 + bj) * kd], bj, kd),
        MatRef::from_column_major_slice(&qa[i0 * kd..(i0 + bi) * kd], kd, bi),
        1.0f32,
        Par::Seq,
    );
    let lock = |b: usize| blocks[b].lock().unwrap_or_else(|e| e.into_inner());
    if i == j {
        // a point is not its own neighbour (its duplicates are)
        for q in 0..bi {
            tile[q * bj + q] = f32::INFINITY;
        }
        scan::columns(tile, bj, j0 as u32, &mut lock(i), wide);
    } else {
        scan::columns(tile, bj, j0 as u32, &mut lock(i), wide);
        scan::rows(tile, bj, i0 as u32, &mut lock(j), wide);
    }
}

/// A bound on the rounding error of a squared distance computed by an f32 GEMM of length
/// `len` from augmented rows with $\lVert q\rVert^2, \lVert r\rVert^2 \le r_2$:
/// $\gamma_{len} \cdot 4 r_2 + 2u\, r_2$ (the terms' magnitudes sum to at most
/// $(\lVert q\rVert + \lVert r\rVert)^2 \le 4 r_2$; the norms are rounded once each), with
/// $\gamma_n = n u / (1 - n u)$ and $u = 2^{-24}$ (Higham, Accuracy and Stability, §3.1),
/// doubled for safety against the summation order of blocked kernels.
pub(super) fn gemm_error_bound(len: usize, r2: f32) -> f32 {
    let u = f32::EPSILON as f64 / 2.0;
    let nu = (len + 1) as f64 * u;
    let gamma = nu / (1.0 - nu);
    let r2 = r2 as f64;
    (2.0 * (gamma * 4.0 * r2 + 2.0 * u * r2)) as f32
}

/// Augmented rows of the data (centred where `key` allows), n × (d + 2) row-major, row p
/// for point `order[p]`: queries $[x, 1, t_x]$ and references $[-2x, t_x, 1]$, $t_x$ the
/// key's row term ($\lVert x\rVert^2$ for squared distances).
pub(super) fn augment(points: &Points, order: &[u32], key: Key) -> (Vec<f32>, Vec<f32>) {
    let centre = if key.translation_invariant() {
        column_mean(points)
    } else {
        vec![0.0; points.d]
    };
    augment_about(points, order, &centre, key)
}

/// Feature means in f64, rounded to f32: the centre [`augment_about`] subtracts.
pub(super) fn column_mean(points: &Points) -> Vec<f32> {
    let (n, d) = (points.n, points.d);
    let mut mean = vec![0f64; d];
    for i in 0..n {
        for (m, &x) in mean.iter_mut().zip(points.row(i)) {
            *m += x as f64;
        }
    }
    mean.iter().map(|m| (m / n.max(1) as f64) as f32).collect()
}

/// [`augment`] about a given centre `mean`, so that two point sets (queries against
/// references, [`super::query`]) share one.
pub(super) fn augment_about(
    points: &Points,
    order: &[u32],
    mean: &[f32],
    key: Key,
) -> (Vec<f32>, Vec<f32>) {
    let (n, d) = (order.len(), points.d);
    let kd = d + 2;
    // Centring keeps ‖x‖² small relative to the distances: less cancellation.
    let mut qa = vec![0f32; n * kd];
    let mut ra = vec![0f32; n * kd];
    qa.par_chunks_mut(kd)
        .zip(ra.par_chunks_mut(kd))
        .enumerate()
        .for_each(|(p, (q, r))| {
            let mut nrm = 0f64;
            let x = points.row(order[p] as usize);
            for ((l, &x), m) in x.iter().enumerate().zip(mean) {
                let c = x - m;
                q[l] = c;
                r[l] = -2.0 * c;
                nrm += (c as f64) * (c as f64);
            }
            let t = key.row_term(nrm);
            q[d] = 1.0;
            q[d + 1] = t;
            r[d] = t;
            r[d + 1] = 1.0;
        });
    (qa, ra)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::progress::Silent;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// All pairs in f64, sorted by (distance, index), self excluded.
    fn brute(p: &Points, k: usize) -> Vec<Vec<(f64, u32)>> {
        (0..p.n)
            .map(|i| {
                let mut row: Vec<(f64, u32)> = (0..p.n)
                    .filter(|&j| j != i)
                    .map(|j| {
                        let dd: f64 = p
                            .row(i)
                            .iter()
                            .zip(p.row(j))
                            .map(|(a, b)| (*a as f64 - *b as f64).powi(2))
                            .sum();
                        (dd, j as u32)
                    })
                    .collect();
                row.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                row.truncate(k);
                row
            })
            .collect()
    }

    /// Checks `got` against brute force: indices equal where the distance is not tied
    /// within rounding with its neighbours in rank, distances always close, rows sorted.
    fn check(p: &Points, k: usize, got: &Neighbors) {
        let want = brute(p, k);
        assert_eq!(got.indices.len(), p.n * k);
        assert_eq!(got.distances.len(), p.n * k);
        for (i, w) in want.iter().enumerate() {
            let gi = got.row_indices(i);
            let gd = got.row_distances(i);
            assert!(!gi.contains(&(i as u32)), "self in row {i}");
            for l in 0..k {
                let tol = 1e-5 * w[l].0.max(1e-3);
                assert!(
                    (gd[l] as f64 - w[l].0).abs() <= tol,
                    "row {i} rank {l}: {} vs {}",
                    gd[l],
                    w[l].0
                );
                if l > 0 {
                    assert!(
                        gd[l - 1] < gd[l] || (gd[l - 1] == gd[l] && gi[l - 1] < gi[l]),
                        "row {i} not sorted at {l}"
                    );
                }
                // the true distance of what we returned must equal the wanted one
                let true_d: f64 = p
                    .row(i)
                    .iter()
                    .zip(p.row(gi[l] as usize))
                    .map(|(a, b)| (*a as f64 - *b as f64).powi(2))
                    .sum();
                assert!(
                    (true_d - w[l].0).abs() <= tol,
                    "row {i} rank {l}: wrong point"
                );
            }
        }
    }

    fn random(n: usize, d: usize, seed: u64) -> Points {
        let mut rng = StdRng::seed_from_u64(seed);
        Points::new(
            n,
            d,
            (0..n * d).map(|_| rng.random_range(-1.0..1.0)).collect(),
        )
    }

    #[test]
    fn equals_brute_force_on_random_data() {
        // sizes below, at and across the block sizes (BQ = 128, BR = 1024)
        for (n, d, k, seed) in [
            (7usize, 3usize, 6usize, 1u64),
            (300, 10, 15, 2),
            (1500, 17, 30, 3),
        ] {
            let p = random(n, d, seed);
            let got = exact(&p, k, &Silent).unwrap();
            check(&p, k, &got);
        }
    }

    #[test]
    fn duplicates_and_ties_are_exact_and_ordered_by_index() {
        // integer grid points: f32 arithmetic is exact, so ties are true ties
        let mut rng = StdRng::seed_from_u64(11);
        let (n, d, k) = (1200usize, 4usize, 25usize);
        let mut data: Vec<f32> = (0..n * d).map(|_| rng.random_range(0..4) as f32).collect();
        // a block of exact duplicates of point 0
        for i in 1..40 {
            for l in 0..d {
                data[i * d + l] = data[l];
            }
        }
        let p = Points::new(n, d, data);
        let got = exact(&p, k, &Silent).unwrap();
        let want = brute(&p, k);
        for (i, w) in want.iter().enumerate() {
            let wi: Vec<u32> = w.iter().map(|x| x.1).collect();
            let wd: Vec<f32> = w.iter().map(|x| x.0 as f32).collect();
            assert_eq!(got.row_indices(i), &wi[..], "row {i}");
            assert_eq!(got.row_distances(i), &wd[..], "row {i}");
        }
        // the duplicates of point 0 are at distance 0
        assert!(got
            .row_distances(0)
            .iter()
            .take(k.min(39))
            .all(|&x| x == 0.0));
    }

    #[test]
    fn far_from_origin_is_still_accurate() {
        // a large offset stresses the GEMM's cancellation; centring + recompute handle it
        let mut p = random(500, 8, 5);
        for x in p.data.iter_mut() {
            *x += 1000.0;
        }
        let got = exact(&p, 10, &Silent).unwrap();
        check(&p, 10, &got);
    }

    /// Points of varied lengths off the origin, and row 1 twice row 0: by inner product
    /// row 1 beats row 0 itself as row 0's match (an engine that took its first hit for the
    /// point itself would drop it), and long points are many rows' best matches.
    pub(crate) fn inner_product_points(n: usize, d: usize, seed: u64) -> Points {
        let mut p = random(n, d, seed);
        let mut rng = StdRng::seed_from_u64(seed ^ 7);
        for row in p.data.chunks_mut(d) {
            let scale = rng.random_range(0.2f32..3.0);
            row.iter_mut().for_each(|x| *x = (*x + 0.5) * scale);
        }
        for l in 0..d {
            p.data[d + l] = 2.0 * p.data[l];
        }
        p
    }

    /// The k largest inner products with row i among the other rows, in f64, by
    /// (−x · y, index).
    pub(crate) fn brute_inner(p: &Points, i: usize, k: usize) -> Vec<(f64, u32)> {
        let mut row: Vec<(f64, u32)> = (0..p.n)
            .filter(|&j| j != i)
            .map(|j| {
                let dot: f64 = p
                    .row(i)
                    .iter()
                    .zip(p.row(j))
                    .map(|(&a, &b)| a as f64 * b as f64)
                    .sum();
                (-dot, j as u32)
            })
            .collect();
        row.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        row.truncate(k);
        row
    }

    /// Inner product: the k largest x · y of each row among the others, the point itself
    /// excluded by index although it is not its own best match, the keys 2(c − x · y).
    #[test]
    fn inner_product_equals_brute_force() {
        for (n, d, k) in [(9usize, 3usize, 8usize), (1300, 12, 20)] {
            let p = inner_product_points(n, d, 21);
            let key = Key::new(crate::prep::Metric::InnerProduct, &p);
            let Key::InnerProduct { c } = key else {
                panic!("{key:?}")
            };
            let got = exact_by(&p, k, key, &Silent).unwrap();
            for i in 0..n {
                let want = brute_inner(&p, i, k);
                let gi = got.row_indices(i);
                assert!(!gi.contains(&(i as u32)), "self in row {i}");
                for (l, &(neg_dot, j)) in want.iter().enumerate() {
                    let key_want = 2.0 * (c as f64 + neg_dot);
                    let tol = 1e-5 * c as f64;
                    assert!(
                        (got.row_distances(i)[l] as f64 - key_want).abs() <= tol,
                        "row {i} rank {l}: {} vs {key_want}",
                        got.row_distances(i)[l]
                    );
                    let key_got = key.eval_f64(p.row(i), p.row(gi[l] as usize)) as f64;
                    assert!(
                        (key_got - key_want).abs() <= tol,
                        "row {i} rank {l}: {} for {j}",
                        gi[l]
                    );
                    assert!(got.row_distances(i)[l] >= 0.0);
                }
            }
        }
    }

    #[test]
    fn errors_on_bad_k() {
        let p = random(10, 2, 0);
        assert!(exact(&p, 0, &Silent).is_err());
        assert!(exact(&p, 10, &Silent).is_err());
        assert!(exact(&p, 9, &Silent).is_ok());
    }
}
