//! Stages 2–4 in point mode (DESIGN §1.2–1.4): PCA, kNN, perplexity calibration and
//! symmetrisation, each placed on the host or the device by the backend.

use cudarc::driver::{CudaSlice, CudaStream};
use std::borrow::Cow;
use std::sync::{mpsc, Arc};

use super::{AffinityMethod, EmbedParams, KnnMethod, PointOrder, Prepared};
use crate::affinity;
use crate::backend::BackendKind;
use crate::gpu::Gpu;
use crate::knn::{self, gpu::ivf, Neighbors};
use crate::progress::Progress;
use crate::report::{KnnReport, StageSeconds};
use crate::sparse::P;
use crate::{prep, Error, Points, Result};

/// Stage 2's result: the points as the kNN sees them.
pub(crate) struct Reduced {
    /// After the metric's row transform and PCA, in the internal numbering.
    pub(crate) points: Points,
    /// Whether `points` are PCA scores (columns by decreasing variance).
    pub(crate) reduced: bool,
    /// The fitted PCA, kept when [`EmbedParams::keep_reference`] asks for it.
    pub(crate) basis: Option<prep::Pca>,
    /// The internal numbering when it is not the input's: point `r` is input point
    /// `order[r]`.
    pub(crate) order: Option<Vec<u32>>,
}

/// Stage 3's result: the neighbours on the host, or on the device (n × k indices and
/// squared distances) where the gpu backend keeps them for its affinities.
pub(crate) enum Found {
    Host(Neighbors),
    Device(CudaSlice<i32>, CudaSlice<f32>),
}

/// Stages 2–4 in point mode: PCA, kNN (or the neighbours given, [`EmbedParams::knn_given`]),
/// perplexity calibration and symmetrisation.
///
/// Where they run: the cpu backend on the host; gpu and hybrid run PCA and kNN on the device
/// (the kNN is the costly stage: 10.6 s on the H100 at 1.3M points, where the CPU's exact kNN
/// grows as n² and HNSW took 52 s for 70k points on 2 cores). Only gpu keeps P on the
/// device: hybrid needs P in CSR on the host for its CSB attraction, so its neighbours come
/// down (they do anyway, for the quality measure) and its affinities are computed on the
/// host, which builds CSR directly. Measured on the H100's 16-core host (benches/RESULTS.md):
/// 0.43–0.55 s for MNIST 70k and 13.6 s at 1.3M, against 0.003 s and 0.045 s on the device;
/// at scale, downloading the device's HYB and converting it to CSR would be cheaper.
pub(crate) fn prepare_points(
    points: Points,
    params: &EmbedParams,
    backend: BackendKind,
    seconds: &mut StageSeconds,
    progress: &dyn Progress,
) -> Result<Prepared> {
    if params.affinities == AffinityMethod::Exact {
        return prepare_exact(points, params, backend, seconds);
    }
    let given = params.knn_given.as_deref();
    if given.is_none() {
        check_enough(points.n, params)?;
    }
    let mut r = reduce(points, params, backend, seconds)?;
    let t = seconds.start("knn");
    let mut notes = Vec::new();
    let (found, report) = match given {
        Some(given) => {
            // Renumbered when the points are; as given (not copied: 7.2 GB at 10M and
            // k = 90, which took 5 s) where the device takes them.
            let nb = match &r.order {
                Some(order) => Cow::Owned(knn::precomputed::permuted(given, order)),
                None => Cow::Borrowed(given),
            };
            let report = KnnReport {
                method: "given",
                k: nb.k,
                recall_sample: None,
                recall_sample_size: None,
                ivf: None,
            };
            // The device calibrates one perplexity, as after its own search.
            let found = match backend == BackendKind::Gpu && params.multiscale.is_empty() {
                true => upload_neighbors(&nb)?,
                false => Found::Host(nb.into_owned()),
            };
            (found, report)
        }
        // The device calibrates one perplexity; multiscale P is made on the host.
        None => {
            let on_device = backend == BackendKind::Gpu && params.multiscale.is_empty();
            search(&mut r, params, backend, on_device, &mut notes, progress)?
        }
    };
    seconds.knn = t.elapsed().as_secs_f64();
    // NCCL's set-up for a run over several GPUs, if no search let it start yet.
    crate::gpu::comm::go_ahead();
    let t = seconds.start("affinities");
    let mut pca_init = None;
    let (p, nb) = match found {
        Found::Device(indices, distances) => {
            let (made, init) = pca_init_beside(&r, params, seconds, |seconds| {
                gpu_affinities(indices, distances, r.points.n, report.k, params, seconds)
            });
            pca_init = init;
            made?
        }
        Found::Host(nb) => {
            let p = P::from_csr(affinity::from_neighbors_multiscale(&nb, &params.scales())?);
            seconds.affinities = t.elapsed().as_secs_f64();
            (p, InputNeighbors::Host(nb))
        }
    };
    Ok(Prepared {
        p,
        points: Some(r.points),
        reduced: r.reduced,
        basis: r.basis,
        neighbors: Some(nb),
        knn: Some(report),
        order: r.order,
        notes,
        pca_init,
    })
}

