//! The tiled exact kNN (`kernels/knn.cu`, any d): cuBLAS SGEMM writes a tile of −2 q · r
//! (sized to stay in the L2 cache), and the selection kernel adds the key's term t_r (‖r‖²,
//! or the inner product's c), rejects almost every candidate with one compare against the
//! warp's current K-th best, and inserts the rest into a sorted list held in registers.
//!
//! When every query's list fits in device memory (n × K × 8 bytes, 1.3 GB at n = 1.3M) the
//! tiles are square and only those on and above the diagonal are computed, each merged by
//! rows and by columns ([`sweep`]'s symmetric schedule): half the SGEMM.
//!
//! Measured alternatives that lost on the H100 (1M × 50, k = 90, 6.2 s rectangular): SGEMM
//! and selection overlapped on two streams (6.2–6.7 s; cudarc's per-launch event tracking
//! costs host time on ~10⁵ tiles); 3xTF32 on the tensor cores, one GEMM of inner dimension
//! 3d (6.7 s: at d = 50 the GEMM is bound by writing the tile, not by arithmetic; cuBLAS
//! reached 65 TFLOP/s in TF32 against 40 in SGEMM at 4096 × 2048 × 150).

use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::GemmConfig;
use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::CudaSlice;

use super::{
    fill_lists, key_rows, list_len, warps_config, Answer, KeyRows, Shape, Stages, ALL_STAGES, SLACK,
};
use crate::gpu::blas::gemm;
use crate::gpu::kernels::knn::{list_variant, KnnSelect, WARPS};
use crate::gpu::progress::LaggedProgress;
use crate::gpu::{Gpu, GpuError};
use crate::progress::Progress;
use crate::{Error, Result};

/// The reference-tile width is a multiple of this (one warp reads 128 floats a step).
const REF_ALIGN: usize = 128;

/// Tile sizes: `queries` × `refs` distances per SGEMM (`refs` a multiple of 128).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiles {
    /// Queries per tile (rows of the state; any positive number).
    pub queries: usize,
    /// References per tile (a multiple of 128).
    pub refs: usize,
}

/// The tiled kNN of `x` with `tiles` (`None`: chosen here): the symmetric schedule when the
/// tiles are square and every list fits, else the rectangular one.
pub(super) fn run(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    shape: Shape,
    tiles: Option<Tiles>,
    stages: Stages,
    progress: &dyn Progress,
) -> Result<Answer> {
    let square = tiles.is_none_or(|t| t.queries == t.refs);
    if stages.symmetric && square {
        if let Some(side) = symmetric_side(gpu, shape, tiles)? {
            let t = Tiles {
                queries: side,
                refs: side,
            };
            return Ok(sweep(
                gpu,
                x,
                shape,
                Span::all(shape),
                t,
                true,
                stages,
                progress,
            )?);
        }
    }
    let t = choose_tiles(gpu, shape, tiles)?;
    Ok(sweep(
        gpu,
        x,
        shape,
        Span::all(shape),
        t,
        false,
        stages,
        progress,
    )?)
}

/// Which rows of the points query which: queries `queries`, references `0 .. refs`.
#[derive(Clone, Debug)]
pub(super) struct Span {
    pub queries: std::ops::Range<usize>,
    pub refs: usize,
}

impl Span {
    /// Every point against every other (the all-points kNN).
    pub fn all(shape: Shape) -> Self {
        Span {
            queries: 0..shape.n,
            refs: shape.n,
        }
    }
}

/// The rectangular sweep of the rows `span.queries` of `x` against its rows `0 ..
/// span.refs` ([`super::query`]: the queries are stacked after the references, so no
/// query meets its own row and none is a candidate of another).
pub(super) fn run_span(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    shape: Shape,
    span: Span,
    progress: &dyn Progress,
) -> Result<Answer> {
    let t = choose_tiles(gpu, shape, None)?;
    Ok(sweep(gpu, x, shape, span, t, false, ALL_STAGES, progress)?)
}

/// Bytes that do not depend on the tiles: centred (or copied) rows, terms, outputs, column
/// sums.
pub(super) fn fixed_bytes(n: usize, d: usize, k: usize, refs: usize) -> usize {
    n * d * 4 + n.div_ceil(refs) * refs * 4 + n * k * 8 + d * 8
}

/// Bytes of the distance tile and the selection state of one query tile.
fn tile_bytes(t: Tiles, list: usize) -> usize {
    t.queries * t.refs * 4 + t.queries * list * 8
}

