//! Stage 1, what a run settles before any work: the parameters resolved against the input
//! and the machine (backend, kNN method, internal numbering, neighbours given), the input's
//! values screened and the memory planned, so that a run that cannot succeed fails in
//! seconds with the flag to change, not after minutes of kNN.

use super::memory::{self, DeviceWatch};
use super::screen::{input_info, screen};
use super::{AffinityMethod, EmbedParams, Input, KnnMethod, PointOrder};
use crate::backend::{multi, BackendKind, Resolved};
use crate::io::Labels;
use crate::knn::Neighbors;
use crate::optim::OptimReport;
use crate::progress::Progress;
use crate::report::MemoryReport;
use crate::report::{InputInfo, KnnReport, Quality, Report, StageSeconds};
use crate::repulse::GridSpec;
use crate::{Error, Result};

/// What [`set_up`] settles.
pub(super) struct Setup {
    /// The parameters resolved: grid, kNN method, numbering, perplexity for the neighbours
    /// given.
    pub(super) params: EmbedParams,
    pub(super) backend: Resolved,
    /// The input as the report describes it.
    pub(super) info: InputInfo,
    /// What the settling changed of what the user asked for, for the report.
    pub(super) notes: Vec<String>,
    /// The memory estimate the run was checked against.
    pub(super) memory: MemoryReport,
    /// The watch of the device's peak (gpu and hybrid).
    pub(super) watch: Option<DeviceWatch>,
    /// cuBLAS loading ahead for a run that multiplies on the device ([`uses_cublas`]),
    /// held until the run ends.
    pub(super) _blas: Option<crate::gpu::blas::WarmingUp>,
}

impl Setup {
    /// The run's report: what was settled here, with the stages' results (`knn` of point
    /// mode, the non-zeros of P, the seconds, the optimisation and the quality measures),
    /// the process's and the device's peak memory read now, at the run's end.
    pub(super) fn into_report(
        self,
        knn: Option<KnnReport>,
        p_nnz: usize,
        seconds: StageSeconds,
        optimise: OptimReport,
        quality: Quality,
    ) -> Report {
        Report {
            version: env!("CARGO_PKG_VERSION"),
            input: self.info,
            threads: rayon::current_num_threads(),
            knn,
            p_nnz,
            seconds,
            optimise,
            quality,
            peak_rss_bytes: crate::report::peak_rss_bytes(),
            memory: MemoryReport {
                peak_device_bytes: self.watch.map(DeviceWatch::finish),
                ..self.memory
            },
            backend: self.backend,
            params: self.params,
            notes: self.notes,
            clusters: None,
        }
    }
}

