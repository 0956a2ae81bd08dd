//! Steps 2–5 of the symmetrisation: each row sorted and merged, each pair matched with its
//! partner, the symmetric values and the rows' lengths counted, and the ELL width chosen
//! from their histogram (the scheme: [`super`]).

use cudarc::driver::{CudaSlice, LaunchConfig};

use super::{lap, warp_rows, Conditional, WARP_BLOCK};
use crate::gpu::kernels::affinity::{AffinityCount, AffinityLengths, AffinityMatch, AffinitySort};
use crate::gpu::memory::{alloc_uninit, ensure_fits};
use crate::gpu::{Gpu, GpuError};
use crate::sparse::{Hyb, SparseError};
use crate::Result;

/// Bins of the row-length histogram (longer rows share the last bin).
pub(super) const HIST_BINS: usize = 4096;

/// The rows after step 5, ready for the fill: everything the fill reads, and what the stage
/// reports.
pub(crate) struct Counted {
    pub(crate) n: usize,
    pub(crate) k: usize,
    /// Each row's neighbour indices, sorted, merged, closed by `i32::MAX`.
    pub(crate) sidx: CudaSlice<i32>,
    /// The encoded symmetric values (NaN: dropped; sign bit: also appended to row j).
    pub(crate) own: CudaSlice<f32>,
    /// The appended entries' ranks among row j's appended entries.
    pub(crate) rank: CudaSlice<f32>,
    /// Entries each row keeps of its own, and entries appended to it.
    pub(crate) own_count: CudaSlice<i32>,
    pub(crate) extra: CudaSlice<i32>,
    /// The ELL width (cusp's rule, [`Hyb::choose_width`]).
    pub(crate) width: usize,
    /// Σ p ln p and non-zeros of the symmetric P.
    pub(crate) p_log_p: f64,
    pub(crate) nnz: usize,
}

/// Steps 2–5 on the conditionals `cond` of the neighbours `indices` (n × k), which are
/// freed once sorted (their copy `sidx` goes on): at 50M points and k = 90 they are 18 GB
/// of the device's memory that the fill needs.
pub(crate) fn count(
    gpu: &'static Gpu,
    indices: CudaSlice<i32>,
    cond: Conditional,
    n: usize,
    k: usize,
) -> Result<Counted> {
    ensure_fits(gpu, "symmetrisation", n * k * 8 + n * 12)?;
    let Conditional { cond, total } = cond;
    let Sorted {
        sidx,
        partner,
        cond,
        error,
    } = sort_and_match(gpu, &indices, cond, n, k)?;
    drop(indices);
    let rows = count_rows(gpu, &total, &sidx, partner, cond, n, k)?;
    let (hist, nnz) = row_lengths(gpu, &rows.own_count, &rows.extra, n)?;
    let s = &gpu.stream;
    let total = crate::gpu::sum::read(&gpu.stream, &total)?[0];
    let (plp, error) = (
        crate::gpu::sum::read(&gpu.stream, &rows.plp)?[0],
        s.clone_dtoh(&error)?[0],
    );
    lap(gpu, "sym: lengths, download");
    if error != 0 {
        return Err(SparseError::Invariant {
            what: format!("a neighbour index lies outside [0, {n})"),
        }
        .into());
    }
    if !(total > 0.0 && total.is_finite()) {
        return Err(SparseError::Invariant {
            what: format!("affinities sum to {}; no positive weight", 2.0 * total),
        }
        .into());
    }
    // Step 5 on the host: the ELL width (cusp's rule) from the histogram.
    let width = match width_from_histogram(n, &hist) {
        Some(w) => w,
        None => {
            // More rows than the threshold are longer than the histogram: use every length.
            let own_h = s.clone_dtoh(&rows.own_count)?;
            let extra_h = s.clone_dtoh(&rows.extra)?;
            let lengths: Vec<usize> = own_h
                .iter()
                .zip(&extra_h)
                .map(|(&a, &b)| (a + b) as usize)
                .collect();
            Hyb::choose_width(&lengths)
        }
    };
    lap(gpu, "sym: host width");
    Ok(Counted {
        n,
        k,
        sidx,
        own: rows.own,
        rank: rows.rank,
        own_count: rows.own_count,
        extra: rows.extra,
        width,
        p_log_p: plp,
        nnz,
    })
}

/// What steps 2 and 3 leave: the rows sorted by index and merged (`sidx`, and the
/// conditionals in `cond`), each slot's partner value, and the out-of-range flag.
struct Sorted {
    sidx: CudaSlice<i32>,
    partner: CudaSlice<f32>,
    cond: CudaSlice<f32>,
    error: CudaSlice<i32>,
}

