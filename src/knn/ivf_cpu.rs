//! The approximate all-points kNN on the CPU (`--knn approx` on the cpu backend): the twin
//! of the GPU's (`crate::knn::gpu::ivf`), with the same host steps ([`super::ivf`]) and
//! the exact kNN's blocked GEMM and threshold scans ([`super::exact`] and the `scan` module) in
//! place of the tensor-core sweep.
//!
//! k-means cells on a seeded sample; every point to its nearest centroid; the points sorted
//! by cell and within a cell in a PCA-tree order; each block of [`BLOCK`] consecutive
//! points compared, one GEMM tile at a time, with the points of the cells nearest its mean;
//! the survivors' distances recomputed exactly; then, where the recall sample's recall is
//! below `IvfParams::refine_below`, rounds of refinement by neighbours of neighbours, as on
//! the GPU. Every ranking after the cells (the probes, the tiles, the
//! refinement, the reported distances and the recall sample) is by the search's key
//! ([`super::Key`]); the k-means cells themselves stay Euclidean. Work O(n · candidates · d) with candidates ≈ probes · 2√n,
//! against the exact kNN's n² d / 2; memory: the points twice (sorted, augmented), one
//! selector per point of the blocks in flight, the graph twice during refinement.

use rand::{rngs::StdRng, SeedableRng};
use rayon::prelude::*;

use super::exact::{augment, gemm_error_bound};
use super::ivf::{self as host, Cells, IvfParams};
use super::select::TopK;
use super::{by_dist_then_index, check_args, scan, sq_dist, Key, Neighbors};
use crate::knn::gpu::ivf::{ApproxSeconds, ApproxStats};
use crate::progress::Progress;
use crate::{Points, Result};

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};

/// Queries per block: a block shares its candidates (and its GEMM tiles).
pub const BLOCK: usize = 128;
/// Reference rows per GEMM tile (a 1024 × 128 f32 tile: 512 KiB).
const TILE_ROWS: usize = 1024;

/// Nearest centroid (`centroids`, lists × d) of each row of `x` (m × d): the first on ties.
fn assign(x: &[f32], d: usize, centroids: &[f32]) -> Vec<u32> {
    x.par_chunks(d)
        .map(|row| {
            let mut best = (f32::INFINITY, 0u32);
            for (c, cen) in centroids.chunks_exact(d).enumerate() {
                let dist = sq_dist(row, cen);
                if dist < best.0 {
                    best = (dist, c as u32);
                }
            }
            best.1
        })
        .collect()
}

