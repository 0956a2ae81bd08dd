//! Memory planned before the work starts: an estimate of the host and device bytes a run
//! needs, from n, the dimensions, k and the backend, checked against what the machine has,
//! so that a run too big for it fails at once with a message that says how much is needed
//! and which flags lower it, rather than running out of memory after minutes of work.
//!
//! The estimates are per-point byte counts of the buffers each stage holds at its peak
//! (named below), calibrated on the H100 runs of `scripts/bench/knn_scale.sh` (peak RSS and
//! the device peak the [`DeviceWatch`] sees): they are meant to be slightly above the
//! measured peaks, never far below. Two environment variables cap what a run may plan on
//! (shared machines, and the tests): `SGTSNE_MAX_HOST_BYTES` and `SGTSNE_MAX_DEVICE_BYTES`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use super::{AffinityMethod, EmbedParams, Input, KnnMethod};
use crate::backend::BackendKind;
use crate::gpu::Gpu;
use crate::report::MemoryReport;
use crate::{Error, Result};

/// Bytes the process needs beside the data (code, runtime, CUDA context on the host).
const HOST_FIXED: u64 = 256 << 20;
/// Device bytes beside the data: cuFFT plans, cuBLAS workspace, grids, the driver's reserve.
const DEVICE_FIXED: u64 = 1 << 30;

/// The shape of a run, as far as memory goes.
#[derive(Clone, Copy, Debug)]
pub struct RunShape {
    /// Points.
    pub n: usize,
    /// Features per point as read.
    pub d_in: usize,
    /// Features after PCA.
    pub d: usize,
    /// Neighbours per point (k = ⌈3 · perplexity⌉).
    pub k: usize,
    /// Embedding dimensions.
    pub dims: usize,
    /// GPUs of the run (`--gpus`; 1 on the cpu and hybrid backends).
    pub gpus: usize,
}

/// The estimate for `shape` on `backend` with the kNN `method`.
pub fn estimate(shape: RunShape, backend: BackendKind, method: KnnMethod) -> MemoryReport {
    let RunShape {
        n,
        d_in,
        d,
        k,
        dims,
        gpus,
    } = shape;
    let (n, d_in, d, k, dims) = (n as u64, d_in as u64, d as u64, k as u64, dims as u64);
    let gpus = gpus.max(1) as u64;
    // P, symmetric: at most 2k entries per row, a value and a column index each, 8 bytes.
    let p = n * 2 * k * 8;
    let on_gpu = backend != BackendKind::Cpu;
    // Host: the input and its PCA (or the kNN's sorted copy), the kNN answer coming back
    // (on gpu only the nearest few, for the quality measure, and nothing else of the
    // search; all k indices and 200 bytes a point of the search's own otherwise), then on
    // the cpu and hybrid backends P in CSR and its CSB copy, and the optimiser's vectors.
    let (answer, search) = match backend {
        BackendKind::Gpu => (k.min(super::QUALITY_K as u64) * 8, 0),
        _ => (k * 4, 200),
    };
    let mut host = HOST_FIXED + n * (d_in * 4 + d * 4 + answer + search + dims * 4 * 4);
    if backend != BackendKind::Gpu {
        host += n * k * 8 + 2 * p;
    }
    if !on_gpu {
        return MemoryReport {
            estimated_host_bytes: host,
            ..MemoryReport::default()
        };
    }
    // Device, GPU 0's (which runs the kNN's serial steps and the affinities; over several
    // GPUs the others hold less), the largest of its peaks. The kNN: the points (and their
    // cell-sorted copy for approx), their FP16 split (2 × 64 halves), the answer (index and
    // distance), the refinement's second index buffer and one batch of candidate lists (a
    // fraction of the answer; the sweep batches to fit). The affinities consume the answer
    // as they read it: the sort holds the indices, the conditional probabilities and the
    // sorted pairs (16 bytes per entry); the fill the pairs (12 bytes per entry) and P in
    // HYB, whose ELL part pads rows to a common width (a quarter more), one GPU's block of
    // it at a time, beside the quality measure's few neighbours a point (8 bytes each),
    // which stay until they go to the host beside the optimisation. The optimisation: that
    // GPU's block of P, and all of Y with the optimiser's vectors. (The sweep's candidate lists take what is free beyond this: a
    // device peak shows more than the need where there is room.)
    let approx = method == KnnMethod::Approx;
    let knn = n * (d * 4 * if approx { 2 } else { 1 } + 256 + k * 8)
        + if approx { n * k * 4 } else { 0 }
        + n * k * 2;
    let hyb = p * 5 / 4 / gpus;
    let leading = n * k.min(super::QUALITY_K as u64) * 8;
    let affinities = (n * k * 16).max(n * k * 12 + hyb) + leading;
    // (In 3-D the near field's sorted coordinates too: 16 bytes a point.)
    let optimise = hyb + leading + n * dims * 4 * 8 + if dims == 3 { n * 16 } else { 0 };
    // The PCA of dense points wider than the components kept (`prep::gpu`): the points and
    // their centred copy, the scores, and the d_in × d_in scatter matrix up to
    // EXACT_MAX_D features, the randomised method's thin products (64 columns) beyond.
    // (20k × 30,000 on the H100: 4.6 GiB at the peak, against 5.5 estimated.)
    let pca = match d_in > d {
        false => 0,
        true if d_in <= crate::prep::EXACT_MAX_D as u64 => {
            n * d_in * 8 + n * d * 4 + d_in * d_in * 4
        }
        true => n * d_in * 8 + n * d * 4 + (n + d_in) * 64 * 4,
    };
    MemoryReport {
        estimated_host_bytes: host,
        estimated_device_bytes: DEVICE_FIXED + knn.max(affinities).max(optimise).max(pca),
        peak_device_bytes: None,
    }
}