/// Neighbours found or given on the host (HNSW's, `--knn-from`'s) on the device as its
/// search leaves them (n × k `i32` indices, `f32` squared distances, rows ascending), for
/// the device's affinities. With `--knn-from` on the host, P took most of a 176 s run of
/// 10M points on the H100's 16-core host, where the search's own run took 34 s
/// (`benches/RESULTS.md`); given neighbours make the same P as the search's up to the
/// bisection's rounding (they come back squared in the input's units, the search's are in
/// units a power of two apart).
fn upload_neighbors(nb: &Neighbors) -> Result<Found> {
    if nb.n >= i32::MAX as usize {
        return Err(Error::param(
            "n",
            format!("the GPU affinities need 0 < n < 2^31 points, got {}", nb.n),
        ));
    }
    let gpu = Gpu::get()?;
    // Every index is below n < 2^31: the same bits as i32.
    let indices: &[i32] = bytemuck::cast_slice(&nb.indices);
    let indices = crate::gpu::memory::htod_staged(gpu, indices)?;
    let distances = crate::gpu::memory::htod_staged(gpu, &nb.distances)?;
    Ok(Found::Device(indices, distances))
}

/// Runs `stage` (the device's affinities) on this thread while the pool fits the PCA
/// initialisation of `r`'s points, where the run will need one made on the host (points not
/// already PCA scores): the host waits on the device there anyway, and the PCA of 10M × 50
/// points takes about 0.4 s. Returns the stage's result and the initialisation (`None` when
/// none was needed or it failed: [`super::initialise`] then makes it itself and reports
/// the error); the wait for it, if the stage ended first, is counted in `seconds.init`.
pub(crate) fn pca_init_beside<T>(
    r: &Reduced,
    params: &EmbedParams,
    seconds: &mut StageSeconds,
    stage: impl FnOnce(&mut StageSeconds) -> T,
) -> (T, Option<Vec<f32>>) {
    let dims = params.dims;
    if params.init != crate::init::InitKind::Pca || r.reduced || r.points.d < dims {
        return (stage(seconds), None);
    }
    let mut init = None;
    // The scope returns once the spawned PCA is done too (this thread helps with its work).
    let (made, stage_end) = rayon::in_place_scope(|s| {
        s.spawn(|_| init = crate::init::pca(&r.points, dims).ok());
        (stage(seconds), std::time::Instant::now())
    });
    seconds.init = stage_end.elapsed().as_secs_f64();
    (made, init)
}

