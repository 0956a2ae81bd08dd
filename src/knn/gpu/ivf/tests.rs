//! The approximate kNN against the exact one: recall at tight and loose settings, the
//! self-estimate, awkward inputs.
use super::takes::{BlockQueue, PlanFeed, TakePlan};
use super::*;
use crate::gen::{gaussian_mixture, MixtureParams};
use crate::gpu::kernels::knn_fused::{CHUNK, QUERIES};
use crate::gpu::Gpu;
use crate::knn::ivf::{self as host, Cells, IvfParams, ProbePlanner};
use crate::knn::{exact, recall};
use crate::knn::{Key, Neighbors};
use crate::progress::Silent;
use crate::Points;
use rand::{rngs::StdRng, Rng, SeedableRng};

/// The fraction of each row's approximate neighbours within the exact k-th distance, so
/// that ties (duplicates) count as found; and the rows' contract (no self, no repeats,
/// ascending). The CPU's exact distances are summed in f32 and the GPU's in f64: the k-th
/// distance gets a relative tolerance of 1e-5 for that.
fn tie_aware_recall(approx: &Neighbors, exact: &Neighbors) -> f64 {
    let k = exact.k;
    let mut found = 0usize;
    for i in 0..exact.n {
        let kth = exact.row_distances(i)[k - 1];
        let row = approx.row_indices(i);
        let d = approx.row_distances(i);
        assert!(!row.contains(&(i as u32)), "row {i} contains itself");
        let mut distinct = row.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), k, "row {i} names a point twice");
        assert!(d.windows(2).all(|w| w[0] <= w[1]), "row {i} not ascending");
        let kth = kth + kth.abs() * 1e-5;
        found += d.iter().filter(|&&x| x <= kth).count();
    }
    found as f64 / (exact.n * k) as f64
}

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

