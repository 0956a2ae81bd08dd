//! Timings on MNIST (70000 × 50 and 70000 × 784), run by hand:
//! `cargo test --release --lib knn::bench -- --ignored --nocapture --test-threads 1`.
//! Threads: `SGTSNE_BENCH_THREADS` (default 2). The data files are read from the folder
//! `SGTSNE_DATA_DIR` names (`crate::test_data`); skipped when they are absent.

use std::time::Instant;

use super::{exact, hnsw_with, recall, HnswParams, Key};
use crate::progress::Silent;
use crate::Points;

fn load_f32(name: &str) -> Option<Points> {
    let f = std::fs::File::open(crate::test_data::data_file(name)?).ok()?;
    let npy = npyz::NpyFile::new(std::io::BufReader::new(f)).ok()?;
    let (n, d) = (npy.shape()[0] as usize, npy.shape()[1] as usize);
    let data: Vec<f32> = if name.contains("u8") {
        npy.into_vec::<u8>()
            .ok()?
            .into_iter()
            .map(f32::from)
            .collect()
    } else {
        npy.into_vec::<f32>().ok()?
    };
    Some(Points::new(n, d, data))
}

fn pool() -> rayon::ThreadPool {
    let t = std::env::var("SGTSNE_BENCH_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    rayon::ThreadPoolBuilder::new()
        .num_threads(t)
        .build()
        .unwrap()
}

/// CPU seconds of this process so far (user + system), from /proc.
fn cpu_s() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let f: Vec<&str> = s
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let t = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (t(11) + t(12)) / 100.0
}

fn subset(p: &Points, n: usize) -> Points {
    Points::new(n, p.d, p.data[..n * p.d].to_vec())
}

#[test]
#[ignore]
fn mnist_knn() {
    let Some(p) = load_f32("mnist70k_pca50_f32.npy") else {
        return;
    };
    let k = 90;
    let ns: Vec<usize> = std::env::var("SGTSNE_BENCH_N")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![p.n]);
    let pool = pool();
    pool.install(|| {
        for &n in &ns {
            let p = subset(&p, n.min(p.n));
            let (t, c) = (Instant::now(), cpu_s());
            let e = exact(&p, k, &Silent).unwrap();
            let (te, ce) = (t.elapsed().as_secs_f64(), cpu_s() - c);
            println!(
                "n={n} exact k={k}: {te:.3} s wall, {ce:.2} s cpu ({} threads)",
                rayon::current_num_threads()
            );
            if std::env::var("SGTSNE_BENCH_NO_HNSW").is_ok() {
                continue;
            }
            let params = HnswParams {
                max_nb_connection: env_or("SGTSNE_M", 16),
                ef_construction: env_or("SGTSNE_EFC", 64),
                ef_search: env_or("SGTSNE_EFS", 0),
                ..HnswParams::default()
            };
            let (t, c) = (Instant::now(), cpu_s());
            let a = hnsw_with(&p, k, 1, &params, Key::SqEuclidean, &Silent).unwrap();
            let (ta, ca) = (t.elapsed().as_secs_f64(), cpu_s() - c);
            println!(
                "n={n} hnsw {params:?}: {ta:.3} s wall, {ca:.2} s cpu, recall {:.4}",
                recall(&a, &e)
            );
        }
    });
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

#[test]
#[ignore]
fn mnist_pca() {
    let Some(p) = load_f32("mnist70k_784_u8.npy") else {
        return;
    };
    pool().install(|| {
        let (t, c) = (Instant::now(), cpu_s());
        let f = crate::prep::Pca::fit(&p, 50).unwrap();
        let tf = t.elapsed().as_secs_f64();
        let s = f.transform(&p).unwrap();
        let tt = t.elapsed().as_secs_f64();
        let ct = cpu_s() - c;
        let expl: f64 = f.variances.iter().sum::<f64>() / f.total_variance;
        println!(
            "pca 70000×784 → 50: fit {tf:.3} s, total {tt:.3} s wall, {ct:.2} s cpu, explained {expl:.4}, first var {:.1}, scores {}×{}",
            f.variances[0], s.n, s.d
        );
    });
}

