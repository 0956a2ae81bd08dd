//! The fused exact kNN (`kernels/knn_fused.cu`): query × reference keys on the tensor cores
//! in 3xFP16, selected in registers behind the products, so that no distance tile is ever
//! written.
//!
//! The SGEMM path of [`super::tiled`] writes every distance once and reads it back: at
//! d = 50 that traffic, not the arithmetic, bounds it (cuBLAS reaches 47 TFLOP/s, the tiles
//! move 8 bytes per pair). Here a block holds 128 queries for a whole sweep over the
//! references: their coordinates, scaled by a power of two to a largest magnitude of 2¹⁴, sit
//! in registers as FP16 head and tail fragments, each step stages 32 references in shared
//! memory and three `mma.sync` per product (head·head, head·tail, tail·head: the FP16 form
//! of Ootomo & Yokota's 3xTF32; both formats keep 11 significant bits) give f32-accurate
//! keys. 3xTF32 came first: FP16's m16n8k16 mma does twice its m16n8k8 work per
//! instruction, and the references take half the shared memory. The accumulators
//! start at the key's term t_r (‖r‖², or the inner product's c) minus the query's current
//! K-th best, so one test of the sign bits rejects
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

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig};
use std::sync::Arc;

use super::{fill_lists, key_rows, tiled, Answer, KeyRows, Shape, SLACK};
use crate::gpu::centre::largest_magnitude;
use crate::gpu::kernels::knn_fused::{
    FusedLayout, KnnFusedSplit, KnnFusedSweep, CHUNK, K_STEP, MAX_DIM, MAX_KR, QUERIES, WARPS,
};
use crate::gpu::kernels::KernelId;
use crate::gpu::progress::LaggedProgress;
use crate::gpu::{Gpu, GpuError};
use crate::progress::Progress;

/// Blocks per launch: progress is reported between launches (each is many waves).
pub(super) const BLOCKS_PER_LAUNCH: usize = 2048;
/// Query rows whose blocks start the all-pairs sweep at the same chunk.
const SHARE: usize = 32768;

/// Dimension padded to the k-step of the FP16 mma (the kernel is `knn_fused_<dp / 16>`).
fn padded_dim(d: usize) -> usize {
    d.div_ceil(K_STEP) * K_STEP
}

/// The NVRTC defines that compile only the sweep for points of `d` dimensions
/// (`knn_fused_{ks}`, ks = ⌈d / 16⌉; `FUSED_KS` in `kernels/knn_fused.cu`), with the split:
/// the variant every run uses, and what [`crate::gpu::Gpu::precompile`] is given.
pub(crate) fn sweep_variant(d: usize) -> &'static [&'static str] {
    const VARIANTS: [&[&str]; MAX_DIM / K_STEP] = [
        &["-DFUSED_KS=1"],
        &["-DFUSED_KS=2"],
        &["-DFUSED_KS=3"],
        &["-DFUSED_KS=4"],
    ];
    VARIANTS[(padded_dim(d) / K_STEP).clamp(1, VARIANTS.len()) - 1]
}

/// The power of two sc that brings a largest magnitude `max` to 2¹⁴ (within a factor of 2):
/// the split's heads stay below FP16's largest value (65,504) and its tails normal for all
/// but the smallest coordinates. Clamped so that sc² stays a normal f32.
fn split_scale(max: f32) -> f32 {
    if !(max > 0.0 && max.is_finite()) {
        return 1.0;
    }
    let exponent = max.log2().ceil() as i32;
    2f32.powi((14 - exponent).clamp(-60, 60))
}

/// Whether the sweep for points of `d` dimensions can start on `gpu` without waiting for
/// its compilation (a first run compiles it while the points load).
pub(super) fn sweep_ready(gpu: &Gpu, d: usize) -> bool {
    gpu.kernel_ready(KernelId::KnnFused, sweep_variant(d))
}

