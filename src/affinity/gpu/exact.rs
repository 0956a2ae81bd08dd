//! Exact affinities on the GPU (`--affinities exact` on the gpu and hybrid backends,
//! `kernels/affinity_exact.cu`): the device twin of
//! [`exact_affinities`](crate::affinity::exact_affinities), P over every pair of points as in
//! the original t-SNE (van der Maaten & Hinton 2008), brought to the host in the same CSR.
//!
//! # Scheme
//!
//! The rows are taken in blocks of R rows (a multiple of the 32-pair tile, sized so that
//! the block's buffers stay within [`BLOCK_BYTES`]), so that no n × n array ever exists on
//! the device: neither the distances nor the conditionals are kept.
//!
//! 1. **Calibration**, per block: the squared distances R × n (`exact_distances`, 32 × 32
//!    tiles staged through shared memory), each summed in f32 in the order of the CPU's
//!    [`sq_dist`](crate::knn::sq_dist) — 8 lanes, the lanes' pairwise combination, then
//!    the tail — with every operation rounded on its own (no fused multiply-adds), so that
//!    it equals the CPU's distance bit for bit; then per row (`exact_calibrate`, one block
//!    of up to 1024 threads per row, block reductions) the bisection of the CPU's
//!    `calibrate_row` step for step in f64: same shift by the smallest distance, same start
//!    (1 / mean shifted distance), same doubling and halving, same tolerance and 200-step
//!    fallback to the best β, uniform rows when every distance is the smallest. Only β,
//!    the shift and the normaliser Σ exp(−β (d − shift)) of each row are kept (24 bytes a
//!    point), and the row's conditionals rounded to f32, as the CPU rounds them, are added
//!    to Σ C (an exact sum, [`crate::gpu::sum`]).
//! 2. **P**, per block: the distances again (the same kernel, so the same bits), then
//!    P's rows without the diagonal (`exact_joint`): $c_{j|i}$ and $c_{i|j}$ recomputed from
//!    the two rows' calibration at the one distance ($d_{ji} = d_{ij}$ bit for bit: the
//!    squared difference is symmetric), and $p_{ij} = (c_{j|i} + c_{i|j}) / (2 Σ C)$
//!    rounded to f32 as the CPU's [`symmetrize`](fn@crate::affinity::symmetrize) rounds it
//!    (`(v * scale) as f32`, its total of C + Cᵀ being 2 Σ C). The transpose-add thus needs
//!    no transpose. A pair whose $c_{j|i} + c_{i|j}$ is 0 (far points whose conditionals
//!    both underflow) is marked and dropped on the host, as the CPU drops zero weights; an
//!    entry whose product alone underflows to 0 is kept, as there.
//!
//! Each block of P's rows comes down straight into the CSR's value array (n − 1 entries a
//! row, in column order); with nothing dropped (the usual case) the CSR's pattern is every
//! off-diagonal pair and no pass over the values remains.
//!
//! Cost: the bisection dominates, n² exponentials in f64 per step and some 20–50 steps a
//! row (the CPU's work, on the device's f64 units); the distances cost 2 n² d operations
//! twice. Device memory, in bytes: 4 n d (points) + 24 n (calibration) + 8 R n (a block's
//! distances and P's rows) ≤ 4 n d + 24 n + 1 GiB, checked against the free memory before
//! anything is allocated. The host holds the CSR, 8 bytes a pair (index and value), within
//! the [`max_points`](crate::affinity::exact::max_points) limit its caller checks.

use cudarc::driver::{CudaSlice, LaunchConfig};
use rayon::prelude::*;

use crate::affinity::exact::check_perplexity;
use crate::affinity::{Affinities, PerplexityParams};
use crate::gpu::kernels::affinity_exact::{
    ExactCalibrate, ExactDistances, ExactJoint, CALIBRATE_THREADS, PAIR_TILE, TILE_ROWS,
};
use crate::gpu::memory::{alloc_uninit, ensure_fits};
use crate::gpu::{sum, Gpu, GpuError};
use crate::sparse::SparseError;
use crate::{Error, Points, Result};

/// Device bytes a block of rows may take (its distances and P's rows): large enough that
/// a block's calibration keeps the device busy (R ≥ 800 rows up to n = 160k), small
/// beside any device's memory.
pub const BLOCK_BYTES: usize = 1 << 30;

/// Bits of the mark `exact_joint` writes for a dropped pair (−0.0: no entry of P is
/// negative).
const DROPPED: u32 = 0x8000_0000;

/// P over every pair of `points`, calibrated to `perplexity` (which must be below n − 1),
/// computed on the device: the CSR [`exact_affinities`](crate::affinity::exact_affinities)
/// returns, equal to it to rounding.
///
/// Errors: the perplexity refused as the CPU refuses it
/// ([`AffinityError::PerplexityTooLarge`](crate::affinity::AffinityError::PerplexityTooLarge)),
/// points that do not fit the kernels' 32-bit indices, the device's memory
/// ([`GpuError::OutOfMemory`], naming the stage), or a P with no positive weight (as the
/// CPU's `symmetrize`).
pub fn exact_affinities_gpu(gpu: &Gpu, points: &Points, perplexity: f64) -> Result<Affinities> {
    exact_in_blocks(gpu, points, perplexity, BLOCK_BYTES)
}

