//! `sgtsne embed`'s flags mapped onto the library's `EmbedParams`, with the notes on
//! flags renamed since and the `--init FILE` read; `knn` maps its search flags the same way
//! ([`apply_search`]), so both find the same neighbours.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use sgtsne::embed::{
    AffinityMethod, EmbedParams, KnnMethod, PointOrder, Precision, RepulsionMethod,
};
use sgtsne::init::InitKind;
use sgtsne::io;
use sgtsne::knn::ivf::IvfParams;
use sgtsne::optim::{AutoIters, OptimParams};
use sgtsne::prep::Metric;
use sgtsne::repulse::GridSpec;

use super::args::{
    AffinitiesArg, AutoOr, BackendArg, EmbedArgs, GridArg, InitArg, KnnArg, MetricArg,
    NearFieldArg, OrderArg, PrecisionArg, RepulsionArg, SearchArgs,
};

/// Notes on the exaggeration flags renamed after openTSNE's: `--exaggeration-iters`
/// is an alias of `--early-exaggeration-iters`, while `--exaggeration` changed meaning, from
/// the early factor to the factor after the early phase. A script written for the old
/// meaning runs on, so it is told; one that also gives `--early-exaggeration` is written for
/// the new meaning and is not.
pub(super) fn renamed_flags(a: &EmbedArgs) -> Vec<String> {
    let mut notes = Vec::new();
    if a.exaggeration_iters.is_some() {
        notes.push(
            "--exaggeration-iters is now called --early-exaggeration-iters (the old name \
             still works)"
                .to_string(),
        );
    }
    if let (Some(x), None) = (a.exaggeration, a.early_exaggeration) {
        notes.push(format!(
            "--exaggeration {x} sets the exaggeration after the early phase (openTSNE's \
             meaning; default 1); it used to set the early factor, now \
             --early-exaggeration (default 12, used here)"
        ));
    }
    notes
}

/// Refuses `--gpus` beside a backend that runs on one GPU or none.
pub(super) fn check_gpus(gpus: Option<usize>, backend: BackendArg) -> Result<()> {
    if gpus.is_some() && matches!(backend, BackendArg::Cpu | BackendArg::Hybrid) {
        anyhow::bail!("--gpus applies to --backend gpu (or auto, when it picks the GPU)");
    }
    Ok(())
}

/// Maps the raw arguments onto the library's parameters.
pub(super) fn params_from(a: &EmbedArgs) -> Result<EmbedParams> {
    let defaults = EmbedParams::default();
    if a.init_rescale && !matches!(a.init, InitArg::File(_)) {
        anyhow::bail!("--init-rescale applies to --init FILE only");
    }
    check_gpus(a.gpus, a.backend)?;
    let dims = a.dims as usize;
    let grid = match (a.grid, a.grid_spacing, a.grid_error) {
        (_, _, Some(e)) => Some(GridSpec::for_error(e, dims)?),
        (None, None, None) => None,
        (Some(GridArg::Auto), None, None) => Some(GridSpec::default_auto()),
        (None | Some(GridArg::Auto), Some(h), None) => Some(GridSpec::Auto { h }),
        (Some(GridArg::Fixed), None, None) => Some(GridSpec::default_fixed(dims)),
        (Some(GridArg::Nodes(n)), None, None) => Some(GridSpec::Fixed(n)),
        (Some(GridArg::Fixed | GridArg::Nodes(_)), Some(_), None) => {
            anyhow::bail!("--grid-spacing applies to --grid auto only, not to a fixed grid")
        }
    };
    let mut params = EmbedParams {
        dims,
        perplexity: *a
            .perplexity
            .0
            .last()
            .expect("the parser gives one at least"),
        multiscale: if a.perplexity.0.len() > 1 {
            a.perplexity.0.clone()
        } else {
            Vec::new()
        },
        max_neighbors: a.max_neighbors,
        affinities: match a.affinities {
            Some(AffinitiesArg::Exact) => AffinityMethod::Exact,
            _ => AffinityMethod::Knn,
        },
        kernel: sgtsne::kernel::Kernel { dof: a.dof },
        init: match a.init {
            InitArg::Pca => InitKind::Pca,
            InitArg::Random => InitKind::Random,
            InitArg::File(_) => InitKind::Given,
        },
        init_y: match &a.init {
            InitArg::File(path) => Some(read_init(path, dims, a.quiet, a.init_rescale)?),
            _ => None,
        },
        init_rescale: a.init_rescale,
        grid,
        repulsion: match a.repulsion {
            RepulsionArg::Fft => RepulsionMethod::Fft,
            RepulsionArg::Exact => RepulsionMethod::Exact,
        },
        near_field: match a.near_field {
            NearFieldArg::Auto => None,
            NearFieldArg::On => Some(true),
            NearFieldArg::Off => Some(false),
        },
        grid_max_nodes: a.grid_max_nodes,
        coarse_delay: a.coarse_delay,
        precision: match a.precision {
            PrecisionArg::F32 => Precision::F32,
            PrecisionArg::F64 => Precision::F64,
        },
        backend: a.backend.into(),
        gpus: a.gpus,
        seed: a.seed,
        lambda: a.lambda.unwrap_or(defaults.lambda),
        keep_reference: a.save_model.is_some(),
        learning_rate: match a.learning_rate {
            AutoOr::Auto => None,
            AutoOr::Value(v) => Some(v),
        },
        optim: OptimParams {
            iters: match a.iters {
                AutoOr::Value(n) => n,
                AutoOr::Auto => a.iters_cap,
            },
            early_exaggeration: a
                .early_exaggeration
                .unwrap_or(defaults.optim.early_exaggeration),
            early_exaggeration_iters: a
                .early_exaggeration_iters
                .or(a.exaggeration_iters)
                .unwrap_or(defaults.optim.early_exaggeration_iters),
            exaggeration: a.exaggeration.unwrap_or(defaults.optim.exaggeration),
            momentum_early: a.early_momentum,
            max_step_norm: a.max_step_norm.into_option(),
            coarse_cell: a.coarse_cell,
            deterministic: a.deterministic,
            ..optim_defaults(a)
        },
        auto_iters: match a.iters {
            AutoOr::Value(_) => None,
            AutoOr::Auto => Some(AutoIters {
                cap: a.iters_cap,
                stability: a.auto_stability,
                kl_drop: a.auto_kl_drop,
                kl_flat: a.auto_kl_flat,
            }),
        },
        ..defaults
    };
    apply_search(&a.search, a.seed, &mut params);
    Ok(params)
}