/// `variant`, or for `&[]` the run's own ([`sweep_variant`]).
fn variant_for(variant: &'static [&'static str], d: usize) -> &'static [&'static str] {
    if variant.is_empty() {
        sweep_variant(d)
    } else {
        variant
    }
}

/// Device bytes the fused path needs beyond the centred points, norms and outputs: the
/// padded heads and tails (halves), the norms, the slots' rows, and every slot's list.
fn extra_bytes(n: usize, d: usize, list: usize) -> usize {
    let slots = n.div_ceil(QUERIES) * QUERIES;
    slots * (padded_dim(d) + 2) * 4 + slots * list * 8
}

/// Whether the fused kernel suits the device and the shape (FP16 mma and cp.async: compute capability
/// 8.0 or later; d ≤ [`MAX_DIM`]; enough shared memory per block) and its buffers fit in
/// the free memory.
pub(super) fn fits(gpu: &Gpu, shape: Shape) -> Result<bool, GpuError> {
    let Shape { n, d, k, .. } = shape;
    let smem = gpu.max_shared_bytes().unwrap_or(0);
    let suits = gpu.device.compute_capability.0 >= 8
        && d <= MAX_DIM
        && FusedLayout::new(padded_dim(d), MAX_KR).bytes() <= smem;
    if !suits {
        return Ok(false);
    }
    let need = tiled::fixed_bytes(n, d, k, 1) + extra_bytes(n, d, shape.list());
    Ok(need + SLACK <= gpu.free_memory()?)
}

/// The fused path: the key's rows and terms ([`key_rows`]: centred for the squared
/// distance), split, sweep every point's slot over all references ([`Plan::all_pairs`]),
/// finish every query.
pub(super) fn run(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    shape: Shape,
    progress: &dyn Progress,
) -> Result<Answer, GpuError> {
    let Shape { n, d, kr, .. } = shape;
    let list = shape.list();
    let s = &gpu.stream;
    let KeyRows { rows, terms } = key_rows(gpu, x, n, d, shape.key, n)?;
    let split = Split::new(gpu, &rows, &terms, n, d, &[])?;
    drop((rows, terms));
    let plan = Plan::all_pairs(gpu, n)?;
    // A list per slot, the padding's included (never written).
    let slots = plan.blocks * QUERIES;
    let mut state_d = s.alloc_zeros::<f32>(slots * list)?;
    let mut state_i = s.alloc_zeros::<i32>(slots * list)?;
    fill_lists(
        gpu,
        kr,
        &mut state_d,
        &mut state_i,
        slots * list,
        f32::INFINITY,
    )?;
    let mut answer = Answer::poisoned(gpu, shape)?;
    let lists = Lists {
        d: &mut state_d,
        i: &mut state_i,
        slot0: 0,
    };
    sweep(gpu, &split, &plan, 0..plan.blocks, kr, lists, &[], progress)?;
    drop(state_d);
    answer.finish(gpu, x, shape, (0, n), &state_i)?;
    Ok(answer)
}

/// The slots' sorted candidate lists: keys and indices, 32 · kr per slot from slot `slot0`
/// on.
pub(super) struct Lists<'a> {
    pub d: &'a mut CudaSlice<f32>,
    pub i: &'a mut CudaSlice<i32>,
    pub slot0: usize,
}

/// The rows the key multiplies (centred points for the squared distance) as the sweep reads
/// them: scaled by `sc`, FP16 heads and tails, padded with zero columns to `dp` and zero
/// rows to `n_pad`, and their terms (+∞ past n).
pub(super) struct Split {
    hi: CudaSlice<u16>,
    lo: CudaSlice<u16>,
    sq: CudaSlice<f32>,
    sc: f32,
    n_pad: usize,
    dp: usize,
}