/// [`exact_affinities_gpu`] with at most `block_bytes` for a block of rows (the tests take
/// small blocks, to cover several blocks and a partial last one at small n).
pub(super) fn exact_in_blocks(
    gpu: &Gpu,
    points: &Points,
    perplexity: f64,
    block_bytes: usize,
) -> Result<Affinities> {
    let (n, d) = (points.n, points.d);
    check_perplexity(n, perplexity)?;
    if points.data.len() != n * d {
        return Err(Error::param(
            "points",
            format!(
                "{} values for {n} points of {d} dimensions",
                points.data.len()
            ),
        ));
    }
    if n >= i32::MAX as usize {
        return Err(Error::param(
            "points",
            format!("the GPU's exact affinities take fewer than 2^31 points, got {n}"),
        ));
    }
    let fixed = 4 * n * d + 24 * n + 8 * (sum::WORDS + 1);
    let free = gpu.free_memory()?.saturating_sub(fixed);
    let rows = block_rows(n, block_bytes.min(free / 2));
    ensure_fits(gpu, "exact affinities", fixed + 4 * rows * (2 * n - 1))?;
    let s = &gpu.stream;
    let mut x = alloc_uninit::<f32>(gpu, n * d)?;
    if !points.data.is_empty() {
        s.memcpy_htod(&points.data, &mut x)?;
    }
    let mut dist = alloc_uninit::<f32>(gpu, rows * n)?;
    let calibration = calibrate(gpu, &x, n, d, rows, perplexity, &mut dist)?;
    // Σ (C + Cᵀ) = 2 Σ C, refused where the CPU's symmetrize refuses its total.
    let total = 2.0 * sum::read(s, &calibration.total)?[0];
    if total <= 0.0 || !total.is_finite() {
        return Err(SparseError::Invariant {
            what: format!("affinities sum to {total}; the graph has no positive weight"),
        }
        .into());
    }
    let m = n - 1;
    let mut values = vec![0f32; n * m];
    let mut p = alloc_uninit::<f32>(gpu, rows * m)?;
    let mut dropped = s.alloc_zeros::<u64>(1)?;
    for (b, out) in values.chunks_mut(rows * m).enumerate() {
        let (row0, here) = (b * rows, out.len() / m);
        distances(gpu, &x, n, d, row0, here, &mut dist)?;
        ExactJoint {
            n,
            row0,
            rows: here,
            scale: 1.0 / total,
            dist: &dist,
            beta: &calibration.beta,
            shift: &calibration.shift,
            norm: &calibration.norm,
            p: &mut p,
            dropped: &mut dropped,
        }
        .launch(gpu, s, gpu.config(here * m))?;
        s.memcpy_dtoh(&p.slice(..here * m), out)?;
    }
    let dropped = s.clone_dtoh(&dropped)?[0];
    Ok(joint_csr(n, values, dropped > 0)?)
}

/// Each row's calibration on the device (n entries each) and Σ C.
struct Calibration {
    /// The precision β of each row's Gaussian.
    beta: CudaSlice<f64>,
    /// Each row's smallest distance to another point, subtracted before exponentiating.
    shift: CudaSlice<f64>,
    /// Each row's normaliser Σ_j exp(−β (d_ij − shift)).
    norm: CudaSlice<f64>,
    /// Σ C, the conditionals rounded to f32 (an exact sum's words).
    total: CudaSlice<u64>,
}

/// Step 1 over every block of `rows` rows, with `dist` (rows × n) as the blocks' distances.
fn calibrate(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    n: usize,
    d: usize,
    rows: usize,
    perplexity: f64,
    dist: &mut CudaSlice<f32>,
) -> Result<Calibration, GpuError> {
    let s = &gpu.stream;
    let params = PerplexityParams {
        perplexity,
        ..Default::default()
    };
    let mut beta = alloc_uninit::<f64>(gpu, n)?;
    let mut shift = alloc_uninit::<f64>(gpu, n)?;
    let mut norm = alloc_uninit::<f64>(gpu, n)?;
    let mut total = s.alloc_zeros::<u64>(sum::WORDS)?;
    // One thread per other point up to the block's limit: fewer idle threads in the
    // reductions of small rows.
    let threads = n
        .saturating_sub(1)
        .next_multiple_of(32)
        .clamp(32, CALIBRATE_THREADS);
    for row0 in (0..n).step_by(rows) {
        let here = rows.min(n - row0);
        distances(gpu, x, n, d, row0, here, dist)?;
        ExactCalibrate {
            n,
            row0,
            rows: here,
            target: perplexity.ln(),
            tol: params.tolerance,
            max_steps: params.max_steps.min(i32::MAX as usize) as i32,
            dist: &*dist,
            beta: &mut beta,
            shift: &mut shift,
            norm: &mut norm,
            total: &mut total,
        }
        .launch(
            gpu,
            s,
            LaunchConfig {
                grid_dim: (here as u32, 1, 1),
                block_dim: (threads as u32, 1, 1),
                shared_mem_bytes: 0,
            },
        )?;
    }
    Ok(Calibration {
        beta,
        shift,
        norm,
        total,
    })
}

