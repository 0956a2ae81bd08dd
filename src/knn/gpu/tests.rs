//! Tests of the GPU kNN against an f64 brute force, and its benchmarks.
use super::*;
use crate::gpu::blas::gemm;
use cudarc::cublas::{sys::cublasOperation_t, CudaBlas, GemmConfig};
use rand::{rngs::StdRng, Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use rayon::prelude::*;

fn dist64(p: &Points, i: usize, j: usize) -> f64 {
    p.row(i)
        .iter()
        .zip(p.row(j))
        .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
        .sum()
}

/// Brute force in f64: row i = the k nearest other points, by (distance, index).
fn reference(p: &Points, k: usize) -> Vec<Vec<(f64, usize)>> {
    (0..p.n)
        .into_par_iter()
        .map(|i| {
            let mut all: Vec<(f64, usize)> = (0..p.n)
                .filter(|&j| j != i)
                .map(|j| (dist64(p, i, j), j))
                .collect();
            all.select_nth_unstable_by(k - 1, |a, b| a.partial_cmp(b).unwrap());
            all.truncate(k);
            all.sort_by(|a, b| a.partial_cmp(b).unwrap());
            all
        })
        .collect()
}

/// Same index sets as the f64 reference except for distances tied in f32; distances
/// exact to f32 rounding, ascending, self never included, every entry written.
fn check(p: &Points, k: usize, got: &Neighbors, label: &str) {
    assert_eq!((got.n, got.k), (p.n, k));
    assert_eq!(got.indices.len(), p.n * k);
    let want = reference(p, k);
    let mut swapped = 0usize;
    for (i, want) in want.iter().enumerate() {
        let gi = &got.indices[i * k..(i + 1) * k];
        let gd = &got.distances[i * k..(i + 1) * k];
        let kth = want[k - 1].0;
        for (c, (&j, &dj)) in gi.iter().zip(gd).enumerate() {
            let j = j as usize;
            assert!(
                j < p.n,
                "{label}: row {i} slot {c} unwritten or bad index {j}"
            );
            assert_ne!(j, i, "{label}: row {i} contains itself");
            let exact = dist64(p, i, j);
            assert!(
                (dj as f64 - exact).abs() <= 1e-6 * exact.max(1e-30),
                "{label}: row {i} slot {c}: distance {dj} vs exact {exact}"
            );
            if c > 0 {
                assert!(gd[c - 1] <= dj, "{label}: row {i} not ascending at {c}");
            }
            if !want.iter().any(|&(_, w)| w == j) {
                // Only a tie (in f32) with the k-th neighbour may swap members.
                assert!(
                    (exact - kth).abs() <= 1e-6 * kth,
                    "{label}: row {i}: {j} at {exact} is not among the k nearest (k-th {kth})"
                );
                swapped += 1;
            }
        }
        let mut set = gi.to_vec();
        set.sort_unstable();
        set.dedup();
        assert_eq!(set.len(), k, "{label}: row {i} repeats a neighbour");
    }
    eprintln!("{label}: ok ({swapped} tie swaps)");
}

fn uniform(rng: &mut StdRng, n: usize, d: usize) -> Points {
    Points::new(n, d, (0..n * d).map(|_| rng.random::<f32>()).collect())
}

/// Gaussian blobs around centres far from the origin (stresses the GEMM cancellation).
fn clustered(rng: &mut StdRng, n: usize, d: usize, clusters: usize) -> Points {
    let wide = Normal::new(50.0f32, 10.0).unwrap();
    let narrow = Normal::new(0.0f32, 1.0).unwrap();
    let centres: Vec<f32> = (0..clusters * d).map(|_| wide.sample(rng)).collect();
    let mut data = Vec::with_capacity(n * d);
    for _ in 0..n {
        let c = rng.random_range(0..clusters);
        data.extend((0..d).map(|t| centres[c * d + t] + narrow.sample(rng)));
    }
    Points::new(n, d, data)
}

/// Pixel-like data: integers 0..=255, most of them 0 (MNIST-shaped).
fn pixels(rng: &mut StdRng, n: usize, d: usize) -> Points {
    let data = (0..n * d)
        .map(|_| {
            if rng.random::<f32>() < 0.8 {
                0.0
            } else {
                rng.random_range(0..=255u8) as f32
            }
        })
        .collect();
    Points::new(n, d, data)
}

/// Runs with explicit tiles (`None`: automatic). The outputs start poisoned (NaN, -1)
/// inside `run_tiled` and `run_fused`, so an unwritten entry fails `check`.
fn run_tiles(gpu: &Gpu, p: &Points, k: usize, tiles: Option<Tiles>) -> Neighbors {
    // The fused path at every size (where the tiles are automatic and d ≤ 64).
    let stages = Stages {
        fused: true,
        ..ALL_STAGES
    };
    run_host(gpu, p, k, Key::SqEuclidean, tiles, stages)
}

/// [`run`] on host points, the answer back on the host.
fn run_host(
    gpu: &Gpu,
    p: &Points,
    k: usize,
    key: Key,
    tiles: Option<Tiles>,
    stages: Stages,
) -> Neighbors {
    let s = &gpu.stream;
    let x = s.clone_htod(&p.data).unwrap();
    let (idx, dist) = run(gpu, &x, p.n, p.d, k, key, tiles, stages, &Silent).unwrap();
    let indices: Vec<i32> = s.clone_dtoh(&idx).unwrap();
    let distances: Vec<f32> = s.clone_dtoh(&dist).unwrap();
    Neighbors {
        n: p.n,
        k,
        indices: indices.into_iter().map(|i| i as u32).collect(),
        distances,
    }
}

/// `got` equals the host's `want` (n × k each, same key): keys rank by rank within
/// `tol`, and the same neighbours except where a key ties the k-th within `tol`; no row
/// holds itself when `self_search`.
pub(super) fn check_same(
    got: &Neighbors,
    want: &Neighbors,
    tol: f32,
    self_search: bool,
    label: &str,
) {
    assert_eq!((got.n, got.k), (want.n, want.k), "{label}");
    for i in 0..want.n {
        let (gi, gd) = (got.row_indices(i), got.row_distances(i));
        let (wi, wd) = (want.row_indices(i), want.row_distances(i));
        let kth = wd[want.k - 1];
        for (l, (&j, &dj)) in gi.iter().zip(gd).enumerate() {
            assert!(
                (dj - wd[l]).abs() <= tol,
                "{label}: row {i} rank {l}: key {dj} vs {}",
                wd[l]
            );
            assert!(
                !(self_search && j as usize == i),
                "{label}: row {i} holds itself"
            );
            assert!(
                wi.contains(&j) || (dj - kth).abs() <= tol,
                "{label}: row {i}: {j} at {dj} is not among the host's (k-th {kth})"
            );
        }
    }
}

crate::gpu::gpu_test! {
    /// Inner product (maximum inner product search) on the tiled path in both schedules
    /// and on the fused path: the host's `exact_by` neighbours and keys 2(c − x · y), the
    /// point itself excluded by index although row 1 = 2 · row 0 beats row 0 at its own
    /// inner product (as `knn::exact`'s `inner_product_equals_brute_force`).
    fn gpu_inner_product_equals_cpu(gpu) {
        let tiled = Stages {
            fused: false,
            ..ALL_STAGES
        };
        let rectangular = Stages {
            symmetric: false,
            ..tiled
        };
        let fused = Stages {
            fused: true,
            ..ALL_STAGES
        };
        for (n, d, k) in [(9usize, 3usize, 8usize), (1300, 12, 20), (3000, 50, 30)] {
            let p = crate::knn::exact::tests::inner_product_points(n, d, 21);
            let key = Key::new(crate::prep::Metric::InnerProduct, &p);
            let Key::InnerProduct { c } = key else {
                panic!("{key:?}")
            };
            let want = crate::knn::exact_by(&p, k, key, &Silent).unwrap();
            for (label, stages) in [("tiled", tiled), ("tiled rectangular", rectangular), ("fused", fused)] {
                let got = run_host(gpu, &p, k, key, None, stages);
                let label = format!("{label} {n}x{d} k{k}");
                check_same(&got, &want, 1e-5 * c, true, &label);
                assert!(got.distances.iter().all(|&x| x >= 0.0), "{label}");
            }
        }
    }
}

crate::gpu::gpu_test! {
    /// Both paths and both schedules against the f64 brute force, over a table of shapes
    /// (long: the table is the test).
    fn gpu_knn_equals_brute_force(gpu) {
        let seed: u64 = rand::random();
        eprintln!("seed {seed}");
        let mut rng = StdRng::seed_from_u64(seed);
        let small = Tiles {
            queries: 200,
            refs: 384,
        };
        let cases: Vec<(&str, Points, usize, Option<Tiles>)> = vec![
            ("uniform 1000x50 k90", uniform(&mut rng, 1000, 50), 90, None),
            (
                "uniform 1000x50 k7 small tiles",
                uniform(&mut rng, 1000, 50),
                7,
                Some(small),
            ),
            (
                "clustered 1000x50 k90 small tiles",
                clustered(&mut rng, 1000, 50, 8),
                90,
                Some(small),
            ),
            (
                "clustered 1000x50 k90 square tiles (symmetric)",
                clustered(&mut rng, 1000, 50, 8),
                90,
                Some(Tiles {
                    queries: 256,
                    refs: 256,
                }),
            ),
            (
                "uniform 1000x20 k7 square tiles (symmetric)",
                uniform(&mut rng, 1000, 20),
                7,
                Some(Tiles {
                    queries: 128,
                    refs: 128,
                }),
            ),
            (
                "clustered 20000x50 k90",
                clustered(&mut rng, 20_000, 50, 30),
                90,
                None,
            ),
            (
                "uniform 20000x50 k5",
                uniform(&mut rng, 20_000, 50),
                5,
                None,
            ),
            ("pixels 3000x784 k90", pixels(&mut rng, 3000, 784), 90, None),
            (
                "pixels 3000x64 k90 (fused, ties)",
                pixels(&mut rng, 3000, 64),
                90,
                None,
            ),
            (
                "uniform 5000x1 k30 (fused, d = 1)",
                uniform(&mut rng, 5000, 1),
                30,
                None,
            ),
            (
                "clustered 40000x50 k90 (fused, sweeps that wrap around)",
                clustered(&mut rng, 40_000, 50, 30),
                90,
                None,
            ),
            (
                "clustered 4099x57 k17 (fused, padded d)",
                clustered(&mut rng, 4099, 57, 12),
                17,
                None,
            ),
            (
                "uniform 100x3 k90 (list > n-1)",
                uniform(&mut rng, 100, 3),
                90,
                None,
            ),
            ("uniform 2x4 k1", uniform(&mut rng, 2, 4), 1, None),
            ("uniform 300x2 k248", uniform(&mut rng, 300, 2), MAX_K, None),
        ];
        for (label, p, k, tiles) in cases {
            let got = run_tiles(gpu, &p, k, tiles);
            check(&p, k, &got, label);
        }
        // Square tiles through the rectangular schedule (the cases above with square or
        // chosen tiles took the symmetric one).
        let p = clustered(&mut rng, 3000, 50, 5);
        let x = gpu.stream.clone_htod(&p.data).unwrap();
        let rectangular = Stages {
            symmetric: false,
            ..ALL_STAGES
        };
        let square = Tiles {
            queries: 384,
            refs: 384,
        };
        let (idx, dist) = run(gpu, &x, p.n, p.d, 30, Key::SqEuclidean, Some(square), rectangular, &Silent).unwrap();
        let got = Neighbors {
            n: p.n,
            k: 30,
            indices: gpu
                .stream
                .clone_dtoh(&idx)
                .unwrap()
                .into_iter()
                .map(|i: i32| i as u32)
                .collect(),
            distances: gpu.stream.clone_dtoh(&dist).unwrap(),
        };
        check(
            &p,
            30,
            &got,
            "clustered 3000x50 k30 square tiles, rectangular schedule",
        );
        // The host entry point, through the same path.
        let p = uniform(&mut rng, 500, 16);
        check(
            &p,
            10,
            &exact_gpu(&p, 10, Key::SqEuclidean, &Silent).unwrap(),
            "exact_gpu 500x16 k10",
        );
    }
}

#[test]
fn bad_k_is_an_error() {
    let p = Points::new(10, 2, vec![0.5; 20]);
    for k in [0, 10, 11] {
        assert!(
            matches!(
                exact_gpu(&p, k, Key::SqEuclidean, &Silent),
                Err(Error::Param { .. })
            ),
            "k={k}"
        );
    }
    let big = Points::new(400, 1, vec![0.5; 400]);
    assert!(matches!(
        exact_gpu(&big, MAX_K + 1, Key::SqEuclidean, &Silent),
        Err(Error::Param { .. })
    ));
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// SGEMM rate (TFLOP/s) of C (m × n) = Aᵀ B with inner dimension k, median of 10.
fn sgemm_rate(gpu: &Gpu, m: usize, n: usize, k: usize) -> f64 {
    let s = &gpu.stream;
    let mut rng = StdRng::seed_from_u64(rand::random());
    let a = s
        .clone_htod(&(0..m * k).map(|_| rng.random::<f32>()).collect::<Vec<_>>())
        .unwrap();
    let b = s
        .clone_htod(&(0..n * k).map(|_| rng.random::<f32>()).collect::<Vec<_>>())
        .unwrap();
    let mut c = s.alloc_zeros::<f32>(m * n).unwrap();
    let blas = CudaBlas::new(s.clone()).unwrap();
    let cfg = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_T,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: m as i32,
        n: n as i32,
        k: k as i32,
        alpha: -2.0f32,
        lda: k as i32,
        ldb: k as i32,
        beta: 0.0f32,
        ldc: m as i32,
    };
    let reps = (2e12 / (2.0 * (m * n * k) as f64)).clamp(3.0, 200.0) as usize;
    let mut times = Vec::new();
    for rep in 0..11 {
        s.synchronize().unwrap();
        let t0 = std::time::Instant::now();
        for _ in 0..reps {
            gemm(&blas, cfg, &a, &b, &mut c).unwrap();
        }
        s.synchronize().unwrap();
        if rep > 0 {
            times.push(t0.elapsed().as_secs_f64() / reps as f64);
        }
    }
    2.0 * (m * n * k) as f64 / median(times) / 1e12
}

crate::gpu::gpu_test! {
    /// Device timings, printed (not asserted): run on the H100 with
    /// `<test binary> knn::gpu::tests::knn_gpu_bench --ignored --nocapture`.
    #[ignore]
    fn knn_gpu_bench(gpu) {
        let s = &gpu.stream;
        println!("device: {}", gpu.device.name);
        for (m, n, k) in [
            (8192, 8192, 8192),
            (8192, 8192, 50),
            (2048, 3840, 50),
            (4096, 2048, 50),
        ] {
            println!("sgemm {m}x{n}x{k}: {:.1} TFLOP/s", sgemm_rate(gpu, m, n, k));
        }
        let (d, k) = (50, 90);
        // (tiles, fused path, symmetric schedule, also time SGEMM alone and selection alone)
        type Config = (Option<Tiles>, bool, bool, bool);
        let sizes: &[(usize, &[Config])] = &[
            (
                70_000,
                &[(None, true, true, false), (None, false, true, true)],
            ),
            (
                1_000_000,
                &[(None, true, true, false), (None, false, true, true)],
            ),
        ];
        let mut table = Vec::new();
        let start = std::time::Instant::now();
        for &(n, configs) in sizes {
            let mut rng = StdRng::seed_from_u64(rand::random());
            let host: Vec<f32> = (0..n * d).map(|_| rng.random::<f32>()).collect();
            let x = s.clone_htod(&host).unwrap();
            for &(tiles, fused, symmetric, split) in configs {
                if start.elapsed().as_secs() > 170 {
                    println!("time budget spent: skipping {tiles:?} at n = {n}");
                    continue;
                }
                let time = |gemm: bool, select: bool| {
                    let stages = Stages {
                        fused,
                        gemm,
                        select,
                        symmetric,
                    };
                    s.synchronize().unwrap();
                    let t0 = std::time::Instant::now();
                    let out = run(gpu, &x, n, d, k, Key::SqEuclidean, tiles, stages, &Silent).unwrap();
                    s.synchronize().unwrap();
                    drop(out);
                    t0.elapsed().as_secs_f64()
                };
                let warm = time(true, true);
                let reps = if warm > 40.0 { 1 } else { 3 };
                let full = median((0..reps).map(|_| time(true, true)).collect());
                let mut line = format!(
                    "n={n:>8} d={d} k={k} tiles {tiles:?} fused {fused} symmetric {symmetric}: \
                     full {full:.3} s \
                     (warm-up {warm:.3})"
                );
                if split {
                    let gemm = time(true, false);
                    let select = time(false, true);
                    let none = time(false, false);
                    let pairs = (n as f64).powi(2);
                    line += &format!(
                        " | gemm-only {gemm:.3} s = {:.1} TFLOP/s (n² d) | select-only {select:.3} s = \
                         {:.2} TB/s of tile reads | prep+finish {none:.3} s",
                        2.0 * pairs * d as f64 / (gemm - none) / 1e12,
                        4.0 * pairs / (select - none) / 1e12,
                    );
                }
                println!("{line}");
                table.push(line);
            }
        }
        // The host entry point once, transfers included.
        let mut rng = StdRng::seed_from_u64(rand::random());
        let p = uniform(&mut rng, 70_000, 50);
        let t0 = std::time::Instant::now();
        let nb = exact_gpu(&p, 90, Key::SqEuclidean, &Silent).unwrap();
        println!(
            "exact_gpu 70000x50 k90 host in/out: {:.3} s",
            t0.elapsed().as_secs_f64()
        );
        assert_eq!(nb.indices.len(), 70_000 * 90);
        println!("--- summary ---");
        for line in table {
            println!("{line}");
        }
    }
}

crate::gpu::gpu_test! {
    /// The packed leading neighbours are each row's first `keep` of k, for keep from none
    /// to all.
    fn leading_neighbors_keep_each_rows_first(gpu) {
        let (n, k) = (1031, 90);
        let idx: Vec<i32> = (0..(n * k) as i32).collect();
        let dist: Vec<f32> = (0..n * k).map(|e| e as f32 * 0.25).collect();
        let (idx_dev, dist_dev) = (gpu.stream.clone_htod(&idx).unwrap(), gpu.stream.clone_htod(&dist).unwrap());
        for keep in [0, 1, 10, k] {
            let (i, d) = leading_neighbors(gpu, (&idx_dev, &dist_dev), n, k, keep).unwrap();
            let got_i = gpu.stream.clone_dtoh(&i.slice(..n * keep)).unwrap();
            let got_d = gpu.stream.clone_dtoh(&d.slice(..n * keep)).unwrap();
            let want_i: Vec<i32> = idx.chunks(k).flat_map(|r| r[..keep].iter().copied()).collect();
            let want_d: Vec<f32> = dist.chunks(k).flat_map(|r| r[..keep].iter().copied()).collect();
            assert_eq!(got_i, want_i, "keep {keep}");
            assert_eq!(got_d, want_d, "keep {keep}");
        }
    }
}
