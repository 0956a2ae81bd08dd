//! Affinities on the GPU (`kernels/affinity.cu`): the device twin of
//! [`conditional_probabilities`](super::conditional_probabilities) followed by
//! [`symmetrize`](super::symmetrize), ending in P in HYB on the device ([`HybGpu`]).
//! Only arrays of n integers and a few scalars cross PCIe; nothing of size nnz does.
//!
//! # Scheme
//!
//! 1. **Perplexity** (`affinity_perplexity`, one thread per row, the block's rows staged
//!    in shared memory): the CPU's bisection on β in f64, step for step — same start
//!    (1 / mean shifted distance), same doubling and halving, same tolerance 1e-5, same
//!    fallback to the best β after 200 steps, uniform rows when all distances are equal,
//!    sums in the CPU's order without fused multiply-adds — so that both sides stop at the
//!    same β and $p_{j|i}$ agree to rounding. The row-stochastic C (f32) goes to `cond`;
//!    its total Σ C (f64) to the device.
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
//!    [`Hyb::choose_width`]; all n lengths come down only if the answer lies beyond the
//!    histogram); the COO offsets, the exclusive scan of each row's overflow
//!    max(len − K, 0), are computed on the device (`affinity_scan_*`: tile sums, their
//!    scan, the scan inside each tile), so the COO part is sorted by row.
//! 6. **Fill** (`affinity_fill`, one warp per row): appended entries take slots
//!    0..extra_i − 1 at their ranks, own entries the next slots in column order (so a row
//!    is not sorted), slot s < K goes to ELL (s·n + i), the rest to COO, and the unused
//!    ELL slots get the padding (column i, value 0). No atomics: every slot is known.
//!
//! Device memory (k neighbours, K the ELL width, m the COO length, inputs excluded):
//! 12·n·k bytes during steps 2–5, then 12·n·k + 8·n·K + 12·m + 16·n during step 6; each
//! phase is checked against the free memory first (an error, never a panic).
//!
//! Measured on one H100 (n = 1.3M, k = 90, `bench_affinities`, medians of 5): perplexity
//! 6.8 ms (f64 bisection, compute-bound); symmetrisation + HYB 11 ms when every edge is
//! mutual, 27–36 ms when almost none is (the scattered appends of `affinity_fill` take
//! 17–25 ms of that); against a floor of about 1 ms for reading the neighbours and
//! writing HYB once at 3 TB/s.

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

use super::AffinityError;
use crate::attract::gpu::HybGpu;
use crate::gpu::kernels::KernelId;
use crate::gpu::{Gpu, GpuError};
use crate::knn::Neighbors;
use crate::sparse::{Hyb, SparseError};
use crate::{Error, Result};

/// Largest k the per-row sort handles (the bitonic sort keeps a row in shared memory).
pub const MAX_K: usize = 256;
/// Bisection tolerance on |H − ln u| in nats, as on the CPU.
const TOLERANCE: f64 = 1e-5;
/// Bisection steps before falling back to the best β, as on the CPU.
const MAX_STEPS: i32 = 200;
/// Threads per block of the warp-per-row kernels.
const WARP_BLOCK: u32 = 256;
/// Shared memory a block of the perplexity kernel may use (the default limit).
const PERPLEXITY_SMEM: usize = 48 * 1024;
/// Bins of the row-length histogram (longer rows share the last bin).
const HIST_BINS: usize = 4096;
/// Rows per thread of the COO-offset scan (`SCAN_ITEMS` in the kernel).
const SCAN_ITEMS: usize = 8;
/// Free device memory kept in reserve when checking that a phase fits.
const RESERVE: usize = 64 << 20;
/// The NaN bit pattern the tests poison outputs with (as i32: −1, an invalid column).
#[cfg(test)]
const POISON: u32 = 0xffff_ffff;

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
    let idx_dev = s.clone_htod(&indices).map_err(GpuError::from)?;
    drop(indices);
    let dist_dev = s.clone_htod(&neighbors.distances).map_err(GpuError::from)?;
    affinities_device(gpu, &idx_dev, &dist_dev, n, k, perplexity)
}

