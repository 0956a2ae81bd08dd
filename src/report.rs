//! The JSON run report (DESIGN §1.8): parameters, timings per stage, KL history, device,
//! quality and memory, so a run can be audited and compared later.

use serde::Serialize;

use crate::backend::Resolved;
use crate::optim::{AutoStop, OptimReport};
use crate::params::EmbedParams;

/// Everything a run reports. Stages the CLI times itself (`load`, `write`) are filled in
/// by the caller.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// sgtsne's version.
    pub version: &'static str,
    /// What was embedded.
    pub input: InputInfo,
    /// All parameters, with `auto` values resolved.
    pub params: EmbedParams,
    /// The backend that ran and why.
    pub backend: Resolved,
    /// Worker threads of the CPU stages.
    pub threads: usize,
    /// The kNN stage (point mode): method, k, the recall estimate.
    pub knn: Option<KnnReport>,
    /// Non-zeros of the symmetric P.
    pub p_nnz: usize,
    /// Seconds per stage.
    pub seconds: StageSeconds,
    /// The optimisation: KL history, final KL, per-part timings.
    pub optimise: OptimReport,
    /// Quality measures, when they could be computed.
    pub quality: Quality,
    /// Peak resident memory of the process in bytes (Linux `VmHWM`), at report time.
    pub peak_rss_bytes: Option<u64>,
    /// The memory estimated before the work and the device's peak.
    pub memory: MemoryReport,
    /// What the run changed of what it was given (a lowered perplexity, affinities
    /// symmetrised or normalised), each a sentence; the command line prints them.
    pub notes: Vec<String>,
    /// The Gaussian mixture fitted after the run (`embed --clusters`), filled by the caller.
    pub clusters: Option<ClusterReport>,
}

/// A Gaussian mixture fitted to the embedding or to the data ([`crate::gmm`]).
#[derive(Clone, Debug, Serialize)]
pub struct ClusterReport {
    /// Components.
    pub k: usize,
    /// What was clustered: `embedding` or `data` (the points after PCA).
    pub on: &'static str,
    /// Samples per cluster.
    pub sizes: Vec<usize>,
    /// Mean log-likelihood per sample, BIC, EM iterations and whether EM converged.
    pub mean_log_likelihood: f64,
    pub bic: f64,
    pub iterations: usize,
    pub converged: bool,
    /// Agreement with the given labels, when there are any.
    pub adjusted_rand_index: Option<f64>,
    /// Re-seeded components or raised floors.
    pub notes: Vec<String>,
    /// Seconds of the fit.
    pub seconds: f64,
}

/// What the kNN stage did.
#[derive(Clone, Debug, Serialize)]
pub struct KnnReport {
    /// The method that ran: `exact`, `hnsw` or `approx`.
    pub method: &'static str,
    /// Neighbours per point used for P.
    pub k: usize,
    /// The approximate methods' recall, measured on a seeded sample of points against
    /// their exact neighbours (`None` for `exact`).
    pub recall_sample: Option<f64>,
    /// Points in that sample.
    pub recall_sample_size: Option<usize>,
    /// The GPU approximate kNN's cells, probes and candidates per query.
    pub ivf: Option<crate::knn::gpu::ivf::ApproxStats>,
}

/// The input's shape and origin.
#[derive(Clone, Debug, Serialize)]
pub struct InputInfo {
    /// File name or the demo's name.
    pub name: String,
    /// `points` or `graph`.
    pub kind: &'static str,
    /// Number of points (graph nodes).
    pub n: usize,
    /// Features per point as read (0 for a graph).
    pub d: usize,
    /// Points that repeat an earlier point exactly (dense points; 0 otherwise).
    pub duplicates: usize,
    /// The values were multiplied by 2^scale_exponent so that their squared distances fit
    /// f32 (0: used as given; see [`crate::prep::fit_f32_range`]).
    pub scale_exponent: i32,
}

/// Seconds per pipeline stage.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct StageSeconds {
    pub load: f64,
    /// Stage 1: the parameters resolved, the values screened, the memory planned and the
    /// device started ([`crate::embed`]'s set-up).
    pub setup: f64,
    pub pca: f64,
    /// Renumbering the points in a locality order ([`crate::embed::PointOrder`]).
    pub order: f64,
    pub knn: f64,
    pub affinities: f64,
    pub layout: f64,
    pub init: f64,
    pub optimise: f64,
    pub quality: f64,
    pub write: f64,
    pub total: f64,
    /// The stage under way ([`StageSeconds::start`]), for an error to name.
    #[serde(skip)]
    pub stage: &'static str,
}

impl StageSeconds {
    /// Marks the start of `stage` (named as the fields are) and returns its clock.
    pub fn start(&mut self, stage: &'static str) -> std::time::Instant {
        self.stage = stage;
        crate::trace::event(|| format!("stage {stage}"));
        std::time::Instant::now()
    }
}

/// Quality of the embedding (DESIGN §5).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Quality {
    /// Leave-one-out 10-NN label accuracy in the embedding (with labels).
    pub knn_accuracy_10: Option<f64>,
    /// Fraction of the 10 input-space neighbours kept among the 10 embedding neighbours.
    pub knn_preservation_10: Option<f64>,
}

