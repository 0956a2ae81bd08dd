//! Exact kNN on the GPU, two paths with one contract:
//!
//! - [`fused`] (d ≤ 64 on sm_80+, the usual case after PCA, from [`FUSED_FROM`] points): 3xTF32
//!   keys on the tensor cores with the selection behind them in one kernel; 2.7 s for
//!   1M × 50, k = 90 on the H100.
//! - The SGEMM path below (`kernels/knn.cu`, any d): cuBLAS SGEMM distance tiles and a top-k
//!   selection that keeps the K best references of every query across tiles; 4.8 s for the
//!   same. Neither holds an n × n buffer; both end in `knn_finish`.
//!
//! With the points centred (distances do not change, the norms shrink), the ranking key of
//! reference $r$ for query $q$ is $s = \|r\|^2 - 2\,q \cdot r$, i.e. $\|q - r\|^2$ minus the
//! per-query constant $\|q\|^2$. For a tile of `Tiles::queries` queries × `Tiles::refs`
//! references, SGEMM writes $-2\,q \cdot r$ (sized to stay in the L2 cache), and the selection
//! kernel adds $\|r\|^2$, rejects almost every candidate with one compare against the warp's
//! current K-th best, and inserts the rest into a sorted list held in registers
//! (K = k + margin, rounded up to a multiple of 32). The GEMM form loses digits to
//! cancellation for near neighbours, so the last step recomputes the K candidates'
//! distances directly (in double, rounded once to f32), ranks them and keeps k: the result
//! equals a brute-force f64 kNN except for distances tied in f32, provided the GEMM error
//! (about 1e-7 × ‖x − mean‖²) reorders no more than the margin across the k-th neighbour.
//!
//! When every query's list fits in device memory (n × K × 8 bytes, 1.3 GB at n = 1.3M) the
//! tiles are square and only those on and above the diagonal are computed, each merged by
//! rows and by columns ([`run_tiled`]'s symmetric schedule): half the SGEMM.
//!
//! Measured alternatives that lost on the H100 (1M × 50, k = 90, 6.2 s rectangular): SGEMM
//! and selection overlapped on two streams (6.2–6.7 s; cudarc's per-launch event tracking
//! costs host time on ~10⁵ tiles); 3xTF32 on the tensor cores, one GEMM of inner dimension
//! 3d (6.7 s: at d = 50 the GEMM is bound by writing the tile, not by arithmetic; cuBLAS
//! reached 65 TFLOP/s in TF32 against 40 in SGEMM at 4096 × 2048 × 150).

use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

mod fused;

use super::Neighbors;
use crate::gpu::kernels::KernelId;
use crate::gpu::{Gpu, GpuError};
use crate::progress::{Progress, Silent};
use crate::{Error, Points, Result};

/// Extra candidates kept beyond k, so that the exact recomputation can reorder the GEMM's
/// near-ties across the k-th neighbour.
const MARGIN: usize = 8;
/// Largest list the selection kernel keeps (8 registers per lane of a warp).
const MAX_LIST: usize = 256;
/// Largest k the GPU kNN accepts.
pub const MAX_K: usize = MAX_LIST - MARGIN;
/// Warps per block of the selection and finish kernels (`KNN_WARPS` in `kernels/knn.cu`).
const WARPS: usize = 8;
/// The reference-tile width is a multiple of this (one warp reads 128 floats a step).
const REF_ALIGN: usize = 128;
/// Device memory left to cuBLAS and the driver beyond what this stage allocates.
const SLACK: usize = 256 << 20;

/// Tile sizes: `queries` × `refs` distances per SGEMM (`refs` a multiple of 128).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiles {
    /// Queries per tile (rows of the state; any positive number).
    pub queries: usize,
    /// References per tile (a multiple of 128).
    pub refs: usize,
}

/// Which steps run and how, for benchmarks that split the time (`ALL_STAGES` in every real
/// call).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stages {
    /// The fused tensor-core path ([`fused`]) where it applies, from this many points on;
    /// the other fields then do not matter. `usize::MAX`: never.
    pub fused_from: usize,
    pub gemm: bool,
    pub select: bool,
    /// The symmetric schedule of [`run_tiled`] when the tiles are square (or chosen
    /// here) and every query's list fits in device memory.
    pub symmetric: bool,
}

const ALL_STAGES: Stages = Stages {
    fused_from: FUSED_FROM,
    gemm: true,
    select: true,
    symmetric: true,
};