/// The approximate kNN of `points` by `key` on the CPU (input numbering), and what it
/// measured; `recall_size` points of a seeded sample are checked against exact scans (0: none).
/// Progress (`"knn"`): one unit per block of queries.
///
/// One long function on purpose: it is the method's steps in order (k-means, cells, the
/// probed sweep, refinement, recall sample), each timed into the report's `ivf.seconds`,
/// the GPU twin's sequence step for step; split, each piece would take and return most of
/// the others' state.
pub fn approx_cpu(
    points: &Points,
    k: usize,
    key: Key,
    params: &IvfParams,
    recall_size: usize,
    progress: &dyn Progress,
) -> Result<(Neighbors, ApproxStats)> {
    check_args(points, k)?;
    params.check(points.n, k)?;
    let (n, d) = (points.n, points.d);
    let mut seconds = ApproxSeconds::default();
    let clock = std::time::Instant::now();
    let mut lap = {
        let mut last = 0.0;
        move || {
            let now = clock.elapsed().as_secs_f64();
            let t = now - last;
            last = now;
            t
        }
    };

    // k-means on the sample, then every point to its cell; cells in a locality order.
    let lists = params.lists_for(n);
    let rows = host::kmeans_sample(n, lists, params.sample_per_list, params.seed);
    let sample_x = points.gather(&rows).data;
    let mut centroids = host::initial_centroids(&sample_x, d, lists, params.seed);
    let lists = centroids.len() / d.max(1);
    let mut rng = StdRng::seed_from_u64(params.seed);
    for _ in 0..params.kmeans_iters {
        let labels = assign(&sample_x, d, &centroids);
        host::update_centroids(&sample_x, d, &labels, &mut centroids, &mut rng);
    }
    seconds.kmeans = lap();
    let centroids = host::order_cells(&centroids, d);
    let labels = assign(&points.data, d, &centroids);
    seconds.cell_steps.assign = lap();
    let mut cells = Cells::sort(&labels, lists);
    drop(labels);
    let sorted = cells.order_within(points, BLOCK);
    seconds.cell_steps.order = lap();
    let probing = params.probing(k);
    let probes = cells.block_probes(&sorted, &centroids, key, &probing, BLOCK);
    let chunk = 32;
    let (runs, run_off) = cells.block_runs(&probes, BLOCK, chunk);
    drop(probes);
    let candidates = runs.chunks_exact(2).map(|r| r[1] as f64).sum::<f64>() * chunk as f64
        / n.div_ceil(BLOCK) as f64;
    seconds.cell_steps.plan = lap();
    let steps = seconds.cell_steps;
    seconds.cells = steps.assign + steps.order + steps.plan;

    // The sweep: each block's GEMM tiles against its runs, then the exact finish.
    let identity: Vec<u32> = (0..n as u32).collect();
    let (qa, ra) = augment(&sorted, &identity, key);
    let kd = d + 2;
    let r2max = qa.chunks_exact(kd).map(|q| q[d + 1]).fold(0f32, f32::max);
    let slack = 2.0 * gemm_error_bound(kd, r2max);
    let cap = k + k / 2 + 16;
    let wide = scan::wide_available();
    let blocks = n.div_ceil(BLOCK);
    progress.begin("knn", blocks as u64);
    let mut graph = vec![0u32; n * k];
    graph
        .par_chunks_mut(BLOCK * k)
        .enumerate()
        .for_each(|(b, out)| {
            let (q0, q1) = (b * BLOCK, ((b + 1) * BLOCK).min(n));
            let bq = q1 - q0;
            let mut tops: Vec<TopK> = (0..bq)
                .map(|_| {
                    let mut t = TopK::new(k, cap);
                    t.reset(slack);
                    t
                })
                .collect();
            let mut tile = vec![0f32; TILE_ROWS * bq];
            let pairs = &runs[2 * run_off[b] as usize..2 * run_off[b + 1] as usize];
            for run in pairs.chunks_exact(2) {
                let r_begin = run[0] as usize * chunk;
                let r_end = ((run[0] + run[1]) as usize * chunk).min(n);
                for r0 in (r_begin..r_end).step_by(TILE_ROWS) {
                    let rows = TILE_ROWS.min(r_end - r0);
                    let tile = &mut tile[..rows * bq];
                    matmul(
                        MatMut::from_column_major_slice_mut(&mut *tile, rows, bq),
                        Accum::Replace,
                        MatRef::from_row_major_slice(&ra[r0 * kd..(r0 + rows) * kd], rows, kd),
                        MatRef::from_column_major_slice(&qa[q0 * kd..q1 * kd], kd, bq),
                        1.0f32,
                        Par::Seq,
                    );
                    // A point is not its own neighbour (its duplicates are).
                    for q in q0.max(r0)..q1.min(r0 + rows) {
                        tile[(q - q0) * rows + (q - r0)] = f32::INFINITY;
                    }
                    scan::columns(tile, rows, r0 as u32, &mut tops, wide);
                }
            }
            let mut cand: Vec<(f32, u32)> = Vec::with_capacity(cap);
            for (q, top) in tops.iter_mut().enumerate() {
                top.refine(
                    key,
                    sorted.row(q0 + q),
                    |p| sorted.row(p as usize),
                    &mut cand,
                );
                for (l, &(_, p)) in cand.iter().take(k).enumerate() {
                    out[q * k + l] = p;
                }
            }
            progress.advance(1);
        });
    progress.end();
    seconds.sweep = lap();

    // The recall sample (input numbering): its exact neighbours by scans of all points,
    // then the sweep's recall on its rows alone, which decides the refinement.
    let order = &cells.order;
    let inv = crate::points::inverse_permutation(order);
    let rows = if recall_size > 0 {
        host::recall_sample(n, recall_size, params.seed)
    } else {
        Vec::new()
    };
    let exact_rows = host::scan_candidates(points, key, &rows, k);
    let recall_of = |graph: &[u32]| -> f64 {
        if rows.is_empty() {
            return f64::NAN;
        }
        let found: Vec<u32> = rows
            .iter()
            .flat_map(|&i| {
                let p = inv[i as usize] as usize;
                graph[p * k..(p + 1) * k].iter().map(|&j| order[j as usize])
            })
            .collect();
        host::sample_recall(points, key, k, &rows, &found, &exact_rows)
    };
    let recall_sweep = recall_of(&graph);
    seconds.recall = lap();

    let fan = params.fan.min(k);
    let rounds = params.rounds_after(recall_sweep);
    for _ in 0..rounds {
        graph = refine_round(&sorted, key, &graph, k, fan);
    }
    seconds.refine = lap();
    let recall = if rounds > 0 {
        recall_of(&graph)
    } else {
        recall_sweep
    };
    seconds.recall += lap();

    // Back to the input numbering, with the distances (the exact finish, as the sweep's).
    let mut indices = vec![0u32; n * k];
    let mut distances = vec![0f32; n * k];
    indices
        .par_chunks_mut(k)
        .zip(distances.par_chunks_mut(k))
        .enumerate()
        .for_each(|(i, (io, dout))| {
            let p = inv[i] as usize;
            let mut row: Vec<(f32, u32)> = graph[p * k..(p + 1) * k]
                .iter()
                .map(|&j| {
                    let j = order[j as usize];
                    (key.eval(points.row(i), points.row(j as usize)), j)
                })
                .collect();
            row.sort_unstable_by(by_dist_then_index);
            for (l, (dist, j)) in row.into_iter().enumerate() {
                io[l] = j;
                dout[l] = dist;
            }
        });
    seconds.sweep += lap();
    let nb = Neighbors {
        n,
        k,
        indices,
        distances,
    };
    let stats = ApproxStats {
        recall_sample: recall,
        recall_sweep,
        sample: rows.len(),
        lists,
        probes: params.probes,
        spread: probing.spread,
        max_probes: probing.max_probes,
        candidates,
        refine: rounds,
        fan,
        seconds,
    };
    Ok((nb, stats))
}

