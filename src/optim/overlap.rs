//! The summary of a backend whose attraction and repulsion run at the same time (hybrid):
//! how much of one hid behind the other.

use serde::Serialize;

/// Per-iteration times of a backend that runs the attraction and the repulsion at the same
/// time (hybrid), over every gradient evaluation (the iterations and the final KL
/// evaluation): medians, the wall total, a sample every [`Overlap::SAMPLE_EVERY`]
/// evaluations, and the overlap achieved. The attraction and repulsion totals are
/// [`super::OptimReport`]'s `attract_seconds` and `repulse_seconds`.
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