/// Fewest points for which the fused path is taken. On the H100 (d = 50, k = 90) it took
/// 2.72 s against the SGEMM path's 4.78 s at 1M points, but 0.058 s against 0.033 s at 70k,
/// where a sweep of all blocks is two waves and the lists' filling phase dominates.
const FUSED_FROM: usize = 250_000;

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
    let x = gpu
        .stream
        .clone_htod(&points.data)
        .map_err(GpuError::from)?;
    let (idx, dist) = exact_device_with(gpu, &x, n, d, k, None, progress)?;
    let indices: Vec<i32> = gpu.stream.clone_dtoh(&idx).map_err(GpuError::from)?;
    let distances = gpu.stream.clone_dtoh(&dist).map_err(GpuError::from)?;
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
/// and progress (`"knn"`, one unit per query tile).
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

/// Bytes that do not depend on the tiles: centred copy, norms, outputs, column sums.
fn fixed_bytes(n: usize, d: usize, k: usize, refs: usize) -> usize {
    n * d * 4 + n.div_ceil(refs) * refs * 4 + n * k * 8 + d * 8
}

/// Bytes of the distance tile and the selection state of one query tile.
fn tile_bytes(t: Tiles, list: usize) -> usize {
    t.queries * t.refs * 4 + t.queries * list * 8
}

/// Rectangular tiles for n points: the distance tile about 5/8 of the L2 cache (so
/// that SGEMM writes them and the selection reads them back without a trip through HBM),
/// shrunk to fit the free memory; an error when even the smallest tiles do not fit.
fn choose_tiles(gpu: &Gpu, n: usize, d: usize, k: usize, want: Option<Tiles>) -> Result<Tiles> {
    let list = list_len(k);
    let l2 = l2_bytes(gpu);
    let mut t = want.unwrap_or_else(|| {
        let refs = 2048;
        let queries = ((l2 * 5 / 8) / (4 * refs) / REF_ALIGN * REF_ALIGN).max(REF_ALIGN);
        Tiles { queries, refs }
    });
    if t.queries == 0 || t.refs == 0 || t.refs % REF_ALIGN != 0 {
        return Err(Error::param(
            "tiles",
            format!("{t:?}: queries > 0 and refs a positive multiple of {REF_ALIGN}"),
        ));
    }
    t.refs = t.refs.min(n.div_ceil(REF_ALIGN) * REF_ALIGN);
    t.queries = t.queries.min(n);
    let free = gpu.free_memory()?;
    let budget = free.saturating_sub(SLACK);
    let min = Tiles {
        queries: t.queries.min(REF_ALIGN),
        refs: REF_ALIGN.min(t.refs),
    };
    let fixed = fixed_bytes(n, d, k, t.refs);
    if fixed + tile_bytes(min, list) > budget {
        return Err(GpuError::OutOfMemory {
            what: format!("exact kNN of {n} points × {d} dims, k = {k}"),
            needed_mib: (fixed + tile_bytes(min, list) + SLACK) >> 20,
            free_mib: free >> 20,
        }
        .into());
    }
    while fixed + tile_bytes(t, list) > budget {
        if t.queries > min.queries {
            t.queries = (t.queries / 2).max(min.queries);
        } else {
            t.refs = (t.refs / 2 / REF_ALIGN * REF_ALIGN).max(min.refs);
        }
    }
    Ok(t)
}

/// The device's L2 cache size (40 MiB when the driver does not say).
fn l2_bytes(gpu: &Gpu) -> usize {
    gpu.device
        .context
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
        .ok()
        .filter(|&b| b > 0)
        .map_or(40 << 20, |b| b as usize)
}

fn warps_config(warps: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (warps.div_ceil(WARPS) as u32, 1, 1),
        block_dim: ((WARPS * 32) as u32, 1, 1),
        shared_mem_bytes: 0,
    }
}

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
    let list = list_len(k);
    let kr = list / 32;
    if n >= stages.fused_from && tiles.is_none() && fused::suits(gpu, d) {
        let need = fixed_bytes(n, d, k, 1) + fused::extra_bytes(n, d, list) + SLACK;
        if need <= gpu.free_memory()? {
            return Ok(run_fused(gpu, points, n, d, k, kr, progress)?);
        }
    }
    let square = tiles.is_none_or(|t| t.queries == t.refs);
    if stages.symmetric && square {
        if let Some(side) = symmetric_side(gpu, n, d, k, tiles)? {
            let t = Tiles {
                queries: side,
                refs: side,
            };
            return Ok(run_tiled(
                gpu, points, n, d, k, t, true, list, kr, stages, progress,
            )?);
        }
    }
    let t = choose_tiles(gpu, n, d, k, tiles)?;
    Ok(run_tiled(
        gpu, points, n, d, k, t, false, list, kr, stages, progress,
    )?)
}