/// Host bytes the run may plan on: `SGTSNE_MAX_HOST_BYTES`, or the kernel's
/// `MemAvailable` plus `held` (what the run already holds, e.g. the input, which the
/// estimate counts too); `None` where neither is known (then nothing is checked).
pub fn host_available(held: u64) -> Option<u64> {
    if let Some(cap) = env_bytes("SGTSNE_MAX_HOST_BYTES") {
        return Some(cap);
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024 + held)
}

/// Device bytes the run may plan on: the free memory, capped by `SGTSNE_MAX_DEVICE_BYTES`
/// (and counting what `SGTSNE_GPU_MEMORY_LIMIT` holds back as free: that limit is met by
/// the allocations, [`crate::gpu::context::MEMORY_LIMIT_VAR`]).
pub fn device_available(gpu: &Gpu) -> Result<u64> {
    let free = (gpu.free_memory().map_err(Error::from)? + gpu.withheld_bytes()) as u64;
    Ok(env_bytes("SGTSNE_MAX_DEVICE_BYTES").map_or(free, |cap| cap.min(free)))
}

fn env_bytes(name: &str) -> Option<u64> {
    std::env::var(name).ok()?.trim().parse().ok()
}

/// Fails with [`Error::Memory`] when the estimate passes what is available.
pub fn check(
    estimate: &MemoryReport,
    shape: RunShape,
    host: Option<u64>,
    device: Option<u64>,
) -> Result<()> {
    let hints = |on_device: bool| {
        let mut h = format!(
            "--perplexity (k = {} neighbours per point now; memory grows with k)",
            shape.k
        );
        if shape.d_in > shape.d || shape.d > 50 {
            h += ", --pca (fewer input dimensions)";
        }
        if on_device {
            h += ", --knn approx (no full candidate lists), --backend cpu (host memory only)";
        } else {
            h += ", --backend gpu (P and the optimiser on the device)";
        }
        h
    };
    if let Some(avail) = host {
        if estimate.estimated_host_bytes > avail {
            return Err(Error::Memory {
                what: "host",
                needed: estimate.estimated_host_bytes,
                available: avail,
                hints: hints(false),
            });
        }
    }
    if let Some(avail) = device {
        if estimate.estimated_device_bytes > avail {
            return Err(Error::Memory {
                what: "device",
                needed: estimate.estimated_device_bytes,
                available: avail,
                hints: hints(true),
            });
        }
    }
    Ok(())
}

