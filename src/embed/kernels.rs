//! The device's kernels a run will use, compiled ahead (`gpu::compile`): NVRTC takes a few
//! hundred milliseconds to a few seconds per file, so a gpu or hybrid run lists the files
//! and variants its stages will load, in the order they load them, and compiles them on
//! background threads while the points are reduced and searched, instead of stalling each
//! stage at its first kernel (about 10 s of a 1.3M-point run's 32 s with an empty cache).

use super::{AffinityMethod, EmbedParams, Input, KnnMethod, Precision, RepulsionMethod};
use crate::backend::BackendKind;
use crate::gpu::compile::{Precompile, Variant};
use crate::gpu::kernels::KernelId;
use crate::gpu::real::DeviceReal;
use crate::gpu::Gpu;
use crate::repulse::g2g::gpu::{pattern_share, plan_ahead};
use crate::repulse::GridSpec;
use crate::Result;

/// Starts compiling the kernels a run on `input` with `params` uses on the `backend`
/// device (none on the cpu backend), on as many threads as the run may use, and planning
/// its adaptive grid's FFTs ([`plan_grids`]); the guard must live until the run ends (see
/// `Precompile`).
pub(super) fn precompile(
    input: &Input,
    params: &EmbedParams,
    backend: BackendKind,
) -> Result<Option<Precompile>> {
    Ok(match backend {
        BackendKind::Cpu => None,
        kind => {
            let d = input.d().map(|d| params.reduced_dim(d));
            let sparse = matches!(input, Input::Sparse(_));
            Some(start(d, sparse, kind, params, Others::Started)?)
        }
    })
}

/// The run's kernel compilation and FFT planning started before the input is read, from
/// the parameters alone (the command line calls it while the input loads: 0.5 s of a
/// 1.3M-point run, 2 s at 10M). The points' dimension after PCA is a guess (`d`, e.g.
/// `--pca`'s 50), the points are taken as dense, an `auto` backend as the GPU and an
/// `auto` kNN as the approximate one, whose files include the exact one's. What the guess
/// misses compiles when the run's own compilation asks for it; what it wrongly adds costs a
/// core for a while. Keep the guard until the run ends.
pub fn compile_ahead(params: &EmbedParams, d: Option<usize>) -> Result<Option<Precompile>> {
    let kind = match params.backend {
        BackendKind::Cpu => return Ok(None),
        BackendKind::Auto => BackendKind::Gpu,
        kind => kind,
    };
    let mut guessed = params.clone();
    if guessed.knn == KnnMethod::Auto {
        guessed.knn = KnnMethod::Approx;
    }
    Ok(Some(start(d, false, kind, &guessed, Others::Wait)?))
}

/// What [`plan_grids`] does with the GPUs beyond the first that are still starting.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Others {
    /// Waits for them (the command line's warm-up thread, from the input's load on; the
    /// others start when the run lets them, `comm::go_ahead`).
    Wait,
    /// Leaves them out (the run itself, which would otherwise stall its first stages on
    /// them: the others start while the kNN orders its cells; the warm-up thread, or their
    /// first FFT, plans them).
    Started,
}

/// Starts compiling the kernels of points of dimension `d` (`sparse` or dense) on the
/// `backend` device, on as many threads as the run may use, and planning the FFTs.
fn start(
    d: Option<usize>,
    sparse: bool,
    backend: BackendKind,
    params: &EmbedParams,
    others: Others,
) -> Result<Precompile> {
    let variants = device_kernels(d, sparse, backend, params);
    let gpu = Gpu::get()?;
    // The compilation first: it goes on on threads of its own while the FFTs are planned.
    let compiling = gpu.precompile(&variants, rayon::current_num_threads());
    plan_grids(params, others)?;
    Ok(compiling)
}

/// Extent (embedding units per axis) up to which the adaptive grid's FFTs are planned
/// ahead: the 1.3M-point runs reached 140–250 at the end and 320–365 just after early
/// exaggeration, when a few outliers stretch the box (`benches/sweeps/`, grid3d.sh).
const PLANNED_EXTENT: f64 = 400.0;

