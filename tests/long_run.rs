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
/// the allocator's arenas), and no run slower than 1.2 × the median.
#[test]
#[ignore = "a minute of embeddings; run alone with --ignored"]
fn long_run_cpu_memory_and_time_stay_flat() {
    let params = EmbedParams {
        backend: BackendKind::Cpu,
        ..Default::default()
    };
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let (mut seconds, mut rss, mut peak) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..10 {
        let input = Input::Points(demo::points().unwrap());
        let t = std::time::Instant::now();
        let out = embed(input, "digits", None, &params, &Silent).unwrap();
        seconds.push(t.elapsed().as_secs_f64());
        drop(out);
        rss.push(status_bytes("VmRSS:"));
        peak.push(status_bytes("VmHWM:"));
        eprintln!(
            "run {run}: {:.2} s, VmRSS {:.1} MiB, VmHWM {:.1} MiB",
            seconds[run],
            mib(rss[run]),
            mib(peak[run])
        );
    }
    let mut sorted = seconds.clone();
    sorted.sort_by(f64::total_cmp);
    let median = (sorted[4] + sorted[5]) / 2.0;
    let slowest = sorted[9];
    eprintln!(
        "median {median:.2} s, slowest {slowest:.2} s ({:.2} × the median)",
        slowest / median
    );
    assert!(slowest <= 1.2 * median, "runs {seconds:?}");
    // The resident memory after a run wanders by ±5 MiB with what the allocator keeps of
    // the threads' freed blocks, so runs 7–9 are compared with runs 1–3 by their largest.
    // A run that kept even a tenth of the ~15 MiB it allocates would add 9 MiB over six.
    let largest = |v: &[u64]| v.iter().copied().max().unwrap();
    let slack = 8 << 20;
    assert!(
        largest(&rss[7..]) <= largest(&rss[1..4]) + slack,
        "VmRSS grew: {rss:?}"
    );
    assert!(peak[9] <= peak[1] + slack, "VmHWM grew: {peak:?}");
}