/// Stage 1: checks `params` and resolves them for `input` named `name` (with `labels`, one
/// per point), screens the input's values ([`screen`]) and plans the memory
/// ([`memory::plan`]), before any stage's work. The screen runs beside the backend's
/// resolution, which waits for the GPU's start when it is still under way: a GPU was ready
/// 1.1–1.4 s into the process on an H200 host, 0.6–0.9 s after 10M × 50 points had loaded,
/// and their screen took 0.4–0.5 s after it.
pub(super) fn set_up(
    input: &mut Input,
    name: &str,
    labels: Option<&Labels>,
    params: &EmbedParams,
    progress: &dyn Progress,
) -> Result<Setup> {
    params.validate()?;
    let mut info = input_info(input, name);
    let (backend, screened) = rayon::join(
        || params.backend.resolve(),
        || screen(input, name, &mut info, progress),
    );
    let backend = backend?;
    screened?;
    crate::trace::event(|| format!("backend {:?}, input screened", backend.kind));
    let mut params = params.clone();
    params.grid = Some(
        params
            .grid
            .unwrap_or_else(|| GridSpec::default_for(params.dims, backend.kind.on_device())),
    );
    let n = input.n();
    if let Some(rule) = params.auto_iters {
        params.optim.iters = rule.cap;
    }
    let mut notes: Vec<String> = params.optim.fit_early_phase().into_iter().collect();
    fit_to_input(input, &mut params, &mut notes)?;
    resolve_search(&mut params, input.d().map(|_| n), backend.kind)?;
    if backend.kind == BackendKind::Gpu {
        params.gpus = Some(multi::plan_gpus(params.gpus, n, params.repulsion)?);
    }
    // After the GPUs, as the grid after the backend: `auto` decided on the resolved run.
    if params.near_field == Some(true) && params.gpus.unwrap_or(1) > 1 {
        return Err(Error::param(
            "near-field",
            "the near field runs on one GPU only: use --gpus 1, or --near-field off",
        ));
    }
    // `--iters auto` holds a small run's grid to a node budget, the near field keeping its
    // accuracy; a budget given is used as it is.
    let budget = params.auto_grid_budget(n, backend.kind.on_device());
    params.near_field = Some(params.near_field.unwrap_or_else(|| {
        budget.is_some() || params.near_field_default(backend.kind.on_device())
    }));
    params.grid_max_nodes = params.grid_max_nodes.or(budget);
    params.optim.coarse_delay = params
        .coarse_delay
        .unwrap_or_else(|| params.auto_coarse_delay(n));
    crate::trace::event(|| "setup: GPUs planned".into());
    let (memory, watch) = memory::plan(input, &params, backend.kind)?;
    crate::trace::event(|| "setup: memory planned".into());
    if let Some(l) = labels {
        if l.codes.len() != n {
            return Err(Error::Data(format!(
                "the labels have {} entries but the input has {n} points",
                l.codes.len()
            )));
        }
    }
    // Beside the screen's end and the kNN's upload, now that the GPU is up.
    let blas = match uses_cublas(input, &params, backend.kind) {
        true => crate::gpu::Gpu::get().ok().map(crate::gpu::blas::warm_up),
        false => None,
    };
    Ok(Setup {
        params,
        backend,
        info,
        notes,
        memory,
        watch,
        _blas: blas,
    })
}

/// Whether a run with the resolved `params` multiplies with cuBLAS on the device: the
/// exact kNN of points beyond the fused kernel's dimensions (its distance tiles), a PCA
/// that drops features.
fn uses_cublas(input: &Input, params: &EmbedParams, backend: BackendKind) -> bool {
    let Some(d) = input.d() else {
        return false;
    };
    let tiled =
        params.knn == KnnMethod::Exact && crate::knn::gpu::exact_is_tiled(params.reduced_dim(d));
    backend.on_device() && (tiled || params.reduces(d))
}

/// Refuses what `params` ask of `input` that it cannot give (a model of anything but dense
/// points; exact affinities or a metric without points) and fits the rest to it: k capped
/// by `--max-neighbors` and the perplexity lowered to the neighbours given, each with a
/// note.
fn fit_to_input(input: &Input, params: &mut EmbedParams, notes: &mut Vec<String>) -> Result<()> {
    if params.keep_reference && !matches!(input, Input::Points(_)) {
        return Err(Error::param(
            "save-model",
            "a model keeps the reference points to place new ones among: it needs dense \
             points (not sparse rows, a graph or affinities)",
        ));
    }
    if params.k() < params.k_wanted() && input.d().is_some() {
        notes.push(format!(
            "k capped at {} neighbours by --max-neighbors (⌈3·perplexity⌉ = {}): each \
             point's Gaussian is cut beyond its {}th neighbour",
            params.k(),
            params.k_wanted(),
            params.k()
        ));
    }
    if let Some(nb) = params.knn_given.clone() {
        given_neighbors_fit(&nb, input, params, notes)?;
    }
    if input.d().is_none() && params.affinities == AffinityMethod::Exact {
        return Err(Error::param(
            "affinities",
            "`exact` calibrates P over the points; a graph or affinities given have none",
        ));
    }
    if input.d().is_none() && params.metric != crate::prep::Metric::Euclidean {
        return Err(Error::param(
            "metric",
            "applies to points, whose neighbours it ranks; a graph's edges are given",
        ));
    }
    Ok(())
}