/// The memory estimate of a run on `input` (nothing for a graph, whose P is given), checked
/// against the host's and, on the gpu and hybrid backends, the device's available memory
/// before any work; and the watch of the device's peak.
pub(crate) fn plan(
    input: &Input,
    params: &EmbedParams,
    backend: BackendKind,
) -> Result<(MemoryReport, Option<DeviceWatch>)> {
    let on_gpu = backend != BackendKind::Cpu;
    let watch = if on_gpu {
        Some(DeviceWatch::start(Gpu::get()?)?)
    } else {
        None
    };
    // Exact affinities check their n² pairs against the host's memory themselves
    // (`affinity::exact::max_points`), and on gpu and hybrid their blocks of rows against the
    // device's free memory (`affinity::gpu::exact_affinities_gpu`); the estimate here is the
    // kNN pipeline's.
    let Some(d_given) = input
        .d()
        .filter(|_| params.affinities == AffinityMethod::Knn)
    else {
        return Ok((MemoryReport::default(), watch));
    };
    let n = input.n();
    let d = params.reduced_dim(d_given);
    let shape = RunShape {
        n,
        // Sparse rows are read already and never densified: the dense input the stages
        // hold is the PCA's n × d.
        d_in: if matches!(input, Input::Sparse(_)) {
            d
        } else {
            d_given
        },
        d,
        k: params.k().min(n.saturating_sub(1)),
        dims: params.dims,
        gpus: match backend {
            BackendKind::Gpu => params.gpus.unwrap_or(1),
            _ => 1,
        },
    };
    let estimate = estimate(shape, backend, params.knn);
    let device = if on_gpu {
        Some(device_available(Gpu::get()?)?)
    } else {
        None
    };
    // What the run holds already and the estimate counts: the dense input (sparse rows are
    // not counted, and their PCA is not made yet).
    let held = match input {
        Input::Points(p) => (p.n * p.d * 4) as u64,
        _ => 0,
    };
    let host = host_available(held);
    check(&estimate, shape, host, device)?;
    Ok((estimate, watch))
}