impl Split {
    /// Splits the rows `xc` (n × d) with their terms `norms` ([`key_rows`]); `variant` selects
    /// a kernel variant (`&[]`: the run's, [`sweep_variant`]; or `-DFUSED_MMA_ONLY` for the
    /// timing split).
    pub(super) fn new(
        gpu: &Gpu,
        xc: &CudaSlice<f32>,
        norms: &CudaSlice<f32>,
        n: usize,
        d: usize,
        variant: &'static [&'static str],
    ) -> Result<Split, GpuError> {
        let s = &gpu.stream;
        let variant = variant_for(variant, d);
        let dp = padded_dim(d);
        let n_pad = n.div_ceil(QUERIES) * QUERIES;
        let mut split = Split {
            hi: s.alloc_zeros::<u16>(n_pad * dp)?,
            lo: s.alloc_zeros::<u16>(n_pad * dp)?,
            sq: s.alloc_zeros::<f32>(n_pad)?,
            sc: split_scale(largest_magnitude(gpu, xc, n, d)?),
            n_pad,
            dp,
        };
        KnnFusedSplit {
            variant,
            xc,
            norms,
            n,
            d,
            dp,
            n_pad,
            sc: split.sc,
            hi: &mut split.hi,
            lo: &mut split.lo,
            sq: &mut split.sq,
        }
        .launch(gpu, s, gpu.config(n_pad * dp))?;
        Ok(split)
    }
}

/// What a sweep computes: the row of each query slot ([`QUERIES`] slots per block, −1 for
/// none) and, for each block, the runs of reference chunks ([`CHUNK`] rows) it sweeps, as
/// [`KnnFusedSweep`] reads them.
pub(super) struct Plan {
    qrows: CudaSlice<i32>,
    runs: CudaSlice<i32>,
    run_off: CudaSlice<i32>,
    /// Blocks of slots.
    pub blocks: usize,
    /// The number of the plan's first block among all the sweep's (a take's plan, whose
    /// blocks and slots count from 0; 0 for a whole plan), for the rows it finishes.
    pub first: usize,
}

/// The query rows of the slots `slots` of a sweep of the `n` points, each its own row: slot
/// i is row i, −1 past the points.
pub(super) fn query_rows(slots: std::ops::Range<usize>, n: usize) -> Vec<i32> {
    slots.map(|i| if i < n { i as i32 } else { -1 }).collect()
}

impl Plan {
    /// Every point against all: slot i is row i; block b sweeps every chunk, starting at
    /// one shared by the blocks that run together ([`SHARE`] rows, so that they read each
    /// chunk from the L2 cache) and near the block's own rows (close to its queries when
    /// the points come in a locality order), wrapping around.
    pub(super) fn all_pairs(gpu: &Gpu, n: usize) -> Result<Plan, GpuError> {
        let n_pad = n.div_ceil(QUERIES) * QUERIES;
        let qrows = query_rows(0..n_pad, n);
        let steps = n.div_ceil(CHUNK);
        let blocks = n_pad / QUERIES;
        let mut runs = Vec::with_capacity(4 * blocks);
        let mut run_off = Vec::with_capacity(blocks + 1);
        run_off.push(0);
        for b in 0..blocks {
            let first = (b * QUERIES / SHARE * SHARE / CHUNK) % steps;
            runs.extend([first as i32, (steps - first) as i32, 0, first as i32]);
            run_off.push((runs.len() / 2) as i32);
        }
        Plan::upload(gpu, &qrows, &runs, &run_off)
    }

    /// A plan from its host parts: `qrows` ([`QUERIES`] per block), `runs` (first chunk,
    /// count pairs, flattened) and `run_off` (blocks + 1 offsets into the runs).
    pub(super) fn upload(
        gpu: &Gpu,
        qrows: &[i32],
        runs: &[i32],
        run_off: &[i32],
    ) -> Result<Plan, GpuError> {
        Plan::upload_on(&gpu.stream, qrows, runs, run_off)
    }