/// Stages 2 and 4 with exact affinities ([`affinity::exact`]): PCA, then P over every pair,
/// on the host on the cpu backend and on the device on gpu and hybrid
/// ([`affinity::gpu::exact_affinities_gpu`]: the bisection's n² exponentials per step are
/// the whole cost, and the device's P equals the host's to rounding). Both return P to the
/// host as CSR, which hybrid's CSB attraction needs anyway and gpu lays out on the device
/// as any P. Refused beyond the points whose n² pairs fit the host's memory (and on gpu the
/// device's, where P then lives), with the kNN as the way round. No kNN runs, so the report has no preservation measure.
fn prepare_exact(
    points: Points,
    params: &EmbedParams,
    backend: BackendKind,
    seconds: &mut StageSeconds,
) -> Result<Prepared> {
    if !params.multiscale.is_empty() || params.knn_given.is_some() {
        return Err(Error::param(
            "affinities",
            "exact affinities take one perplexity and no neighbours given",
        ));
    }
    if params.metric == prep::Metric::InnerProduct {
        return Err(Error::param(
            "affinities",
            "exact affinities are calibrated on Euclidean distances; with --metric \
             inner-product use the kNN affinities (the default, --affinities knn)",
        ));
    }
    let held = (points.n * points.d * 4) as u64;
    if let Some(avail) = crate::embed::memory::host_available(held) {
        exact_fits(
            points.n,
            avail,
            affinity::exact::BYTES_PER_PAIR,
            "this machine",
        )?;
    }
    if backend == BackendKind::Gpu {
        // P is laid out on the device for the attraction: the device's limit, checked
        // before the work rather than met at the upload.
        let free = Gpu::get()?.free_memory().map_err(Error::from)? as u64;
        let what = "the GPU (--backend hybrid keeps P on the host)";
        exact_fits(points.n, free, affinity::exact::DEVICE_BYTES_PER_PAIR, what)?;
    }
    let r = reduce(points, params, backend, seconds)?;
    let t = seconds.start("affinities");
    let p = P::from_csr(match backend {
        BackendKind::Gpu | BackendKind::Hybrid => {
            affinity::gpu::exact_affinities_gpu(Gpu::get()?, &r.points, params.perplexity)?
        }
        _ => affinity::exact_affinities(&r.points, params.perplexity)?,
    });
    seconds.affinities = t.elapsed().as_secs_f64();
    Ok(Prepared {
        p,
        points: Some(r.points),
        reduced: r.reduced,
        neighbors: None,
        knn: None,
        order: r.order,
        notes: Vec::new(),
        basis: r.basis,
        pca_init: None,
    })
}

/// Refuses exact affinities over `n` points when their pairs at `per_pair` bytes each
/// exceed the `bytes` that `place` offers, naming the limit and the kNN affinities.
fn exact_fits(n: usize, bytes: u64, per_pair: u64, place: &str) -> Result<()> {
    let limit = affinity::exact::max_points_at(bytes, per_pair);
    if n > limit {
        return Err(Error::Data(format!(
            "exact affinities over {n} points need {:.1} GB ({per_pair} bytes per pair); \
             {place} allows about {limit} points: use the kNN affinities (the default, \
             --affinities knn)",
            (n as f64).powi(2) * per_pair as f64 / 1e9,
        )));
    }
    Ok(())
}

/// t-SNE needs more points than neighbours.
pub(crate) fn check_enough(n: usize, params: &EmbedParams) -> Result<()> {
    let k = params.k();
    if n <= k {
        return Err(Error::Data(format!(
            "{n} points are too few for perplexity {}: t-SNE needs more than k = {k} \
             points (k = ⌈3·perplexity⌉); lower --perplexity",
            params.perplexity
        )));
    }
    Ok(())
}

/// Stage 2: the metric's row transform, PCA (on the device on gpu and hybrid) and the
/// internal numbering of `--order locality`. For the inner product the PCA is uncentred
/// ([`prep::Pca::fit_uncentred`], on the host for every backend): centring would change
/// the inner products the kNN ranks by.
pub(crate) fn reduce(
    mut points: Points,
    params: &EmbedParams,
    backend: BackendKind,
    seconds: &mut StageSeconds,
) -> Result<Reduced> {
    let on_gpu = backend != BackendKind::Cpu;
    let t = seconds.start("pca");
    params.metric.apply(&mut points)?;
    let reduced = params.reduces(points.d);
    let inner = params.metric == prep::Metric::InnerProduct;
    let (points, basis) = match params.pca {
        Some(m) if reduced && (params.keep_reference || inner) => {
            let fit = if inner {
                prep::Pca::fit_uncentred(&points, m)?
            } else {
                prep::Pca::fit(&points, m)?
            };
            (
                fit.transform(&points)?,
                params.keep_reference.then_some(fit),
            )
        }
        Some(m) if reduced && on_gpu => (prep::gpu::pca_gpu(Gpu::get()?, &points, m)?, None),
        Some(m) if reduced => (prep::pca(&points, m)?, None),
        _ => (points, None),
    };
    seconds.pca = t.elapsed().as_secs_f64();
    let t = seconds.start("order");
    let (points, order) = match params.order {
        Some(PointOrder::Locality) => {
            let order = knn::pca_tree_order(&points.data, points.n, points.d);
            (points.permuted(&order), Some(order))
        }
        _ => (points, None),
    };
    seconds.order = t.elapsed().as_secs_f64();
    Ok(Reduced {
        points,
        reduced,
        basis,
        order,
    })
}

