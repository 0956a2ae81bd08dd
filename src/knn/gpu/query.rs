//! Exact kNN of query points among reference points on the GPU (placing new points into a
//! map, [`crate::transform`]): the GPU twin of [`crate::knn::query`].
//!
//! The queries are stacked after the references in one device array and the tiled path
//! sweeps the query rows against the reference rows only (`tiled::run_span`): the same
//! SGEMM tiles, selection and exact finish as the all-points search, so no kernel of its
//! own. A query's own row is never inside a reference tile, so nothing is excluded as
//! "self"; candidates are reference indices only. The key's c is raised to cover the
//! queries too ([`Key::covering`]), as the host's search does, so that it stays
//! non-negative.

use super::{check_params, tiled, Shape};
use crate::gpu::Gpu;
use crate::knn::{Key, Neighbors};
use crate::progress::Progress;
use crate::{Points, Result};

/// The `k` nearest reference points of every query by `key` (made from `reference`: keys
/// ascending, indices into `reference`), as [`crate::knn::query`] finds them on the host.
///
/// Errors: those of the host's search (1 ≤ k ≤ n, one feature count, finite values), and
/// no usable GPU.
/// Progress: stage `"knn"`, one unit per tile of queries.
pub fn query_gpu(
    reference: &Points,
    queries: &Points,
    k: usize,
    key: Key,
    progress: &dyn Progress,
) -> Result<Neighbors> {
    crate::knn::query::check_query(reference, queries, k)?;
    let (n, m, d) = (reference.n, queries.n, reference.d);
    if m == 0 {
        return Ok(Neighbors {
            n: 0,
            k,
            indices: Vec::new(),
            distances: Vec::new(),
        });
    }
    check_params(n + m, d, k)?;
    let gpu = Gpu::get()?;
    let s = &gpu.stream;
    let mut x = s.alloc_zeros::<f32>((n + m) * d)?;
    s.memcpy_htod(&reference.data, &mut x.slice_mut(..n * d))?;
    s.memcpy_htod(&queries.data, &mut x.slice_mut(n * d..))?;
    let shape = Shape::new(n + m, d, k, key.covering(queries));
    let span = tiled::Span {
        queries: n..n + m,
        refs: n,
    };
    let answer = tiled::run_span(gpu, &x, shape, span, progress)?;
    let indices: Vec<i32> = s.clone_dtoh(&answer.indices.slice(n * k..))?;
    let distances = s.clone_dtoh(&answer.distances.slice(n * k..))?;
    Ok(Neighbors {
        n: m,
        k,
        indices: indices.into_iter().map(|i| i as u32).collect(),
        distances,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Silent;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    crate::gpu::gpu_test! {
        /// The GPU's query search equals the host's (same neighbours, distances to float
        /// rounding) for several shapes, k = n included, and queries that duplicate
        /// reference points (distance 0, not excluded as "self").
        fn gpu_query_equals_cpu_query(_gpu) {
            let seed = rand::random();
            let mut rng = StdRng::seed_from_u64(seed);
            for (n, m, d, k) in [(3000, 700, 50, 15), (5000, 2100, 7, 25), (40, 9, 3, 40)] {
                let mut points = |rows: usize| Points {
                    n: rows,
                    d,
                    data: (0..rows * d)
                        .map(|_| rng.random_range(-5.0..5.0))
                        .collect::<Vec<f32>>()
                        .into(),
                };
                let reference = points(n);
                let mut new = points(m);
                new.data[..d].copy_from_slice(&reference.data[..d]);
                let cpu = crate::knn::query(&reference, &new, k, crate::knn::Key::SqEuclidean, &Silent)
                    .unwrap();
                let dev = query_gpu(&reference, &new, k, crate::knn::Key::SqEuclidean, &Silent).unwrap();
                assert_eq!((dev.n, dev.k), (m, k));
                let recall = crate::knn::recall(&dev, &cpu);
                assert!(recall > 0.999, "seed {seed} n {n} m {m}: recall {recall}");
                assert_eq!(dev.indices[0], 0, "seed {seed}: the duplicate comes first");
                for (a, b) in dev.distances.iter().zip(&cpu.distances) {
                    assert!((a - b).abs() <= 1e-4 * b.max(1.0), "seed {seed}: {a} vs {b}");
                }
            }
        }

        /// Inner product: the host's `knn::query` neighbours and keys, c raised to cover a
        /// query twice the longest reference point; a query equal to reference row 0 does
        /// not find its duplicate first (row 1 = 2 · row 0 beats it).
        fn gpu_query_inner_product_equals_cpu(_gpu) {
            let (n, m, d, k) = (3000, 700, 20, 15);
            let reference = crate::knn::exact::tests::inner_product_points(n, d, 5);
            let mut new = crate::knn::exact::tests::inner_product_points(m, d, 6);
            new.data[..d].copy_from_slice(&reference.data[..d]);
            let sq = |i: usize| reference.row(i).iter().map(|&x| x * x).sum::<f32>();
            let longest = (0..n).max_by(|&a, &b| sq(a).total_cmp(&sq(b))).unwrap();
            for (q, &r) in new.data[d..2 * d].iter_mut().zip(reference.row(longest)) {
                *q = 2.0 * r;
            }
            let key = Key::new(crate::prep::Metric::InnerProduct, &reference);
            let Key::InnerProduct { c } = key.covering(&new) else {
                panic!("{key:?}")
            };
            assert!(key.covering(&new) != key, "a query is longer than every reference");
            let cpu = crate::knn::query(&reference, &new, k, key, &Silent).unwrap();
            let dev = query_gpu(&reference, &new, k, key, &Silent).unwrap();
            super::super::tests::check_same(&dev, &cpu, 1e-5 * c, false, "query inner product");
            assert_ne!(dev.indices[0], 0, "row 1 = 2 · row 0 beats the duplicate");
        }
    }
}
