//! Tests of the GPU affinities against the CPU path (skipped without a GPU).
use super::symmetrize::{width_from_histogram, HIST_BINS};
use super::*;
use crate::affinity::{
    conditional_probabilities, exact_affinities, symmetrize, Affinities, PerplexityParams,
};
use crate::attract::Attract;
use crate::sparse::Hyb;
use crate::Points;
use rand::{rngs::StdRng, Rng, SeedableRng};
use rayon::prelude::*;

/// Neighbours of one row: distinct, never i; mostly from a window around i (so that
/// many edges are mutual), the rest anywhere (mostly not mutual).
fn row_indices(i: usize, n: usize, k: usize, window: usize, rng: &mut StdRng) -> Vec<u32> {
    let mut row: Vec<u32> = Vec::with_capacity(k);
    while row.len() < k {
        let j = if rng.random_bool(0.6) {
            let off = rng.random_range(1..=window.min(n - 1));
            if rng.random_bool(0.5) {
                (i + off) % n
            } else {
                (i + n - off) % n
            }
        } else {
            rng.random_range(0..n)
        };
        if j != i && !row.contains(&(j as u32)) {
            row.push(j as u32);
        }
    }
    row
}

/// Random neighbours with the awkward cases: duplicate points (zero distances), rows of
/// equal distances (uniform rows), ties, huge gaps (probabilities that are exactly 0,
/// so entries are dropped), and a few repeated indices (merged).
fn awkward_neighbors(n: usize, k: usize, rng: &mut StdRng) -> Neighbors {
    let mut indices = Vec::with_capacity(n * k);
    let mut distances = Vec::with_capacity(n * k);
    for i in 0..n {
        let mut row = row_indices(i, n, k, 3 * k, rng);
        let kind = rng.random_range(0..25);
        if kind == 0 && k >= 2 {
            row[k - 1] = row[0];
        }
        let scale: f32 = rng.random_range(0.01..100.0);
        let mut d: Vec<f32> = match kind {
            1 => vec![0.0; k],
            2 => vec![4.0; k],
            3 => (0..k)
                .map(|s| {
                    if s < k / 2 {
                        0.0
                    } else {
                        rng.random::<f32>() * scale
                    }
                })
                .collect(),
            4 => (0..k).map(|s| if s < k / 2 { 1.0 } else { 1e30 }).collect(),
            _ => (0..k)
                .map(|_| (rng.random::<f32>() * 40.0).round() * scale / 40.0)
                .collect(),
        };
        d.sort_by(f32::total_cmp);
        indices.extend(row);
        distances.extend(d);
    }
    Neighbors {
        n,
        k,
        indices,
        distances,
    }
}

/// P on the CPU: the twins this stage must equal.
fn cpu_affinities(nb: &Neighbors, perplexity: f64) -> Affinities {
    let params = PerplexityParams {
        perplexity,
        ..Default::default()
    };
    let cond = conditional_probabilities(nb, &params).unwrap();
    let cond: Vec<f64> = cond.iter().map(|&v| v as f64).collect();
    let indptr: Vec<usize> = (0..=nb.n).map(|i| i * nb.k).collect();
    symmetrize(nb.n, &indptr, &nb.indices, &cond).unwrap()
}

/// Downloads the HYB arrays and returns each row's entries sorted by column, the
/// padding left out; checks that every slot was written (the outputs were poisoned).
fn download_rows(hyb: &HybGpu) -> Vec<Vec<(u32, f32)>> {
    let Hyb {
        n,
        row0: _,
        k: w,
        ell_cols,
        ell_vals,
        coo_rows,
        coo_cols,
        coo_vals,
    } = hyb.to_host().unwrap();
    let m = coo_vals.len();
    let mut rows = vec![Vec::new(); n];
    for slot in 0..w {
        for (i, row) in rows.iter_mut().enumerate() {
            let (c, v) = (ell_cols[slot * n + i], ell_vals[slot * n + i]);
            assert!(
                (0..n as i32).contains(&c) && v.is_finite() && v >= 0.0,
                "ELL slot {slot} of row {i} unwritten or bad: ({c}, {v})"
            );
            if !(c as usize == i && v == 0.0) {
                row.push((c as u32, v));
            }
        }
    }
    for e in 0..m {
        let (r, c, v) = (coo_rows[e], coo_cols[e], coo_vals[e]);
        assert!(
            (0..n as i32).contains(&r) && (0..n as i32).contains(&c) && v.is_finite(),
            "COO entry {e} unwritten or bad: ({r}, {c}, {v})"
        );
        assert!(
            e == 0 || coo_rows[e - 1] <= r,
            "COO not sorted by row at {e}"
        );
        rows[r as usize].push((c as u32, v));
    }
    for row in &mut rows {
        row.sort_by_key(|&(c, _)| c);
    }
    rows
}