/// Samples the device's free memory on a side thread every [`DeviceWatch::PERIOD`] and
/// keeps the lowest: the run's peak is the free memory at the start less that lowest.
/// Allocations shorter than the period can slip between samples; the stages' big buffers
/// live for seconds.
pub struct DeviceWatch {
    start_free: usize,
    lowest: Arc<AtomicUsize>,
    /// Dropped to stop the sampler, which wakes at once (a sleeping sampler held the end
    /// of every run up to a period: 2.5 ms on average).
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl DeviceWatch {
    /// Time between samples.
    pub const PERIOD: Duration = Duration::from_millis(5);

    /// Starts sampling `gpu`.
    pub fn start(gpu: &'static Gpu) -> Result<Self> {
        let start_free = gpu.free_memory().map_err(Error::from)?;
        let lowest = Arc::new(AtomicUsize::new(start_free));
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = {
            let lowest = lowest.clone();
            std::thread::spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(Self::PERIOD)
                {
                    if let Ok(free) = gpu.free_memory() {
                        lowest.fetch_min(free, Ordering::Relaxed);
                    }
                }
            })
        };
        Ok(DeviceWatch {
            start_free,
            lowest,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Free device bytes when the watch started (the run's start).
    pub fn start_free(&self) -> u64 {
        self.start_free as u64
    }

    /// Stops sampling; the peak in bytes.
    pub fn finish(mut self) -> u64 {
        self.end();
        self.start_free
            .saturating_sub(self.lowest.load(Ordering::Relaxed)) as u64
    }

    fn end(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for DeviceWatch {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(n: usize) -> RunShape {
        RunShape {
            n,
            d_in: 50,
            d: 50,
            k: 90,
            dims: 2,
            gpus: 1,
        }
    }

    #[test]
    fn estimates_grow_with_n_and_k_and_cover_the_measured_peaks() {
        let small = estimate(shape(1_000_000), BackendKind::Gpu, KnnMethod::Approx);
        let big = estimate(shape(10_000_000), BackendKind::Gpu, KnnMethod::Approx);
        assert!(big.estimated_device_bytes > 7 * small.estimated_device_bytes);
        let fewer_k = estimate(
            RunShape {
                k: 30,
                ..shape(10_000_000)
            },
            BackendKind::Gpu,
            KnnMethod::Approx,
        );
        assert!(fewer_k.estimated_device_bytes < big.estimated_device_bytes / 2);
        // Peak RSS measured with the gpu backend and approx kNN, since only the nearest
        // neighbours come to the host: 4.29 GiB at 10M (4×H200 machine, one GPU,
        // `multi_gpu.sh 10m`). The estimate covers it within 25 %.
        let rss = 4.29;
        let host = big.estimated_host_bytes as f64 / (1u64 << 30) as f64;
        assert!(
            host >= rss && host <= rss * 1.25,
            "10M: {host} GiB against {rss}"
        );
        // Device peaks measured on the H100: 3.72 GiB at 1.3M deformed digits
        // (`knn_scale.sh cold digits10m` at `107ef00`) and 25.45 GiB at 10M × 50 mixture
        // (`multi_gpu.sh 10m1` at `e573218`, one GPU; the sweep's candidate lists take what
        // is free beyond the need, so the peak shows more than the need on a larger
        // device). The estimate covers them within 50 %.
        for (n, peak) in [(1_300_000, 3.72), (10_000_000, 25.45)] {
            let dev = estimate(shape(n), BackendKind::Gpu, KnnMethod::Approx).estimated_device_bytes
                as f64
                / (1u64 << 30) as f64;
            assert!(
                dev >= peak && dev <= peak * 1.5,
                "{n}: {dev} GiB against {peak}"
            );
        }
        // 50M over four GPUs fits an H200 (139 GiB free), its P in the GPUs' blocks; the
        // share of P a GPU holds falls with their number.
        let fifty = |gpus| {
            let s = RunShape {
                gpus,
                ..shape(50_000_000)
            };
            estimate(s, BackendKind::Gpu, KnnMethod::Approx).estimated_device_bytes
        };
        assert!(fifty(4) < 139 << 30, "{}", fifty(4) >> 30);
        assert!(fifty(4) < fifty(1));
        // The 20M run fitted in the 80 GB H100 (79.2 GiB free): its estimate must too.
        let twenty = estimate(shape(20_000_000), BackendKind::Gpu, KnnMethod::Approx);
        assert!(twenty.estimated_device_bytes < 79 << 30);
        let cpu = estimate(shape(1_000_000), BackendKind::Cpu, KnnMethod::Hnsw);
        assert_eq!(cpu.estimated_device_bytes, 0);
    }

    #[test]
    fn a_run_too_big_names_the_need_the_room_and_the_flags() {
        let s = shape(10_000_000);
        let e = estimate(s, BackendKind::Gpu, KnnMethod::Approx);
        let err = check(&e, s, Some(u64::MAX), Some(8 << 30)).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("device"), "{msg}");
        assert!(msg.contains("8.0 GiB"), "{msg}");
        assert!(
            msg.contains("--perplexity") && msg.contains("--backend cpu"),
            "{msg}"
        );
        let err = check(&e, s, Some(1 << 30), None).unwrap_err();
        assert!(err.to_string().contains("host"), "{err}");
        assert!(check(&e, s, None, None).is_ok());
        assert!(check(&e, s, Some(u64::MAX), Some(u64::MAX)).is_ok());
    }
}