/// Stage 3: the k = ⌈3·perplexity⌉ nearest neighbours of the reduced points by the method
/// `params.knn` names and the metric's key ([`knn::Key`]), on the device on gpu and hybrid
/// (on the host for HNSW, and for more neighbours than the GPU's lists hold, with a note in
/// `notes`); `keep_on_device` leaves the neighbours on the device. `--order cells`
/// renumbers `r` by the approximate kNN's cells.
pub(crate) fn search(
    r: &mut Reduced,
    params: &EmbedParams,
    backend: BackendKind,
    keep_on_device: bool,
    notes: &mut Vec<String>,
    progress: &dyn Progress,
) -> Result<(Found, KnnReport)> {
    let k = params.k();
    let on_gpu = backend != BackendKind::Cpu;
    let points = &r.points;
    let key = knn::Key::new(params.metric, points);
    // Resolved by `embed` (`Auto` never reaches here from it).
    let method = params.knn.resolve(points.n, on_gpu);
    let mut report = KnnReport {
        method: match method {
            KnnMethod::Hnsw => "hnsw",
            KnnMethod::Approx => "approx",
            _ => "exact",
        },
        k,
        recall_sample: None,
        recall_sample_size: None,
        ivf: None,
    };
    // HNSW searches on the host, and so does a search for more neighbours than the GPU's
    // lists hold (multiscale perplexities: k = 900 for 30,300); the neighbours go up to the
    // device where the backend keeps them.
    let on_device = on_gpu && method != KnnMethod::Hnsw && k <= knn::gpu::MAX_K;
    if on_gpu && method != KnnMethod::Hnsw && !on_device {
        notes.push(format!(
            "k = {k} is more than the GPU kNN keeps ({}): the neighbours were searched on the \
             host",
            knn::gpu::MAX_K
        ));
    }
    let found = if on_device {
        let gpu = Gpu::get()?;
        let (indices, distances) = match method {
            KnnMethod::Approx => {
                // The sweep splits over the run's GPUs (`--gpus`), as the optimisation does.
                let ivf = crate::knn::ivf::IvfParams {
                    gpus: params.gpus.unwrap_or(1),
                    ..params.ivf.clone()
                };
                let approx = ivf::approx_device(gpu, points, k, key, &ivf, progress)?;
                report.recall_sample = Some(approx.stats.recall_sample);
                report.recall_sample_size = Some(approx.stats.sample);
                report.ivf = Some(approx.stats);
                if params.order == Some(PointOrder::Cells) {
                    let input = std::mem::replace(&mut r.points, approx.sorted_points);
                    crate::points::drop_beside(input);
                    crate::trace::event(|| "knn: the input's points let go".into());
                    r.order = Some(approx.cells.order);
                    (approx.indices, approx.distances)
                } else {
                    approx.unsorted(gpu)?
                }
            }
            _ => {
                let dev = crate::gpu::memory::htod_staged(gpu, &points.data)?;
                crate::trace::event(|| "knn: the points on the device".into());
                knn::gpu::exact_device_with(gpu, &dev, points.n, points.d, k, key, None, progress)?
            }
        };
        gpu.stream.synchronize()?;
        crate::trace::event(|| "knn: done".into());
        if keep_on_device {
            Found::Device(indices, distances)
        } else {
            Found::Host(download_neighbors(&indices, &distances, r.points.n, k)?)
        }
    } else {
        let nb = match method {
            KnnMethod::Hnsw => {
                hnsw_with_recall(points, k, key, params.seed, &mut report, progress)?
            }
            KnnMethod::Approx => {
                let size = recall_size(points);
                let (nb, stats) =
                    knn::ivf_cpu::approx_cpu(points, k, key, &params.ivf, size, progress)?;
                report.recall_sample = Some(stats.recall_sample);
                report.recall_sample_size = Some(stats.sample);
                report.ivf = Some(stats);
                nb
            }
            _ => knn::exact_by(points, k, key, progress)?,
        };
        if on_gpu && keep_on_device {
            upload_neighbors(&nb)?
        } else {
            Found::Host(nb)
        }
    };
    Ok((found, report))
}

/// Multiply-adds the CPU's recall estimate of HNSW may spend: a sample of
/// `RECALL_WORK / (n · d)` points (at most 10,000, at least 100) scanned against all n.
/// About 2 s on 16 cores.
const RECALL_WORK: usize = 20_000_000_000;