/// The schedule's defaults for `a`'s iteration count (`--iters auto` has its own,
/// [`sgtsne::optim::stability::auto_schedule`]), with the momentum and coarse step given.
fn optim_defaults(a: &EmbedArgs) -> OptimParams {
    let mut o = OptimParams::default();
    if let AutoOr::Auto = a.iters {
        sgtsne::optim::stability::auto_schedule(&mut o);
    }
    o.momentum_late = a.momentum.unwrap_or(o.momentum_late);
    o.coarse_boost = a.coarse_boost.unwrap_or(o.coarse_boost);
    o
}

/// The search flags ([`SearchArgs`]) onto `params`, with the approximate kNN's `seed`.
pub(super) fn apply_search(a: &SearchArgs, seed: u64, params: &mut EmbedParams) {
    params.knn = match a.knn {
        KnnArg::Auto => KnnMethod::Auto,
        KnnArg::Exact => KnnMethod::Exact,
        KnnArg::Hnsw => KnnMethod::Hnsw,
        KnnArg::Approx => KnnMethod::Approx,
    };
    params.metric = match a.metric {
        MetricArg::Euclidean => Metric::Euclidean,
        MetricArg::Cosine => Metric::Cosine,
        MetricArg::Correlation => Metric::Correlation,
        MetricArg::InnerProduct => Metric::InnerProduct,
    };
    params.ivf = IvfParams {
        probes: a.knn_probes,
        spread: a.knn_spread,
        max_probes: match a.knn_max_probes {
            AutoOr::Auto => 0,
            AutoOr::Value(m) => m,
        },
        refine: a.knn_refine,
        refine_below: a.knn_refine_below,
        fan: a.knn_fan,
        lists: match a.knn_lists {
            AutoOr::Auto => 0,
            AutoOr::Value(l) => l,
        },
        seed,
        ..IvfParams::default()
    };
    params.pca = a.pca.into_option();
    params.order = match a.order {
        OrderArg::Auto => None,
        OrderArg::Locality => Some(PointOrder::Locality),
        OrderArg::Input => Some(PointOrder::Input),
        OrderArg::Cells => Some(PointOrder::Cells),
    };
}

/// The initial embedding of `--init FILE`: n × `dims` (the point count is checked by the
/// library), with a note when its scale is far from the customary 1e-4.
fn read_init(path: &Path, dims: usize, quiet: bool, rescale: bool) -> Result<Arc<[f32]>> {
    let y = io::read_points(path)?;
    if y.d != dims {
        anyhow::bail!(
            "{}: --init has {} columns; the embedding has --dims {dims}",
            path.display(),
            y.d
        );
    }
    let std = sgtsne::init::first_axis_std(&y.data, dims);
    if !quiet && !rescale && std > 1e-2 {
        eprintln!(
            "note: --init {} has std {std:.3e} on its first axis, used as given; \
             --init-rescale scales it to 1e-4, the customary start for early exaggeration",
            path.display()
        );
    }
    Ok(y.data.into_vec().into())
}
