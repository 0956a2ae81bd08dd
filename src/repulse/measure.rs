//! Measurements (not assertions): run with
//! `cargo test --release --lib repulse::measure -- --ignored --nocapture`.

use super::fft::tests::clusters;
use super::*;

fn force_err(spec: GridSpec, y: &[f32], dims: usize) -> (f64, f64, usize) {
    let mut exact = vec![0.0f32; y.len()];
    let re = ExactRepulsion::new().repulse(y, dims, &mut exact).unwrap();
    let mut approx = vec![0.0f32; y.len()];
    let ra = FftRepulsion::new(spec)
        .repulse(y, dims, &mut approx)
        .unwrap();
    let e: Vec<f64> = exact.iter().map(|&v| v as f64).collect();
    let a: Vec<f64> = approx.iter().map(|&v| v as f64).collect();
    (
        relative_error(&e, &a),
        (ra.z - re.z).abs() / re.z,
        ra.grid.unwrap(),
    )
}

#[test]
#[ignore]
fn error_vs_extent() {
    for dims in [1, 2, 3] {
        for spread in [1e-3f32, 0.3, 1.0, 3.0, 10.0] {
            let y: Vec<f32> = clusters(2000, dims, 10, 1.0, 1)
                .iter()
                .map(|v| v * spread)
                .collect();
            for h in [0.5, 0.35, 0.25] {
                let (ef, ez, p) = force_err(GridSpec::Auto { h }, &y, dims);
                println!("{dims}-D scale {spread:>6} h {h:.2} p {p:>4}: F {ef:.2e} Z {ez:.2e}");
            }
        }
    }
}

/// A converged-MNIST-like 2-D layout: 10 clusters of unequal size and spread within ±40.
fn mnist_like(n: usize, dims: usize, seed: u64) -> Vec<f32> {
    use rand::{rngs::StdRng, Rng, SeedableRng};
    use rand_distr::{Distribution, Normal};
    let mut rng = StdRng::seed_from_u64(seed);
    let g = Normal::new(0.0f32, 1.0).unwrap();
    let k = 10;
    let centres: Vec<f32> = (0..k * dims)
        .map(|_| rng.random::<f32>() * 56.0 - 28.0)
        .collect();
    let spreads: Vec<f32> = (0..k * dims)
        .map(|_| 2.5 + rng.random::<f32>() * 3.0)
        .collect();
    let mut y = Vec::with_capacity(n * dims);
    for i in 0..n {
        let c = (i * 7 + i / 13) % k;
        for a in 0..dims {
            let v = centres[c * dims + a] + spreads[c * dims + a] * g.sample(&mut rng);
            y.push(v.clamp(-40.0, 40.0));
        }
    }
    y
}

fn measure(y: &[f32], dims: usize, specs: &[GridSpec], threads: usize) {
    let n = y.len() / dims;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let t = std::time::Instant::now();
        let z = exact_z(y, dims).unwrap();
        let step = n / 1000;
        let targets: Vec<usize> = (0..1000).map(|k| k * step).collect();
        let ex = exact_for_targets(y, dims, &targets).unwrap();
        let fe = ex.forces(z);
        println!(
            "{dims}-D n={n} threads={threads}: exact Z {z:.6e} (exact Z + 1000 targets took {:.1} s)",
            t.elapsed().as_secs_f64()
        );
        for &spec in specs {
            let mut rep = FftRepulsion::new(spec);
            let mut f = vec![0.0f32; y.len()];
            rep.repulse(y, dims, &mut f).unwrap();
            let reps = 11;
            let mut runs: Vec<(f64, RepulseTimes, Repulsion)> = (0..reps)
                .map(|_| {
                    let t = std::time::Instant::now();
                    let r = rep.repulse(y, dims, &mut f).unwrap();
                    (t.elapsed().as_secs_f64(), r.times, r)
                })
                .collect();
            // The fastest run: the machine is shared, slower runs measure the neighbours.
            runs.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
            let (total, times, r) = runs[0];
            let fa: Vec<f64> = targets
                .iter()
                .flat_map(|&t| (0..dims).map(move |a| (t, a)))
                .map(|(t, a)| f[t * dims + a] as f64)
                .collect();
            println!(
                "  {spec:?}: p={} total {:.2} ms (s2g {:.2}, g2g {:.2}, g2s {:.2}, phi2force {:.2}) \
                 F err {:.2e}, Z err {:.2e}",
                r.grid.unwrap(),
                total * 1e3,
                times.s2g * 1e3,
                times.g2g * 1e3,
                times.g2s * 1e3,
                times.phi2force * 1e3,
                relative_error(&fe, &fa),
                (r.z - z).abs() / z
            );
        }
    });
}

#[test]
#[ignore]
fn mnist_like_2d() {
    let threads = std::env::var("REPULSE_THREADS").map_or(2, |v| v.parse().unwrap());
    let y = mnist_like(70_000, 2, 42);
    let specs = [
        GridSpec::Auto { h: 1.0 },
        GridSpec::Auto { h: 0.7 },
        GridSpec::Auto { h: 0.5 },
        GridSpec::Auto { h: 0.35 },
        GridSpec::Auto { h: 0.25 },
        GridSpec::Fixed(90),
        GridSpec::Fixed(150),
    ];
    measure(&y, 2, &specs, threads);
}

#[test]
#[ignore]
fn mnist_like_1d_3d() {
    let threads = std::env::var("REPULSE_THREADS").map_or(2, |v| v.parse().unwrap());
    let y = mnist_like(70_000, 1, 43);
    let specs = [
        GridSpec::Auto { h: 0.5 },
        GridSpec::Auto { h: 0.35 },
        GridSpec::Auto { h: 0.25 },
        GridSpec::Fixed(150),
    ];
    measure(&y, 1, &specs, threads);
    let y: Vec<f32> = mnist_like(70_000, 3, 44).iter().map(|v| v * 0.5).collect();
    let specs = [
        GridSpec::Auto { h: 1.0 },
        GridSpec::Auto { h: 0.7 },
        GridSpec::Auto { h: 0.5 },
        GridSpec::Fixed(50),
    ];
    measure(&y, 3, &specs, threads);
}
