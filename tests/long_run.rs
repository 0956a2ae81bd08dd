//! Long-run load (issue 17): many embeddings in one process through the library API, as a
//! service embedding one data set after another would run them. Memory kept from one run
//! to the next (caches, pools, leaks) would show as resident memory that grows; state that
//! slows later runs (fragmentation, a cache that only fills) as runs slower than the rest.
//! Ignored: it takes a minute; run it alone, so that no other test shares the process:
//! `cargo test --release --test main -- --ignored --nocapture long_run`.

use sgtsne::embed::{embed, EmbedParams, Input};
use sgtsne::progress::Silent;
use sgtsne::{backend::BackendKind, demo};

/// A field of `/proc/self/status` in bytes (`VmRSS` now, `VmHWM` the peak so far).
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Ten embeddings of the digits on the cpu backend in a row: resident and peak memory at the
/// end within 8 MiB of those after the first runs (the first sets up the thread pool and
/// the allocator's arenas), and no run after the first slower than 1.2 × their median.
#[test]
#[ignore = "a minute of embeddings; run alone with --ignored"]
fn long_run_cpu_memory_and_time_stay_flat() {
    flat_runs(BackendKind::Cpu, 10, "digits", || demo::points().unwrap());
}

/// Twenty embeddings of MNIST 70k (PCA 50) on the gpu backend in a row: host memory as for
/// the cpu backend (within 32 MiB: MNIST's host buffers are larger), device memory in use
/// (total − free) at the end within 64 MiB of that after the first runs, and run times as
/// for the cpu backend. The points are
/// read from `SGTSNE_MNIST` (an `.npy`; default `.bench/data/mnist70k_pca50_f32.npy`, as
/// `scripts/bench/stage.sh` stages it, else `../shared/data/mnist/`); without a GPU it
/// skips, or fails under `SGTSNE_REQUIRE_GPU=1`.
#[test]
#[ignore = "twenty MNIST embeddings on the GPU; run alone with --ignored"]
fn long_run_gpu_memory_and_time_stay_flat() {
    if crate::cli::backends().len() == 1 {
        eprintln!("skipped: no usable GPU");
        return;
    }
    let path = std::env::var("SGTSNE_MNIST")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| {
            [".bench/data", "../shared/data/mnist"]
                .iter()
                .map(|d| std::path::Path::new(d).join("mnist70k_pca50_f32.npy"))
                .find(|p| p.exists())
                .expect("MNIST: set SGTSNE_MNIST or stage .bench/data")
        });
    let points = sgtsne::io::read_points(&path).unwrap();
    flat_runs(BackendKind::Gpu, 20, "mnist", || points.clone());
}

/// `runs` embeddings of `points()` on `backend`, checked as the two tests above say.
fn flat_runs(backend: BackendKind, runs: usize, name: &str, points: impl Fn() -> sgtsne::Points) {
    let params = EmbedParams {
        backend,
        ..Default::default()
    };
    let on_gpu = backend == BackendKind::Gpu;
    let device_used = || -> u64 {
        let gpu = sgtsne::gpu::Gpu::get().unwrap();
        let (free, total) = gpu.device.context.mem_get_info().unwrap();
        (total - free) as u64
    };
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let (mut seconds, mut rss, mut peak, mut dev) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        let input = Input::Points(points());
        let t = std::time::Instant::now();
        let out = embed(input, name, None, &params, &Silent).unwrap();
        seconds.push(t.elapsed().as_secs_f64());
        drop(out);
        rss.push(status_bytes("VmRSS:"));
        peak.push(status_bytes("VmHWM:"));
        dev.push(if on_gpu { device_used() } else { 0 });
        eprintln!(
            "run {run}: {:.2} s, VmRSS {:.1} MiB, VmHWM {:.1} MiB, device {:.1} MiB",
            seconds[run],
            mib(rss[run]),
            mib(peak[run]),
            mib(dev[run])
        );
    }
    // The first run is the warm-up (thread pool; on the GPU the context, the kernels'
    // modules and the FFT plans: 0.71 s against 0.48 s at MNIST on the H100), as in every
    // benchmark here; the later ones are compared with their median.
    let mut sorted = seconds[1..].to_vec();
    sorted.sort_by(f64::total_cmp);
    let warm = sorted.len();
    let median = (sorted[(warm - 1) / 2] + sorted[warm / 2]) / 2.0;
    let slowest = sorted[warm - 1];
    eprintln!(
        "median {median:.2} s, slowest {slowest:.2} s ({:.2} × the median)",
        slowest / median
    );
    assert!(slowest <= 1.2 * median, "runs {seconds:?}");
    // The resident memory after a run wanders by ±5 MiB with what the allocator keeps of
    // the threads' freed blocks, so the last three runs are compared with runs 1–3 by their
    // largest. A run that kept even a tenth of the ~15 MiB it allocates (digits) would add
    // 9 MiB over six; MNIST's host buffers are ten times larger, and so is their wander.
    let largest = |v: &[u64]| v.iter().copied().max().unwrap();
    let slack = if on_gpu { 32 << 20 } else { 8 << 20 };
    assert!(
        largest(&rss[runs - 3..]) <= largest(&rss[1..4]) + slack,
        "VmRSS grew: {rss:?}"
    );
    assert!(peak[runs - 1] <= peak[1] + slack, "VmHWM grew: {peak:?}");
    assert!(
        largest(&dev[runs - 3..]) <= largest(&dev[1..4]) + (64 << 20),
        "device memory grew: {dev:?}"
    );
}