    /// [`Plan::upload`] queued on stream `s`: a side stream, so that the copies from
    /// pageable memory, which wait for the work queued before them on their stream, do not
    /// wait for the sweeps (the sweep's stream then waits for them).
    pub(super) fn upload_on(
        s: &Arc<CudaStream>,
        qrows: &[i32],
        runs: &[i32],
        run_off: &[i32],
    ) -> Result<Plan, GpuError> {
        debug_assert_eq!(qrows.len(), (run_off.len() - 1) * QUERIES);
        Ok(Plan {
            qrows: s.clone_htod(qrows)?,
            runs: s.clone_htod(runs)?,
            run_off: s.clone_htod(run_off)?,
            blocks: run_off.len() - 1,
            first: 0,
        })
    }

    /// This plan as the share of a whole one that starts at block `first`.
    pub(super) fn at(self, first: usize) -> Plan {
        Plan { first, ..self }
    }
}

/// Fills the lists of the slots of `blocks` (from (+∞, −1) before the first sweep) with
/// each query's K best references of its runs by the 3xFP16 key. Progress: one unit per
/// launch of [`BLOCKS_PER_LAUNCH`] blocks; returns once the device has swept them all.
#[allow(clippy::too_many_arguments)]
pub(super) fn sweep(
    gpu: &Gpu,
    split: &Split,
    plan: &Plan,
    blocks: std::ops::Range<usize>,
    kr: usize,
    lists: Lists,
    variant: &'static [&'static str],
    progress: &dyn Progress,
) -> Result<(), GpuError> {
    let launches = blocks.len().div_ceil(BLOCKS_PER_LAUNCH);
    let mut done = LaggedProgress::begin(progress, "knn", launches);
    queue_sweep(gpu, split, plan, blocks, kr, lists, variant, |s| {
        done.queued(s)
    })?;
    done.end()
}