/// Points of the host's recall sample: `RECALL_WORK / (n · d)`, 100 to 10,000.
fn recall_size(points: &Points) -> usize {
    (RECALL_WORK / (points.n * points.d).max(1)).clamp(100, 10_000)
}

/// HNSW on the host by `key`, its recall measured on a seeded sample by exact scans.
fn hnsw_with_recall(
    points: &Points,
    k: usize,
    key: knn::Key,
    seed: u64,
    report: &mut KnnReport,
    progress: &dyn Progress,
) -> Result<Neighbors> {
    let params = knn::HnswParams::default();
    let nb = knn::hnsw_with(points, k, seed, &params, key, progress)?;
    let (recall, size) = knn::ivf::recall_by_scan(points, key, &nb, recall_size(points), seed);
    report.recall_sample = Some(recall);
    report.recall_sample_size = Some(size);
    Ok(nb)
}

/// Affinities on the GPU from device neighbours: P is born in HYB on the device, whole, or
/// in a run over several GPUs (`--gpus`) in their row blocks, each on its GPU
/// ([`affinity::gpu::affinities_device`]). Each point's nearest few neighbours are packed
/// first, for the quality measure, and stay on the device until the points are let go
/// ([`InputNeighbors::send_down`]); then the stage consumes the neighbours, freeing each
/// array once read.
fn gpu_affinities(
    indices: CudaSlice<i32>,
    distances: CudaSlice<f32>,
    n: usize,
    k: usize,
    params: &EmbedParams,
    seconds: &mut StageSeconds,
) -> Result<(P, InputNeighbors)> {
    let gpu = Gpu::get()?;
    let t = seconds.start("affinities");
    let keep = k.min(super::QUALITY_K);
    let packed = crate::knn::gpu::leading_neighbors(gpu, (&indices, &distances), n, k, keep)?;
    let nb = InputNeighbors::Device { packed, n, keep };
    let world = params.gpus.unwrap_or(1);
    let blocks = match world {
        1 => vec![(0..n, gpu)],
        _ => {
            let part = crate::backend::multi::Partition::new(n, world)?;
            (0..world)
                .map(|r| Ok((part.rows(r), Gpu::device(r)?)))
                .collect::<Result<Vec<_>>>()?
        }
    };
    let u = params.perplexity;
    let (mut blocks, stats) =
        affinity::gpu::affinities_device(gpu, indices, distances, n, k, u, &blocks)?;
    let p = match world {
        1 => P::from_hyb(blocks.swap_remove(0), stats.p_log_p, stats.nnz),
        _ => P::from_hyb_blocks(blocks, stats.p_log_p, stats.nnz),
    };
    seconds.affinities = t.elapsed().as_secs_f64();
    Ok((p, nb))
}

/// The input's neighbours the quality measure compares the embedding's with: on the host;
/// packed on the device (each point's `keep` nearest, n × keep); or on their way down.
pub(crate) enum InputNeighbors {
    Host(Neighbors),
    Device {
        packed: (CudaSlice<i32>, CudaSlice<f32>),
        n: usize,
        keep: usize,
    },
    Coming(mpsc::Receiver<Result<Neighbors>>),
}

impl InputNeighbors {
    /// Starts the device's neighbours on their way to the host, copied on a stream of their
    /// own by a job of the pool, beside the work queued after them (at 10M points the 0.8 GB
    /// took 0.36 s on one H200). The run calls it once the points are let go, so that the
    /// host never holds both (10M × 50 from Python, where the caller's array lives on beside
    /// the kNN's sorted copy: 4.80 GiB peak against 4.10 for the CLI, which frees its input).
    pub(crate) fn send_down(self) -> Result<Self> {
        Ok(match self {
            InputNeighbors::Device { packed, n, keep } => {
                InputNeighbors::Coming(copy_beside(packed, n, keep)?)
            }
            other => other,
        })
    }

