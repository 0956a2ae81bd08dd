//! Exact kNN on the GPU, two paths with one contract:
//!
//! - `fused` (d ≤ 64 on sm_80+, the usual case after PCA, from `FUSED_FROM` points): 3xTF32
//!   keys on the tensor cores with the selection behind them in one kernel; 2.7 s for
//!   1M × 50, k = 90 on the H100.
//! - `tiled` (`kernels/knn.cu`, any d): cuBLAS SGEMM distance tiles and a top-k selection
//!   that keeps the K best references of every query across tiles; 4.8 s for the same.
//!
//! Neither holds an n × n buffer; both end in `knn_finish` (`Answer::finish`).
//!
//! With the points centred (distances do not change, the norms shrink), the ranking key of
//! reference $r$ for query $q$ is $s = \|r\|^2 - 2\,q \cdot r$, i.e. $\|q - r\|^2$ minus the
//! per-query constant $\|q\|^2$. Both paths keep, per query, a sorted list of the K best
//! keys (K = k + margin, rounded up to a multiple of 32). The key loses digits to
//! cancellation for near neighbours, so the last step recomputes the K candidates'
//! distances directly (in double, rounded once to f32), ranks them and keeps k: the result
//! equals a brute-force f64 kNN except for distances tied in f32, provided the key's error
//! (about 1e-7 × ‖x − mean‖²) reorders no more than the margin across the k-th neighbour.

use cudarc::driver::{CudaSlice, LaunchConfig};

pub(crate) mod fused;
pub mod ivf;
mod query;
pub mod refine;
mod tiled;

pub(crate) use fused::sweep_variant;
pub use query::query_gpu;
pub use tiled::Tiles;

use super::Neighbors;
use crate::gpu::kernels::knn::{KnnFill, KnnFinish, MAX_KR, WARPS};
use crate::gpu::launch::DeviceIn;
use crate::gpu::{Gpu, GpuError};
use crate::progress::{Progress, Silent};
use crate::{Error, Points, Result};

/// Extra candidates kept beyond k, so that the exact recomputation can reorder the keys'
/// near-ties across the k-th neighbour.
const MARGIN: usize = 8;
/// Largest list the selection kernels keep.
const MAX_LIST: usize = 32 * MAX_KR;
/// Largest k the GPU kNN accepts.
pub const MAX_K: usize = MAX_LIST - MARGIN;
/// Device memory left to cuBLAS and the driver beyond what this stage allocates.
const SLACK: usize = 256 << 20;

/// Fewest points for which the fused path is taken. On the H100 (d = 50, k = 90) it took
/// 2.72 s against the SGEMM path's 4.78 s at 1M points, but 0.058 s against 0.033 s at 70k,
/// where a sweep of all blocks is two waves and the lists' filling phase dominates.
const FUSED_FROM: usize = 250_000;

/// Which steps run and how, for benchmarks that split the time (`ALL_STAGES` in every real
/// call).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stages {
    /// The fused tensor-core path ([`fused`]) where it applies, from this many points on;
    /// the other fields then do not matter. `usize::MAX`: never.
    pub fused_from: usize,
    pub gemm: bool,
    pub select: bool,
    /// The symmetric schedule of [`tiled`] when the tiles are square (or chosen there) and
    /// every query's list fits in device memory.
    pub symmetric: bool,
}

const ALL_STAGES: Stages = Stages {
    fused_from: FUSED_FROM,
    gemm: true,
    select: true,
    symmetric: true,
};

/// Length of the per-query candidate list for k neighbours.
fn list_len(k: usize) -> usize {
    (k + MARGIN).div_ceil(32) * 32
}

fn check_params(n: usize, d: usize, k: usize) -> Result<()> {
    if k == 0 {
        return Err(Error::param("k", "must be at least 1"));
    }
    if k >= n {
        return Err(Error::param(
            "k",
            format!("{k} neighbours need at least {} points, got {n}", k + 1),
        ));
    }
    if k > MAX_K {
        return Err(Error::param(
            "k",
            format!("the GPU kNN keeps at most {MAX_K} neighbours, got {k}"),
        ));
    }
    if d == 0 {
        return Err(Error::param("d", "points need at least one dimension"));
    }
    if n > i32::MAX as usize || d > i32::MAX as usize {
        return Err(Error::param(
            "n",
            format!("{n} × {d} is beyond 32-bit indices"),
        ));
    }
    Ok(())
}

/// Exact kNN on the GPU, host in/out (same contract as [`super::exact`] on the CPU): row i
/// holds the k nearest other points of i, squared Euclidean distances ascending.
pub fn exact_gpu(points: &Points, k: usize, progress: &dyn Progress) -> Result<Neighbors> {
    let (n, d) = (points.n, points.d);
    check_params(n, d, k)?;
    let gpu = Gpu::get()?;
    let x = gpu.stream.clone_htod(&points.data)?;
    let (idx, dist) = exact_device_with(gpu, &x, n, d, k, None, progress)?;
    let indices: Vec<i32> = gpu.stream.clone_dtoh(&idx)?;
    let distances = gpu.stream.clone_dtoh(&dist)?;
    Ok(Neighbors {
        n,
        k,
        indices: indices.into_iter().map(|i| i as u32).collect(),
        distances,
    })
}

