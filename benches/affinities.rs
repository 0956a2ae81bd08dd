//! The CPU's affinity stage at n = 1M, k = 90 (as at perplexity 30): the perplexity
//! calibration, the symmetrisation and the CSB layout the attraction runs on, so that the
//! parts of the 1.3M cpu run's `affinities` and `layout` seconds can be timed alone.
//!
//! The neighbours are those of a synthetic 2-D layout (`sgtsne::gen`'s Gaussian mixture,
//! its exact kNN by the quality measure's grid search), with their squared distances: the
//! symmetrisation's cost follows the number of entries and how often a neighbour is
//! mutual, not where the points came from. `cargo bench --bench affinities`.

use criterion::{criterion_group, criterion_main, Criterion};
use sgtsne::affinity::{self, PerplexityParams};
use sgtsne::gen::{gaussian_mixture, MixtureParams};
use sgtsne::knn::Neighbors;
use sgtsne::sparse::Csb;

/// Neighbours per point, as at perplexity 30.
const K: usize = 90;
/// Points.
const N: usize = 1_000_000;

/// The K nearest neighbours of a clustered 2-D layout of `n` points, with their squared
/// distances.
fn neighbors(n: usize) -> Neighbors {
    let params = MixtureParams {
        n,
        dim: 2,
        clusters: 40,
        seed: 7,
    };
    let (points, _) = gaussian_mixture(&params).expect("valid mixture");
    let y = &points.data;
    let indices = sgtsne::quality::embedding_neighbors(y, 2, K);
    let distances = indices
        .iter()
        .enumerate()
        .map(|(e, &j)| {
            let (i, j) = (e / K, j as usize);
            let (dx, dy) = (y[2 * i] - y[2 * j], y[2 * i + 1] - y[2 * j + 1]);
            dx * dx + dy * dy
        })
        .collect();
    Neighbors {
        n,
        k: K,
        indices,
        distances,
    }
}

fn stages(c: &mut Criterion) {
    let nb = neighbors(N);
    let mut g = c.benchmark_group("affinities/1M");
    g.sample_size(10)
        .measurement_time(std::time::Duration::from_secs(10));
    let pp = PerplexityParams::default();
    g.bench_function("conditionals", |b| {
        b.iter(|| affinity::conditional_probabilities(&nb, &pp).expect("k above perplexity"))
    });
    let cond: Vec<f64> = affinity::conditional_probabilities(&nb, &pp)
        .expect("k above perplexity")
        .into_iter()
        .map(f64::from)
        .collect();
    let indptr: Vec<usize> = (0..=N).map(|i| i * K).collect();
    g.bench_function("symmetrize", |b| {
        b.iter(|| affinity::symmetrize(N, &indptr, &nb.indices, &cond).expect("valid graph"))
    });
    let p = affinity::symmetrize(N, &indptr, &nb.indices, &cond).expect("valid graph");
    let beta = Csb::default_beta(N, rayon::current_num_threads());
    g.bench_function("csb", |b| {
        b.iter(|| Csb::from_csr(&p, beta).expect("square P"))
    });
    g.finish();
}

criterion_group!(benches, stages);
criterion_main!(benches);
