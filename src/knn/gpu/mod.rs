//! Exact kNN on the GPU, two paths with one contract:
//!
//! - `fused` (d ≤ 64 on sm_80+, the usual case after PCA, whatever n): 3xFP16 keys on the
//!   tensor cores with the selection behind them in one kernel; 2.7 s for 1M × 50, k = 90
//!   on the H100.
//! - `tiled` (`kernels/knn.cu`, any d): cuBLAS SGEMM distance tiles and a top-k selection
//!   that keeps the K best references of every query across tiles; 4.8 s for the same.
//!
//! Neither holds an n × n buffer; both end in `knn_finish` (`Answer::finish`).
//!
//! Every path ranks by the search's [`Key`], $t_q + t_r - 2\,q \cdot r$ with per-row terms
//! $t$ (`key_rows` makes the rows and terms once for all of them): for the squared
//! Euclidean distance the points centred (distances do not change, the norms shrink) and
//! $t = \|x\|^2$; for the inner product the points as given (centring changes inner
//! products) and $t = c$ for every row. The ranking key of reference $r$ for query $q$ is
//! $s = t_r - 2\,q \cdot r$, the key minus the per-query constant $t_q$. Both paths keep,
//! per query, a sorted list of the K best keys (K = k + margin, rounded up to a multiple of
//! 32), never the query's own row (under the inner product a point is not necessarily its
//! own best match, so it is excluded by index). The key loses digits to cancellation for
//! near neighbours, so the last step recomputes the K candidates' keys directly (in double,
//! rounded once to f32), ranks them and keeps k: the result equals a brute-force f64 kNN
//! except for keys tied in f32, provided the GEMM form's error (about 1e-7 × the terms)
//! reorders no more than the margin across the k-th neighbour.

use cudarc::driver::{CudaSlice, LaunchConfig};

pub(crate) mod fused;
pub mod ivf;
mod query;
pub mod refine;
mod tiled;

pub(crate) use fused::sweep_variant;
pub use query::query_gpu;
pub use tiled::Tiles;

use super::{Key, Neighbors};
use crate::gpu::centre::{centre_on_device, Centred};
use crate::gpu::kernels::knn::{list_variant, KnnFill, KnnFinish, KnnLeading, MAX_KR, WARPS};
use crate::gpu::launch::DeviceIn;
use crate::gpu::memory::alloc_uninit;
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

/// Whether the exact kNN of points of `d` dimensions takes the tiled path, whose distance
/// tiles are cuBLAS products: beyond the fused kernel's dimensions (also on devices before
/// compute capability 8.0, and where the fused path does not fit the device, which only
/// the search itself finds out). The fused path takes every size it suits: at 1M × 50 it
/// took 2.72 s against the tiled path's 4.78 s (H100); at 70k 0.058 s against 0.033 s in a
/// process whose cuBLAS is loaded, but a command line's whole kNN stage 0.075–0.081 s
/// against 0.21–0.29 s (H200), the tiled path waiting for cuBLAS's start.
pub(crate) fn exact_is_tiled(d: usize) -> bool {
    d > crate::gpu::kernels::knn_fused::MAX_DIM
}

/// Which steps run and how, for benchmarks that split the time (`ALL_STAGES` in every real
/// call).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stages {
    /// The fused tensor-core path ([`fused`]) where it applies; the other fields then do
    /// not matter.
    pub fused: bool,
    pub gemm: bool,
    pub select: bool,
    /// The symmetric schedule of [`tiled`] when the tiles are square (or chosen there) and
    /// every query's list fits in device memory.
    pub symmetric: bool,
}

const ALL_STAGES: Stages = Stages {
    fused: true,
    gemm: true,
    select: true,
    symmetric: true,
};

/// Length of the per-query candidate list for k neighbours.
fn list_len(k: usize) -> usize {
    (k + MARGIN).div_ceil(32) * 32
}