/// The side of the square tiles of the symmetric schedule (`want`'s, or about 5/8 of the L2
/// cache), or `None` when every query's list does not fit in free memory with them.
fn symmetric_side(
    gpu: &Gpu,
    n: usize,
    d: usize,
    k: usize,
    want: Option<Tiles>,
) -> Result<Option<usize>> {
    let side = match want {
        Some(t) => t.refs,
        None => {
            let l2 = l2_bytes(gpu);
            let side =
                (((l2 * 5 / 8 / 4) as f64).sqrt() as usize / REF_ALIGN * REF_ALIGN).max(REF_ALIGN);
            side.min(n.div_ceil(REF_ALIGN) * REF_ALIGN)
        }
    };
    let need = fixed_bytes(n, d, k, side) + side * side * 4 + n * list_len(k) * 8;
    Ok((need + SLACK <= gpu.free_memory()?).then_some(side))
}

/// The tiled kNN. Rectangular schedule: per query tile, SGEMM and select over every
/// reference tile, then finish; the lists of one query tile live at a time. Symmetric
/// schedule (square tiles, every query's list resident): the distance matrix is symmetric,
/// so row tile I computes only the tiles J ≥ I, each merged twice: into I's lists by rows
/// and, off the diagonal, into J's lists by columns (`knn_select`, one launch for both
/// so that their blocks share the GPU; each alone fills a third of the H100's warps). Half
/// the SGEMM work, the same number of candidate compares; row tile I's lists are final once
/// its row is done (rows before it have offered their columns), so it finishes there.
#[allow(clippy::too_many_arguments)]
fn run_tiled(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    n: usize,
    d: usize,
    k: usize,
    t: Tiles,
    symmetric: bool,
    list: usize,
    kr: usize,
    stages: Stages,
    progress: &dyn Progress,
) -> std::result::Result<(CudaSlice<i32>, CudaSlice<f32>), GpuError> {
    let s = &gpu.stream;
    let f_select = gpu.function(KernelId::Knn, &format!("knn_select_{kr}"))?;
    let f_finish = gpu.function(KernelId::Knn, &format!("knn_finish_{kr}"))?;
    let blas = CudaBlas::new(s.clone())?;

    // Step 1: centre the points (column means in double) and take the norms.
    let d32 = d as i32;
    let Centred { xc, norms, .. } = centre_on_device(gpu, x, n, d, n.div_ceil(t.refs) * t.refs)?;

    // Step 2: SGEMM and select tile by tile, finishing each query tile.
    let mut c_tile = s.alloc_zeros::<f32>(t.queries * t.refs)?;
    let state_rows = if symmetric { n } else { t.queries };
    let mut state_d = s.alloc_zeros::<f32>(state_rows * list)?;
    let mut state_i = s.alloc_zeros::<i32>(state_rows * list)?;
    let fill = |d: &mut CudaSlice<f32>, i: &mut CudaSlice<i32>, len, value| {
        fill_lists(gpu, d, i, len, value)
    };
    // Poisoned (NaN, -1): an entry knn_finish missed shows downstream.
    let mut out_i = s.alloc_zeros::<i32>(n * k)?;
    let mut out_d = s.alloc_zeros::<f32>(n * k)?;
    fill(&mut out_d, &mut out_i, n * k, f32::NAN)?;
    if symmetric {
        fill(&mut state_d, &mut state_i, n * list, f32::INFINITY)?;
    }
    let q_tiles = n.div_ceil(t.queries);
    let mut done = LaggedProgress::begin(progress, "knn", q_tiles);
    let (ldc, k32) = (t.refs as i32, k as i32);
    for q0 in (0..n).step_by(t.queries) {
        let q_count = t.queries.min(n - q0);
        let (q0_32, qc32) = (q0 as i32, q_count as i32);
        let own = if symmetric { q0 * list } else { 0 };
        if !symmetric {
            fill(&mut state_d, &mut state_i, q_count * list, f32::INFINITY)?;
        }
        let queries = xc.slice(q0 * d..(q0 + q_count) * d);
        let first_ref = if symmetric { q0 } else { 0 };
        for ref0 in (first_ref..n).step_by(t.refs) {
            let r_valid = t.refs.min(n - ref0);
            let (r32, ref32) = (r_valid as i32, ref0 as i32);
            if stages.gemm {
                let cfg = GemmConfig {
                    transa: cublasOperation_t::CUBLAS_OP_T,
                    transb: cublasOperation_t::CUBLAS_OP_N,
                    m: r32,
                    n: qc32,
                    k: d32,
                    alpha: -2.0f32,
                    lda: d32,
                    ldb: d32,
                    beta: 0.0f32,
                    ldc,
                };
                let refs = xc.slice(ref0 * d..(ref0 + r_valid) * d);
                // SAFETY: column-major A = refs (d × r_valid, lda d), B = queries (d ×
                // q_count, ldb d), C = c_tile (r_valid × q_count, ldc = t.refs >= r_valid,
                // t.queries * t.refs floats): all within their allocations.
                unsafe { blas.gemm(cfg, &refs, &queries, &mut c_tile) }?;
            }
            if !stages.select {
                continue;
            }
            // Off the diagonal of the symmetric schedule the tile also goes by columns into
            // J's lists, which lie after I's (ref0 ≥ q0 + q_count): split the state there.
            let columns = if symmetric && ref0 != q0 { r_valid } else { 0 };
            let rows_end = own + q_count * list;
            let at = if columns > 0 { ref0 * list } else { rows_end };
            let (mut d_mine, mut d_theirs) = state_d.split_at_mut(at);
            let (mut i_mine, mut i_theirs) = state_i.split_at_mut(at);
            let mut d_rows = d_mine.slice_mut(own..rows_end);
            let mut i_rows = i_mine.slice_mut(own..rows_end);
            let mut d_cols = d_theirs.slice_mut(0..columns * list);
            let mut i_cols = i_theirs.slice_mut(0..columns * list);
            let mut b = s.launch_builder(&f_select);
            b.arg(&c_tile)
                .arg(&ldc)
                .arg(&r32)
                .arg(&qc32)
                .arg(&q0_32)
                .arg(&ref32)
                .arg(&norms);
            b.arg(&mut d_rows)
                .arg(&mut i_rows)
                .arg(&mut d_cols)
                .arg(&mut i_cols);
            // SAFETY: knn_select contract: C tile with ldc = t.refs (a multiple of 128),
            // r_valid <= ldc; norms padded to a multiple of t.refs (zeros); the row slices
            // hold q_count * 32 * kr entries, the column slices `columns` * 32 * kr;
            // ceil(q_count / KNN_WARPS) row blocks, then ceil(columns / KNN_WARPS).
            unsafe { b.launch(warps_config(q_count.div_ceil(WARPS) * WARPS + columns)) }?;
        }
        let si = state_i.slice(own..own + q_count * list);
        let mut b = s.launch_builder(&f_finish);
        b.arg(x).arg(&d32).arg(&q0_32).arg(&qc32).arg(&k32);
        b.arg(&si).arg(&mut out_i).arg(&mut out_d);
        // SAFETY: knn_finish contract: state indices are -1 or < n; out holds n*k entries
        // and rows q0 .. q0 + q_count < n; k <= 32 * kr.
        unsafe { b.launch(warps_config(q_count)) }?;
        done.queued(s)?;
    }
    done.end()?;
    Ok((out_i, out_d))
}

