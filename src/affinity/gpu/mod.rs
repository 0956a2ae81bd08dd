//! Affinities on the GPU (`kernels/affinity.cu`): the device twin of
//! [`conditional_probabilities`](super::conditional_probabilities) followed by
//! [`symmetrize`](fn@super::symmetrize), ending in P in HYB on the device ([`HybGpu`]).
//! Only arrays of n integers and a few scalars cross PCIe; nothing of size nnz does.
//! Exact affinities over every pair (`--affinities exact`) have their own scheme,
//! [`exact_affinities_gpu`], which returns P to the host.
//!
//! # Scheme
//!
//! 1. **Perplexity** (`affinity_perplexity`, one thread per row, the block's rows staged
//!    in shared memory): the CPU's bisection on β in f64, step for step — same start
//!    (1 / mean shifted distance), same doubling and halving, same tolerance 1e-5, same
//!    fallback to the best β after 200 steps, uniform rows when all distances are equal,
//!    sums in the CPU's order without fused multiply-adds — so that both sides stop at the
//!    same β and $p_{j|i}$ agree to rounding. The row-stochastic C (f32) goes to `cond`;
//!    its total Σ C to the device, an exact sum ([`crate::gpu::sum`]: P is then the same
//!    whatever order the blocks add in).
//! 2. **Sort** (`affinity_sort`, one warp per row): each row's (index, c) pairs are sorted
//!    by index (bitonic sort of 64-bit keys in shared memory, k ≤ 256), repeated indices
//!    merged; the row is written back in place, closed by `i32::MAX` sentinels.
//! 3. **Match** (`affinity_match`, one thread per edge): every edge i → j with i < j
//!    binary-searches i in the sorted row j; when found, each of the two slots receives the
//!    other's c (`partner`). Each unordered pair is searched once, from its smaller end, so
//!    no global sort or transpose is ever built.
//! 4. **Count** (`affinity_count`, one warp per row): each slot's symmetric value
//!    $p_{ij} = (c_{ij} + c_{ji}) / (2 Σ C)$ — the CPU's `(v * scale) as f32` — is encoded
//!    in place: NaN for a zero-weight entry (dropped, as the CPU drops it), sign bit set
//!    when row j lacks i (the entry must also be appended to row j). Rows count their own
//!    entries; appended ones are counted per target row with an atomic whose old value,
//!    the entry's rank among row j's appended entries, is kept in the slot; Σ p ln p is
//!    summed.
//! 5. **Width and offsets**: a histogram of the row lengths (`affinity_lengths`, 4096 bins)
//!    comes down and the host picks the ELL width K by the cusp rule (as
//!    [`Hyb::choose_width`](crate::sparse::Hyb::choose_width); all n lengths come down only if the answer lies beyond the
//!    histogram); the COO offsets, the exclusive scan of each row's overflow
//!    max(len − K, 0), are computed on the device (`affinity_scan_*`: tile sums, their
//!    scan, the scan inside each tile), so the COO part is sorted by row.
//! 6. **Fill** (`affinity_fill`, one warp per row): appended entries take slots
//!    0..extra_i − 1 at their ranks, own entries the next slots in column order (so a row
//!    is not sorted), slot s < K goes to ELL (s·n + i), the rest to COO, and the unused
//!    ELL slots get the padding (column i, value 0). No atomics: every slot is known.
//!    For a run over several GPUs the whole P is filled once and cut into the GPUs' row
//!    blocks where twice it fits, else the fill writes one GPU's row block at a time
//!    (every row is read, as appended entries come from any row), moved to its GPU before
//!    the next.
//!
//! Device memory (k neighbours, K the ELL width, m the COO length): the neighbours, 8·n·k
//! bytes, are consumed as they are read (the distances by step 1, the indices by step 2);
//! 16·n·k bytes at most during steps 1–5, then 12·n·k + 8·n_b·K + 12·m_b + 16·n during
//! step 6 for a block of n_b rows and m_b COO entries (all n and m on one GPU); each phase
//! is checked against the free memory first (an error, never a panic).
//!
//! Measured on one H100 (n = 1.3M, k = 90, `bench_affinities`, medians of 5): perplexity
//! 6.8 ms (f64 bisection, compute-bound); symmetrisation + HYB 11 ms when every edge is
//! mutual, 27–36 ms when almost none is (the scattered appends of `affinity_fill` take
//! 17–25 ms of that); against a floor of about 1 ms for reading the neighbours and
//! writing HYB once at 3 TB/s.