#[test]
#[ignore]
fn gemm_only_breakdown() {
    use faer::linalg::matmul::matmul;
    use faer::{Accum, MatMut, MatRef, Par};
    let Some(p) = load_f32("mnist70k_pca50_f32.npy") else {
        return;
    };
    let n = 20000;
    let p = subset(&p, n);
    let d1 = p.d + 1;
    let qa: Vec<f32> = (0..n * d1).map(|i| (i % 7) as f32).collect();
    let (bq, br) = (env_or("BQ", 128), env_or("BR", 1024));
    let mut tile = vec![0f32; bq * br];
    let t = Instant::now();
    let mut acc = 0f32;
    for q0 in (0..n).step_by(bq) {
        let bqq = bq.min(n - q0);
        for r0 in (0..n).step_by(br) {
            let brr = br.min(n - r0);
            matmul(
                MatMut::from_column_major_slice_mut(&mut tile[..brr * bqq], brr, bqq),
                Accum::Replace,
                MatRef::from_row_major_slice(&qa[r0 * d1..(r0 + brr) * d1], brr, d1),
                MatRef::from_column_major_slice(&qa[q0 * d1..(q0 + bqq) * d1], d1, bqq),
                1.0f32,
                Par::Seq,
            );
            acc += tile[0];
        }
    }
    let tg = t.elapsed().as_secs_f64();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let t = Instant::now();
    pool.install(|| exact(&p, 90, &Silent).unwrap());
    let te = t.elapsed().as_secs_f64();
    println!(
        "n={n} 1 thread: gemm only {tg:.3} s ({:.1} GFLOP/s), exact {te:.3} s [{acc}]",
        2.0 * (n * n * d1) as f64 / tg / 1e9
    );
}

/// The approximate kNN's host steps between the assignment and the sweep (`Cells::sort`,
/// `order_within`, `block_probes`, `block_runs`) on a 40-cluster mixture of
/// `SGTSNE_BENCH_N` points (default 1M) × 50, cells as many as `IvfParams::lists_for`
/// makes, each cut from a cluster by one coordinate (timing only: not k-means' cells);
/// `SGTSNE_BENCH_REPEAT` runs `block_probes` that many times (default 1), for a profile.
#[test]
#[ignore]
fn cells_steps() {
    use super::ivf::{Cells, IvfParams};
    let n = env_or("SGTSNE_BENCH_N", 1_000_000);
    let params = crate::gen::MixtureParams {
        n,
        dim: 50,
        clusters: 40,
        seed: 1,
    };
    let (points, cluster) = crate::gen::gaussian_mixture(&params).unwrap();
    let ivf = IvfParams::default();
    let lists = ivf.lists_for(n);
    let per = lists.div_ceil(40) as u32;
    let labels: Vec<u32> = (0..n)
        .map(|i| {
            let c = cluster[i];
            let x = points.row(i)[(c % 50) as usize];
            let slot = ((x * 4.0).rem_euclid(per as f32)) as u32;
            (c * per + slot.min(per - 1)).min(lists as u32 - 1)
        })
        .collect();
    let centroids = super::ivf::initial_centroids(&points.data, 50, lists, 1);
    pool().install(|| {
        let lap = |t: &mut Instant| {
            let s = t.elapsed().as_secs_f64();
            *t = Instant::now();
            s
        };
        let mut t = Instant::now();
        let mut cells = Cells::sort(&labels, lists);
        let sort = lap(&mut t);
        let sorted = cells.order_within(&points, 128);
        let within = lap(&mut t);
        let probing = ivf.probing(90);
        let radius = cells.mean_sq_radius(&sorted, &centroids);
        let radius_s = lap(&mut t);
        let mut probes = Vec::new();
        for _ in 0..env_or("SGTSNE_BENCH_REPEAT", 1) {
            probes = cells.block_probes(&sorted, &centroids, Key::SqEuclidean, &probing, 128);
        }
        let probes_s = lap(&mut t);
        let (runs, _) = cells.block_runs(&probes, 128, 32);
        let runs_s = lap(&mut t);
        println!(
            "n={n} lists={lists} ({} threads): sort {sort:.3} s, order_within {within:.3} s, \
             radius {radius_s:.3} s (within block_probes too), block_probes {probes_s:.3} s, \
             block_runs {runs_s:.3} s; {} runs, radius[0] {}",
            rayon::current_num_threads(),
            runs.len() / 2,
            radius[0]
        );
    });
}
