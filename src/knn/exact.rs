//! Exact kNN on the CPU: blocked GEMM + bounded selection (DESIGN §1.3).
//!
//! For a block Q of queries and a block R of references, with centred data,
//!
//! $$ \lVert q - r \rVert^2 = \lVert q \rVert^2 + v(q, r), \qquad
//!    v(q, r) = \lVert r \rVert^2 - 2\, q \cdot r . $$
//!
//! $v$ for the whole tile is one GEMM of augmented rows, $[q, 1] \cdot [-2r, \lVert r\rVert^2]^\top$,
//! and $\lVert q \rVert^2$ is constant along a query's row, so the selection ranks $v$
//! directly. Each query keeps the k smallest $v$ ([`TopK`]) plus every candidate within a
//! slack of $2e_q$ of the k-th, where $e_q$ bounds the GEMM's rounding error
//! ([`gemm_error_bound`]): those are all the points that can truly be among the k nearest.
//! Most of a tile is rejected by one compare per entry against the running threshold. The
//! survivors' distances are then recomputed directly, $\sum_l (x_l - y_l)^2$, and the best k
//! by (distance, index) kept: no GEMM cancellation error in the output, and exact ties
//! (duplicates, lattice data) resolved by index as brute force would.
//!
//! Work is O(n² d) flops and O(BQ · BR) memory per thread; n × n is never stored. Query
//! blocks run in parallel (rayon), each tile GEMM sequentially (faer, `Par::Seq`). References
//! are scanned in increasing index order, which makes ties deterministic (smaller index
//! first) and the result independent of the thread count.

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;

use super::select::TopK;
use super::{by_dist_then_index, check_args, sq_dist, Neighbors};
use crate::progress::Progress;
use crate::{Points, Result};

/// Queries per block (one rayon task): the columns of a GEMM tile.
const BQ: usize = 128;
/// References per tile: the rows of a GEMM tile (BQ · BR · 4 bytes = 512 KiB, in L2).
const BR: usize = 1024;

/// The k nearest other points of every point, exactly (up to f32 rounding of distances).
///
/// Errors: `k == 0`, `k ≥ n` ([`crate::Error::Param`]); non-finite values
/// ([`crate::Error::Data`]). Progress: stage `"knn"`, one unit per block of queries.
pub fn exact(points: &Points, k: usize, progress: &dyn Progress) -> Result<Neighbors> {
    check_args(points, k)?;
    let (n, d) = (points.n, points.d);
    let d1 = d + 1;
    let (qa, ra) = augment(points);
    let r2max = ra.chunks_exact(d1).map(|r| r[d]).fold(0f32, f32::max);

    let blocks = n.div_ceil(BQ);
    progress.begin("knn", blocks as u64);
    let mut indices = vec![0u32; n * k];
    let mut distances = vec![0f32; n * k];
    indices
        .par_chunks_mut(BQ * k)
        .zip(distances.par_chunks_mut(BQ * k))
        .enumerate()
        .for_each_init(
            || Scratch::new(k),
            |s, (b, (idx_out, dist_out))| {
                let q0 = b * BQ;
                let bq = BQ.min(n - q0);
                for (q, t) in s.top[..bq].iter_mut().enumerate() {
                    let q2 = ra[(q0 + q) * d1 + d];
                    t.reset(2.0 * gemm_error_bound(d1, q2, r2max));
                }
                let qblk = MatRef::from_column_major_slice(&qa[q0 * d1..(q0 + bq) * d1], d1, bq);
                for r0 in (0..n).step_by(BR) {
                    let br = BR.min(n - r0);
                    let tile = &mut s.tile[..br * bq];
                    // Step 1: v for the tile, column q = query q0 + q (contiguous).
                    matmul(
                        MatMut::from_column_major_slice_mut(tile, br, bq),
                        Accum::Replace,
                        MatRef::from_row_major_slice(&ra[r0 * d1..(r0 + br) * d1], br, d1),
                        qblk,
                        1.0f32,
                        Par::Seq,
                    );
                    // Step 2: a point is not its own neighbour (its duplicates are).
                    for q in 0..bq {
                        let g = q0 + q;
                        if (r0..r0 + br).contains(&g) {
                            tile[q * br + (g - r0)] = f32::INFINITY;
                        }
                    }
                    // Step 3: bounded selection along each query's column.
                    for (col, top) in tile.chunks_exact(br).zip(&mut s.top[..bq]) {
                        scan(col, r0 as u32, top);
                    }
                }
                // Step 4: exact distances of the survivors, best k by (distance, index).
                for q in 0..bq {
                    let g = q0 + q;
                    let x = points.row(g);
                    let cand = &mut s.cand;
                    cand.clear();
                    cand.extend(
                        s.top[q]
                            .sorted()
                            .iter()
                            .map(|&(_, j)| (sq_dist(x, points.row(j as usize)), j)),
                    );
                    cand.sort_unstable_by(by_dist_then_index);
                    for (l, &(dist, j)) in cand[..k].iter().enumerate() {
                        idx_out[q * k + l] = j;
                        dist_out[q * k + l] = dist;
                    }
                }
                progress.advance(1);
            },
        );
    progress.end();
    Ok(Neighbors {
        n,
        k,
        indices,
        distances,
    })
}

