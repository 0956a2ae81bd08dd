//! The JSON run report (DESIGN §1.8): parameters, timings per stage, KL history, device,
//! quality and memory, so a run can be audited and compared later.

use serde::Serialize;

use crate::backend::Resolved;
use crate::embed::EmbedParams;
use crate::optim::OptimReport;

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
    /// Neighbours per point used for P (point mode).
    pub k: Option<usize>,
    /// kNN method that ran (`exact` or `hnsw`; point mode).
    pub knn_method: Option<String>,
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
}

/// Seconds per pipeline stage.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct StageSeconds {
    pub load: f64,
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
}

/// Quality of the embedding (DESIGN §5).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Quality {
    /// Leave-one-out 10-NN label accuracy in the embedding (with labels).
    pub knn_accuracy_10: Option<f64>,
    /// Fraction of the 10 input-space neighbours kept among the 10 embedding neighbours.
    pub knn_preservation_10: Option<f64>,
}

/// Per-iteration times of a backend that runs the attraction and the repulsion at the same
/// time (hybrid), over every gradient evaluation (the iterations and the final KL
/// evaluation): medians, the wall total, a sample every [`Overlap::SAMPLE_EVERY`]
/// evaluations, and the overlap achieved. The attraction and repulsion totals are
/// [`OptimReport`]'s `attract_seconds` and `repulse_seconds`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Overlap {
    /// Gradient evaluations timed.
    pub evaluations: usize,
    /// Median seconds of one attraction (CPU).
    pub attract_median: f64,
    /// Median seconds of one repulsion (GPU thread: Y up, kernels, F_rep down).
    pub repulse_median: f64,
    /// Median seconds of one evaluation, both sides joined.
    pub wall_median: f64,
    /// Seconds of all evaluations, both sides joined.
    pub wall_seconds: f64,
    /// 1 − wall / (attraction + repulsion) over all evaluations: 0 when the two sides ran
    /// one after the other, at most 0.5 (two equal sides fully overlapped).
    pub overlap: f64,
    /// (evaluation, attraction, repulsion, wall seconds) every [`Overlap::SAMPLE_EVERY`]
    /// evaluations and at the last one.
    pub samples: Vec<(usize, f64, f64, f64)>,
}

impl Overlap {
    /// Evaluations between two samples (the KL's default cadence).
    pub const SAMPLE_EVERY: usize = 50;

    /// Summarises (attraction, repulsion, wall) seconds per evaluation.
    pub fn from_times(times: &[[f64; 3]]) -> Overlap {
        let median = |k: usize| {
            let mut v: Vec<f64> = times.iter().map(|t| t[k]).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        let total = |k: usize| times.iter().map(|t| t[k]).sum::<f64>();
        let (attract, repulse, wall) = (total(0), total(1), total(2));
        let last = times.len().saturating_sub(1);
        Overlap {
            evaluations: times.len(),
            attract_median: median(0),
            repulse_median: median(1),
            wall_median: median(2),
            wall_seconds: wall,
            overlap: if attract + repulse > 0.0 {
                1.0 - wall / (attract + repulse)
            } else {
                0.0
            },
            samples: times
                .iter()
                .enumerate()
                .filter(|&(e, _)| e % Self::SAMPLE_EVERY == 0 || e == last)
                .map(|(e, t)| (e, t[0], t[1], t[2]))
                .collect(),
        }
    }
}

/// Peak resident set size of this process, from `/proc/self/status` (Linux only).
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_from_times() {
        // Sides of 2 and 1 s run fully overlapped (wall 2) then one after the other (wall 3).
        let times = vec![[2.0, 1.0, 2.0]; 60]
            .into_iter()
            .chain(vec![[2.0, 1.0, 3.0]; 41])
            .collect::<Vec<_>>();
        let o = Overlap::from_times(&times);
        assert_eq!(o.evaluations, 101);
        assert_eq!(
            (o.attract_median, o.repulse_median, o.wall_median),
            (2.0, 1.0, 2.0)
        );
        assert_eq!(o.wall_seconds, 60.0 * 2.0 + 41.0 * 3.0);
        assert!((o.overlap - (1.0 - o.wall_seconds / 303.0)).abs() < 1e-12);
        let at: Vec<usize> = o.samples.iter().map(|s| s.0).collect();
        assert_eq!(at, vec![0, 50, 100]);
        assert_eq!(Overlap::from_times(&[]).overlap, 0.0);
    }
}