crate::gpu::gpu_test! {
    /// The GPU's P equals the CPU's entry by entry (1e-5 relative), with the same nnz,
    /// layout sizes and Σ p ln p; it is symmetric and sums to 1.
    fn gpu_affinities_equal_cpu(gpu) {
        let seed: u64 = rand::random();
        eprintln!("seed {seed}");
        let mut rng = StdRng::seed_from_u64(seed);
        for (n, k, u) in [
            (40, 5, 2.0),
            (3000, 10, 3.0),
            (20_000, 90, 30.0),
            (5000, 256, 80.0),
        ] {
            let nb = awkward_neighbors(n, k, &mut rng);
            let want = cpu_affinities(&nb, u);
            let idx: Vec<i32> = nb.indices.iter().map(|&j| j as i32).collect();
            let idx = gpu.stream.clone_htod(&idx).unwrap();
            let dist = gpu.stream.clone_htod(&nb.distances).unwrap();
            let cond = calibrate(gpu, &dist, n, k, u).unwrap();
            let (parts, stats) = symmetrize_device(gpu, idx, cond, n, k).unwrap();
            let got = download_rows(&parts);
            assert_eq!(stats.nnz, want.nnz(), "n={n} k={k}: nnz");
            let hyb = Hyb::from_csr(&want, None).unwrap();
            assert_eq!(stats.ell_width, hyb.k, "n={n} k={k}: ELL width");
            assert_eq!(stats.coo_len, hyb.coo_vals.len(), "n={n} k={k}: COO length");
            let mut total = 0f64;
            let mut plp = 0f64;
            for (i, (row, want_row)) in got.iter().zip(want.outer_iterator()).enumerate() {
                assert_eq!(row.len(), want_row.nnz(), "n={n} k={k}: row {i} length");
                for (&(c, v), (wc, &wv)) in row.iter().zip(want_row.iter()) {
                    assert_eq!(c as usize, wc, "n={n} k={k}: row {i} columns");
                    let tol = 1e-5 * wv.abs() + 1e-37;
                    assert!((v - wv).abs() <= tol, "n={n} k={k}: P[{i},{c}] {v} vs {wv}");
                    let mirror = got[c as usize]
                        .binary_search_by_key(&(i as u32), |&(cc, _)| cc)
                        .map(|t| got[c as usize][t].1);
                    assert_eq!(mirror, Ok(v), "n={n} k={k}: asymmetric at ({i}, {c})");
                    total += v as f64;
                    if wv > 0.0 {
                        plp += wv as f64 * (wv as f64).ln();
                    }
                }
            }
            assert!((total - 1.0).abs() < 1e-5, "n={n} k={k}: P sums to {total}");
            assert!(
                (stats.p_log_p - plp).abs() < 1e-6 * plp.abs(),
                "n={n} k={k}: Σ p ln p {} vs {plp}",
                stats.p_log_p
            );
            assert!(
                n < 1000 || stats.coo_len > 0,
                "the COO part must be exercised"
            );
        }
    }
}

