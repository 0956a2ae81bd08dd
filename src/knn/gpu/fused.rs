//! The fused exact kNN (`kernels/knn_fused.cu`): query × reference keys on the tensor cores
//! in 3xTF32, selected in registers behind the products, so that no distance tile is ever
//! written.
//!
//! The SGEMM path of [`super::run_tiled`] writes every distance once and reads it back: at
//! d = 50 that traffic, not the arithmetic, bounds it (cuBLAS reaches 47 TFLOP/s, the tiles
//! move 8 bytes per pair). Here a block holds 128 queries for a whole sweep over the
//! references: their coordinates sit in registers as TF32 head and tail fragments, each
//! step stages 32 references in shared memory and three `mma.sync` per product (head·head,
//! head·tail, tail·head: Ootomo & Yokota's 3xTF32) give f32-accurate keys. The accumulators
//! start at ‖r‖² minus the query's current K-th best, so one test of the sign bits rejects
//! nearly every step once the lists fill; the rest wait in shared memory and are merged into
//! sorted per-query lists 32 at a time. The lists end holding the K best by an f32-accurate
//! key, as the SGEMM path's do, and `knn_finish` turns them into exact distances.
//!
//! One TF32 product instead of three, with the rounding bound (2⁻⁹ ‖q‖ ‖r‖) as slack and an
//! exact f32 recheck, was tried first: on clustered data far from the mean (the `gen`
//! mixture) the slack let through most of each cluster, and the recheck cost more than the
//! two extra products.
//!
//! The sweep is over all n² pairs, not the symmetric half: a block owns its queries' lists
//! outright (no merging into other blocks' lists).

use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

use super::LaggedProgress;
use crate::gpu::kernels::KernelId;
use crate::gpu::{Gpu, GpuError};
use crate::progress::Progress;

/// Largest dimension the fused kernel takes (eight k-steps of 8: the query fragments stay
/// in registers).
pub(crate) const MAX_DIM: usize = 64;
/// Longest list, in warp registers per lane (`knn_fused_1` … `knn_fused_8`).
const MAX_KR: usize = 8;
/// Warps per block (`FUSED_WARPS`).
const WARPS: usize = 4;
/// Queries per block (`FUSED_QUERIES`).
const QUERIES: usize = WARPS * 32;
/// References per step (`FUSED_CHUNK`).
const CHUNK: usize = 32;
/// Reference buffers in the ring (`FUSED_STAGES`).
const STAGES: usize = 3;
/// Queue capacity per query (`FUSED_QUEUE`).
const QUEUE: usize = 8 + CHUNK;
/// Blocks per launch: progress is reported between launches (each is many waves).
const BLOCKS_PER_LAUNCH: usize = 2048;

/// Dimension padded to the k-step of the TF32 mma (the kernel is `knn_fused_<dp / 8>`).
fn padded_dim(d: usize) -> usize {
    d.div_ceil(8) * 8
}

/// Dynamic shared memory of one block for lists of 32·`kr`, as laid out in
/// `kernels/knn_fused.cu`.
fn smem_bytes(dp: usize, kr: usize) -> usize {
    let stage = STAGES * 2 * CHUNK * (dp + 4) * 4;
    let norms = STAGES * CHUNK * 4;
    let queue = QUERIES * QUEUE * 8;
    let counts = QUERIES * 8;
    let scratch = WARPS * (4 * 32 * kr + 32) * 4;
    stage + norms + queue + counts + scratch
}

/// Device bytes the fused path needs beyond the centred points, norms and outputs: the
/// padded heads, tails and norms, and every query's list.
pub(super) fn extra_bytes(n: usize, d: usize, list: usize) -> usize {
    n.div_ceil(QUERIES) * QUERIES * (2 * padded_dim(d) + 1) * 4 + n * list * 8
}

/// Whether the device and the shape suit the fused kernel: TF32 mma (compute capability
/// 8.0 or later), d ≤ [`MAX_DIM`] and enough shared memory per block.
pub(super) fn suits(gpu: &Gpu, d: usize) -> bool {
    let smem = gpu
        .device
        .context
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        .unwrap_or(0);
    gpu.device.compute_capability.0 >= 8
        && d <= MAX_DIM
        && smem_bytes(padded_dim(d), MAX_KR) <= smem.max(0) as usize
}

