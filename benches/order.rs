//! The host's locality orders at scale: the PCA tree of all points
//! ([`sgtsne::knn::pca_tree_order`], the cpu backend's `--order locality` and the exact kNN's
//! blocks) and the approximate kNN's order within its cells ([`Cells::order_within`], on the
//! host beside the GPU's search: 2.0–2.3 s of the 10M kNN on 16 cores).
//!
//! `cargo bench --bench order [N]` (default N = 1,000,000) prints, per step, the first run
//! and the median of three more, in seconds, on a seeded 50-D Gaussian mixture; the cells
//! are the nearest of √N / 2 of its points, as the kNN's k-means starts. `RAYON_NUM_THREADS`
//! sets the threads.

use std::time::Instant;

use sgtsne::gen::{gaussian_mixture, MixtureParams};
use sgtsne::knn::ivf::Cells;
use sgtsne::knn::pca_tree_order;
use sgtsne::Points;

const DIM: usize = 50;

/// Seconds of the first run of `f`, and the median of three more.
fn time(mut f: impl FnMut()) -> (f64, f64) {
    let mut once = || {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64()
    };
    let cold = once();
    let mut warm: Vec<f64> = (0..3).map(|_| once()).collect();
    warm.sort_by(f64::total_cmp);
    (cold, warm[1])
}

/// The label of each point: its nearest of `lists` seeds (every (n / lists)-th point).
fn labels(points: &Points, lists: usize) -> Vec<u32> {
    use rayon::prelude::*;
    let stride = points.n / lists;
    let seeds: Vec<&[f32]> = (0..lists).map(|l| points.row(l * stride)).collect();
    (0..points.n)
        .into_par_iter()
        .map(|i| {
            let x = points.row(i);
            let dist = |c: &[f32]| -> f32 { x.iter().zip(c).map(|(a, b)| (a - b) * (a - b)).sum() };
            (0..lists)
                .min_by(|&a, &b| dist(seeds[a]).total_cmp(&dist(seeds[b])))
                .unwrap_or(0) as u32
        })
        .collect()
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let (points, _) = gaussian_mixture(&MixtureParams {
        n,
        dim: DIM,
        clusters: 40,
        seed: 3,
    })
    .expect("valid mixture");
    let lists = (((n as f64).sqrt() / 2.0).round() as usize).clamp(1, n);
    let labels = labels(&points, lists);
    println!(
        "{n} × {DIM} points, {lists} cells, {} threads (seconds: first, median of 3)",
        rayon::current_num_threads()
    );
    let (cold, warm) = time(|| {
        std::hint::black_box(pca_tree_order(&points.data, n, DIM));
    });
    println!("pca_tree_order, all points   {cold:.3}  {warm:.3}");
    let (cold, warm) = time(|| {
        let mut cells = Cells::sort(&labels, lists);
        std::hint::black_box(cells.order_within(&points, 128));
    });
    println!("cells: sort + order_within   {cold:.3}  {warm:.3}");
    let (cold, warm) = time(|| {
        std::hint::black_box(Cells::sort(&labels, lists));
    });
    println!("of which the sort            {cold:.3}  {warm:.3}");
    let cells = Cells::sort(&labels, lists);
    let (cold, warm) = time(|| {
        std::hint::black_box(points.permuted(&cells.order));
    });
    println!("and the points permuted      {cold:.3}  {warm:.3}");
}