use std::ops::Range;

use cudarc::driver::CudaSlice;

use crate::gpu::memory::RESERVE;

mod calibrate;
mod exact;
mod fill;
mod symmetrize;

pub(crate) use calibrate::{calibrate, Conditional};
pub use exact::exact_affinities_gpu;
pub(crate) use symmetrize::{count, Counted};

use super::AffinityError;
pub use crate::gpu::kernels::affinity::MAX_K;
use crate::gpu::Gpu;
use crate::knn::Neighbors;
use crate::sparse::HybGpu;
use crate::{Error, Result};

/// What the affinity stage reports about P.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AffinityStats {
    /// Non-zeros of the symmetric P (both triangles).
    pub nnz: usize,
    /// $\sum_{ij} p_{ij} \ln p_{ij}$ of the symmetric P (the constant term of KL(P‖Q)).
    pub p_log_p: f64,
    /// ELL width K of the HYB layout.
    pub ell_width: usize,
    /// Entries in the COO part.
    pub coo_len: usize,
}

/// Host form: uploads `neighbors` (for tests and the CPU-resident kNN path) and calls
/// [`affinities_device`].
pub fn affinities_gpu(neighbors: &Neighbors, perplexity: f64) -> Result<(HybGpu, AffinityStats)> {
    let (n, k) = (neighbors.n, neighbors.k);
    check_args(n, k, perplexity)?;
    if neighbors.indices.len() != n * k || neighbors.distances.len() != n * k {
        return Err(Error::param(
            "neighbors",
            format!(
                "{} indices and {} distances for n = {n}, k = {k}",
                neighbors.indices.len(),
                neighbors.distances.len()
            ),
        ));
    }
    let gpu = Gpu::get()?;
    // Indices ≥ 2³¹ turn negative here and are reported by the range check on the device.
    let indices: Vec<i32> = neighbors.indices.iter().map(|&j| j as i32).collect();
    let s = &gpu.stream;
    let idx_dev = s.clone_htod(&indices)?;
    drop(indices);
    let dist_dev = s.clone_htod(&neighbors.distances)?;
    let (mut p, stats) =
        affinities_device(gpu, idx_dev, dist_dev, n, k, perplexity, &[(0..n, gpu)])?;
    Ok((p.swap_remove(0), stats))
}