/// What a run is estimated to need, and what it used.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct MemoryReport {
    /// Host bytes estimated before the work started.
    pub estimated_host_bytes: u64,
    /// Device bytes estimated before the work started (0 on the cpu backend).
    pub estimated_device_bytes: u64,
    /// The most device memory this run held at once, sampled every few milliseconds
    /// ([`crate::embed::memory::DeviceWatch`]); `None` on the cpu backend.
    pub peak_device_bytes: Option<u64>,
}

/// Peak resident set size of this process, from `/proc/self/status` (Linux only).
pub fn peak_rss_bytes() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// The process's resident memory now (Linux: `VmRSS`); `None` elsewhere.
pub fn rss_bytes() -> Option<u64> {
    status_bytes("VmRSS:")
}

/// A size in kB that `/proc/self/status` gives on the line beginning `field`, in bytes.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

impl Report {
    /// The few lines that sum a run up for a person: what ran, how long each stage took,
    /// the notes, and how good the result is. The CLI prints them after a run, the Python
    /// package with `verbose=True`.
    pub fn summary_lines(&self) -> Vec<String> {
        let (r, s) = (self, &self.seconds);
        let mut lines = vec![
            format!(
                "embedded {} ({} × {}) in {}-D: {:.1} s, backend {} ({}), {} threads",
                r.input.name,
                r.input.n,
                r.input.d,
                r.params.dims,
                s.total,
                r.backend.kind.name(),
                r.backend.note,
                r.threads
            ),
            format!(
                "  load {:.2} s, pca {:.2} s, knn {:.2} s, affinities {:.2} s, optimise {:.2} s, \
                 write {:.2} s",
                s.load, s.pca, s.knn, s.affinities, s.optimise, s.write
            ),
        ];
        if let Some(knn) = &r.knn {
            if let (Some(recall), Some(size)) = (knn.recall_sample, knn.recall_sample_size) {
                lines.push(format!(
                    "  knn {} (k = {}): recall {recall:.4} on a sample of {size} points",
                    knn.method, knn.k
                ));
            }
        }
        lines.extend(r.notes.iter().map(|note| format!("  note: {note}")));
        if let Some(o) = &r.optimise.overlap {
            lines.push(format!(
                "  per iteration (median): attraction {:.2} ms (CPU) and repulsion {:.2} ms \
                 (GPU) in {:.2} ms: overlap {:.0} %",
                o.attract_median * 1e3,
                o.repulse_median * 1e3,
                o.wall_median * 1e3,
                o.overlap * 100.0
            ));
        }
        if let Some(i) = r.optimise.interrupted_at {
            lines.push(format!(
                "  interrupted at iteration {i} of {}: the embedding reached is kept",
                r.params.optim.iters
            ));
        }
        let mut line = format!("  KL {:.4}", r.optimise.final_kl);
        if let Some(acc) = r.quality.knn_accuracy_10 {
            line += &format!(", 10-NN accuracy {acc:.4}");
        }
        if let Some(p) = r.quality.knn_preservation_10 {
            line += &format!(", 10-NN preservation {p:.4}");
        }
        if let Some(rss) = r.peak_rss_bytes {
            line += &format!(", peak memory {:.2} GiB", rss as f64 / (1u64 << 30) as f64);
        }
        if let Some(dev) = r.memory.peak_device_bytes {
            line += &format!(", device {:.2} GiB", dev as f64 / (1u64 << 30) as f64);
        }
        lines.push(line);
        if let Some(c) = &r.optimise.convergence {
            lines.push(format!(
                "  the KL fell {:.2} % over iterations {}–{}, the last tenth of the run",
                c.kl_drop * 100.0,
                c.from,
                c.to
            ));
        }
        lines.extend(stability_lines(r));
        if let Some(c) = &r.clusters {
            let ari = c.adjusted_rand_index.map_or(String::new(), |a| {
                format!(", adjusted Rand index {a:.4} against the labels")
            });
            lines.push(format!(
                "  {} clusters of the {} ({:.2} s{}): sizes {:?}",
                c.k, c.on, c.seconds, ari, c.sizes
            ));
            lines.extend(
                c.notes
                    .iter()
                    .map(|note| format!("  clusters note: {note}")),
            );
        }
        lines
    }
}

/// The summary's lines on the map's neighbourhood stability and why an `--iters auto` run
/// stopped (the warning of an unsettled map is the run's: [`crate::optim::stability::warning`]).
fn stability_lines(r: &Report) -> Vec<String> {
    let mut lines = Vec::new();
    let o = &r.optimise;
    if let Some(s) = &o.stability {
        lines.push(format!(
            "  {:.0} % of the {} nearest neighbours in the map of {} sampled points were the \
             same at iterations {} and {}",
            s.kept * 100.0,
            crate::optim::stability::STABILITY_K,
            s.sample,
            s.from,
            s.to
        ));
    }
    match o.auto_stop {
        Some(AutoStop::Converged) => lines.push(format!(
            "  --iters auto: stopped after {} iterations, the map settled",
            o.iterations
        )),
        Some(AutoStop::Flattened) => lines.push(format!(
            "  --iters auto: stopped after {} iterations, the KL flat and the neighbourhoods              formed",
            o.iterations
        )),
        Some(AutoStop::Cap) => lines.push(format!(
            "  --iters auto: stopped at its cap, {} iterations, before the map settled",
            o.iterations
        )),
        None => {}
    }
    lines
}
