//! `SGTSNE_TRACE=1`: a timeline of a run on standard error, in seconds since the process
//! began — each stage's start, the GPUs' and the NCCL communicators' set-up, the input's
//! reading, the outputs' writing and the communicators' end — for finding what a run waits
//! on between the stages its report times (its set-up and its end above all, where the
//! device's start and NCCL's teardown overlap the run's own work). Each line ends with the
//! process's resident memory then and its peak so far (Linux), which place a run's peak
//! host memory among its stages. Unset, each trace point costs one read of a cached flag.

use std::sync::OnceLock;
use std::time::Instant;

/// The environment variable that turns the trace on (any value but empty or `0`).
pub const TRACE_VAR: &str = "SGTSNE_TRACE";

/// The trace's origin, when tracing: the instant of the first call.
fn origin() -> Option<Instant> {
    static ORIGIN: OnceLock<Option<Instant>> = OnceLock::new();
    *ORIGIN.get_or_init(|| {
        std::env::var_os(TRACE_VAR)
            .filter(|v| !v.is_empty() && v != "0")
            .map(|_| Instant::now())
    })
}

/// Starts the trace's clock: the command line calls it first thing.
pub fn begin() {
    event(|| "start".into());
}

/// Writes the event `what` says, with its time and thread, when tracing.
pub fn event(what: impl FnOnce() -> String) {
    if let Some(t0) = origin() {
        let thread = std::thread::current();
        let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
        let memory = match (crate::report::rss_bytes(), crate::report::peak_rss_bytes()) {
            (Some(now), Some(peak)) => {
                format!("  [rss {:.2} GiB, peak {:.2}]", gib(now), gib(peak))
            }
            _ => String::new(),
        };
        eprintln!(
            "trace {:9.4} s  {:<18} {}{memory}",
            t0.elapsed().as_secs_f64(),
            thread.name().unwrap_or("-"),
            what()
        );
    }
}
