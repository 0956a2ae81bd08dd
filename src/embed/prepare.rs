//! Stages 2–4 in point mode (DESIGN §1.2–1.4): PCA, kNN, perplexity calibration and
//! symmetrisation, each placed on the host or the device by the backend.

use std::time::Instant;

use cudarc::driver::CudaSlice;

use super::{EmbedParams, KnnMethod, PointOrder, Prepared};
use crate::affinity;
use crate::backend::BackendKind;
use crate::gpu::Gpu;
use crate::knn::{self, gpu::ivf, Neighbors};
use crate::progress::Progress;
use crate::report::{KnnReport, StageSeconds};
use crate::sparse::P;
use crate::{prep, Error, Points, Result};

/// Stages 2–4 in point mode: PCA, kNN, perplexity calibration and symmetrisation.
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
    mut points: Points,
    params: &EmbedParams,
    backend: BackendKind,
    seconds: &mut StageSeconds,
    progress: &dyn Progress,
) -> Result<Prepared> {
    let k = params.k();
    if points.n <= k {
        return Err(Error::Data(format!(
            "{} points are too few for perplexity {}: t-SNE needs more than k = {k} \
             points (k = ⌈3·perplexity⌉); lower --perplexity",
            points.n, params.perplexity
        )));
    }
    let on_gpu = backend != BackendKind::Cpu;
    let t = Instant::now();
    params.metric.apply(&mut points)?;
    let reduced = params.pca.is_some_and(|m| points.d > m);
    let points = match params.pca {
        Some(m) if reduced && on_gpu => prep::gpu::pca_gpu(Gpu::get()?, &points, m)?,
        Some(m) if reduced => prep::pca(&points, m)?,
        _ => points,
    };
    seconds.pca = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let (mut points, mut order) = match params.order {
        Some(PointOrder::Locality) => {
            let order = knn::pca_tree_order(&points.data, points.n, points.d);
            (points.permuted(&order), Some(order))
        }
        _ => (points, None),
    };
    seconds.order = t.elapsed().as_secs_f64();
    // Resolved by `embed` (`Auto` never reaches here from it).
    let method = params.knn.resolve(points.n, on_gpu);
    let t = Instant::now();
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
    let nb = if on_gpu {
        let gpu = Gpu::get()?;
        let (indices, distances) = match method {
            KnnMethod::Approx => {
                let approx = ivf::approx_device(gpu, &points, k, &params.ivf, progress)?;
                report.recall_sample = Some(approx.stats.recall_sample);
                report.recall_sample_size = Some(approx.stats.sample);
                report.ivf = Some(approx.stats);
                if params.order == Some(PointOrder::Cells) {
                    points = approx.sorted_points;
                    order = Some(approx.cells.order);
                    (approx.indices, approx.distances)
                } else {
                    approx.unsorted(gpu)?
                }
            }
            KnnMethod::Hnsw => {
                let nb = hnsw_with_recall(&points, k, params.seed, &mut report, progress)?;
                let idx: Vec<i32> = nb.indices.iter().map(|&j| j as i32).collect();
                (
                    gpu.stream.clone_htod(&idx)?,
                    gpu.stream.clone_htod(&nb.distances)?,
                )
            }
            _ => {
                let dev = gpu.stream.clone_htod(&points.data)?;
                knn::gpu::exact_device_with(gpu, &dev, points.n, points.d, k, None, progress)?
            }
        };
        gpu.stream.synchronize()?;
        if backend == BackendKind::Gpu {
            seconds.knn = t.elapsed().as_secs_f64();
            let (p, nb) = gpu_affinities(&indices, &distances, points.n, k, params, seconds)?;
            return Ok(Prepared {
                p,
                points: Some(points),
                reduced,
                neighbors: Some(nb),
                knn: Some(report),
                order,
            });
        }
        download_neighbors(&indices, &distances, points.n, k)?
    } else {
        match method {
            KnnMethod::Hnsw => hnsw_with_recall(&points, k, params.seed, &mut report, progress)?,
            KnnMethod::Approx => {
                let size = recall_size(&points);
                let (nb, stats) =
                    knn::ivf_cpu::approx_cpu(&points, k, &params.ivf, size, progress)?;
                report.recall_sample = Some(stats.recall_sample);
                report.recall_sample_size = Some(stats.sample);
                report.ivf = Some(stats);
                nb
            }
            _ => knn::exact(&points, k, progress)?,
        }
    };
    seconds.knn = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let p = P::from_csr(affinity::from_neighbors(&nb, params.perplexity)?);
    seconds.affinities = t.elapsed().as_secs_f64();
    Ok(Prepared {
        p,
        points: Some(points),
        reduced,
        neighbors: Some(nb),
        knn: Some(report),
        order,
    })
}

/// Multiply-adds the CPU's recall estimate of HNSW may spend: a sample of
/// `RECALL_WORK / (n · d)` points (at most 10,000, at least 100) scanned against all n.
/// About 2 s on 16 cores.
const RECALL_WORK: usize = 20_000_000_000;

/// Points of the host's recall sample: `RECALL_WORK / (n · d)`, 100 to 10,000.
fn recall_size(points: &Points) -> usize {
    (RECALL_WORK / (points.n * points.d).max(1)).clamp(100, 10_000)
}

/// HNSW on the host, its recall measured on a seeded sample by exact scans.
fn hnsw_with_recall(
    points: &Points,
    k: usize,
    seed: u64,
    report: &mut KnnReport,
    progress: &dyn Progress,
) -> Result<Neighbors> {
    let nb = knn::hnsw(points, k, seed, progress)?;
    let (recall, size) = knn::ivf::recall_by_scan(points, &nb, recall_size(points), seed);
    report.recall_sample = Some(recall);
    report.recall_sample_size = Some(size);
    Ok(nb)
}

/// Affinities on the GPU from device neighbours: P is born in HYB on the device. The
/// neighbours also come down, for the quality measure.
fn gpu_affinities(
    indices: &CudaSlice<i32>,
    distances: &CudaSlice<f32>,
    n: usize,
    k: usize,
    params: &EmbedParams,
    seconds: &mut StageSeconds,
) -> Result<(P, Neighbors)> {
    let gpu = Gpu::get()?;
    let t = Instant::now();
    let (hyb, stats) =
        affinity::gpu::affinities_device(gpu, indices, distances, n, k, params.perplexity)?;
    gpu.stream.synchronize()?;
    seconds.affinities = t.elapsed().as_secs_f64();
    let nb = download_neighbors(indices, distances, n, k)?;
    Ok((P::from_hyb(hyb, stats.p_log_p, stats.nnz), nb))
}

/// Device neighbours (n × k indices and squared distances) to the host.
fn download_neighbors(
    indices: &CudaSlice<i32>,
    distances: &CudaSlice<f32>,
    n: usize,
    k: usize,
) -> Result<Neighbors> {
    let s = &Gpu::get()?.stream;
    Ok(Neighbors {
        n,
        k,
        indices: s
            .clone_dtoh(indices)?
            .into_iter()
            .map(|j| j as u32)
            .collect(),
        distances: s.clone_dtoh(distances)?,
    })
}