/// Each row's entries of a host HYB (ELL and COO, padding left out) as sorted
/// (column, value bits) pairs.
fn row_sets(h: &Hyb) -> Vec<Vec<(i32, u32)>> {
    let mut rows = vec![Vec::new(); h.n];
    for (i, row) in rows.iter_mut().enumerate() {
        for s in 0..h.k {
            let (c, v) = (h.ell_cols[s * h.n + i], h.ell_vals[s * h.n + i]);
            if !(c as usize == h.row0 + i && v == 0.0) {
                row.push((c, v.to_bits()));
            }
        }
    }
    for ((&r, &c), &v) in h.coo_rows.iter().zip(&h.coo_cols).zip(&h.coo_vals) {
        rows[r as usize - h.row0].push((c, v.to_bits()));
    }
    rows.iter_mut().for_each(|r| r.sort_unstable());
    rows
}

crate::gpu::gpu_test! {
    /// P made in row blocks (one of a single row, one empty, spread round robin over the
    /// GPUs the host shows), cut from the whole or filled apart, equals the whole P's row
    /// blocks bit for bit, with the same statistics; the rows that append entries to a
    /// block lie in other blocks.
    fn gpu_affinity_blocks_equal_the_whole_cut(gpu) {
        let mut rng = StdRng::seed_from_u64(7);
        let (n, k, u) = (20_000, 90, 30.0);
        let nb = awkward_neighbors(n, k, &mut rng);
        let (whole, want) = affinities_gpu(&nb, u).unwrap();
        let whole = whole.to_host().unwrap();
        let gpus = crate::gpu::device_count().unwrap_or(1).max(1);
        let cuts = [0, 1, 7_000, 7_000, 13_500, n];
        let blocks: Vec<_> = cuts
            .windows(2)
            .enumerate()
            .map(|(b, w)| (w[0]..w[1], Gpu::device(b % gpus).unwrap()))
            .collect();
        let idx: Vec<i32> = nb.indices.iter().map(|&j| j as i32).collect();
        for cut in [None, Some(Cut::Whole), Some(Cut::PerBlock)] {
            let idx = gpu.stream.clone_htod(&idx).unwrap();
            let dist = gpu.stream.clone_htod(&nb.distances).unwrap();
            let (got, stats) =
                affinities_cut(gpu, idx, dist, (n, k, u), &blocks, cut).unwrap();
            assert_eq!(stats, want);
            assert_eq!(got.len(), blocks.len());
            // Appended entries take their slots in the order of the count's atomics, which
            // varies from run to run: rows compare as sets of (column, value bits).
            for ((rows, to), block) in blocks.iter().zip(&got) {
                assert!(std::ptr::eq(block.gpu(), *to), "{cut:?}: block {rows:?} on the wrong GPU");
                let (got, want) = (block.to_host().unwrap(), whole.row_block(rows.clone()));
                assert_eq!((got.n, got.row0, got.k), (want.n, want.row0, want.k), "{cut:?}: {rows:?}");
                assert_eq!(got.coo_rows, want.coo_rows, "{cut:?}: {rows:?}: COO rows");
                assert_eq!(row_sets(&got), row_sets(&want), "{cut:?}: {rows:?}: entries");
            }
        }
        let (idx, dist) = (
            gpu.stream.clone_htod(&[0i32; 90]).unwrap(),
            gpu.stream.clone_htod(&[1f32; 90]).unwrap(),
        );
        let gap = [(0..0, gpu), (1..1, gpu)];
        assert!(affinities_device(gpu, idx, dist, 1, 90, 30.0, &gap).is_err());
    }
}

crate::gpu::gpu_test! {
    /// End to end: attraction through HybGpu over the GPU's P equals the CSR attraction
    /// over the CPU's P.
    fn gpu_affinities_attract_like_cpu(_gpu) {
        let seed: u64 = rand::random();
        eprintln!("seed {seed}");
        let mut rng = StdRng::seed_from_u64(seed);
        let (n, k, u) = (30_000, 90, 30.0);
        let nb = awkward_neighbors(n, k, &mut rng);
        let want_p = cpu_affinities(&nb, u);
        let (hyb, stats) = affinities_gpu(&nb, u).unwrap();
        assert_eq!(stats.nnz, want_p.nnz());
        for dims in [1, 2, 3] {
            let y: Vec<f32> = (0..n * dims)
                .map(|_| rng.random_range(-20.0..20.0))
                .collect();
            let mut want = vec![0f32; n * dims];
            let mut got = vec![f32::NAN; n * dims];
            let kl_want = want_p.attract(&y, dims, &mut want, true).unwrap().unwrap();
            let kl_got = hyb.attract(&y, dims, &mut got, true).unwrap().unwrap();
            let rel = crate::repulse::relative_error(&want, &got);
            assert!(rel < 1e-5, "dims={dims}: forces differ by {rel} (relative)");
            assert!(
                (kl_got - kl_want).abs() < 1e-5 * kl_want.abs(),
                "dims={dims}: Σ p ln w {kl_got} vs {kl_want}"
            );
        }
    }
}