crate::gpu::gpu_test! {
    /// Probing every cell is the exact kNN; fewer probes lose recall monotonically (the
    /// candidates only shrink); the run's own estimate follows the true recall. (The plain
    /// rule: the spread rule's may skip far cells.)
    fn approx_recall_follows_the_probes(gpu) {
        let _ = gpu;
        let points = mixture(20_000, 24, 3);
        let k = 30;
        let truth = exact(&points, k, &Silent).unwrap();
        let base = IvfParams {
            lists: 64,
            refine: 0,
            spread: 0.0,
            ..IvfParams::default()
        };
        let mut last = 1.0f64;
        for probes in [64, 16, 4, 1] {
            let params = IvfParams {
                probes,
                ..base.clone()
            };
            let (nb, stats) = approx_gpu(&points, k, Key::SqEuclidean, &params, &Silent).unwrap();
            let r = recall(&nb, &truth);
            eprintln!(
                "probes {probes}: recall {r:.4}, estimate {:.4}",
                stats.recall_sample
            );
            if probes == 64 {
                // Every cell probed: the exact kNN, up to ties (see tie_aware_recall).
                let exact_found = tie_aware_recall(&nb, &truth);
                assert!(exact_found >= 0.9999, "all cells probed: {exact_found}");
            }
            assert!(
                r <= last + 1e-12,
                "recall rose from {last} to {r} at {probes} probes"
            );
            assert!(
                (stats.recall_sample - r).abs() <= 0.03,
                "estimate {} against true recall {r}",
                stats.recall_sample
            );
            assert_eq!(stats.sample, RECALL_SAMPLE.min(points.n));
            last = r;
        }
        assert!(last < 0.99, "one probe should lose recall, got {last}");
    }

    /// The default settings on clustered data in 50 dimensions, the hard case for cells (a
    /// point's neighbours spread over every cell of its Gaussian cluster): recall ≥ 0.95.
    fn approx_defaults_reach_high_recall(gpu) {
        let _ = gpu;
        let points = mixture(60_000, 50, 5);
        let k = 90;
        let truth = exact(&points, k, &Silent).unwrap();
        let (nb, stats) = approx_gpu(&points, k, Key::SqEuclidean, &IvfParams::default(), &Silent).unwrap();
        let r = recall(&nb, &truth);
        eprintln!("defaults: recall {r:.4}, {stats:?}");
        assert!(r >= 0.95, "recall {r}");
    }

    /// Duplicate points, d = 1 and k close to n: every row complete, recall counted with
    /// ties ≥ 0.99 at tight settings.
    fn approx_handles_awkward_inputs(gpu) {
        let _ = gpu;
        let mut rng = StdRng::seed_from_u64(11);
        let base: Vec<f32> = (0..1500 * 8).map(|_| rng.random::<f32>()).collect();
        let dup: Vec<f32> = base.iter().cycle().take(base.len() * 4).copied().collect();
        let line: Vec<f32> = (0..6000).map(|_| rng.random::<f32>() * 100.0).collect();
        let few: Vec<f32> = (0..300 * 5).map(|_| rng.random::<f32>()).collect();
        let cases = [
            ("duplicates ×4", Points::new(6000, 8, dup), 20),
            ("d = 1", Points::new(6000, 1, line), 15),
            ("k = 240 of 300", Points::new(300, 5, few), 240),
        ];
        for (label, points, k) in cases {
            let truth = exact(&points, k, &Silent).unwrap();
            // Tight: twice the default probes.
            let params = IvfParams {
                probes: 48,
                ..IvfParams::default()
            };
            let (nb, stats) = approx_gpu(&points, k, Key::SqEuclidean, &params, &Silent).unwrap();
            assert!(
                nb.indices.iter().all(|&j| (j as usize) < points.n),
                "{label}: unwritten entry"
            );
            let r = tie_aware_recall(&nb, &truth);
            eprintln!("{label}: recall {r:.4}, {stats:?}");
            assert!(r >= 0.99, "{label}: recall {r}");
        }
    }

    /// Refinement mends a poor graph: one probe misses much, each round finds more (a row
    /// keeps the k nearest of a superset of its list, so the tie-aware recall cannot fall),
    /// the sample estimate follows, and a second run gives the same graph.
    fn refinement_mends_a_poor_graph(gpu) {
        let _ = gpu;
        let points = mixture(20_000, 24, 7);
        let k = 30;
        let truth = exact(&points, k, &Silent).unwrap();
        let mut last = 0.0f64;
        let mut first = None;
        for refine in 0..=3 {
            let params = IvfParams {
                lists: 64,
                probes: 1,
                refine,
                fan: 12,
                ..IvfParams::default()
            };
            let (nb, stats) = approx_gpu(&points, k, Key::SqEuclidean, &params, &Silent).unwrap();
            let r = tie_aware_recall(&nb, &truth);
            eprintln!("refine {refine}: recall {r:.4}, {stats:?}");
            assert!(r >= last, "recall fell from {last} to {r} at {refine} rounds");
            assert!(
                (stats.recall_sample - recall(&nb, &truth)).abs() <= 0.03,
                "estimate {} against true recall {r}",
                stats.recall_sample
            );
            if refine == 0 {
                assert!(r < 0.9, "one probe should miss neighbours, recall {r}");
                first = Some(r);
            }
            if refine == 2 {
                let (again, _) = approx_gpu(&points, k, Key::SqEuclidean, &params, &Silent).unwrap();
                assert_eq!(again.indices, nb.indices, "two runs differ");
            }
            last = r;
        }
        let first = first.unwrap();
        assert!(last >= first + 0.03, "3 rounds: {first} to {last}");
    }

    /// The sweep and the refinement split over several GPUs give the one-GPU graph exactly
    /// (each block's queries are swept alone, and each row refined from the same graph,
    /// wherever they run), distances included. Skipped without a second GPU unless
    /// SGTSNE_REQUIRE_GPUS asks for two.
    fn split_sweep_gives_the_one_gpu_graph(gpu) {
        let _ = gpu;
        let have = crate::gpu::device_count().unwrap();
        if have < 2 {
            let required = std::env::var("SGTSNE_REQUIRE_GPUS").ok().and_then(|v| v.parse().ok());
            assert!(required.unwrap_or(0) < 2, "SGTSNE_REQUIRE_GPUS asks for 2, the host shows {have}");
            eprintln!("skipped: needs 2 GPUs, the host shows {have}");
            return;
        }
        let points = mixture(30_011, 24, 5);
        let k = 20;
        // The refinement always runs (whatever the sweep's recall), so that its split is checked.
        let one = IvfParams { lists: 64, probes: 8, refine_below: 2.0, ..IvfParams::default() };
        let (want, _) = approx_gpu(&points, k, Key::SqEuclidean, &one, &Silent).unwrap();
        let split = IvfParams { gpus: have, ..one };
        let (got, stats) = approx_gpu(&points, k, Key::SqEuclidean, &split, &Silent).unwrap();
        assert_eq!(got.indices, want.indices, "the graphs differ");
        assert_eq!(got.distances, want.distances);
        assert!(stats.recall_sample > 0.9, "{stats:?}");
    }

    /// An exact graph stays exact under refinement (up to ties in f32), by the squared
    /// distance and by the inner product.
    fn refinement_keeps_an_exact_graph(gpu) {
        let mixture = mixture(5_000, 16, 9);
        let inner = crate::knn::exact::tests::inner_product_points(5_000, 16, 9);
        let inner_key = Key::new(crate::prep::Metric::InnerProduct, &inner);
        for (points, key) in [(mixture, Key::SqEuclidean), (inner, inner_key)] {
            refined_exact_graph_stays_exact(gpu, &points, key);
        }
    }

    /// Inner product on the device: the CPU twin's check
    /// (`approx_cpu_inner_product_reaches_the_exact_neighbours`: ≥ 99% of the exact kNN's
    /// largest inner products at tight settings, the estimate following, no self in a row,
    /// rows by the key), and every reported key is 2(c − x · y).
    fn approx_inner_product_reaches_the_exact_neighbours(gpu) {
        let _ = gpu;
        crate::knn::ivf_cpu::tests::inner_product_reaches_the_exact_neighbours(
            |points, k, key, params| {
                let Key::InnerProduct { c } = key else {
                    panic!("{key:?}")
                };
                let (nb, stats) = approx_gpu(points, k, key, params, &Silent).unwrap();
                for i in 0..points.n {
                    for (&j, &got) in nb.row_indices(i).iter().zip(nb.row_distances(i)) {
                        let want = key.eval_f64(points.row(i), points.row(j as usize));
                        assert!((got - want).abs() <= 1e-5 * c, "row {i}: {j} at {got}, key {want}");
                    }
                }
                (nb, stats)
            },
        );
    }

    /// Wider points than the sweep takes are refused with a message, not a fault.
    fn approx_refuses_wide_points(gpu) {
        let _ = gpu;
        let points = Points::new(500, 65, vec![0.5; 500 * 65]);
        let err = approx_gpu(&points, 10, Key::SqEuclidean, &IvfParams::default(), &Silent).unwrap_err();
        assert!(err.to_string().contains("--pca"), "{err}");
    }
}