/// Resolves the kNN method for `n` points (`None`: a graph, which has none) and the
/// internal numbering on the `backend`, and checks that they go together.
pub(crate) fn resolve_search(
    params: &mut EmbedParams,
    n: Option<usize>,
    backend: BackendKind,
) -> Result<()> {
    if let Some(n) = n {
        params.knn = params.knn.resolve(n, backend != BackendKind::Cpu);
    }
    let given = params.knn_given.is_some();
    params.order = Some(
        params
            .order
            .unwrap_or_else(|| PointOrder::default_for(backend, params.knn, given)),
    );
    if params.order == Some(PointOrder::Cells) && given {
        return Err(Error::param(
            "order",
            "`cells` numbers the points by the cells of the GPU's own search; with \
             --knn-from there is none: use --order locality (the default with neighbours \
             given) or input",
        ));
    }
    if params.order == Some(PointOrder::Cells)
        && !(params.knn == KnnMethod::Approx && backend != BackendKind::Cpu)
    {
        return Err(Error::param(
            "order",
            "`cells` numbers the points by the cells of the GPU's approximate kNN: it needs \
             --knn approx on the gpu or hybrid backend",
        ));
    }
    Ok(())
}

/// Checks neighbours given for `input` ([`EmbedParams::knn_given`]): points to go with
/// them, one row per point, and at least one neighbour per row. Fewer neighbours than
/// k = ⌈3·perplexity⌉ lower the perplexity to a third of them, with a note (openTSNE does
/// the same), since the calibration cannot spread a point's mass over more neighbours than
/// it has.
fn given_neighbors_fit(
    nb: &Neighbors,
    input: &Input,
    params: &mut EmbedParams,
    notes: &mut Vec<String>,
) -> Result<()> {
    if input.d().is_none() {
        return Err(Error::param(
            "knn-from",
            "applies to points; a graph or affinities need no neighbours",
        ));
    }
    if nb.n != input.n() {
        return Err(Error::Data(format!(
            "the neighbours given have {} rows, but the input has {} points",
            nb.n,
            input.n()
        )));
    }
    if nb.k < params.k() {
        let perplexity = nb.k as f64 / 3.0;
        notes.push(format!(
            "the neighbours given hold {} per point, fewer than k = {} for perplexity {}: \
             perplexity lowered to {perplexity:.3}",
            nb.k,
            params.k(),
            params.perplexity
        ));
        params.perplexity = perplexity;
        // Multiscale: the scales above the new largest one merge into it.
        params.multiscale.retain(|&u| u < perplexity);
        if !params.multiscale.is_empty() {
            params.multiscale.push(perplexity);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Points;

    /// cuBLAS is loaded ahead for the device's tiled exact kNN and for a PCA that drops
    /// features, and not for the cpu backend, the approximate kNN of 50 features, or P given.
    #[test]
    fn cublas_is_loaded_for_the_runs_that_multiply() {
        let points = |n: usize, d: usize| Input::Points(Points::new(n, d, vec![0.0; n * d]));
        let params = |knn: KnnMethod, pca: Option<usize>| EmbedParams {
            knn,
            pca,
            ..Default::default()
        };
        let gpu = BackendKind::Gpu;
        let exact = params(KnnMethod::Exact, Some(50));
        // The exact kNN multiplies only beyond the fused kernel's 64 dimensions; a PCA
        // that drops features always does.
        assert!(!uses_cublas(&points(70_000, 50), &exact, gpu));
        assert!(uses_cublas(&points(70_000, 784), &exact, gpu));
        assert!(uses_cublas(
            &points(70_000, 784),
            &exact,
            BackendKind::Hybrid
        ));
        assert!(!uses_cublas(&points(70_000, 784), &exact, BackendKind::Cpu));
        assert!(uses_cublas(
            &points(70_000, 100),
            &params(KnnMethod::Exact, None),
            gpu
        ));
        assert!(!uses_cublas(
            &points(70_000, 60),
            &params(KnnMethod::Exact, None),
            gpu
        ));
        let approx = params(KnnMethod::Approx, Some(50));
        assert!(!uses_cublas(&points(1_000, 50), &approx, gpu));
        assert!(uses_cublas(&points(1_000, 784), &approx, gpu));
        assert!(!uses_cublas(
            &points(1_000, 784),
            &params(KnnMethod::Approx, None),
            gpu
        ));
        let given = Input::Affinities(sprs::CsMat::zero((3, 3)));
        assert!(!uses_cublas(&given, &exact, gpu));
    }
}