    /// The neighbours, once on the host. The copy is a job of the pool this thread may
    /// belong to (on one thread, the only one): the wait runs the pool's queued jobs.
    pub(crate) fn wait(self) -> Result<Neighbors> {
        let coming = match self {
            InputNeighbors::Host(nb) => return Ok(nb),
            InputNeighbors::Device { packed, n, keep } => copy_beside(packed, n, keep)?,
            InputNeighbors::Coming(coming) => coming,
        };
        loop {
            match coming.try_recv() {
                Ok(got) => return got,
                Err(mpsc::TryRecvError::Disconnected) => {
                    return Err(Error::Data(
                        "the input's neighbours for the quality measure never came down".into(),
                    ))
                }
                Err(mpsc::TryRecvError::Empty) => {
                    if rayon::yield_now() != Some(rayon::Yield::Executed) {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                }
            }
        }
    }
}

/// The packed device neighbours (n × `keep`) copied to the host on a stream of their own by
/// a job of the pool; the answer comes through the channel.
fn copy_beside(
    packed: (CudaSlice<i32>, CudaSlice<f32>),
    n: usize,
    keep: usize,
) -> Result<mpsc::Receiver<Result<Neighbors>>> {
    let gpu = Gpu::get()?;
    // Waits for the packing, and for nothing queued after it.
    let side = gpu.stream.fork()?;
    let (sent, coming) = mpsc::sync_channel(1);
    rayon::spawn(move || {
        let got = copy_down(gpu, &side, (&packed.0, &packed.1), n, keep);
        let _ = sent.send(got);
    });
    Ok(coming)
}

/// The device neighbours (n × k indices and squared distances, rows ascending) on the
/// host, for a host stage that reads them all, copied through a page-locked buffer
/// ([`crate::gpu::memory::dtoh_staged`]). (The quality measure's few come down packed,
/// beside the optimisation: [`InputNeighbors::send_down`].)
pub(crate) fn download_neighbors(
    indices: &CudaSlice<i32>,
    distances: &CudaSlice<f32>,
    n: usize,
    k: usize,
) -> Result<Neighbors> {
    let gpu = Gpu::get()?;
    copy_down(gpu, &gpu.stream, (indices, distances), n, k)
}

/// The first n × `keep` device neighbours (rows of `keep`) on the host, copied on `stream`.
fn copy_down(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    (indices, distances): (&CudaSlice<i32>, &CudaSlice<f32>),
    n: usize,
    keep: usize,
) -> Result<Neighbors> {
    let mut got_indices = vec![0i32; n * keep];
    let mut got_distances = vec![0f32; n * keep];
    let (indices, distances) = (indices.slice(..n * keep), distances.slice(..n * keep));
    crate::gpu::memory::dtoh_staged_on(gpu, stream, &indices, &mut got_indices)?;
    crate::gpu::memory::dtoh_staged_on(gpu, stream, &distances, &mut got_distances)?;
    Ok(Neighbors {
        n,
        k: keep,
        indices: got_indices.into_iter().map(|j| j as u32).collect(),
        distances: got_distances,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::init::InitKind;

    fn reduced(n: usize, d: usize, is_scores: bool) -> Reduced {
        let data = (0..n * d)
            .map(|i| ((i * 7919) % 101) as f32 * 0.1 + (i % d) as f32)
            .collect();
        Reduced {
            points: Points::new(n, d, data),
            reduced: is_scores,
            basis: None,
            order: None,
        }
    }

    #[test]
    fn pca_init_beside_a_stage_equals_the_init_after_it() {
        let r = reduced(5000, 12, false);
        let params = EmbedParams::default();
        let mut seconds = StageSeconds::default();
        let (out, init) = pca_init_beside(&r, &params, &mut seconds, |s| {
            s.affinities = 1.0;
            42
        });
        assert_eq!(out, 42);
        assert_eq!(seconds.affinities, 1.0, "the stage sees the run's seconds");
        let want = crate::init::pca(&r.points, params.dims).unwrap();
        assert_eq!(init, Some(want));
        assert!(seconds.init >= 0.0);
    }

    #[test]
    fn no_pca_init_beside_where_none_is_made_on_the_host() {
        let mut seconds = StageSeconds::default();
        // Scores already: the initialisation takes their leading columns, no PCA.
        let scores = reduced(100, 12, true);
        let (_, init) = pca_init_beside(&scores, &EmbedParams::default(), &mut seconds, |_| ());
        assert_eq!(init, None);
        let random = EmbedParams {
            init: InitKind::Random,
            ..Default::default()
        };
        let (_, init) = pca_init_beside(&reduced(100, 12, false), &random, &mut seconds, |_| ());
        assert_eq!(init, None);
    }
}
