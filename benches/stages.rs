//! Per-iteration stages of the CPU optimisation at n = 70k and 1M, so regressions show:
//! attraction (CSB, points in input order and in the pipeline's locality order), S2G (also
//! with the points in input order, and on an early, compact layout), G2G and G2S on the
//! default 2-D grid (h = 0.35).
//!
//! The layout is synthetic and fixed: a 2-D Gaussian mixture (`sgtsne::gen`) scaled to the
//! extent of a converged t-SNE embedding of that size (±100 at 70k, as MNIST; ∝ √n beyond),
//! with P from the layout's own 90 nearest neighbours (uniform conditionals, symmetrised).
//! `cargo bench --bench stages -- 70k` runs the small size only; the 1M setup takes a while.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use sgtsne::attract::Attract;
use sgtsne::gen::{gaussian_mixture, MixtureParams};
use sgtsne::kernel::Kernel;
use sgtsne::repulse::fftnd::Planners;
use sgtsne::repulse::g2g::{channels, Convolver};
use sgtsne::repulse::g2s::gather;
use sgtsne::repulse::s2g::Scatter;
use sgtsne::repulse::{Grid, GridSpec};
use sgtsne::sparse::Csb;
use sgtsne::{affinity, knn, quality};

/// Neighbours per point, as at perplexity 30.
const K: usize = 90;

/// A clustered 2-D layout of `n` points, in the generator's (spatially random) order.
fn layout(n: usize) -> Vec<f32> {
    let params = MixtureParams {
        n,
        dim: 2,
        clusters: 40,
        seed: 7,
    };
    let (points, _) = gaussian_mixture(&params).expect("valid mixture");
    let scale = 7.0 * (n as f32 / 70_000.0).sqrt();
    points.data.iter().map(|v| v * scale).collect()
}

/// The layout renumbered in the pipeline's locality order.
fn local(y: &[f32]) -> Vec<f32> {
    let order = knn::pca_tree_order(y, y.len() / 2, 2);
    order
        .iter()
        .flat_map(|&i| [y[2 * i as usize], y[2 * i as usize + 1]])
        .collect()
}

/// P in CSB from the layout's K nearest neighbours.
fn csb(y: &[f32]) -> Csb {
    let n = y.len() / 2;
    let nb = quality::embedding_neighbors(y, 2, K);
    let indptr: Vec<usize> = (0..=n).map(|i| i * K).collect();
    let cond = vec![1.0 / K as f64; n * K];
    let p = affinity::symmetrize(n, &indptr, &nb, &cond).expect("valid kNN graph");
    Csb::from_csr(&p, Csb::default_beta(n, rayon::current_num_threads())).expect("square P")
}

/// P of `n` points whose K neighbours each are drawn at random (seeded) from the point's
/// cluster, `size` consecutive points; uniform conditionals, symmetrised.
fn clustered_p(n: usize, size: usize) -> sgtsne::affinity::Affinities {
    use rand::{rngs::StdRng, Rng, SeedableRng};
    let mut rng = StdRng::seed_from_u64(11);
    let nb: Vec<u32> = (0..n * K)
        .map(|e| {
            let i = e / K;
            let (lo, hi) = (i / size * size, (i / size * size + size).min(n));
            let j = rng.random_range(lo..hi - 1);
            (if j >= i { j + 1 } else { j }) as u32
        })
        .collect();
    let indptr: Vec<usize> = (0..=n).map(|i| i * K).collect();
    let cond = vec![1.0 / K as f64; n * K];
    affinity::symmetrize(n, &indptr, &nb, &cond).expect("valid graph")
}

fn stages(c: &mut Criterion, n: usize, label: &str) {
    let input = layout(n);
    let y = local(&input);
    let mut g = c.benchmark_group(format!("stages/{label}"));
    if n > 100_000 {
        g.sample_size(10)
            .measurement_time(std::time::Duration::from_secs(5));
    }
    let mut force = vec![0.0f32; y.len()];
    for (order, ys) in [("input", &input), ("locality", &y)] {
        let p = csb(ys);
        g.bench_function(BenchmarkId::new("attract", order), |b| {
            b.iter(|| p.attract(ys, 2, &mut force, false).expect("shapes match"))
        });
    }
    // P as a high-dimensional mixture's kNN gives it: each point's neighbours drawn at
    // random from its own cluster of 32,500 consecutive points (the 1.3M × 50 mixture's
    // 40 clusters, which the locality order keeps together), so the layout's place says
    // nothing about them; at the default block size and at others.
    let clustered = clustered_p(n, 32_500);
    for beta in [1 << 13, 1 << 14, 1 << 15, 1 << 16] {
        let p = Csb::from_csr(&clustered, beta).expect("square P");
        g.bench_function(BenchmarkId::new("attract-clustered", beta), |b| {
            b.iter(|| p.attract(&y, 2, &mut force, false).expect("shapes match"))
        });
    }
    let grid = Grid::fit(&y, 2, GridSpec::default_auto()).expect("finite layout");
    let nch = channels(2);
    let mut charges = vec![0.0f32; nch * grid.len()];
    let mut scatter = Scatter::new();
    g.bench_function(BenchmarkId::new("s2g", grid.p), |b| {
        b.iter(|| scatter.run::<2>(&y, &grid, &mut charges))
    });
    // The same points in the generator's order (as far from the grid's order as the
    // pipeline's, which follows the input space, not the layout), and an early, compact
    // layout: the input shrunk 20 times, on its smaller grid.
    g.bench_function(BenchmarkId::new("s2g-input", grid.p), |b| {
        b.iter(|| scatter.run::<2>(&input, &grid, &mut charges))
    });
    let early: Vec<f32> = input.iter().map(|v| v / 20.0).collect();
    let early_grid = Grid::fit(&early, 2, GridSpec::default_auto()).expect("finite layout");
    let mut early_charges = vec![0.0f32; nch * early_grid.len()];
    g.bench_function(BenchmarkId::new("s2g-early", early_grid.p), |b| {
        b.iter(|| scatter.run::<2>(&early, &early_grid, &mut early_charges))
    });
    let mut conv = Convolver::new(&mut Planners::default(), grid.p, 2, grid.h, Kernel::CAUCHY);
    let mut potentials = vec![0.0f32; nch * grid.len()];
    g.bench_function(BenchmarkId::new("g2g", grid.p), |b| {
        b.iter(|| conv.convolve(&charges, &mut potentials))
    });
    let mut values = vec![0.0f32; nch * n];
    g.bench_function(BenchmarkId::new("g2s", grid.p), |b| {
        b.iter(|| gather::<f32, 2>(&y, &grid, Kernel::CAUCHY, &potentials, &mut values))
    });
    g.finish();
}

fn n70k(c: &mut Criterion) {
    stages(c, 70_000, "70k");
}

fn n1m(c: &mut Criterion) {
    stages(c, 1_000_000, "1M");
}

criterion_group!(benches, n70k, n1m);
criterion_main!(benches);