/// The squared distances from the points `row0 .. row0 + rows` to every point into `dist`.
fn distances(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    n: usize,
    d: usize,
    row0: usize,
    rows: usize,
    dist: &mut CudaSlice<f32>,
) -> Result<(), GpuError> {
    ExactDistances {
        n,
        d,
        row0,
        rows,
        x,
        dist,
    }
    .launch(
        gpu,
        &gpu.stream,
        LaunchConfig {
            grid_dim: (
                n.div_ceil(PAIR_TILE) as u32,
                rows.div_ceil(PAIR_TILE) as u32,
                1,
            ),
            block_dim: (PAIR_TILE as u32, TILE_ROWS as u32, 1),
            shared_mem_bytes: 0,
        },
    )
}

/// Rows per block for n points when `bytes` may hold the block's distances and P's rows
/// (8 n bytes a row): a multiple of [`PAIR_TILE`] (whole tiles) unless all n rows fit, and
/// at least one tile's rows whatever `bytes` says (the memory check that follows then
/// refuses what does not fit).
fn block_rows(n: usize, bytes: usize) -> usize {
    let rows = bytes / (8 * n.max(1)) / PAIR_TILE * PAIR_TILE;
    rows.max(PAIR_TILE).min(n)
}

/// The CSR of P from its rows of n − 1 values (column order, the diagonal left out); with
/// `any_dropped`, the entries marked [`DROPPED`] are left out too.
fn joint_csr(n: usize, mut values: Vec<f32>, any_dropped: bool) -> Result<Affinities, SparseError> {
    let m = n - 1;
    let mut indices = vec![0u32; n * m];
    indices.par_chunks_mut(m).enumerate().for_each(|(i, row)| {
        for (slot, j) in row
            .iter_mut()
            .zip((0..n as u32).filter(|&j| j as usize != i))
        {
            *slot = j;
        }
    });
    let mut indptr: Vec<usize> = (0..=n).map(|i| i * m).collect();
    if any_dropped {
        let mut kept = 0;
        for i in 0..n {
            for e in i * m..(i + 1) * m {
                if values[e].to_bits() != DROPPED {
                    values[kept] = values[e];
                    indices[kept] = indices[e];
                    kept += 1;
                }
            }
            indptr[i + 1] = kept;
        }
        values.truncate(kept);
        indices.truncate(kept);
    }
    Affinities::try_new((n, n), indptr, indices, values).map_err(|e| SparseError::Invariant {
        what: format!("exact P: {}", e.3),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks are whole tiles within the byte budget, never fewer than one tile's rows and
    /// never more than n.
    #[test]
    fn block_rows_stay_in_budget() {
        assert_eq!(block_rows(2, BLOCK_BYTES), 2);
        assert_eq!(block_rows(1000, BLOCK_BYTES), 1000);
        let n = 100_000;
        let rows = block_rows(n, BLOCK_BYTES);
        assert_eq!(rows % PAIR_TILE, 0);
        assert!(8 * rows * n <= BLOCK_BYTES && 8 * (rows + PAIR_TILE) * n > BLOCK_BYTES);
        assert_eq!(block_rows(n, 8 * n * 100), 96);
        assert_eq!(block_rows(n, 0), PAIR_TILE);
    }

    /// Rows of n − 1 values become every off-diagonal pair in column order; marked pairs
    /// are left out, an entry of value 0 is kept (as the CPU's symmetrize keeps a product
    /// that underflows).
    #[test]
    fn joint_csr_drops_only_marked_pairs() {
        let n = 4;
        let values: Vec<f32> = (0..12).map(|v| v as f32 / 100.0).collect();
        let p = joint_csr(n, values.clone(), false).unwrap();
        assert_eq!(p.indptr().raw_storage(), &[0, 3, 6, 9, 12]);
        assert_eq!(p.indices(), &[1, 2, 3, 0, 2, 3, 0, 1, 3, 0, 1, 2]);
        assert_eq!(p.data(), &values[..]);
        let mut marked = values;
        marked[1] = f32::from_bits(DROPPED); // (0, 2)
        marked[6] = f32::from_bits(DROPPED); // (2, 0)
        let p = joint_csr(n, marked, true).unwrap();
        assert_eq!(p.indptr().raw_storage(), &[0, 2, 5, 7, 10]);
        assert_eq!(p.indices(), &[1, 3, 0, 2, 3, 1, 3, 0, 1, 2]);
        assert_eq!(p.get(0, 1), Some(&0.0));
        assert_eq!(p.get(0, 2), None);
    }
}