/// Rectangular tiles: the distance tile about 5/8 of the L2 cache (so that SGEMM writes
/// them and the selection reads them back without a trip through HBM), shrunk to fit the
/// free memory; an error when even the smallest tiles do not fit.
fn choose_tiles(gpu: &Gpu, shape: Shape, want: Option<Tiles>) -> Result<Tiles> {
    let Shape { n, d, k, .. } = shape;
    let list = list_len(k);
    let l2 = l2_bytes(gpu);
    let mut t = want.unwrap_or_else(|| {
        let refs = 2048;
        let queries = ((l2 * 5 / 8) / (4 * refs) / REF_ALIGN * REF_ALIGN).max(REF_ALIGN);
        Tiles { queries, refs }
    });
    if t.queries == 0 || t.refs == 0 || !t.refs.is_multiple_of(REF_ALIGN) {
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

/// The side of the square tiles of the symmetric schedule (`want`'s, or about 5/8 of the L2
/// cache), or `None` when every query's list does not fit in free memory with them.
fn symmetric_side(gpu: &Gpu, shape: Shape, want: Option<Tiles>) -> Result<Option<usize>> {
    let Shape { n, d, k, .. } = shape;
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

/// The tiled sweep. Rectangular schedule: per query tile, SGEMM and select over every
/// reference tile, then finish; the lists of one query tile live at a time. Symmetric
/// schedule (square tiles, every query's list resident): the distance matrix is symmetric,
/// so row tile I computes only the tiles J ≥ I, each merged twice: into I's lists by rows
/// and, off the diagonal, into J's lists by columns (`knn_select`, one launch for both
/// so that their blocks share the GPU; each alone fills a third of the H100's warps). Half
/// the SGEMM work, the same number of candidate compares; row tile I's lists are final once
/// its row is done (rows before it have offered their columns), so it finishes there.
///
/// One function for both schedules: they differ only in where a query tile's lists live
/// and which reference tiles it meets, and splitting the loop would write it twice. The
/// rectangular schedule takes any `span` of queries and references; the symmetric one all.
#[allow(clippy::too_many_arguments)]
fn sweep(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    shape: Shape,
    span: Span,
    t: Tiles,
    symmetric: bool,
    stages: Stages,
    progress: &dyn Progress,
) -> Result<Answer, GpuError> {
    let Shape { n, d, kr, .. } = shape;
    debug_assert!(!symmetric || (span.queries == (0..n) && span.refs == n));
    let list = shape.list();
    let s = &gpu.stream;
    let blas = crate::gpu::blas::handle(s)?;
    crate::trace::event(|| "knn: cuBLAS ready".into());

    // Step 1: the rows the key multiplies (centred for the squared distance, column means in
    // double) and their terms.
    let KeyRows {
        rows: xc,
        terms: norms,
    } = key_rows(gpu, x, n, d, shape.key, n.div_ceil(t.refs) * t.refs)?;

    // Step 2: SGEMM and select tile by tile, finishing each query tile.
    let mut c_tile = s.alloc_zeros::<f32>(t.queries * t.refs)?;
    let state_rows = if symmetric { n } else { t.queries };
    let mut state_d = s.alloc_zeros::<f32>(state_rows * list)?;
    let mut state_i = s.alloc_zeros::<i32>(state_rows * list)?;
    let mut answer = Answer::poisoned(gpu, shape)?;
    if symmetric {
        fill_lists(gpu, kr, &mut state_d, &mut state_i, n * list, f32::INFINITY)?;
    }
    let mut done = LaggedProgress::begin(progress, "knn", span.queries.len().div_ceil(t.queries));
    for q0 in span.queries.clone().step_by(t.queries) {
        let q_count = t.queries.min(span.queries.end - q0);
        let own = if symmetric { q0 * list } else { 0 };
        if !symmetric {
            fill_lists(
                gpu,
                kr,
                &mut state_d,
                &mut state_i,
                q_count * list,
                f32::INFINITY,
            )?;
        }
        let queries = xc.slice(q0 * d..(q0 + q_count) * d);
        let first_ref = if symmetric { q0 } else { 0 };
        for ref0 in (first_ref..span.refs).step_by(t.refs) {
            let r_valid = t.refs.min(span.refs - ref0);
            if stages.gemm {
                let cfg = GemmConfig {
                    transa: cublasOperation_t::CUBLAS_OP_T,
                    transb: cublasOperation_t::CUBLAS_OP_N,
                    m: r_valid as i32,
                    n: q_count as i32,
                    k: d as i32,
                    alpha: -2.0f32,
                    lda: d as i32,
                    ldb: d as i32,
                    beta: 0.0f32,
                    ldc: t.refs as i32,
                };
                // Column-major A = refs (d × r_valid), B = queries (d × q_count), C = the tile
                // (r_valid × q_count, ldc = t.refs).
                let refs = xc.slice(ref0 * d..(ref0 + r_valid) * d);
                gemm(&blas, cfg, &refs, &queries, &mut c_tile)?;
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
            KnnSelect {
                kr,
                variant: list_variant(kr),
                columns,
                c: &c_tile,
                ldc: t.refs,
                r_valid,
                q_count,
                q0,
                ref0,
                norms: &norms,
                state_d: &mut d_mine.slice_mut(own..rows_end),
                state_i: &mut i_mine.slice_mut(own..rows_end),
                ref_state_d: &mut d_theirs.slice_mut(0..columns * list),
                ref_state_i: &mut i_theirs.slice_mut(0..columns * list),
            }
            .launch(
                gpu,
                s,
                warps_config(q_count.div_ceil(WARPS) * WARPS + columns),
            )?;
        }
        let lists = state_i.slice(own..own + q_count * list);
        answer.finish(gpu, x, shape, (q0, q_count), &lists)?;
        done.queued(s)?;
    }
    done.end()?;
    Ok(answer)
}