/// One refinement round on the host: each row's k nearest of its neighbours and the first
/// `fan` neighbours of its first `fan` neighbours, by (key, index); reads `graph`, returns
/// the new one (the GPU's `knn_refine`, with the CPU's f32 keys).
fn refine_round(points: &Points, key: Key, graph: &[u32], k: usize, fan: usize) -> Vec<u32> {
    let mut out = vec![0u32; graph.len()];
    out.par_chunks_mut(k).enumerate().for_each(|(i, row_out)| {
        let row = &graph[i * k..(i + 1) * k];
        let x = points.row(i);
        let mut cand: Vec<u32> = row.to_vec();
        for &j in &row[..fan] {
            let theirs = &graph[j as usize * k..j as usize * k + fan];
            cand.extend(theirs.iter().filter(|&&c| c as usize != i));
        }
        cand.sort_unstable();
        cand.dedup();
        let mut scored: Vec<(f32, u32)> = cand
            .into_iter()
            .map(|j| (key.eval(x, points.row(j as usize)), j))
            .collect();
        scored.sort_unstable_by(by_dist_then_index);
        for (o, &(_, j)) in row_out.iter_mut().zip(&scored) {
            *o = j;
        }
    });
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::gen::{gaussian_mixture, MixtureParams};
    use crate::knn::{exact, recall};
    use crate::progress::Silent;

    fn mixture(n: usize, dim: usize, seed: u64) -> Points {
        gaussian_mixture(&MixtureParams {
            n,
            dim,
            clusters: 12,
            seed,
        })
        .unwrap()
        .0
    }

    /// Every cell probed is the exact kNN; fewer probes lose recall; refinement wins some
    /// back; the run's estimate follows the truth; rows hold no self and no repeats.
    #[test]
    fn approx_cpu_follows_the_probes_and_the_refinement() {
        let points = mixture(6_000, 16, 3);
        let k = 20;
        let truth = exact(&points, k, &Silent).unwrap();
        let base = IvfParams {
            lists: 40,
            spread: 0.0,
            ..IvfParams::default()
        };
        let run = |probes, refine| {
            let params = IvfParams {
                probes,
                refine,
                ..base.clone()
            };
            approx_cpu(&points, k, Key::SqEuclidean, &params, 2000, &Silent).unwrap()
        };
        let (all, _) = run(40, 0);
        assert!(recall(&all, &truth) >= 0.9999, "{}", recall(&all, &truth));
        // A sweep whose sample recall reaches `refine_below` is not refined.
        let (again, skipped) = run(40, 2);
        assert_eq!((skipped.refine, &again.indices), (0, &all.indices));
        let (few, stats) = run(2, 0);
        let r0 = recall(&few, &truth);
        let (mended, stats2) = run(2, 2);
        let r2 = recall(&mended, &truth);
        eprintln!("2 probes: {r0:.4} ({stats:?}); refined: {r2:.4} ({stats2:?})");
        assert!(r0 < 0.95, "two probes of 40 should miss, recall {r0}");
        assert!(r2 > r0 + 0.02, "refinement {r0} → {r2}");
        assert_eq!((stats.refine, stats2.refine), (0, 2));
        assert!((stats2.recall_sample - r2).abs() < 0.05);
        assert!((stats2.recall_sweep - r0).abs() < 0.05);
        for i in 0..points.n {
            let row = mended.row_indices(i);
            let mut s = row.to_vec();
            s.sort_unstable();
            s.dedup();
            assert_eq!(s.len(), k, "row {i} repeats a point");
            assert!(!row.contains(&(i as u32)), "row {i} holds itself");
            assert!(mended.row_distances(i).windows(2).all(|w| w[0] <= w[1]));
        }
        // Deterministic whatever the threads.
        assert_eq!(run(2, 2).0.indices, mended.indices);
    }

    /// The spread rule on three well-separated clusters in 48 dimensions, 40 cells: the
    /// points of a cluster spread their neighbours over all of its cells, so two nearest
    /// cells miss many; with the rule every cell of the own cluster is probed and none of
    /// the others (the candidates stay below the largest cluster's share of the points),
    /// however many nearest cells are asked for.
    #[test]
    fn approx_cpu_spread_rule_probes_the_own_cluster() {
        let points = gaussian_mixture(&MixtureParams {
            n: 6_000,
            dim: 48,
            clusters: 3,
            seed: 3,
        })
        .unwrap()
        .0;
        let k = 20;
        let truth = exact(&points, k, &Silent).unwrap();
        let run = |probes, spread| {
            let params = IvfParams {
                lists: 40,
                probes,
                spread,
                max_probes: 40,
                refine: 0,
                ..IvfParams::default()
            };
            approx_cpu(&points, k, Key::SqEuclidean, &params, 2000, &Silent).unwrap()
        };
        let (plain, plain_stats) = run(2, 0.0);
        let r_plain = recall(&plain, &truth);
        assert!(
            r_plain < 0.9,
            "two nearest cells of a 16-d cluster: recall {r_plain}"
        );
        for probes in [2, 40] {
            let (nb, stats) = run(probes, 0.5);
            let r = recall(&nb, &truth);
            eprintln!(
                "{probes} probes, spread 0.5: recall {r:.4} ({stats:?}; plain {plain_stats:?})"
            );
            assert!(r >= 0.99, "{probes} probes with the spread: recall {r}");
            assert!(
                stats.candidates < 0.6 * points.n as f64,
                "{probes} probes with the spread: {} candidates of {}",
                stats.candidates,
                points.n
            );
        }
    }

    /// Inner product: at tight settings (two thirds of the cells probed, two refinement
    /// rounds) the approximate kNN finds ≥ 99% of the exact kNN's largest inner products,
    /// its estimate follows, and rows hold no self and are ordered by the key.
    #[test]
    fn approx_cpu_inner_product_reaches_the_exact_neighbours() {
        inner_product_reaches_the_exact_neighbours(|points, k, key, params| {
            approx_cpu(points, k, key, params, 3_000, &Silent).unwrap()
        });
    }

    /// The check of `approx_cpu_inner_product_reaches_the_exact_neighbours`, for any
    /// approximate kNN `approx` (points, k, key, settings; the GPU's too).
    pub(crate) fn inner_product_reaches_the_exact_neighbours(
        approx: impl Fn(&Points, usize, Key, &IvfParams) -> (Neighbors, ApproxStats),
    ) {
        let points = crate::knn::exact::tests::inner_product_points(3_000, 10, 4);
        let k = 15;
        let key = Key::new(crate::prep::Metric::InnerProduct, &points);
        let truth = crate::knn::exact_by(&points, k, key, &Silent).unwrap();
        let params = IvfParams {
            lists: 30,
            probes: 20,
            refine: 2,
            ..IvfParams::default()
        };
        let (nb, stats) = approx(&points, k, key, &params);
        let r = recall(&nb, &truth);
        eprintln!("inner product: recall {r:.4} ({stats:?})");
        assert!(r >= 0.99, "recall {r}");
        assert!(
            (stats.recall_sample - r).abs() < 0.01,
            "{} vs {r}",
            stats.recall_sample
        );
        for i in 0..points.n {
            assert!(
                !nb.row_indices(i).contains(&(i as u32)),
                "row {i} holds itself"
            );
            assert!(nb.row_distances(i).windows(2).all(|w| w[0] <= w[1]));
        }
    }
}