/// Steps 2 and 3: each row sorted by index and merged, then each pair's partner found.
fn sort_and_match(
    gpu: &Gpu,
    indices: &CudaSlice<i32>,
    mut cond: CudaSlice<f32>,
    n: usize,
    k: usize,
) -> Result<Sorted, GpuError> {
    let s = &gpu.stream;
    let mut sidx = alloc_uninit::<i32>(gpu, n * k)?;
    let mut own = alloc_uninit::<f32>(gpu, n * k)?;
    let mut error = s.alloc_zeros::<i32>(1)?;
    lap(gpu, "sym: alloc");
    let p2 = k.next_power_of_two().max(2);
    AffinitySort {
        n,
        k,
        p2,
        idx: indices,
        cond: &mut cond,
        sidx: &mut sidx,
        partner: &mut own,
        error: &mut error,
    }
    .launch(gpu, s, warp_rows(n, (WARP_BLOCK / 32) * p2 as u32 * 8))?;
    lap(gpu, "sym: sort");
    AffinityMatch {
        n,
        k,
        sidx: &sidx,
        sval: &cond,
        partner: &mut own,
    }
    .launch(gpu, s, gpu.config(n * k))?;
    lap(gpu, "sym: match");
    Ok(Sorted {
        sidx,
        partner: own,
        cond,
        error,
    })
}

/// What step 4 leaves: the encoded values, the appended entries' ranks, each row's own and
/// appended counts, Σ p ln p.
struct Rows {
    own: CudaSlice<f32>,
    rank: CudaSlice<f32>,
    own_count: CudaSlice<i32>,
    extra: CudaSlice<i32>,
    plp: CudaSlice<u64>,
}

/// Step 4: symmetric values, row counts, ranks of the appended entries, Σ p ln p.
fn count_rows(
    gpu: &Gpu,
    total: &CudaSlice<u64>,
    sidx: &CudaSlice<i32>,
    mut own: CudaSlice<f32>,
    mut sval: CudaSlice<f32>,
    n: usize,
    k: usize,
) -> Result<Rows, GpuError> {
    let s = &gpu.stream;
    let mut own_count = alloc_uninit::<i32>(gpu, n)?;
    let mut extra = s.alloc_zeros::<i32>(n)?;
    let mut plp = s.alloc_zeros::<u64>(crate::gpu::sum::WORDS)?;
    AffinityCount {
        n,
        k,
        total,
        sidx,
        sval: &mut sval,
        own: &mut own,
        own_count: &mut own_count,
        extra: &mut extra,
        plp: &mut plp,
    }
    .launch(gpu, s, warp_rows(n, 0))?;
    lap(gpu, "sym: count");
    Ok(Rows {
        own,
        rank: sval,
        own_count,
        extra,
        plp,
    })
}

/// Step 5 on the device: the histogram of the row lengths (downloaded) and nnz.
fn row_lengths(
    gpu: &Gpu,
    own_count: &CudaSlice<i32>,
    extra: &CudaSlice<i32>,
    n: usize,
) -> Result<(Vec<i32>, usize), GpuError> {
    let s = &gpu.stream;
    let mut hist = s.alloc_zeros::<i32>(HIST_BINS + 1)?;
    let mut nnz = s.alloc_zeros::<f64>(1)?;
    let cfg = LaunchConfig {
        grid_dim: (n.div_ceil(WARP_BLOCK as usize).clamp(1, 512) as u32, 1, 1),
        block_dim: (WARP_BLOCK, 1, 1),
        shared_mem_bytes: (HIST_BINS as u32 + 1) * 4,
    };
    AffinityLengths {
        n,
        h: HIST_BINS,
        own_count,
        extra,
        hist: &mut hist,
        nnz: &mut nnz,
    }
    .launch(gpu, s, cfg)?;
    Ok((s.clone_dtoh(&hist)?, s.clone_dtoh(&nnz)?[0] as usize))
}

/// [`Hyb::choose_width`] from the histogram of row lengths (`hist[l]` rows of length l,
/// the last bin counting every longer row too); `None` when the answer lies in that last
/// bin, where the histogram cannot tell.
pub(super) fn width_from_histogram(n: usize, hist: &[i32]) -> Option<usize> {
    let threshold = 4096.max(n / 3).min(n);
    let last = hist.len() - 1;
    let mut at_least = hist[last] as usize;
    if at_least >= threshold {
        return None;
    }
    for width in (1..last).rev() {
        at_least += hist[width] as usize;
        if at_least >= threshold {
            return Some(width);
        }
    }
    Some(0)
}