/// Plans, on a side thread per GPU, the FFTs of every size class an adaptive FFT grid
/// passes through up to [`PLANNED_EXTENT`] (`repulse::g2g`'s `plan_ahead`), for each GPU's
/// share of the parity patterns (all of them on one GPU), so that a fresh machine's cuFFT
/// planning overlaps the kNN instead of the first iterations; the GPUs beyond the first
/// that are still starting waited for or left out as `others` says.
fn plan_grids(params: &EmbedParams, others: Others) -> Result<()> {
    let Some(largest) = largest_planned(params) else {
        return Ok(());
    };
    let (dims, world) = (params.dims, params.gpus.unwrap_or(1).max(1));
    for rank in 0..world {
        let gpu = match (rank, others) {
            (0, _) => Gpu::device(rank)?,
            // Not before the run lets them start (`comm::go_ahead`): started here,
            // they would stall the run's driver calls from its set-up on.
            (_, Others::Wait) if !crate::gpu::comm::others_may_start() => continue,
            (_, Others::Wait) => Gpu::device(rank)?,
            (_, Others::Started) => match Gpu::started(rank) {
                Some(gpu) => gpu,
                None => continue,
            },
        };
        let patterns = pattern_share(dims, rank, world).len();
        match params.precision {
            Precision::F32 => plan_ahead::<f32>(gpu, dims, largest, patterns),
            Precision::F64 => plan_ahead::<f64>(gpu, dims, largest, patterns),
        }
    }
    Ok(())
}

/// Nodes per axis of the largest grid [`plan_grids`] plans: `None` where the run has no
/// adaptive FFT grid. A grid not given yet (the parameters before the run's set-up resolves
/// them, [`compile_ahead`]'s) is the device's default.
fn largest_planned(params: &EmbedParams) -> Option<usize> {
    let grid = params
        .grid
        .unwrap_or_else(|| GridSpec::default_for(params.dims, true))
        .for_kernel(params.kernel);
    let (GridSpec::Auto { h }, RepulsionMethod::Fft) = (grid, params.repulsion) else {
        return None;
    };
    Some((PLANNED_EXTENT / h).ceil() as usize + crate::repulse::grid::MARGIN_NODES)
}

/// The kernel files and variants a run on the `backend` device uses, roughly in the order
/// it first uses them, for [`Gpu::precompile`]: for sparse points their PCA's products, in
/// point mode the centring (PCA, kNN) and
/// the kNN's files, then on gpu the affinities (with exact affinities, no kNN: their own
/// file, on gpu and hybrid), the attraction and the update, and the
/// repulsion's files (the FFT's in the grids' precision, with its near field's in 3-D, or
/// the exact one), and the quality
/// measures' search. A file missed
/// here still compiles when first used; one listed but unused costs a core for a while.
fn device_kernels(
    d: Option<usize>,
    sparse: bool,
    backend: BackendKind,
    params: &EmbedParams,
) -> Vec<Variant> {
    let on_gpu = backend == BackendKind::Gpu;
    let mut files = Vec::new();
    if sparse {
        files.push(KernelId::SparsePca);
    }
    if d.is_some() && params.affinities == AffinityMethod::Exact {
        files.extend([KernelId::Centre, KernelId::AffinityExact]);
    } else if d.is_some() {
        files.push(KernelId::Centre);
        match params.knn {
            _ if params.knn_given.is_some() => {}
            KnnMethod::Hnsw => {}
            KnnMethod::Approx => files.extend([
                KernelId::Ivf,
                KernelId::Knn,
                KernelId::KnnFused,
                KernelId::KnnRefine,
            ]),
            _ => files.extend([KernelId::Knn, KernelId::KnnFused]),
        }
        if on_gpu && params.knn_given.is_none() {
            files.push(KernelId::Affinity);
        }
    }
    if on_gpu {
        files.extend([KernelId::AttractHyb, KernelId::Optim]);
    }
    // The fused kNN file is compiled for the points' dimension only (after PCA), the tiled
    // one for the run's list length.
    let fused = crate::knn::gpu::sweep_variant(d.unwrap_or(0));
    let lists = crate::knn::gpu::knn_variant(params.k());
    let mut variants: Vec<Variant> = files
        .into_iter()
        .map(|id| match id {
            KernelId::KnnFused => (id, fused),
            KernelId::Knn => (id, lists),
            _ => (id, &[][..]),
        })
        .collect();
    let real = grid_defines(params.precision);
    match params.repulsion {
        RepulsionMethod::Fft => variants.extend(
            [
                KernelId::S2g,
                KernelId::G2g,
                KernelId::GridFft,
                KernelId::G2s,
                KernelId::Phi2force,
            ]
            .map(|id| (id, real)),
        ),
        RepulsionMethod::Exact => variants.push((KernelId::Exact, &[])),
    }
    if params.near_field_possible() && params.repulsion == RepulsionMethod::Fft {
        variants.push((KernelId::Near, real));
    }
    variants.push((KernelId::Quality, &[]));
    variants
}

/// The NVRTC defines of the repulsion's kernels for grids in `precision`.
fn grid_defines(precision: Precision) -> &'static [&'static str] {
    match precision {
        Precision::F32 => <f32 as DeviceReal>::DEFINES,
        Precision::F64 => <f64 as DeviceReal>::DEFINES,
    }
}