/// Points uniform in [0, 1)^d.
fn uniform_points(n: usize, d: usize, rng: &mut StdRng) -> Points {
    Points::new(n, d, (0..n * d).map(|_| rng.random::<f32>()).collect())
}

/// `got` has `want`'s pattern and its values within 1e-5 relative.
fn assert_same_p(got: &Affinities, want: &Affinities, what: &str) {
    assert_eq!(
        got.indptr().raw_storage(),
        want.indptr().raw_storage(),
        "{what}: row lengths"
    );
    assert_eq!(got.indices(), want.indices(), "{what}: columns");
    for (e, (&a, &b)) in got.data().iter().zip(want.data()).enumerate() {
        assert!(
            (a - b).abs() <= 1e-5 * b.abs() + 1e-37,
            "{what}: entry {e}: {a} vs {b}"
        );
    }
}

crate::gpu::gpu_test! {
    /// The device's exact P equals the CPU's `exact_affinities`: the same CSR pattern and
    /// every value within 1e-5 relative, for n from one pair up, sizes that are not whole
    /// tiles, d below, at and above the CPU's 8 summation lanes, one block of rows or many
    /// (with a partial last one); identical points (uniform rows); two clusters so far apart
    /// that the pairs between them weigh exactly 0 (dropped, as the CPU drops them); and
    /// the same bits on a second run.
    fn gpu_exact_affinities_equal_cpu(gpu) {
        let seed: u64 = rand::random();
        eprintln!("seed {seed}");
        let mut rng = StdRng::seed_from_u64(seed);
        let whole = super::exact::BLOCK_BYTES;
        for (n, d, u, block_bytes) in [
            (2, 2, 0.5, whole),
            (3, 6, 1.5, whole),
            (150, 50, 20.0, whole),
            (150, 6, 20.0, 8 * 150 * 32),
            (1000, 2, 30.0, whole),
            (1000, 6, 30.0, 8 * 1000 * 64),
            (1000, 50, 30.0, whole),
            (1337, 13, 50.0, 8 * 1337 * 300),
        ] {
            let p = uniform_points(n, d, &mut rng);
            let want = exact_affinities(&p, u).unwrap();
            let got = super::exact::exact_in_blocks(gpu, &p, u, block_bytes).unwrap();
            // Pairs whose two conditionals both round to 0 in f32 are dropped on both sides
            // (far pairs at a low perplexity): the pattern check above covers them.
            assert_same_p(&got, &want, &format!("n={n} d={d} u={u}"));
        }
        let same = Points::new(5, 3, vec![0.25; 15]);
        let got = exact_affinities_gpu(gpu, &same, 2.0).unwrap();
        assert_same_p(&got, &exact_affinities(&same, 2.0).unwrap(), "identical points");
        assert!(got.data().iter().all(|&v| v == 0.05), "{:?}", got.data());
        let (n, d) = (160, 2);
        let mut far = uniform_points(n, d, &mut rng);
        far.data[(n / 2) * d..].iter_mut().for_each(|v| *v += 1e4);
        let want = exact_affinities(&far, 10.0).unwrap();
        assert_eq!(want.nnz(), 2 * (n / 2) * (n / 2 - 1), "the clusters' pairs drop");
        let got = super::exact::exact_in_blocks(gpu, &far, 10.0, 8 * n * 64).unwrap();
        assert_same_p(&got, &want, "far clusters");
        let again = super::exact::exact_in_blocks(gpu, &far, 10.0, 8 * n * 64).unwrap();
        assert_eq!(again.data(), got.data(), "a second run differs");
    }
}