/// Device neighbours (indices n × k, squared distances n × k ascending per row, both
/// row-major) → P in HYB on the device, with its [`AffinityStats`].
///
/// Errors: perplexity not below k ([`AffinityError::PerplexityTooLarge`]), k above
/// [`MAX_K`], an index outside [0, n) ([`SparseError::Invariant`]), or a phase that does
/// not fit in the device's free memory ([`GpuError::OutOfMemory`]).
pub fn affinities_device(
    gpu: &'static Gpu,
    indices: &CudaSlice<i32>,
    distances: &CudaSlice<f32>,
    n: usize,
    k: usize,
    perplexity: f64,
) -> Result<(HybGpu, AffinityStats)> {
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
    let cond = calibrate(gpu, distances, n, k, perplexity)?;
    let (parts, stats) = symmetrize_hyb(gpu, indices, cond, n, k)?;
    Ok((parts.into_hyb(gpu), stats))
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

/// Row-stochastic conditional probabilities on the device, with their total Σ C.
pub(crate) struct Conditional {
    /// n × k, row-major, laid out like the neighbours.
    cond: CudaSlice<f32>,
    /// One double: Σ C (= n up to rounding).
    total: CudaSlice<f64>,
}

/// HYB arrays built on the device, before they are wrapped into [`HybGpu`].
pub(crate) struct HybParts {
    n: usize,
    width: usize,
    coo_len: usize,
    ell_cols: CudaSlice<i32>,
    ell_vals: CudaSlice<f32>,
    coo_rows: CudaSlice<i32>,
    coo_cols: CudaSlice<i32>,
    coo_vals: CudaSlice<f32>,
}

impl HybParts {
    fn into_hyb(self, gpu: &'static Gpu) -> HybGpu {
        HybGpu::from_device(
            gpu,
            self.n,
            self.width,
            self.coo_len,
            self.ell_cols,
            self.ell_vals,
            (self.coo_rows, self.coo_cols, self.coo_vals),
        )
    }
}

/// Fails with [`GpuError::OutOfMemory`] unless `bytes` (plus a reserve) are free.
fn ensure_fits(gpu: &Gpu, what: &str, bytes: usize) -> std::result::Result<(), GpuError> {
    let free = gpu.free_memory()?;
    if bytes + RESERVE > free {
        return Err(GpuError::OutOfMemory {
            what: what.to_string(),
            needed_mib: (bytes + RESERVE) >> 20,
            free_mib: free >> 20,
        });
    }
    Ok(())
}

/// Uninitialised device memory of `len` elements (at least one).
///
/// # Safety
/// The caller writes every element it later reads.
unsafe fn alloc_uninit<T: cudarc::driver::DeviceRepr>(
    gpu: &Gpu,
    len: usize,
) -> std::result::Result<CudaSlice<T>, GpuError> {
    // SAFETY: forwarded to the caller.
    Ok(unsafe { gpu.stream.alloc::<T>(len.max(1)) }?)
}

/// A launch of `rows` warps (one per row) in blocks of [`WARP_BLOCK`] threads.
fn warp_rows(rows: usize, shared_mem_bytes: u32) -> LaunchConfig {
    let warps = (WARP_BLOCK / 32) as usize;
    LaunchConfig {
        grid_dim: (rows.div_ceil(warps).clamp(1, 1 << 20) as u32, 1, 1),
        block_dim: (WARP_BLOCK, 1, 1),
        shared_mem_bytes,
    }
}

/// Step 1: perplexity calibration (`affinity_perplexity`).
pub(crate) fn calibrate(
    gpu: &'static Gpu,
    distances: &CudaSlice<f32>,
    n: usize,
    k: usize,
    perplexity: f64,
) -> Result<Conditional> {
    check_args(n, k, perplexity)?;
    assert!(distances.len() >= n * k);
    let run = || -> std::result::Result<Conditional, GpuError> {
        ensure_fits(gpu, "conditional probabilities", n * k * 4)?;
        let s = &gpu.stream;
        // SAFETY: affinity_perplexity writes all n·k entries.
        let mut cond = unsafe { alloc_uninit::<f32>(gpu, n * k) }?;
        let mut total = s.alloc_zeros::<f64>(1)?;
        lap(gpu, "perplexity: alloc");
        // Odd row stride: the threads of a warp read distinct shared-memory banks.
        let stride = k | 1;
        let rows = ((PERPLEXITY_SMEM / (stride * 4)) / 32 * 32).clamp(32, 128);
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(rows).clamp(1, 1 << 20) as u32, 1, 1),
            block_dim: (rows as u32, 1, 1),
            shared_mem_bytes: (rows * stride * 4) as u32,
        };
        let f = gpu.function(KernelId::Affinity, "affinity_perplexity")?;
        let (n_i, k_i, stride_i) = (n as i32, k as i32, stride as i32);
        let (target, tol) = (perplexity.ln(), TOLERANCE);
        let mut b = s.launch_builder(&f);
        b.arg(&n_i).arg(&k_i).arg(&stride_i).arg(&target).arg(&tol);
        b.arg(&MAX_STEPS)
            .arg(distances)
            .arg(&mut cond)
            .arg(&mut total);
        // SAFETY: argument contract of affinity_perplexity in kernels/affinity.cu: n·k
        // distances (checked above), cond of n·k, one zeroed double; blockDim a multiple
        // of 32 with rows·stride floats of shared memory (≤ 48 KB since k ≤ 256).
        unsafe { b.launch(cfg) }?;
        lap(gpu, "perplexity: kernel");
        Ok(Conditional { cond, total })
    };
    Ok(run()?)
}