/// Fills the lists `state_d` / `state_i` (n × 32·`kr`, sorted: (+∞, −1) before the first
/// sweep) with every query's K best references by the 3xTF32 key, from the centred points
/// `xc` (n × d) and their squared norms; `defines` selects a kernel variant (`&[]`, or
/// `-DFUSED_MMA_ONLY` for the timing split). Progress: one unit per launch of
/// [`BLOCKS_PER_LAUNCH`] blocks.
#[allow(clippy::too_many_arguments)]
pub(super) fn sweep(
    gpu: &Gpu,
    xc: &CudaSlice<f32>,
    norms: &CudaSlice<f32>,
    n: usize,
    d: usize,
    kr: usize,
    state_d: &mut CudaSlice<f32>,
    state_i: &mut CudaSlice<i32>,
    defines: &'static [&'static str],
    progress: &dyn Progress,
) -> Result<(), GpuError> {
    let s = &gpu.stream;
    let dp = padded_dim(d);
    let n_pad = n.div_ceil(QUERIES) * QUERIES;
    let mut hi = s.alloc_zeros::<f32>(n_pad * dp)?;
    let mut lo = s.alloc_zeros::<f32>(n_pad * dp)?;
    let mut sq = s.alloc_zeros::<f32>(n_pad)?;
    let split = gpu.function_with(KernelId::KnnFused, defines, "knn_fused_split")?;
    let (n64, d32, dp32, n_pad64) = (n as i64, d as i32, dp as i32, n_pad as i64);
    let mut b = s.launch_builder(&split);
    b.arg(xc)
        .arg(norms)
        .arg(&n64)
        .arg(&d32)
        .arg(&dp32)
        .arg(&n_pad64);
    b.arg(&mut hi).arg(&mut lo).arg(&mut sq);
    // SAFETY: knn_fused_split contract: xc holds n·d floats, norms n, hi and lo n_pad·dp,
    // sq n_pad.
    unsafe { b.launch(gpu.config(n_pad * dp)) }?;

    let f = gpu.function_with(
        KernelId::KnnFused,
        defines,
        &format!("knn_fused_{}", dp / 8),
    )?;
    let smem = smem_bytes(dp, kr);
    f.set_attribute(
        CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        smem as i32,
    )?;
    let blocks = n_pad / QUERIES;
    let launches = blocks.div_ceil(BLOCKS_PER_LAUNCH);
    let mut done = LaggedProgress::begin(progress, "knn", launches);
    let (n32, kr32) = (n as i32, kr as i32);
    for first in (0..blocks).step_by(BLOCKS_PER_LAUNCH) {
        let count = BLOCKS_PER_LAUNCH.min(blocks - first);
        let first32 = first as i32;
        let mut b = s.launch_builder(&f);
        b.arg(&hi).arg(&lo).arg(&n32).arg(&sq).arg(&kr32);
        b.arg(&mut *state_d).arg(&mut *state_i).arg(&first32);
        let cfg = LaunchConfig {
            grid_dim: (count as u32, 1, 1),
            block_dim: ((WARPS * 32) as u32, 1, 1),
            shared_mem_bytes: smem as u32,
        };
        // SAFETY: knn_fused contract: hi and lo n_pad × dp (dp = 8·(kernel number) ≤ 64,
        // zero-padded), sq n_pad, state n × 32·kr entries of sorted lists (+∞, −1 before the
        // first sweep), 1 ≤ kr ≤ 8; blocks first .. first + count ≤ n_pad / 128; the dynamic
        // shared memory is smem_bytes(dp, kr), allowed above.
        unsafe { b.launch(cfg) }?;
        done.queued(s)?;
    }
    done.end()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::{gaussian_mixture, MixtureParams};
    use crate::knn::gpu::{centre_on_device, fill_lists, list_len, Centred};
    use crate::progress::Silent;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// Where the fused sweep's time goes, printed (not asserted): run on the H100 with
    /// `<test binary> knn::gpu::fused::tests::fused_split_bench --ignored --nocapture`.
    /// First sweep: from empty lists. Second sweep: from the final lists, so only the pairs
    /// that truly belong pass (the floor of the filtering). Third: products alone.
    #[test]
    #[ignore]
    fn fused_split_bench() {
        let Some(gpu) = crate::gpu::for_test() else {
            return;
        };
        let s = &gpu.stream;
        let (n, d, k) = (1_000_000, 50, 90);
        let mut rng = StdRng::seed_from_u64(7);
        let uniform: Vec<f32> = (0..n * d).map(|_| rng.random::<f32>()).collect();
        let mixture = gaussian_mixture(&MixtureParams {
            n,
            dim: d,
            clusters: 40,
            seed: 7,
        })
        .unwrap()
        .0
        .data;
        let list = list_len(k);
        let kr = list / 32;
        for (label, host) in [("uniform", uniform), ("mixture 40", mixture)] {
            let x = s.clone_htod(&host).unwrap();
            let Centred { xc, norms, .. } = centre_on_device(gpu, &x, n, d, n).unwrap();
            let mut sd = s.alloc_zeros::<f32>(n * list).unwrap();
            let mut si = s.alloc_zeros::<i32>(n * list).unwrap();
            fill_lists(gpu, &mut sd, &mut si, n * list, f32::INFINITY).unwrap();
            let mut time = |defines: &'static [&'static str]| {
                s.synchronize().unwrap();
                let t0 = std::time::Instant::now();
                sweep(
                    gpu, &xc, &norms, n, d, kr, &mut sd, &mut si, defines, &Silent,
                )
                .unwrap();
                s.synchronize().unwrap();
                t0.elapsed().as_secs_f64()
            };
            for defines in [&[][..], &["-DFUSED_MMA_ONLY"][..]] {
                // Compiled and loaded before timing.
                gpu.function_with(KernelId::KnnFused, defines, &format!("knn_fused_{kr}"))
                    .unwrap();
            }
            let first = time(&[]);
            let again = time(&[]);
            let products = time(&["-DFUSED_MMA_ONLY"]);
            println!(
                "fused sweep {label} {n}x{d} k{k}: from empty lists {first:.3} s, from final \
                 lists {again:.3} s, products alone {products:.3} s ({:.1} TFLOP/s of n² d)",
                2.0 * (n as f64).powi(2) * d as f64 / products / 1e12
            );
        }
    }

    /// Two blocks must fit on an SM of an H100 (228 KiB) at the largest dimension, so that
    /// one block's merges overlap the other's tensor work.
    #[test]
    fn two_blocks_fit_an_sm() {
        assert!(2 * (smem_bytes(padded_dim(MAX_DIM), MAX_KR) + 1024) <= 228 * 1024);
        assert_eq!(padded_dim(50), 56);
        assert_eq!(padded_dim(64), 64);
    }
}
