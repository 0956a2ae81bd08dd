//! The cells on the device: k-means (each iteration's assignment on the GPU, its update on
//! the host), every point to its nearest centroid, and the points sorted by cell, split
//! for the sweep.

use cudarc::driver::{CudaSlice, LaunchConfig};
use rand::{rngs::StdRng, SeedableRng};

use crate::gpu::kernels::ivf::{IvfAssign, IvfGather, THREADS};
use crate::gpu::memory::alloc_uninit;
use crate::gpu::{Gpu, GpuError};
use crate::knn::gpu::fused::Split;
use crate::knn::gpu::{key_rows, KeyRows, Shape};
use crate::knn::ivf::{self as host, IvfParams};
use crate::{Points, Result};

/// The cells' centroids (`lists` × d, or fewer when the sample has fewer distinct points):
/// k-means on a seeded sample of `points`, each iteration's assignment on `gpu` and its
/// update on the host.
pub(super) fn kmeans(
    gpu: &Gpu,
    points: &Points,
    lists: usize,
    params: &IvfParams,
) -> Result<Vec<f32>> {
    let d = points.d;
    let rows = host::kmeans_sample(points.n, lists, params.sample_per_list, params.seed);
    let sample_x = points.gather(&rows).data;
    let sample_dev = gpu.stream.clone_htod(&sample_x)?;
    let mut centroids = host::initial_centroids(&sample_x, d, lists, params.seed);
    let mut rng = StdRng::seed_from_u64(params.seed);
    for _ in 0..params.kmeans_iters {
        let labels = assign(gpu, &sample_dev, rows.len(), d, &centroids)?;
        host::update_centroids(&sample_x, d, &labels, &mut centroids, &mut rng);
    }
    Ok(centroids)
}

/// Nearest centroid of each of the n points `x` (device) among `centroids` (host).
pub(super) fn assign(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    n: usize,
    d: usize,
    centroids: &[f32],
) -> Result<Vec<u32>, GpuError> {
    let s = &gpu.stream;
    let lists = centroids.len() / d;
    let c = s.clone_htod(centroids)?;
    let mut labels = s.alloc_zeros::<i32>(n)?;
    IvfAssign {
        x,
        n,
        d,
        centroids: &c,
        lists,
        labels: &mut labels,
    }
    .launch(
        gpu,
        s,
        LaunchConfig {
            grid_dim: (n.div_ceil(THREADS) as u32, 1, 1),
            block_dim: (THREADS as u32, 1, 1),
            shared_mem_bytes: 0,
        },
    )?;
    Ok(s.clone_dtoh(&labels)?
        .into_iter()
        .map(|l| l as u32)
        .collect())
}

/// The points sorted by cell on `gpu`, gathered there from `x` (the points in input
/// order, uploaded for the k-means assignment) by `order` (sorted position → input row),
/// and the key's rows split for the sweep. (Uploading the host's sorted copy instead took
/// 0.1 s at 1.3M points, a staged copy of n × d floats.)
pub(super) fn sweep_inputs(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    order: &[u32],
    shape: Shape,
) -> Result<(CudaSlice<f32>, Split), GpuError> {
    let s = &gpu.stream;
    let (n, d) = (shape.n, shape.d);
    let order: Vec<i32> = order.iter().map(|&i| i as i32).collect();
    let order = s.clone_htod(&order)?;
    let mut sorted = alloc_uninit::<f32>(gpu, n * d)?;
    IvfGather {
        x,
        n,
        d,
        order: &order,
        out: &mut sorted,
    }
    .launch(gpu, s, gpu.config(n * d))?;
    drop(order);
    let split = split_rows(gpu, &sorted, shape)?;
    Ok((sorted, split))
}

/// The key's rows of the sorted points `sorted` (on `gpu`), split for the sweep.
pub(super) fn split_rows(
    gpu: &Gpu,
    sorted: &CudaSlice<f32>,
    shape: Shape,
) -> Result<Split, GpuError> {
    let (n, d) = (shape.n, shape.d);
    let KeyRows { rows, terms } = key_rows(gpu, sorted, n, d, shape.key, n)?;
    Split::new(gpu, &rows, &terms, n, d, &[])
}