/// Steps 2–6: symmetrisation of the conditional probabilities into HYB.
pub(crate) fn symmetrize_hyb(
    gpu: &'static Gpu,
    indices: &CudaSlice<i32>,
    cond: Conditional,
    n: usize,
    k: usize,
) -> Result<(HybParts, AffinityStats)> {
    assert!(indices.len() >= n * k && cond.cond.len() >= n * k);
    let s = &gpu.stream;
    let (n_i, k_i) = (n as i32, k as i32);
    let Conditional {
        cond: mut sval,
        total,
    } = cond;
    let mut counted = || -> std::result::Result<_, GpuError> {
        ensure_fits(gpu, "symmetrisation", n * k * 8 + n * 12)?;
        // SAFETY: affinity_sort writes all n·k entries of both.
        let mut sidx = unsafe { alloc_uninit::<i32>(gpu, n * k) }?;
        let mut own = unsafe { alloc_uninit::<f32>(gpu, n * k) }?;
        let mut error = s.alloc_zeros::<i32>(1)?;
        lap(gpu, "sym: alloc");
        // Step 2: sort and merge each row.
        let p2 = k.next_power_of_two().max(2);
        let f = gpu.function(KernelId::Affinity, "affinity_sort")?;
        let p2_i = p2 as i32;
        let mut b = s.launch_builder(&f);
        b.arg(&n_i).arg(&k_i).arg(&p2_i).arg(indices).arg(&mut sval);
        b.arg(&mut sidx).arg(&mut own).arg(&mut error);
        let smem = (WARP_BLOCK / 32) * p2 as u32 * 8;
        // SAFETY: argument contract of affinity_sort: n·k entries in each array (checked
        // above), p2 the power of two ≥ k, 8·p2 bytes of shared memory per warp (≤ 16 KB).
        unsafe { b.launch(warp_rows(n, smem)) }?;
        lap(gpu, "sym: sort");
        // Step 3: find each pair's partner.
        let f = gpu.function(KernelId::Affinity, "affinity_match")?;
        let mut b = s.launch_builder(&f);
        b.arg(&n_i).arg(&k_i).arg(&sidx).arg(&sval).arg(&mut own);
        // SAFETY: argument contract of affinity_match: n·k entries in each array; sidx rows
        // sorted with sentinels, as affinity_sort left them.
        unsafe { b.launch(gpu.config(n * k)) }?;
        lap(gpu, "sym: match");
        // Step 4: symmetric values, row counts, ranks of the appended entries, Σ p ln p.
        // SAFETY: affinity_count writes own_count for every row.
        let mut own_count = unsafe { alloc_uninit::<i32>(gpu, n) }?;
        let mut extra = s.alloc_zeros::<i32>(n)?;
        let mut plp = s.alloc_zeros::<f64>(1)?;
        let f = gpu.function(KernelId::Affinity, "affinity_count")?;
        let mut b = s.launch_builder(&f);
        b.arg(&n_i)
            .arg(&k_i)
            .arg(&total)
            .arg(&sidx)
            .arg(&mut sval)
            .arg(&mut own);
        b.arg(&mut own_count).arg(&mut extra).arg(&mut plp);
        // SAFETY: argument contract of affinity_count: n·k entries, own_count and extra of
        // n (extra zeroed), one double each.
        unsafe { b.launch(warp_rows(n, 0)) }?;
        lap(gpu, "sym: count");
        // Step 5 on the device: the histogram of the row lengths, and nnz.
        let mut hist = s.alloc_zeros::<i32>(HIST_BINS + 1)?;
        let mut nnz = s.alloc_zeros::<f64>(1)?;
        let f = gpu.function(KernelId::Affinity, "affinity_lengths")?;
        let h_i = HIST_BINS as i32;
        let mut b = s.launch_builder(&f);
        b.arg(&n_i)
            .arg(&h_i)
            .arg(&own_count)
            .arg(&extra)
            .arg(&mut hist)
            .arg(&mut nnz);
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(WARP_BLOCK as usize).clamp(1, 512) as u32, 1, 1),
            block_dim: (WARP_BLOCK, 1, 1),
            shared_mem_bytes: (HIST_BINS as u32 + 1) * 4,
        };
        // SAFETY: argument contract of affinity_lengths: n counts each, H + 1 zeroed bins
        // and as many ints of shared memory, one zeroed double.
        unsafe { b.launch(cfg) }?;
        let hist_h = s.clone_dtoh(&hist)?;
        let scalars = (
            s.clone_dtoh(&total)?[0],
            s.clone_dtoh(&plp)?[0],
            s.clone_dtoh(&error)?[0],
            s.clone_dtoh(&nnz)?[0],
        );
        lap(gpu, "sym: lengths, download");
        Ok((sidx, own, own_count, extra, hist_h, scalars))
    };
    let (sidx, own, own_count, extra, hist, (total_h, plp_h, error_h, nnz_h)) = counted()?;
    if error_h != 0 {
        return Err(SparseError::Invariant {
            what: format!("a neighbour index lies outside [0, {n})"),
        }
        .into());
    }
    if !(total_h > 0.0 && total_h.is_finite()) {
        return Err(SparseError::Invariant {
            what: format!("affinities sum to {}; no positive weight", 2.0 * total_h),
        }
        .into());
    }
    // Step 5 on the host: the ELL width (cusp's rule) from the histogram.
    let width = match width_from_histogram(n, &hist) {
        Some(w) => w,
        None => {
            // More rows than the threshold are longer than the histogram: use every length.
            let own_h = s.clone_dtoh(&own_count).map_err(GpuError::from)?;
            let extra_h = s.clone_dtoh(&extra).map_err(GpuError::from)?;
            let lengths: Vec<usize> = own_h
                .iter()
                .zip(&extra_h)
                .map(|(&a, &b)| (a + b) as usize)
                .collect();
            Hyb::choose_width(&lengths)
        }
    };
    lap(gpu, "sym: host width");
    // Step 5 back on the device: COO offsets, then step 6: fill ELL and COO.
    let fill = || -> std::result::Result<HybParts, GpuError> {
        let tiles = n.div_ceil(WARP_BLOCK as usize * SCAN_ITEMS);
        ensure_fits(gpu, "COO offsets", n * 8 + tiles * 8 + 8)?;
        // SAFETY: affinity_scan_apply writes all n offsets, the scan kernels all tile sums.
        let mut coo_off = unsafe { alloc_uninit::<i64>(gpu, n) }?;
        let mut tile_sums = unsafe { alloc_uninit::<i64>(gpu, tiles + 1) }?;
        let width_i = width as i32;
        let tiles_cfg = LaunchConfig {
            grid_dim: (tiles as u32, 1, 1),
            block_dim: (WARP_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let f = gpu.function(KernelId::Affinity, "affinity_scan_tiles")?;
        let mut b = s.launch_builder(&f);
        b.arg(&n_i)
            .arg(&width_i)
            .arg(&own_count)
            .arg(&extra)
            .arg(&mut tile_sums);
        // SAFETY: argument contract of the scan kernels: `tiles` blocks of WARP_BLOCK
        // threads cover n rows of SCAN_ITEMS per thread; tile_sums holds tiles + 1.
        unsafe { b.launch(tiles_cfg) }?;
        let f = gpu.function(KernelId::Affinity, "affinity_scan_sums")?;
        let tiles_i = tiles as i32;
        let mut b = s.launch_builder(&f);
        b.arg(&tiles_i).arg(&mut tile_sums);
        let one_block = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1024, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: as above; one block.
        unsafe { b.launch(one_block) }?;
        let f = gpu.function(KernelId::Affinity, "affinity_scan_apply")?;
        let mut b = s.launch_builder(&f);
        b.arg(&n_i)
            .arg(&width_i)
            .arg(&own_count)
            .arg(&extra)
            .arg(&tile_sums);
        b.arg(&mut coo_off);
        // SAFETY: as above, the same grid as affinity_scan_tiles; coo_off holds n.
        unsafe { b.launch(tiles_cfg) }?;
        let coo_len = s.clone_dtoh(&tile_sums.slice(tiles..tiles + 1))?[0] as usize;
        lap(gpu, "hyb: COO offsets");
        ensure_fits(gpu, "HYB layout of P", n * width * 8 + coo_len * 12)?;
        // SAFETY: affinity_fill writes every ELL slot (entries, then padding up to K) and
        // exactly coo_len COO entries; the tests poison them to check this.
        let mut ell_cols = unsafe { alloc_uninit::<i32>(gpu, n * width) }?;
        let mut ell_vals = unsafe { alloc_uninit::<f32>(gpu, n * width) }?;
        let mut coo_rows = unsafe { alloc_uninit::<i32>(gpu, coo_len) }?;
        let mut coo_cols = unsafe { alloc_uninit::<i32>(gpu, coo_len) }?;
        let mut coo_vals = unsafe { alloc_uninit::<f32>(gpu, coo_len) }?;
        #[cfg(test)]
        if !profile::QUIET.load(std::sync::atomic::Ordering::Relaxed) {
            poison(gpu, &mut ell_cols)?;
            poison(gpu, &mut ell_vals)?;
            poison(gpu, &mut coo_rows)?;
            poison(gpu, &mut coo_cols)?;
            poison(gpu, &mut coo_vals)?;
        }
        lap(gpu, "hyb: alloc");
        let f = gpu.function(KernelId::Affinity, "affinity_fill")?;
        let mut b = s.launch_builder(&f);
        b.arg(&n_i)
            .arg(&k_i)
            .arg(&width_i)
            .arg(&sidx)
            .arg(&own)
            .arg(&sval);
        b.arg(&own_count).arg(&extra).arg(&coo_off);
        b.arg(&mut ell_cols).arg(&mut ell_vals);
        b.arg(&mut coo_rows).arg(&mut coo_cols).arg(&mut coo_vals);
        // SAFETY: argument contract of affinity_fill: K·n ELL entries, coo_len COO entries
        // (the scan above, from the same counts the kernel reads), ranks in sval from
        // affinity_count.
        unsafe { b.launch(warp_rows(n, 0)) }?;
        lap(gpu, "hyb: fill");
        Ok(HybParts {
            n,
            width,
            coo_len,
            ell_cols,
            ell_vals,
            coo_rows,
            coo_cols,
            coo_vals,
        })
    };
    let parts = fill()?;
    let stats = AffinityStats {
        nnz: nnz_h as usize,
        p_log_p: plp_h,
        ell_width: width,
        coo_len: parts.coo_len,
    };
    Ok((parts, stats))
}

/// [`Hyb::choose_width`] from the histogram of row lengths (`hist[l]` rows of length l,
/// the last bin counting every longer row too); `None` when the answer lies in that last
/// bin, where the histogram cannot tell.
fn width_from_histogram(n: usize, hist: &[i32]) -> Option<usize> {
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

/// Fills `buf` with [`POISON`] so that entries the kernels fail to write show in tests.
#[cfg(test)]
fn poison<T: cudarc::driver::DeviceRepr>(
    gpu: &Gpu,
    buf: &mut CudaSlice<T>,
) -> std::result::Result<(), GpuError> {
    assert_eq!(std::mem::size_of::<T>(), 4);
    let f = gpu.function(KernelId::Affinity, "affinity_poison")?;
    let len = buf.len() as i64;
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(&len).arg(buf).arg(&POISON);
    // SAFETY: argument contract of affinity_poison: `len` 4-byte words.
    unsafe { b.launch(gpu.config(len as usize)) }?;
    Ok(())
}

#[cfg(test)]
mod tests;