/// Refines the exact kNN graph of `points` by `key` (two rounds, fan 8) and checks that it
/// stays exact.
fn refined_exact_graph_stays_exact(gpu: &Gpu, points: &Points, key: Key) {
    let (n, d, k) = (points.n, points.d, 20);
    let truth = crate::knn::exact_by(points, k, key, &Silent).unwrap();
    let s = &gpu.stream;
    let x = s.clone_htod(&points.data).unwrap();
    let graph: Vec<i32> = truth.indices.iter().map(|&j| j as i32).collect();
    let graph = s.clone_htod(&graph).unwrap();
    let mut distances = s.alloc_zeros::<f32>(n * k).unwrap();
    let refined = super::super::refine::refine(
        &[gpu],
        &x,
        (n, d, k),
        key,
        graph,
        &mut distances,
        2,
        8,
        &Silent,
    )
    .unwrap();
    let nb = Neighbors {
        n,
        k,
        indices: s
            .clone_dtoh(&refined)
            .unwrap()
            .into_iter()
            .map(|j| j as u32)
            .collect(),
        distances: s.clone_dtoh(&distances).unwrap(),
    };
    let r = tie_aware_recall(&nb, &truth);
    assert!(r >= 0.9999, "recall {r}");
}

/// Settings of the approximate kNN on a large input, run by hand on a GPU machine (the
/// rows "approximate kNN settings" of benches/RESULTS.md, `scripts/bench/knn_settings.sh`):
/// `SGTSNE_BENCH_POINTS=x.npy SGTSNE_BENCH_SETTINGS="24/1/16 12/2/16" sgtsne-lib-tests
/// knn::gpu::ivf::tests::approx_settings --ignored --nocapture`. Each setting is
/// probes/refine/fan[/lists[/spread[/max probes]]] at k = 90 (`SGTSNE_BENCH_K`; lists 0:
/// auto, spread and max probes as the defaults when left out); one JSON line of statistics
/// each.
#[test]
#[ignore]
fn approx_settings() {
    let Some(gpu) = crate::gpu::for_test() else {
        return;
    };
    let path = std::env::var("SGTSNE_BENCH_POINTS").expect("SGTSNE_BENCH_POINTS");
    let settings = std::env::var("SGTSNE_BENCH_SETTINGS").unwrap_or_else(|_| "24/1/16".into());
    let k: usize = std::env::var("SGTSNE_BENCH_K")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(90);
    let points = crate::io::read_points(std::path::Path::new(&path)).unwrap();
    for setting in settings.split_whitespace() {
        let v: Vec<f64> = setting.split('/').map(|x| x.parse().unwrap()).collect();
        let defaults = IvfParams::default();
        let params = IvfParams {
            probes: v[0] as usize,
            refine: v[1] as usize,
            fan: v[2] as usize,
            lists: v.get(3).map_or(0, |&l| l as usize),
            spread: v.get(4).copied().unwrap_or(defaults.spread),
            max_probes: v.get(5).map_or(defaults.max_probes, |&m| m as usize),
            ..defaults
        };
        let t = std::time::Instant::now();
        let approx = approx_device(gpu, &points, k, Key::SqEuclidean, &params, &Silent).unwrap();
        gpu.stream.synchronize().unwrap();
        let wall = t.elapsed().as_secs_f64();
        println!(
            "{{\"n\": {}, \"setting\": \"{setting}\", \"wall\": {wall:.3}, \"stats\": {}}}",
            points.n,
            serde_json::to_string(&approx.stats).unwrap()
        );
    }
}