crate::gpu::gpu_test! {
    /// Exact affinities equal the kNN affinities at k = n − 1 on the device too: the
    /// exact P against the GPU's kNN path (calibration, symmetrisation into HYB) fed the
    /// exact n − 1 neighbours, entry by entry within 1e-5 relative (the two sum each row in
    /// different orders), up to the kNN path's largest k.
    fn gpu_exact_affinities_equal_gpu_knn_at_k_n_minus_1(gpu) {
        let seed: u64 = rand::random();
        eprintln!("seed {seed}");
        let mut rng = StdRng::seed_from_u64(seed);
        for (n, d, u) in [(100, 6, 20.0), (MAX_K + 1, 50, 30.0), (200, 2, 60.0)] {
            let p = uniform_points(n, d, &mut rng);
            let exact = exact_affinities_gpu(gpu, &p, u).unwrap();
            let nb = crate::knn::exact(&p, n - 1, &crate::progress::Silent).unwrap();
            let (hyb, stats) = affinities_gpu(&nb, u).unwrap();
            assert_eq!(stats.nnz, exact.nnz(), "n={n}: nnz");
            let rows = download_rows(&hyb);
            for (i, (row, want)) in rows.iter().zip(exact.outer_iterator()).enumerate() {
                assert_eq!(row.len(), want.nnz(), "n={n}: row {i} length");
                for (&(c, v), (wc, &wv)) in row.iter().zip(want.iter()) {
                    assert_eq!(c as usize, wc, "n={n}: row {i} columns");
                    assert!(
                        (v - wv).abs() <= 1e-5 * wv.abs() + 1e-37,
                        "n={n}: P[{i},{c}] kNN {v} vs exact {wv}"
                    );
                }
            }
        }
    }
}

crate::gpu::gpu_test! {
    /// A perplexity the points cannot carry (not below n − 1), and a single point, are
    /// refused with the CPU's errors, before any device work.
    fn gpu_exact_affinities_refuse_what_the_cpu_refuses(gpu) {
        let mut rng = StdRng::seed_from_u64(4);
        let p = uniform_points(150, 6, &mut rng);
        let one = Points::new(1, 6, vec![0.5; 6]);
        for (points, u) in [(&p, 149.0), (&p, 1000.0), (&one, 0.5)] {
            let want = exact_affinities(points, u).unwrap_err().to_string();
            let got = exact_affinities_gpu(gpu, points, u).unwrap_err().to_string();
            assert_eq!(got, want, "n={} u={u}", points.n);
            assert!(got.contains(&format!("perplexity {u}")), "{got}");
        }
    }
}

/// The histogram form of the cusp rule equals [`Hyb::choose_width`] (no GPU needed).
#[test]
fn width_from_histogram_equals_choose_width() {
    let mut rng = StdRng::seed_from_u64(rand::random());
    for (n, max_len) in [
        (10, 5),
        (5000, 30),
        (20_000, 300),
        (100_000, 200),
        (9000, 6000),
    ] {
        let lengths: Vec<usize> = (0..n)
            .map(|i| match i % 3 {
                0 => rng.random_range(0..=max_len),
                _ => rng.random_range(0..=max_len / 4 + 1),
            })
            .collect();
        let mut hist = vec![0i32; HIST_BINS + 1];
        for &l in &lengths {
            hist[l.min(HIST_BINS)] += 1;
        }
        match width_from_histogram(n, &hist) {
            Some(w) => assert_eq!(w, Hyb::choose_width(&lengths), "n={n}"),
            None => assert!(Hyb::choose_width(&lengths) >= HIST_BINS, "n={n}"),
        }
    }
}