/// Progress over queued GPU work: a unit is reported once the GPU has finished it, with one
/// unit kept queued ahead so that the device never waits for the host.
pub(super) struct LaggedProgress<'a> {
    progress: &'a dyn Progress,
    pending: Option<cudarc::driver::CudaEvent>,
}

impl<'a> LaggedProgress<'a> {
    pub(super) fn begin(progress: &'a dyn Progress, stage: &str, units: usize) -> Self {
        progress.begin(stage, units as u64);
        LaggedProgress {
            progress,
            pending: None,
        }
    }

    /// Marks the end of a unit of work queued on `stream`; reports the previous one.
    pub(super) fn queued(&mut self, stream: &cudarc::driver::CudaStream) -> Result<(), GpuError> {
        if let Some(prev) = self.pending.replace(stream.record_event(None)?) {
            prev.synchronize()?;
            self.progress.advance(1);
        }
        Ok(())
    }

    /// Waits for the last unit and ends the stage.
    pub(super) fn end(self) -> Result<(), GpuError> {
        if let Some(last) = self.pending {
            last.synchronize()?;
            self.progress.advance(1);
        }
        self.progress.end();
        Ok(())
    }
}

/// Sets the first `len` entries of (`dist`, `idx`) to (`value`, −1): +∞ empties lists, NaN
/// poisons outputs so that an entry `knn_finish` missed shows.
fn fill_lists(
    gpu: &Gpu,
    dist: &mut CudaSlice<f32>,
    idx: &mut CudaSlice<i32>,
    len: usize,
    value: f32,
) -> std::result::Result<(), GpuError> {
    let f = gpu.function(KernelId::Knn, "knn_fill")?;
    let len64 = len as i64;
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(dist).arg(idx).arg(&len64).arg(&value);
    // SAFETY: knn_fill contract: both buffers hold at least len entries.
    unsafe { b.launch(gpu.config(len)) }?;
    Ok(())
}