/// The split sweep's queue hands every block out exactly once, in takes numbered in block
/// order, however many GPUs' threads ask at once: takes of its size on one GPU (the last
/// shorter); over several, whole takes until the last GPUs' worth, then smaller ones, never
/// growing and none below a quarter take but the last.
#[test]
fn block_queue_hands_out_every_block_once() {
    let cases = [
        (12, 5, 3),
        (1000, 7, 4),
        (3, 10, 2),
        (0, 4, 2),
        (5000, 64, 1),
        (5000, 64, 2),
    ];
    for (blocks, take, threads) in cases {
        let queue = BlockQueue::new(blocks, take, threads);
        let mut all: Vec<(usize, std::ops::Range<usize>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        let mut got = Vec::new();
                        while let Some(r) = queue.take() {
                            got.push(r);
                        }
                        got
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        all.sort_by_key(|(_, r)| r.start);
        let sizes: Vec<usize> = all.iter().map(|(_, r)| r.len()).collect();
        let case = format!("{blocks} blocks by {take} on {threads}: {sizes:?}");
        if threads == 1 {
            assert_eq!(all.len(), blocks.div_ceil(take), "{case}");
        }
        let mut next = 0;
        for (t, (number, r)) in all.iter().enumerate() {
            assert_eq!((*number, r.start), (t, next), "{case}");
            assert!(r.end > r.start && r.len() <= take, "{case}");
            next = r.end;
        }
        assert_eq!(next, blocks, "{case}");
        assert!(queue.take().is_none(), "nothing left after the end");
        let (whole, tail) = sizes.split_at(sizes.iter().take_while(|&&s| s == take).count());
        assert!(tail.windows(2).all(|w| w[1] <= w[0]), "{case}");
        let least = if threads == 1 { 1 } else { (take / 4).max(1) };
        let before_last = &tail[..tail.len().saturating_sub(1)];
        assert!(before_last.iter().all(|&s| s >= least), "{case}");
        if threads > 1 && blocks > 2 * threads * take {
            assert!(whole.len() >= blocks / take - threads, "{case}");
            assert!(tail.len() > threads, "{case}");
        }
    }
}

/// The takes' plans, made one at a time and joined, are the whole plan of
/// `Cells::block_probes` and `Cells::block_runs`: each take's runs and offsets rebased,
/// its query rows the positions of its blocks (−1 past the points).
#[test]
fn take_plans_join_into_the_whole_plan() {
    let (n, d) = (5 * QUERIES + 17, 6);
    let points = mixture(n, d, 9);
    let labels: Vec<u32> = (0..n).map(|i| (points.row(i)[0] > 0.0) as u32).collect();
    let mut cells = Cells::sort(&labels, 2);
    let sorted = cells.order_within(&points, QUERIES);
    let centroids = host::initial_centroids(&points.data, d, 2, 1);
    let probing = IvfParams::default().probing(4);
    let probes = cells.block_probes(&sorted, &centroids, Key::SqEuclidean, &probing, QUERIES);
    let (runs, run_off) = cells.block_runs(&probes, QUERIES, CHUNK);
    let planner = ProbePlanner::new(
        &cells,
        &sorted,
        &centroids,
        Key::SqEuclidean,
        probing,
        QUERIES,
    );
    assert_eq!(planner.blocks(), 6);
    let (mut joined_runs, mut joined_off, mut qrows) = (Vec::<i32>::new(), vec![0], Vec::new());
    for take in [0..2, 2..5, 5..6] {
        let plan = TakePlan::make(&planner, &cells, take.clone(), n);
        assert_eq!(plan.first, take.start);
        assert_eq!(plan.run_off.len(), take.len() + 1);
        let base = (joined_runs.len() / 2) as i32;
        joined_off.extend(plan.run_off[1..].iter().map(|&o| o + base));
        joined_runs.extend(&plan.runs);
        qrows.extend(plan.qrows);
    }
    assert_eq!(joined_runs, runs);
    assert_eq!(joined_off, run_off);
    let want: Vec<i32> = (0..6 * QUERIES)
        .map(|i| if i < n { i as i32 } else { -1 })
        .collect();
    assert_eq!(qrows, want);
}

/// A GPU's thread waiting on the feed gets each take's plan once it is made, in any order
/// of asking, and `None` for a take the host stopped before.
#[test]
fn plan_feed_hands_each_plan_once_and_ends() {
    let feed = PlanFeed::new();
    let plan = |first| TakePlan {
        first,
        qrows: vec![first as i32],
        runs: Vec::new(),
        run_off: vec![0],
    };
    std::thread::scope(|scope| {
        let waiting = scope.spawn(|| feed.wait(1).map(|p| p.first));
        feed.push(plan(0));
        feed.push(plan(1));
        assert_eq!(waiting.join().unwrap(), Some(1));
        let late = scope.spawn(|| feed.wait(2).map(|p| p.first));
        feed.end();
        assert_eq!(late.join().unwrap(), None);
    });
    assert_eq!(feed.wait(0).map(|p| p.qrows), Some(vec![0]));
    assert!(feed.wait(0).is_none(), "a take's plan is taken once");
}