#[test]
fn bad_arguments_are_errors() {
    let mut rng = StdRng::seed_from_u64(1);
    let nb = awkward_neighbors(50, 5, &mut rng);
    let err = affinities_gpu(&nb, 30.0).err().unwrap();
    assert!(err.to_string().contains("perplexity 30"), "{err}");
    let err = affinities_gpu(&nb, 5.0).err().unwrap();
    assert!(err.to_string().contains("perplexity 5"), "{err}");
    let err = affinities_gpu(&nb, -1.0).err().unwrap();
    assert!(err.to_string().contains("positive"), "{err}");
    let big = Neighbors {
        n: 2,
        k: MAX_K + 1,
        indices: vec![0; 2 * (MAX_K + 1)],
        distances: vec![0.0; 2 * (MAX_K + 1)],
    };
    assert!(affinities_gpu(&big, 30.0).is_err());
}

crate::gpu::gpu_test! {
    fn out_of_range_index_is_an_error(_gpu) {
        let mut rng = StdRng::seed_from_u64(2);
        let mut nb = awkward_neighbors(100, 8, &mut rng);
        nb.indices[77] = 100;
        let err = affinities_gpu(&nb, 3.0).err().unwrap();
        assert!(err.to_string().contains("outside [0, 100)"), "{err}");
    }
}

/// Synthetic neighbours at scale, generated in parallel. `Mutual`: the k nearest
/// indices i ± 1, ± 2, … (every edge mutual: the best case); `Local`: most neighbours
/// from a window around i (like data ordered for locality, few mutual pairs);
/// `Random`: uniform over all points (the worst case for the partner search).
#[derive(Clone, Copy, Debug)]
enum Synthetic {
    Mutual,
    Local,
    Random,
}