/// The fused path: centre, sweep every query block over all references ([`fused::sweep`]),
/// finish every query.
fn run_fused(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    n: usize,
    d: usize,
    k: usize,
    kr: usize,
    progress: &dyn Progress,
) -> std::result::Result<(CudaSlice<i32>, CudaSlice<f32>), GpuError> {
    let s = &gpu.stream;
    let list = 32 * kr;
    let Centred { xc, norms, .. } = centre_on_device(gpu, x, n, d, n)?;
    let fill = |d: &mut CudaSlice<f32>, i: &mut CudaSlice<i32>, len, value| {
        fill_lists(gpu, d, i, len, value)
    };
    let mut state_d = s.alloc_zeros::<f32>(n * list)?;
    let mut state_i = s.alloc_zeros::<i32>(n * list)?;
    fill(&mut state_d, &mut state_i, n * list, f32::INFINITY)?;
    let mut out_i = s.alloc_zeros::<i32>(n * k)?;
    let mut out_d = s.alloc_zeros::<f32>(n * k)?;
    fill(&mut out_d, &mut out_i, n * k, f32::NAN)?;
    fused::sweep(
        gpu,
        &xc,
        &norms,
        n,
        d,
        kr,
        &mut state_d,
        &mut state_i,
        &[],
        progress,
    )?;
    drop(state_d);
    let f_finish = gpu.function(KernelId::Knn, &format!("knn_finish_{kr}"))?;
    let (d32, k32, n32, zero) = (d as i32, k as i32, n as i32, 0i32);
    let mut b = s.launch_builder(&f_finish);
    b.arg(x).arg(&d32).arg(&zero).arg(&n32).arg(&k32);
    b.arg(&state_i).arg(&mut out_i).arg(&mut out_d);
    // SAFETY: knn_finish contract: state indices are -1 or < n (n rows of 32·kr); out holds
    // n*k entries; k <= 32 * kr.
    unsafe { b.launch(warps_config(n)) }?;
    Ok((out_i, out_d))
}

/// Centres the n × d points `x` on the device: returns x − mean (n × d), the column sums
/// (f64, so the mean stays exact at n = 10⁶+) and the squared norms of the centred rows
/// (padded with zeros to `norms_len ≥ n`). Shared with the GPU PCA.
pub(crate) fn centre_on_device(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    n: usize,
    d: usize,
    norms_len: usize,
) -> std::result::Result<Centred, GpuError> {
    let s = &gpu.stream;
    let f_sums = gpu.function(KernelId::Knn, "knn_column_sums")?;
    let f_center = gpu.function(KernelId::Knn, "knn_center")?;
    let (n64, d32) = (n as i64, d as i32);
    let mut sums = s.alloc_zeros::<f64>(d)?;
    let mut xc = s.alloc_zeros::<f32>(n * d)?;
    let mut norms = s.alloc_zeros::<f32>(norms_len.max(n))?;
    let mut b = s.launch_builder(&f_sums);
    b.arg(x).arg(&n64).arg(&d32).arg(&mut sums);
    let blocks = n.div_ceil(64).clamp(1, 1024) as u32;
    // SAFETY: knn_column_sums contract (kernels/knn.cu): x holds n*d floats (checked by the
    // callers), sums d zeroed doubles; blockDim 256 is a multiple of 32.
    unsafe {
        b.launch(LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        })
    }?;
    let mut b = s.launch_builder(&f_center);
    b.arg(x)
        .arg(&n64)
        .arg(&d32)
        .arg(&sums)
        .arg(&mut xc)
        .arg(&mut norms);
    // SAFETY: knn_center contract: x, xc n*d floats, sums d doubles, norms >= n floats.
    unsafe { b.launch(gpu.config(n * 32)) }?;
    Ok(Centred { xc, sums, norms })
}