/// Device neighbours (indices n × k, squared distances n × k ascending per row, both
/// row-major) → P in HYB in the row blocks `blocks` (ranges covering 0..n in order, each
/// with the GPU it goes to; one block `(0..n, gpu)` for the whole P), with its
/// [`AffinityStats`]. The neighbours are consumed: each array is freed as soon as the stage
/// has read it (the distances after the calibration, the indices after the sort), leaving
/// their memory to P. Several blocks are cut from the whole P, filled once on `gpu`, when
/// twice the whole fits there; else each block is filled on its own and moved to its GPU
/// peer to peer ([`HybGpu::moved_to`]) before the next is made, so that `gpu` never holds
/// more of P than one block beside the symmetrisation's arrays: a run over several GPUs
/// ([`crate::backend::multi`]) whose P would not fit on one (at 50M points and k = 90,
/// about 60 GB in HYB beside the symmetrisation's 54 GB). The blocks hold the whole P's
/// [`HybGpu::row_block`]s' entries (a row's appended entries in the order the count's
/// atomics gave them, which varies from run to run).
///
/// Errors: perplexity not below k ([`AffinityError::PerplexityTooLarge`]), k above
/// [`MAX_K`], an index outside [0, n) ([`crate::sparse::SparseError::Invariant`]), blocks
/// that do not cover 0..n in order, or a phase or a block that does not fit in its
/// device's free memory ([`crate::gpu::GpuError::OutOfMemory`]).
pub fn affinities_device(
    gpu: &'static Gpu,
    indices: CudaSlice<i32>,
    distances: CudaSlice<f32>,
    n: usize,
    k: usize,
    perplexity: f64,
    blocks: &[(Range<usize>, &'static Gpu)],
) -> Result<(Vec<HybGpu>, AffinityStats)> {
    affinities_cut(gpu, indices, distances, (n, k, perplexity), blocks, None)
}

/// How [`affinities_device`] makes the row blocks of a run over several GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cut {
    /// The whole P filled once, then each block copied out of it and moved to its GPU.
    /// The fill reads every row for any block (appended entries come from any row), so
    /// N blocks filled apart took N passes: at 10M points on two H100 the stage took 0.71 s
    /// against 0.44 s on one (`benches/RESULTS.md`).
    Whole,
    /// Each block filled on its own and moved before the next: `gpu` holds one block of P.
    PerBlock,
}

/// [`affinities_device`] with the blocks made as `cut` says (`None`: [`Cut::Whole`] when
/// twice the whole P fits in `gpu`'s free memory beside the symmetrisation's arrays, else
/// [`Cut::PerBlock`]; one block is always the whole).
pub(crate) fn affinities_cut(
    gpu: &'static Gpu,
    indices: CudaSlice<i32>,
    distances: CudaSlice<f32>,
    (n, k, perplexity): (usize, usize, f64),
    blocks: &[(Range<usize>, &'static Gpu)],
    cut: Option<Cut>,
) -> Result<(Vec<HybGpu>, AffinityStats)> {
    check_args(n, k, perplexity)?;
    if indices.len() < n * k || distances.len() < n * k {
        return Err(Error::param(
            "neighbors",
            format!(
                "device arrays of {} indices and {} distances for n = {n}, k = {k}",
                indices.len(),
                distances.len()
            ),
        ));
    }
    let mut end = 0;
    for (rows, _) in blocks {
        if rows.start != end || rows.end < rows.start {
            return Err(Error::param(
                "blocks",
                format!("row blocks must follow each other from 0; {rows:?} after {end}"),
            ));
        }
        end = rows.end;
    }
    if end != n {
        return Err(Error::param(
            "blocks",
            format!("row blocks cover 0..{end}, not the n = {n} rows"),
        ));
    }
    let cond = calibrate(gpu, &distances, n, k, perplexity)?;
    drop(distances);
    let counted = count(gpu, indices, cond, n, k)?;
    let offsets = fill::offsets(gpu, &counted)?;
    crate::trace::event(|| "affinities: counted".into());
    let stats = AffinityStats {
        nnz: counted.nnz,
        p_log_p: counted.p_log_p,
        ell_width: counted.width,
        coo_len: offsets.coo_len(),
    };
    let whole_bytes = n * counted.width * 8 + offsets.coo_len() * 12;
    let cut = match cut {
        Some(cut) => cut,
        None if blocks.len() > 1 && gpu.free_memory()? >= 2 * whole_bytes + RESERVE => Cut::Whole,
        None => Cut::PerBlock,
    };
    let mut p = Vec::with_capacity(blocks.len());
    if cut == Cut::Whole || blocks.len() == 1 {
        let whole = fill::fill_rows(gpu, &counted, &offsets, 0..n)?;
        drop((counted, offsets));
        crate::trace::event(|| "affinities: filled".into());
        if let [(_, to)] = blocks {
            return Ok((vec![whole.moved_to(to)?], stats));
        }
        let rows: Vec<Range<usize>> = blocks.iter().map(|(rows, _)| rows.clone()).collect();
        for ((_, to), shape) in blocks.iter().zip(whole.block_shapes(&rows)?) {
            let block = whole.row_block(&shape)?;
            crate::trace::event(|| format!("affinities: rows {:?} cut", shape.rows));
            p.push(block.moved_to(to)?);
            crate::trace::event(|| format!("affinities: rows {:?} in place", shape.rows));
        }
        return Ok((p, stats));
    }
    for (rows, to) in blocks {
        let block = fill::fill_rows(gpu, &counted, &offsets, rows.clone())?;
        p.push(block.moved_to(to)?);
        // The moved block's memory back in the pool before the next block is checked.
        gpu.stream
            .synchronize()
            .map_err(crate::gpu::GpuError::from)?;
    }
    Ok((p, stats))
}

/// Steps 2–6: the conditionals `cond` of the neighbours `indices` (n × k) symmetrised into
/// HYB.
#[cfg(test)]
pub(crate) fn symmetrize_device(
    gpu: &'static Gpu,
    indices: CudaSlice<i32>,
    cond: Conditional,
    n: usize,
    k: usize,
) -> Result<(HybGpu, AffinityStats)> {
    let counted = count(gpu, indices, cond, n, k)?;
    let offsets = fill::offsets(gpu, &counted)?;
    let hyb = fill::fill_rows(gpu, &counted, &offsets, 0..n)?;
    let stats = AffinityStats {
        nnz: counted.nnz,
        p_log_p: counted.p_log_p,
        ell_width: hyb.width(),
        coo_len: hyb.coo_len(),
    };
    Ok((hyb, stats))
}

fn check_args(n: usize, k: usize, perplexity: f64) -> Result<()> {
    if !(perplexity.is_finite() && perplexity > 0.0) {
        return Err(Error::param(
            "perplexity",
            format!("must be positive, got {perplexity}"),
        ));
    }
    if (k as f64) <= perplexity {
        return Err(AffinityError::PerplexityTooLarge { perplexity, k }.into());
    }
    if k > MAX_K {
        return Err(Error::param(
            "k",
            format!("the GPU affinities handle at most {MAX_K} neighbours, got {k}"),
        ));
    }
    if n == 0 || n >= i32::MAX as usize {
        return Err(Error::param(
            "n",
            format!("the GPU affinities need 0 < n < 2^31 points, got {n}"),
        ));
    }
    Ok(())
}

/// A launch of `rows` warps (one per row) in blocks of [`WARP_BLOCK`] threads.
fn warp_rows(rows: usize, shared_mem_bytes: u32) -> cudarc::driver::LaunchConfig {
    let warps = (WARP_BLOCK / 32) as usize;
    cudarc::driver::LaunchConfig {
        grid_dim: (rows.div_ceil(warps).clamp(1, 1 << 20) as u32, 1, 1),
        block_dim: (WARP_BLOCK, 1, 1),
        shared_mem_bytes,
    }
}

/// Threads per block of the warp-per-row kernels.
const WARP_BLOCK: u32 = 256;

/// Marks the end of a step for the benchmark's profile (nothing outside tests).
#[inline]
fn lap(gpu: &Gpu, label: &'static str) {
    #[cfg(test)]
    profile::lap(gpu, label);
    let _ = (gpu, label);
}

/// Test-only step timing: while [`profile::ON`] is set, each
/// [`lap`] synchronizes the stream and logs the seconds since the previous one.
#[cfg(test)]
mod profile {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;
    use std::time::Instant;

    pub static ON: AtomicBool = AtomicBool::new(false);
    /// Set by the benchmark: no poisoning of the outputs.
    pub static QUIET: AtomicBool = AtomicBool::new(false);
    /// The last lap's instant and the (step, seconds) log.
    type Log = (Option<Instant>, Vec<(&'static str, f64)>);
    pub static LOG: Mutex<Log> = Mutex::new((None, Vec::new()));

    pub fn lap(gpu: &super::Gpu, label: &'static str) {
        if ON.load(Ordering::Relaxed) {
            gpu.stream.synchronize().unwrap();
            let mut log = LOG.lock().unwrap();
            let now = Instant::now();
            let dt = log.0.map_or(0.0, |t| (now - t).as_secs_f64());
            log.0 = Some(now);
            log.1.push((label, dt));
        }
    }
}

#[cfg(test)]
mod tests;