/// Device-resident exact kNN for the GPU pipeline: `points` holds n × d row-major f32 on
/// the device; returns (indices n × k, squared distances n × k), rows ascending, on the
/// device.
pub fn exact_device(
    gpu: &Gpu,
    points: &CudaSlice<f32>,
    n: usize,
    d: usize,
    k: usize,
) -> Result<(CudaSlice<i32>, CudaSlice<f32>)> {
    exact_device_with(gpu, points, n, d, k, None, &Silent)
}

/// [`exact_device`] with explicit tiles (`None`: sized from the L2 cache and free memory)
/// and progress (`"knn"`, one unit per query tile or sweep launch).
pub fn exact_device_with(
    gpu: &Gpu,
    points: &CudaSlice<f32>,
    n: usize,
    d: usize,
    k: usize,
    tiles: Option<Tiles>,
    progress: &dyn Progress,
) -> Result<(CudaSlice<i32>, CudaSlice<f32>)> {
    run(gpu, points, n, d, k, tiles, ALL_STAGES, progress)
}

/// Picks the path: fused where it applies and fits, else the tiled one (symmetric when its
/// lists fit).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    gpu: &Gpu,
    points: &CudaSlice<f32>,
    n: usize,
    d: usize,
    k: usize,
    tiles: Option<Tiles>,
    stages: Stages,
    progress: &dyn Progress,
) -> Result<(CudaSlice<i32>, CudaSlice<f32>)> {
    check_params(n, d, k)?;
    if points.len() < n * d {
        return Err(Error::param(
            "points",
            format!("{} floats on the device, n × d = {}", points.len(), n * d),
        ));
    }
    let shape = Shape::new(n, d, k);
    let answer = if n >= stages.fused_from && tiles.is_none() && fused::fits(gpu, shape)? {
        fused::run(gpu, points, shape, progress)?
    } else {
        tiled::run(gpu, points, shape, tiles, stages, progress)?
    };
    Ok((answer.indices, answer.distances))
}

/// The problem: n points of d dimensions, k neighbours, candidate lists of 32 · `kr`.
#[derive(Clone, Copy, Debug)]
struct Shape {
    n: usize,
    d: usize,
    k: usize,
    kr: usize,
}

impl Shape {
    fn new(n: usize, d: usize, k: usize) -> Self {
        Shape {
            n,
            d,
            k,
            kr: list_len(k) / 32,
        }
    }

    /// Entries of one query's candidate list.
    fn list(&self) -> usize {
        32 * self.kr
    }
}

/// The answer on the device: indices and squared distances, n × k each.
struct Answer {
    indices: CudaSlice<i32>,
    distances: CudaSlice<f32>,
}

impl Answer {
    /// Poisoned with (−1, NaN): an entry [`Answer::finish`] missed shows downstream.
    fn poisoned(gpu: &Gpu, shape: Shape) -> Result<Self, GpuError> {
        let len = shape.n * shape.k;
        let mut answer = Answer {
            indices: gpu.stream.alloc_zeros(len)?,
            distances: gpu.stream.alloc_zeros(len)?,
        };
        fill_lists(
            gpu,
            &mut answer.distances,
            &mut answer.indices,
            len,
            f32::NAN,
        )?;
        Ok(answer)
    }

    /// The last step of both paths: the candidate lists `state_i` of queries `q0 .. q0 +
    /// q_count` to their k nearest, distances recomputed from the input points `x`.
    fn finish(
        &mut self,
        gpu: &Gpu,
        x: &CudaSlice<f32>,
        shape: Shape,
        (q0, q_count): (usize, usize),
        state_i: &dyn DeviceIn<i32>,
    ) -> Result<(), GpuError> {
        KnnFinish {
            kr: shape.kr,
            n: shape.n,
            x,
            d: shape.d,
            q0,
            q_count,
            k: shape.k,
            state_i,
            out_i: &mut self.indices,
            out_d: &mut self.distances,
        }
        .launch(gpu, &gpu.stream, warps_config(q_count))
    }
}

/// Sets the first `len` entries of (`dist`, `idx`) to (`value`, −1): +∞ empties lists, NaN
/// poisons outputs so that an entry [`Answer::finish`] missed shows.
fn fill_lists(
    gpu: &Gpu,
    dist: &mut CudaSlice<f32>,
    idx: &mut CudaSlice<i32>,
    len: usize,
    value: f32,
) -> Result<(), GpuError> {
    KnnFill {
        dist,
        idx,
        count: len,
        value,
    }
    .launch(gpu, &gpu.stream, gpu.config(len))
}

/// One warp per item, [`WARPS`] warps per block.
fn warps_config(warps: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (warps.div_ceil(WARPS) as u32, 1, 1),
        block_dim: ((WARPS * 32) as u32, 1, 1),
        shared_mem_bytes: 0,
    }
}

#[cfg(test)]
mod tests;
