//! The five stages seed report 002 times for its GPU Gaussian mixture, at its sizes and in
//! f64, as this crate computes them on the CPU (faer on all cores): weighted products
//! (10 × 60,000 by 60,000 × 784), one covariance of 60,000 × 784 samples, one weighted
//! ("average") covariance of the same, the Cholesky factorisation of a 4,096² matrix and a
//! lower-triangular solve of dimension 784 with 60,000 right-hand sides.
//!
//! `cargo bench --bench gmm_stages` prints, per stage, the first (cold) run and the median
//! of five more, in milliseconds, beside the report's GPU figure. The values are seeded
//! uniform numbers: these stages' cost does not depend on them.

use std::time::Instant;

use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::solve_lower_triangular_in_place;
use faer::{Accum, Mat, Par, Side};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sgtsne::gmm::{estimate, CovarianceType, Samples};

const N: usize = 60_000;
const D: usize = 784;
const K: usize = 10;
const CHOLESKY: usize = 4096;

/// Milliseconds of the first run of `f`, and the median of five more.
fn time(mut f: impl FnMut()) -> (f64, f64) {
    let mut once = || {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64() * 1e3
    };
    let cold = once();
    let mut warm: Vec<f64> = (0..5).map(|_| once()).collect();
    warm.sort_by(f64::total_cmp);
    (cold, warm[2])
}

fn main() {
    let mut rng = StdRng::seed_from_u64(2);
    let data: Vec<f64> = (0..N * D).map(|_| rng.random::<f64>()).collect();
    let x = Samples { n: N, d: D, data };
    let par = Par::rayon(0);
    println!(
        "stage (report 002's sizes, f64), {} threads: cold ms, warm median ms, report's GPU ms",
        rayon::current_num_threads()
    );
    let report = |name: &str, (cold, warm): (f64, f64), gpu: f64| {
        println!("{name:<42} {cold:>10.1} {warm:>10.1} {gpu:>10.1}");
    };

    let resp = Mat::<f64>::from_fn(K, N, |_, _| rng.random::<f64>());
    let xs = faer::MatRef::from_row_major_slice(&x.data, N, D);
    let mut products = Mat::<f64>::zeros(K, D);
    let t = time(|| {
        matmul(
            products.as_mut(),
            Accum::Replace,
            resp.as_ref(),
            xs,
            1.0,
            par,
        )
    });
    report("weighted products (10×60000 · 60000×784)", t, 6.0);

    let ones = vec![1.0; N];
    let t = time(|| drop(estimate(&x, &ones, 1, CovarianceType::Full, 0.0)));
    report("covariance (60000 × 784)", t, 47.0);

    let weights: Vec<f64> = (0..N).map(|_| rng.random::<f64>()).collect();
    let t = time(|| drop(estimate(&x, &weights, 1, CovarianceType::Full, 0.0)));
    report("weighted covariance (60000 × 784)", t, 68.0);

    let b = Mat::<f64>::from_fn(CHOLESKY, CHOLESKY, |_, _| rng.random::<f64>() - 0.5);
    let mut spd = Mat::<f64>::identity(CHOLESKY, CHOLESKY) * (CHOLESKY as f64);
    matmul(
        spd.as_mut(),
        Accum::Add,
        b.as_ref(),
        b.transpose(),
        1.0,
        par,
    );
    let t = time(|| drop(spd.llt(Side::Lower).expect("positive definite")));
    report("Cholesky (4096²)", t, 1060.0);

    let small = Mat::<f64>::from_fn(D, D, |i, j| if i == j { D as f64 } else { 0.0 });
    let l = small.llt(Side::Lower).expect("positive definite");
    let rhs = Mat::<f64>::from_fn(D, N, |_, _| rng.random::<f64>());
    let t = time(|| {
        let mut r = rhs.clone();
        solve_lower_triangular_in_place(l.L(), r.as_mut(), par);
    });
    report("triangular solve (784, 60000 right sides)", t, 830.0);
}