fn synthetic_neighbors(n: usize, k: usize, kind: Synthetic, seed: u64) -> Neighbors {
    let mut indices = vec![0u32; n * k];
    let mut distances = vec![0f32; n * k];
    indices
        .par_chunks_mut(k)
        .zip(distances.par_chunks_mut(k))
        .enumerate()
        .for_each(|(i, (ir, dr))| {
            let mut rng = StdRng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9));
            let row = match kind {
                Synthetic::Mutual => (0..k)
                    .map(|s| {
                        let off = s / 2 + 1;
                        (if s % 2 == 0 {
                            (i + off) % n
                        } else {
                            (i + n - off) % n
                        }) as u32
                    })
                    .collect(),
                Synthetic::Local => row_indices(i, n, k, 4 * k, &mut rng),
                Synthetic::Random => {
                    let mut row = Vec::with_capacity(k);
                    while row.len() < k {
                        let j = rng.random_range(0..n as u32);
                        if j as usize != i && !row.contains(&j) {
                            row.push(j);
                        }
                    }
                    row
                }
            };
            ir.copy_from_slice(&row);
            let scale: f32 = rng.random_range(0.1..10.0);
            for d in dr.iter_mut() {
                *d = rng.random::<f32>() * scale;
            }
            dr.sort_by(f32::total_cmp);
        });
    Neighbors {
        n,
        k,
        indices,
        distances,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

crate::gpu::gpu_test! {
    /// Timing at n = 1.3M, k = 90 (run by hand: `--ignored bench_affinities`); prints the
    /// seconds of the perplexity and symmetrisation steps and the bytes they move.
    #[ignore]
    fn bench_affinities(gpu) {
        let s = &gpu.stream;
        let n: usize = std::env::var("SGTSNE_BENCH_N")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1_300_000);
        let (k, u, reps) = (90usize, 30.0, 5);
        // Ceiling: a device-to-device copy of 1 GiB (bytes read + written).
        let src = s.alloc_zeros::<f32>(1 << 28).unwrap();
        let mut dst = s.alloc_zeros::<f32>(1 << 28).unwrap();
        let mut copy = Vec::new();
        for _ in 0..reps + 1 {
            s.synchronize().unwrap();
            let t = std::time::Instant::now();
            s.memcpy_dtod(&src, &mut dst).unwrap();
            s.synchronize().unwrap();
            copy.push(t.elapsed().as_secs_f64());
        }
        let copy_bw = 2.0 * (1u64 << 30) as f64 / median(copy[1..].to_vec());
        drop((src, dst));
        eprintln!("device-to-device copy: {:.2} TB/s", copy_bw / 1e12);
        profile::QUIET.store(true, std::sync::atomic::Ordering::Relaxed);
        for kind in [Synthetic::Mutual, Synthetic::Local, Synthetic::Random] {
            let t = std::time::Instant::now();
            let nb = synthetic_neighbors(n, k, kind, rand::random());
            let gen_s = t.elapsed().as_secs_f64();
            let idx: Vec<i32> = nb.indices.iter().map(|&j| j as i32).collect();
            let idx = s.clone_htod(&idx).unwrap();
            let dist = s.clone_htod(&nb.distances).unwrap();
            drop(nb);
            for keep in [false, true] {
                crate::gpu::memory::set_release_threshold(gpu, if keep { u64::MAX } else { 0 });
                let (mut cal_t, mut sym_t) = (Vec::new(), Vec::new());
                let mut last = None;
                for _ in 0..reps + 1 {
                    s.synchronize().unwrap();
                    let t0 = std::time::Instant::now();
                    let cond = calibrate(gpu, &dist, n, k, u).unwrap();
                    s.synchronize().unwrap();
                    let t1 = std::time::Instant::now();
                    let (parts, stats) = symmetrize_device(gpu, idx.clone(), cond, n, k).unwrap();
                    s.synchronize().unwrap();
                    let t2 = std::time::Instant::now();
                    cal_t.push((t1 - t0).as_secs_f64());
                    sym_t.push((t2 - t1).as_secs_f64());
                    drop(parts);
                    last = Some(stats);
                }
                let st = last.unwrap();
                let (cal, sym) = (median(cal_t[1..].to_vec()), median(sym_t[1..].to_vec()));
                let nk = (n * k) as f64;
                // Bytes each step moves once (coalesced streams; the random partner search and
                // appends are not counted).
                let cal_bytes = 8.0 * nk;
                let sym_bytes = 20.0 * nk // sort: idx, cond in; sidx, cond, partner out
                    + 8.0 * nk // match: sidx, sval
                    + 16.0 * nk // count: sidx, sval, partner in; own out
                    + 8.0 * nk + 8.0 * (n * st.ell_width) as f64 + 12.0 * st.coo_len as f64; // fill
                let floor = 8.0 * nk + 8.0 * (n * st.ell_width) as f64 + 12.0 * st.coo_len as f64;
                eprintln!(
                    "{kind:?} (pool keeps {keep}) n={n} k={k}: gen {gen_s:.1} s | perplexity {:.2} ms ({:.2} GB, {:.0}% of copy bw) \
                     | symmetrise+HYB {:.2} ms ({:.2} GB streamed, {:.0}% of copy bw) | total {:.2} ms \
                     | floor (neighbours in, HYB out once) {:.2} GB = {:.2} ms at copy bw, {:.2} ms at 3 TB/s \
                     | nnz {} K {} coo {} Σplnp {:.6}",
                    cal * 1e3,
                    cal_bytes / 1e9,
                    100.0 * cal_bytes / cal / copy_bw,
                    sym * 1e3,
                    sym_bytes / 1e9,
                    100.0 * sym_bytes / sym / copy_bw,
                    (cal + sym) * 1e3,
                    floor / 1e9,
                    floor / copy_bw * 1e3,
                    floor / 3e12 * 1e3,
                    st.nnz,
                    st.ell_width,
                    st.coo_len,
                    st.p_log_p
                );
                // One more run, synchronizing after each step, for the split.
                profile::ON.store(true, std::sync::atomic::Ordering::Relaxed);
                profile::lap(gpu, "start");
                let cond = calibrate(gpu, &dist, n, k, u).unwrap();
                drop(symmetrize_device(gpu, idx.clone(), cond, n, k).unwrap());
                profile::ON.store(false, std::sync::atomic::Ordering::Relaxed);
                let log = std::mem::take(&mut profile::LOG.lock().unwrap().1);
                for (label, dt) in &log[1..] {
                    eprintln!("    {label:<24} {:8.3} ms", dt * 1e3);
                }
            }
            crate::gpu::memory::set_release_threshold(gpu, 0);
        }
    }
}