/// What [`centre_on_device`] returns.
pub(crate) struct Centred {
    /// x − mean, n × d.
    pub xc: CudaSlice<f32>,
    /// Column sums, d doubles.
    pub sums: CudaSlice<f64>,
    /// Squared norms of the centred rows, zero-padded.
    pub norms: CudaSlice<f32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};
    use rand_distr::{Distribution, Normal};
    use rayon::prelude::*;

    fn dist64(p: &Points, i: usize, j: usize) -> f64 {
        p.row(i)
            .iter()
            .zip(p.row(j))
            .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
            .sum()
    }

    /// Brute force in f64: row i = the k nearest other points, by (distance, index).
    fn reference(p: &Points, k: usize) -> Vec<Vec<(f64, usize)>> {
        (0..p.n)
            .into_par_iter()
            .map(|i| {
                let mut all: Vec<(f64, usize)> = (0..p.n)
                    .filter(|&j| j != i)
                    .map(|j| (dist64(p, i, j), j))
                    .collect();
                all.select_nth_unstable_by(k - 1, |a, b| a.partial_cmp(b).unwrap());
                all.truncate(k);
                all.sort_by(|a, b| a.partial_cmp(b).unwrap());
                all
            })
            .collect()
    }

    /// Same index sets as the f64 reference except for distances tied in f32; distances
    /// exact to f32 rounding, ascending, self never included, every entry written.
    fn check(p: &Points, k: usize, got: &Neighbors, label: &str) {
        assert_eq!((got.n, got.k), (p.n, k));
        assert_eq!(got.indices.len(), p.n * k);
        let want = reference(p, k);
        let mut swapped = 0usize;
        for (i, want) in want.iter().enumerate() {
            let gi = &got.indices[i * k..(i + 1) * k];
            let gd = &got.distances[i * k..(i + 1) * k];
            let kth = want[k - 1].0;
            for (c, (&j, &dj)) in gi.iter().zip(gd).enumerate() {
                let j = j as usize;
                assert!(
                    j < p.n,
                    "{label}: row {i} slot {c} unwritten or bad index {j}"
                );
                assert_ne!(j, i, "{label}: row {i} contains itself");
                let exact = dist64(p, i, j);
                assert!(
                    (dj as f64 - exact).abs() <= 1e-6 * exact.max(1e-30),
                    "{label}: row {i} slot {c}: distance {dj} vs exact {exact}"
                );
                if c > 0 {
                    assert!(gd[c - 1] <= dj, "{label}: row {i} not ascending at {c}");
                }
                if !want.iter().any(|&(_, w)| w == j) {
                    // Only a tie (in f32) with the k-th neighbour may swap members.
                    assert!(
                        (exact - kth).abs() <= 1e-6 * kth,
                        "{label}: row {i}: {j} at {exact} is not among the k nearest (k-th {kth})"
                    );
                    swapped += 1;
                }
            }
            let mut set = gi.to_vec();
            set.sort_unstable();
            set.dedup();
            assert_eq!(set.len(), k, "{label}: row {i} repeats a neighbour");
        }
        eprintln!("{label}: ok ({swapped} tie swaps)");
    }

    fn uniform(rng: &mut StdRng, n: usize, d: usize) -> Points {
        Points::new(n, d, (0..n * d).map(|_| rng.random::<f32>()).collect())
    }

    /// Gaussian blobs around centres far from the origin (stresses the GEMM cancellation).
    fn clustered(rng: &mut StdRng, n: usize, d: usize, clusters: usize) -> Points {
        let wide = Normal::new(50.0f32, 10.0).unwrap();
        let narrow = Normal::new(0.0f32, 1.0).unwrap();
        let centres: Vec<f32> = (0..clusters * d).map(|_| wide.sample(rng)).collect();
        let mut data = Vec::with_capacity(n * d);
        for _ in 0..n {
            let c = rng.random_range(0..clusters);
            data.extend((0..d).map(|t| centres[c * d + t] + narrow.sample(rng)));
        }
        Points::new(n, d, data)
    }

    /// Pixel-like data: integers 0..=255, most of them 0 (MNIST-shaped).
    fn pixels(rng: &mut StdRng, n: usize, d: usize) -> Points {
        let data = (0..n * d)
            .map(|_| {
                if rng.random::<f32>() < 0.8 {
                    0.0
                } else {
                    rng.random_range(0..=255u8) as f32
                }
            })
            .collect();
        Points::new(n, d, data)
    }

    /// Runs with explicit tiles (`None`: automatic). The outputs start poisoned (NaN, -1)
    /// inside `run_tiled` and `run_fused`, so an unwritten entry fails `check`.
    fn run_tiles(gpu: &Gpu, p: &Points, k: usize, tiles: Option<Tiles>) -> Neighbors {
        let s = &gpu.stream;
        let x = s.clone_htod(&p.data).unwrap();
        // The fused path at every size (where the tiles are automatic and d ≤ 64).
        let stages = Stages {
            fused_from: 0,
            ..ALL_STAGES
        };
        let (idx, dist) = run(gpu, &x, p.n, p.d, k, tiles, stages, &Silent).unwrap();
        let indices: Vec<i32> = s.clone_dtoh(&idx).unwrap();
        let distances: Vec<f32> = s.clone_dtoh(&dist).unwrap();
        Neighbors {
            n: p.n,
            k,
            indices: indices.into_iter().map(|i| i as u32).collect(),
            distances,
        }
    }

    #[test]
    fn gpu_knn_equals_brute_force() {
        let Some(gpu) = crate::gpu::for_test() else {
            return;
        };
        let seed: u64 = rand::random();
        eprintln!("seed {seed}");
        let mut rng = StdRng::seed_from_u64(seed);
        let small = Tiles {
            queries: 200,
            refs: 384,
        };
        let cases: Vec<(&str, Points, usize, Option<Tiles>)> = vec![
            ("uniform 1000x50 k90", uniform(&mut rng, 1000, 50), 90, None),
            (
                "uniform 1000x50 k7 small tiles",
                uniform(&mut rng, 1000, 50),
                7,
                Some(small),
            ),
            (
                "clustered 1000x50 k90 small tiles",
                clustered(&mut rng, 1000, 50, 8),
                90,
                Some(small),
            ),
            (
                "clustered 1000x50 k90 square tiles (symmetric)",
                clustered(&mut rng, 1000, 50, 8),
                90,
                Some(Tiles {
                    queries: 256,
                    refs: 256,
                }),
            ),
            (
                "uniform 1000x20 k7 square tiles (symmetric)",
                uniform(&mut rng, 1000, 20),
                7,
                Some(Tiles {
                    queries: 128,
                    refs: 128,
                }),
            ),
            (
                "clustered 20000x50 k90",
                clustered(&mut rng, 20_000, 50, 30),
                90,
                None,
            ),
            (
                "uniform 20000x50 k5",
                uniform(&mut rng, 20_000, 50),
                5,
                None,
            ),
            ("pixels 3000x784 k90", pixels(&mut rng, 3000, 784), 90, None),
            (
                "pixels 3000x64 k90 (fused, ties)",
                pixels(&mut rng, 3000, 64),
                90,
                None,
            ),
            (
                "uniform 5000x1 k30 (fused, d = 1)",
                uniform(&mut rng, 5000, 1),
                30,
                None,
            ),
            (
                "clustered 40000x50 k90 (fused, sweeps that wrap around)",
                clustered(&mut rng, 40_000, 50, 30),
                90,
                None,
            ),
            (
                "clustered 4099x57 k17 (fused, padded d)",
                clustered(&mut rng, 4099, 57, 12),
                17,
                None,
            ),
            (
                "uniform 100x3 k90 (list > n-1)",
                uniform(&mut rng, 100, 3),
                90,
                None,
            ),
            ("uniform 2x4 k1", uniform(&mut rng, 2, 4), 1, None),
            ("uniform 300x2 k248", uniform(&mut rng, 300, 2), MAX_K, None),
        ];
        for (label, p, k, tiles) in cases {
            let got = run_tiles(gpu, &p, k, tiles);
            check(&p, k, &got, label);
        }
        // Square tiles through the rectangular schedule (the cases above with square or
        // chosen tiles took the symmetric one).
        let p = clustered(&mut rng, 3000, 50, 5);
        let x = gpu.stream.clone_htod(&p.data).unwrap();
        let rectangular = Stages {
            symmetric: false,
            ..ALL_STAGES
        };
        let square = Tiles {
            queries: 384,
            refs: 384,
        };
        let (idx, dist) = run(gpu, &x, p.n, p.d, 30, Some(square), rectangular, &Silent).unwrap();
        let got = Neighbors {
            n: p.n,
            k: 30,
            indices: gpu
                .stream
                .clone_dtoh(&idx)
                .unwrap()
                .into_iter()
                .map(|i: i32| i as u32)
                .collect(),
            distances: gpu.stream.clone_dtoh(&dist).unwrap(),
        };
        check(
            &p,
            30,
            &got,
            "clustered 3000x50 k30 square tiles, rectangular schedule",
        );
        // The host entry point, through the same path.
        let p = uniform(&mut rng, 500, 16);
        check(
            &p,
            10,
            &exact_gpu(&p, 10, &Silent).unwrap(),
            "exact_gpu 500x16 k10",
        );
    }

    #[test]
    fn bad_k_is_an_error() {
        let p = Points::new(10, 2, vec![0.5; 20]);
        for k in [0, 10, 11] {
            assert!(
                matches!(exact_gpu(&p, k, &Silent), Err(Error::Param { .. })),
                "k={k}"
            );
        }
        let big = Points::new(400, 1, vec![0.5; 400]);
        assert!(matches!(
            exact_gpu(&big, MAX_K + 1, &Silent),
            Err(Error::Param { .. })
        ));
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    }

    /// SGEMM rate (TFLOP/s) of C (m × n) = Aᵀ B with inner dimension k, median of 10.
    fn sgemm_rate(gpu: &Gpu, m: usize, n: usize, k: usize) -> f64 {
        let s = &gpu.stream;
        let mut rng = StdRng::seed_from_u64(rand::random());
        let a = s
            .clone_htod(&(0..m * k).map(|_| rng.random::<f32>()).collect::<Vec<_>>())
            .unwrap();
        let b = s
            .clone_htod(&(0..n * k).map(|_| rng.random::<f32>()).collect::<Vec<_>>())
            .unwrap();
        let mut c = s.alloc_zeros::<f32>(m * n).unwrap();
        let blas = CudaBlas::new(s.clone()).unwrap();
        let cfg = GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_T,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: m as i32,
            n: n as i32,
            k: k as i32,
            alpha: -2.0f32,
            lda: k as i32,
            ldb: k as i32,
            beta: 0.0f32,
            ldc: m as i32,
        };
        let reps = (2e12 / (2.0 * (m * n * k) as f64)).clamp(3.0, 200.0) as usize;
        let mut times = Vec::new();
        for rep in 0..11 {
            s.synchronize().unwrap();
            let t0 = std::time::Instant::now();
            for _ in 0..reps {
                // SAFETY: a (k × m), b (k × n), c (m × n) as allocated above.
                unsafe { blas.gemm(cfg, &a, &b, &mut c) }.unwrap();
            }
            s.synchronize().unwrap();
            if rep > 0 {
                times.push(t0.elapsed().as_secs_f64() / reps as f64);
            }
        }
        2.0 * (m * n * k) as f64 / median(times) / 1e12
    }

    /// Device timings, printed (not asserted): run on the H100 with
    /// `<test binary> knn::gpu::tests::knn_gpu_bench --ignored --nocapture`.
    #[test]
    #[ignore]
    fn knn_gpu_bench() {
        let Some(gpu) = crate::gpu::for_test() else {
            return;
        };
        let s = &gpu.stream;
        println!("device: {}", gpu.device.name);
        for (m, n, k) in [
            (8192, 8192, 8192),
            (8192, 8192, 50),
            (2048, 3840, 50),
            (4096, 2048, 50),
        ] {
            println!("sgemm {m}x{n}x{k}: {:.1} TFLOP/s", sgemm_rate(gpu, m, n, k));
        }
        let (d, k) = (50, 90);
        // (tiles, fused path, symmetric schedule, also time SGEMM alone and selection alone)
        type Config = (Option<Tiles>, bool, bool, bool);
        let sizes: &[(usize, &[Config])] = &[
            (
                70_000,
                &[(None, true, true, false), (None, false, true, true)],
            ),
            (
                1_000_000,
                &[(None, true, true, false), (None, false, true, true)],
            ),
        ];
        let mut table = Vec::new();
        let start = std::time::Instant::now();
        for &(n, configs) in sizes {
            let mut rng = StdRng::seed_from_u64(rand::random());
            let host: Vec<f32> = (0..n * d).map(|_| rng.random::<f32>()).collect();
            let x = s.clone_htod(&host).unwrap();
            for &(tiles, fused, symmetric, split) in configs {
                let fused_from = if fused { 0 } else { usize::MAX };
                if start.elapsed().as_secs() > 170 {
                    println!("time budget spent: skipping {tiles:?} at n = {n}");
                    continue;
                }
                let time = |gemm: bool, select: bool| {
                    let stages = Stages {
                        fused_from,
                        gemm,
                        select,
                        symmetric,
                    };
                    s.synchronize().unwrap();
                    let t0 = std::time::Instant::now();
                    let out = run(gpu, &x, n, d, k, tiles, stages, &Silent).unwrap();
                    s.synchronize().unwrap();
                    drop(out);
                    t0.elapsed().as_secs_f64()
                };
                let warm = time(true, true);
                let reps = if warm > 40.0 { 1 } else { 3 };
                let full = median((0..reps).map(|_| time(true, true)).collect());
                let mut line = format!(
                    "n={n:>8} d={d} k={k} tiles {tiles:?} fused {fused} symmetric {symmetric}: \
                     full {full:.3} s \
                     (warm-up {warm:.3})"
                );
                if split {
                    let gemm = time(true, false);
                    let select = time(false, true);
                    let none = time(false, false);
                    let pairs = (n as f64).powi(2);
                    line += &format!(
                        " | gemm-only {gemm:.3} s = {:.1} TFLOP/s (n² d) | select-only {select:.3} s = \
                         {:.2} TB/s of tile reads | prep+finish {none:.3} s",
                        2.0 * pairs * d as f64 / (gemm - none) / 1e12,
                        4.0 * pairs / (select - none) / 1e12,
                    );
                }
                println!("{line}");
                table.push(line);
            }
        }
        // The host entry point once, transfers included.
        let mut rng = StdRng::seed_from_u64(rand::random());
        let p = uniform(&mut rng, 70_000, 50);
        let t0 = std::time::Instant::now();
        let nb = exact_gpu(&p, 90, &Silent).unwrap();
        println!(
            "exact_gpu 70000x50 k90 host in/out: {:.3} s",
            t0.elapsed().as_secs_f64()
        );
        assert_eq!(nb.indices.len(), 70_000 * 90);
        println!("--- summary ---");
        for line in table {
            println!("{line}");
        }
    }
}