/// The launches of [`sweep`] queued on the GPU's stream, `launched` called after each (for
/// a caller that keeps the device fed across several plans and waits itself: nothing).
#[allow(clippy::too_many_arguments)]
pub(super) fn queue_sweep(
    gpu: &Gpu,
    split: &Split,
    plan: &Plan,
    blocks: std::ops::Range<usize>,
    kr: usize,
    lists: Lists,
    variant: &'static [&'static str],
    mut launched: impl FnMut(&CudaStream) -> Result<(), GpuError>,
) -> Result<(), GpuError> {
    let s = &gpu.stream;
    let variant = variant_for(variant, split.dp);
    let layout = FusedLayout::new(split.dp, kr);
    let ks = split.dp / K_STEP;
    gpu.function(KernelId::KnnFused, variant, &format!("knn_fused_{ks}"))?
        .set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            layout.bytes() as i32,
        )?;
    for block0 in blocks.clone().step_by(BLOCKS_PER_LAUNCH) {
        let count = BLOCKS_PER_LAUNCH.min(blocks.end - block0);
        let cfg = LaunchConfig {
            grid_dim: (count as u32, 1, 1),
            block_dim: ((WARPS * 32) as u32, 1, 1),
            shared_mem_bytes: layout.bytes() as u32,
        };
        KnnFusedSweep {
            variant,
            ks,
            n_pad: split.n_pad,
            blocks: count,
            runs_len: plan.runs.len() / 2,
            hi: &split.hi,
            lo: &split.lo,
            half_sc2: split.sc * split.sc / 2.0,
            inv_half_sc2: 2.0 / (split.sc * split.sc),
            sq: &split.sq,
            qrows: &plan.qrows,
            runs: &plan.runs,
            run_off: &plan.run_off,
            kr,
            state_d: &mut *lists.d,
            state_i: &mut *lists.i,
            slot0: lists.slot0,
            block0,
            layout,
        }
        .launch(gpu, s, cfg)?;
        launched(s)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::{gaussian_mixture, MixtureParams};
    use crate::gpu::centre::{centre_on_device, Centred};
    use crate::progress::Silent;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    crate::gpu::gpu_test! {
        /// Where the fused sweep's time goes, printed (not asserted): run on the H100 with
        /// `<test binary> knn::gpu::fused::tests::fused_split_bench --ignored --nocapture`.
        /// First sweep: from empty lists. Second sweep: from the final lists, so only the
        /// pairs that truly belong pass (the floor of the filtering). Third: products alone.
        #[ignore]
        fn fused_split_bench(gpu) {
            let s = &gpu.stream;
            let (n, d, k) = (1_000_000, 50, 90);
            let shape = Shape::new(n, d, k, crate::knn::Key::SqEuclidean);
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
            .data
            .into_vec();
            let list = shape.list();
            let plan = Plan::all_pairs(gpu, n).unwrap();
            for (label, host) in [("uniform", uniform), ("mixture 40", mixture)] {
                let x = s.clone_htod(&host).unwrap();
                let Centred { xc, norms, .. } = centre_on_device(gpu, &x, n, d, n).unwrap();
                let slots = plan.blocks * QUERIES;
                let mut sd = s.alloc_zeros::<f32>(slots * list).unwrap();
                let mut si = s.alloc_zeros::<i32>(slots * list).unwrap();
                fill_lists(gpu, shape.kr, &mut sd, &mut si, slots * list, f32::INFINITY).unwrap();
                let mut time = |variant: &'static [&'static str]| {
                    let split = Split::new(gpu, &xc, &norms, n, d, variant).unwrap();
                    s.synchronize().unwrap();
                    let t0 = std::time::Instant::now();
                    let lists = Lists {
                        d: &mut sd,
                        i: &mut si,
                        slot0: 0,
                    };
                    let blocks = 0..plan.blocks;
                    sweep(
                        gpu, &split, &plan, blocks, shape.kr, lists, variant, &Silent,
                    )
                    .unwrap();
                    s.synchronize().unwrap();
                    t0.elapsed().as_secs_f64()
                };
                for variant in [&[][..], &["-DFUSED_MMA_ONLY"][..]] {
                    // Compiled and loaded before timing.
                    let name = format!("knn_fused_{}", padded_dim(d) / K_STEP);
                    gpu.function(KernelId::KnnFused, variant_for(variant, d), &name)
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
    }

    /// The run's variant of the file holds the split and its one sweep, no other.
    #[test]
    fn sweep_variant_compiles_one_sweep() {
        let Some(files) = crate::gpu::compile::compile_for_test() else {
            return;
        };
        let one = files
            .iter()
            .find(|f| f.id == KernelId::KnnFused && f.defines == sweep_variant(50))
            .expect("the variant is compiled");
        let entries: Vec<&str> = one
            .ptx
            .lines()
            .filter_map(|l| l.trim().strip_prefix(".visible .entry "))
            .map(|l| l.trim_end_matches('(').trim())
            .collect();
        assert_eq!(entries, ["knn_fused_split", "knn_fused_4"]);
        assert_eq!(sweep_variant(64), &["-DFUSED_KS=4"]);
        assert_eq!(sweep_variant(16), &["-DFUSED_KS=1"]);
    }

    #[test]
    fn padding_follows_the_mma_k_step() {
        assert_eq!(padded_dim(50), 64);
        assert_eq!(padded_dim(64), 64);
        assert_eq!(padded_dim(1), 16);
    }

    /// The scale brings the largest magnitude into [2¹³, 2¹⁴], exactly (a power of two).
    #[test]
    fn split_scale_is_a_power_of_two_below_the_half_range() {
        for max in [1e-30f32, 3e-5, 0.7, 1.0, 5.0, 1000.0, 65504.0, 1e30] {
            let sc = split_scale(max);
            assert_eq!(sc.to_bits() & 0x007f_ffff, 0, "{sc} is a power of two");
            let scaled = max * sc;
            if (1e-18..1e18).contains(&max) {
                assert!((8192.0..=16384.0).contains(&scaled), "{max} → {scaled}");
            }
            assert!((sc * sc).is_normal(), "{max}: sc² {}", sc * sc);
        }
        assert_eq!(split_scale(0.0), 1.0);
        assert_eq!(split_scale(f32::NAN), 1.0);
    }
}