/// Per-thread buffers: one GEMM tile and one selector per query of a block.
struct Scratch {
    tile: Vec<f32>,
    top: Vec<TopK>,
    cand: Vec<(f32, u32)>,
}

impl Scratch {
    fn new(keep: usize) -> Self {
        Scratch {
            tile: vec![0.0; BQ * BR],
            top: (0..BQ).map(|_| TopK::new(keep, 2 * keep + 16)).collect(),
            cand: Vec::with_capacity(keep),
        }
    }
}

/// A bound on the rounding error of $v = \lVert r\rVert^2 - 2 q \cdot r$ computed by an f32
/// GEMM of length `len` (with FMAs or not), for $\lVert q\rVert^2 = q_2$ and
/// $\lVert r\rVert^2 \le r_2$: $\gamma_{len} (r_2 + 2\sqrt{q_2 r_2}) + u\, r_2$ with
/// $\gamma_n = n u / (1 - n u)$ and $u = 2^{-24}$ (Higham, Accuracy and Stability, §3.1),
/// doubled for safety against the summation order of blocked kernels.
fn gemm_error_bound(len: usize, q2: f32, r2: f32) -> f32 {
    let u = f32::EPSILON as f64 / 2.0;
    let nu = (len + 1) as f64 * u;
    let gamma = nu / (1.0 - nu);
    let (q2, r2) = (q2 as f64, r2 as f64);
    (2.0 * (gamma * (r2 + 2.0 * (q2 * r2).sqrt()) + u * r2)) as f32
}

/// Augmented rows of the centred data: queries $[x, 1]$ and references
/// $[-2x, \lVert x\rVert^2]$, both n × (d + 1) row-major.
fn augment(points: &Points) -> (Vec<f32>, Vec<f32>) {
    let (n, d) = (points.n, points.d);
    let d1 = d + 1;
    // Centring (mean in f64) keeps ‖x‖² small relative to the distances: less cancellation.
    let mut mean = vec![0f64; d];
    for i in 0..n {
        for (m, &x) in mean.iter_mut().zip(points.row(i)) {
            *m += x as f64;
        }
    }
    let mean: Vec<f32> = mean.iter().map(|m| (m / n as f64) as f32).collect();
    let mut qa = vec![0f32; n * d1];
    let mut ra = vec![0f32; n * d1];
    qa.par_chunks_mut(d1)
        .zip(ra.par_chunks_mut(d1))
        .enumerate()
        .for_each(|(i, (q, r))| {
            let mut nrm = 0f64;
            for ((l, &x), m) in points.row(i).iter().enumerate().zip(&mean) {
                let c = x - m;
                q[l] = c;
                r[l] = -2.0 * c;
                nrm += (c as f64) * (c as f64);
            }
            q[d] = 1.0;
            r[d] = nrm as f32;
        });
    (qa, ra)
}

/// Offers the entries of one tile column (reference indices `base..`) to `top`.
///
/// Almost all entries are rejected; the test runs 16 at a time with no branch inside a
/// chunk, so it vectorises, and only chunks holding a candidate are looked at one by one.
#[inline]
fn scan(col: &[f32], base: u32, top: &mut TopK) {
    const W: usize = 16;
    let chunks = col.chunks_exact(W);
    let rest = chunks.remainder();
    let tail0 = col.len() - rest.len();
    for (c, chunk) in chunks.enumerate() {
        let thr = top.threshold();
        let mut hit = false;
        for &v in chunk {
            hit |= v < thr;
        }
        if hit {
            let b = base + (c * W) as u32;
            for (j, &v) in chunk.iter().enumerate() {
                top.offer(v, b + j as u32);
            }
        }
    }
    for (j, &v) in rest.iter().enumerate() {
        top.offer(v, base + (tail0 + j) as u32);
    }
}

#[cfg(test)]
mod tests {
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
        for x in &mut p.data {
            *x += 1000.0;
        }
        let got = exact(&p, 10, &Silent).unwrap();
        check(&p, 10, &got);
    }

    #[test]
    fn errors_on_bad_k() {
        let p = random(10, 2, 0);
        assert!(exact(&p, 0, &Silent).is_err());
        assert!(exact(&p, 10, &Silent).is_err());
        assert!(exact(&p, 9, &Silent).is_ok());
    }
}