/// The GPUs a run off the cpu backend will use, started before it needs them (device 0;
/// with `gpus` above 1, devices 0 … N − 1 and their NCCL communicators once the run lets them
/// start: [`crate::gpu::comm::make_ahead`]), and the compilation of its kernels and FFT
/// plans ([`compile_ahead`], the points' dimension taken as `pca`'s), on side threads: the
/// driver, the contexts and NVRTC work while the caller reads the input (the CLI) or
/// converts it (the Python package). A failure is left for the run's own use of the device
/// to report. Keep it until the run ends: dropping it joins the side thread, and with it the
/// compilation's guard.
pub struct WarmUp(Option<std::thread::JoinHandle<Option<Precompile>>>);

impl WarmUp {
    /// Starts the warm-up for a run with `params` (nothing on the cpu backend).
    pub fn start(params: &EmbedParams) -> WarmUp {
        if params.backend == BackendKind::Cpu {
            return WarmUp(None);
        }
        if let Some(count) = params.gpus.filter(|&g| g > 1) {
            crate::gpu::comm::make_ahead(count);
        }
        let params = params.clone();
        let compiling = std::thread::Builder::new()
            .name("sgtsne-warm-up".into())
            .spawn(move || compile_ahead(&params, params.pca).ok().flatten());
        WarmUp(compiling.ok())
    }
}

impl Drop for WarmUp {
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            drop(thread.join());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kernel file is compiled ahead for some run (a new file must join the list),
    /// the repulsion's in the grids' precision only, and the exact repulsion's file only
    /// for the exact repulsion.
    #[test]
    fn device_kernels_cover_every_file() {
        let mut listed = Vec::new();
        for backend in [BackendKind::Gpu, BackendKind::Hybrid] {
            for knn in [KnnMethod::Exact, KnnMethod::Approx, KnnMethod::Hnsw] {
                for (repulsion, precision) in [
                    (RepulsionMethod::Fft, Precision::F32),
                    (RepulsionMethod::Fft, Precision::F64),
                    (RepulsionMethod::Exact, Precision::F32),
                ] {
                    let params = EmbedParams {
                        knn,
                        repulsion,
                        precision,
                        ..Default::default()
                    };
                    let variants = device_kernels(Some(50), false, backend, &params);
                    let exact = repulsion == RepulsionMethod::Exact;
                    let count =
                        |f: fn(KernelId) -> bool| variants.iter().filter(|v| f(v.0)).count();
                    assert_eq!(count(|id| id == KernelId::Exact), exact as usize);
                    assert_eq!(count(KernelId::repulse), if exact { 0 } else { 5 });
                    for &(id, defines) in &variants {
                        let want = if id.repulse() {
                            grid_defines(precision)
                        } else if id == KernelId::KnnFused {
                            crate::knn::gpu::sweep_variant(50)
                        } else if id == KernelId::Knn {
                            crate::knn::gpu::knn_variant(params.k())
                        } else {
                            &[][..]
                        };
                        assert_eq!(defines, want, "{}", id.file());
                    }
                    listed.extend(variants.into_iter().map(|(id, _)| id));
                }
            }
        }
        for backend in [BackendKind::Gpu, BackendKind::Hybrid] {
            let params = EmbedParams {
                affinities: AffinityMethod::Exact,
                ..Default::default()
            };
            let variants = device_kernels(Some(50), false, backend, &params);
            let files: Vec<KernelId> = variants.iter().map(|v| v.0).collect();
            assert!(files.contains(&KernelId::AffinityExact));
            assert!(!files.contains(&KernelId::Knn) && !files.contains(&KernelId::Affinity));
            listed.extend(files);
        }
        // In 3-D the near field's file joins the repulsion's, unless it is off.
        for near_field in [None, Some(false)] {
            let params = EmbedParams {
                dims: 3,
                near_field,
                ..Default::default()
            };
            let variants = device_kernels(Some(50), false, BackendKind::Gpu, &params);
            let near = variants.iter().filter(|v| v.0 == KernelId::Near).count();
            assert_eq!(near, near_field.is_none() as usize);
            listed.extend(variants.into_iter().map(|(id, _)| id));
        }
        let sparse = device_kernels(Some(50), true, BackendKind::Gpu, &EmbedParams::default());
        assert_eq!(sparse[0], (KernelId::SparsePca, &[][..]));
        listed.extend(sparse.into_iter().map(|(id, _)| id));
        // `sgtsne transform`'s step and the mixtures' kernels are the files embed never
        // uses.
        for id in KernelId::ALL
            .iter()
            .filter(|&&id| id != KernelId::Transform && id != KernelId::Gmm)
        {
            assert!(listed.contains(id), "{} is never compiled ahead", id.file());
        }
    }
}