/// The variant of `kernels/knn.cu` a search for `k` neighbours loads (its list length), for
/// [`crate::gpu::Gpu::precompile`].
pub(crate) fn knn_variant(k: usize) -> &'static [&'static str] {
    list_variant(list_len(k) / 32)
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

/// Exact kNN on the GPU by `key`, host in/out (same contract as [`super::exact_by`] on the
/// CPU): row i holds the k nearest other points of i, keys ascending.
pub fn exact_gpu(
    points: &Points,
    k: usize,
    key: Key,
    progress: &dyn Progress,
) -> Result<Neighbors> {
    let (n, d) = (points.n, points.d);
    check_params(n, d, k)?;
    let gpu = Gpu::get()?;
    let x = crate::gpu::memory::htod_staged(gpu, &points.data)?;
    let (idx, dist) = exact_device_with(gpu, &x, n, d, k, key, None, progress)?;
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
/// device. [`exact_device_with`] takes another key.
pub fn exact_device(
    gpu: &Gpu,
    points: &CudaSlice<f32>,
    n: usize,
    d: usize,
    k: usize,
) -> Result<(CudaSlice<i32>, CudaSlice<f32>)> {
    exact_device_with(gpu, points, n, d, k, Key::SqEuclidean, None, &Silent)
}

/// [`exact_device`] by `key` (made from the same points: [`Key::new`]), with explicit tiles
/// (`None`: sized from the L2 cache and free memory) and progress (`"knn"`, one unit per
/// query tile or sweep launch); the distances are the keys.
#[allow(clippy::too_many_arguments)]
pub fn exact_device_with(
    gpu: &Gpu,
    points: &CudaSlice<f32>,
    n: usize,
    d: usize,
    k: usize,
    key: Key,
    tiles: Option<Tiles>,
    progress: &dyn Progress,
) -> Result<(CudaSlice<i32>, CudaSlice<f32>)> {
    run(gpu, points, n, d, k, key, tiles, ALL_STAGES, progress)
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
    key: Key,
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
    let shape = Shape::new(n, d, k, key);
    let answer = if stages.fused && tiles.is_none() && fused::fits(gpu, shape)? {
        fused::run(gpu, points, shape, progress)?
    } else {
        tiled::run(gpu, points, shape, tiles, stages, progress)?
    };
    Ok((answer.indices, answer.distances))
}

/// The problem: n points of d dimensions, k neighbours by `key`, candidate lists of 32 ·
/// `kr`.
#[derive(Clone, Copy, Debug)]
struct Shape {
    n: usize,
    d: usize,
    k: usize,
    kr: usize,
    key: Key,
}

impl Shape {
    fn new(n: usize, d: usize, k: usize, key: Key) -> Self {
        Shape {
            n,
            d,
            k,
            kr: list_len(k) / 32,
            key,
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
            shape.kr,
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
            variant: list_variant(shape.kr),
            n: shape.n,
            x,
            d: shape.d,
            q0,
            q_count,
            k: shape.k,
            c: kernel_c(shape.key),
            state_i,
            out_i: &mut self.indices,
            out_d: &mut self.distances,
        }
        .launch(gpu, &gpu.stream, warps_config(q_count))
    }
}

/// The rows every path multiplies and their per-row terms by `key` (module doc), the terms
/// zero-padded to `terms_len` ≥ n (what a path's last tile reads past n): for the squared
/// distance the points `x` (n × d) centred on the device and their squared norms
/// ([`centre_on_device`]); for the inner product a copy of `x` as it is and c for every
/// row.
fn key_rows(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    n: usize,
    d: usize,
    key: Key,
    terms_len: usize,
) -> Result<KeyRows, GpuError> {
    match key {
        Key::SqEuclidean => {
            let Centred { xc, norms, .. } = centre_on_device(gpu, x, n, d, terms_len)?;
            Ok(KeyRows {
                rows: xc,
                terms: norms,
            })
        }
        Key::InnerProduct { c } => {
            let s = &gpu.stream;
            let mut terms = s.alloc_zeros::<f32>(terms_len.max(n))?;
            s.memcpy_htod(&vec![c; n], &mut terms.slice_mut(..n))?;
            Ok(KeyRows {
                rows: s.clone_dtod(&x.slice(..n * d))?,
                terms,
            })
        }
    }
}

/// What [`key_rows`] makes: the rows the GEMM multiplies (n × d) and their terms $t$.
struct KeyRows {
    rows: CudaSlice<f32>,
    terms: CudaSlice<f32>,
}

/// `key` as the kernels take it (`c` of `knn_finish` and `knn_refine`): the inner
/// product's c ≥ 0, or −1 for the squared distance.
fn kernel_c(key: Key) -> f32 {
    match key {
        Key::SqEuclidean => -1.0,
        Key::InnerProduct { c } => c,
    }
}

/// The first `keep` of each of the n rows of k device neighbours (`indices`, `distances`,
/// row-major n × k), packed into n × `keep` on the device, for a host stage that reads only
/// the nearest few (the quality measure's 10 of k = 90 cross PCIe instead of all 90).
pub fn leading_neighbors(
    gpu: &Gpu,
    (indices, distances): (&CudaSlice<i32>, &CudaSlice<f32>),
    n: usize,
    k: usize,
    keep: usize,
) -> Result<(CudaSlice<i32>, CudaSlice<f32>), GpuError> {
    assert!(keep <= k, "the leading {keep} of {k} neighbours");
    let s = &gpu.stream;
    let mut idx_out = alloc_uninit::<i32>(gpu, n * keep)?;
    let mut dist_out = alloc_uninit::<f32>(gpu, n * keep)?;
    if n * keep > 0 {
        KnnLeading {
            variant: knn_variant(k),
            n,
            k,
            keep,
            idx: indices,
            dist: distances,
            idx_out: &mut idx_out,
            dist_out: &mut dist_out,
        }
        .launch(gpu, s, gpu.config(n * keep))?;
    }
    Ok((idx_out, dist_out))
}

/// Sets the first `len` entries of (`dist`, `idx`) to (`value`, −1): +∞ empties lists, NaN
/// poisons outputs so that an entry [`Answer::finish`] missed shows.
fn fill_lists(
    gpu: &Gpu,
    kr: usize,
    dist: &mut CudaSlice<f32>,
    idx: &mut CudaSlice<i32>,
    len: usize,
    value: f32,
) -> Result<(), GpuError> {
    KnnFill {
        variant: list_variant(kr),
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
