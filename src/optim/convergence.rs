//! How far a run stopped from convergence, read from its KL history: the KL's relative
//! decrease over the last tenth of the iterations, in the report and the summary.
//!
//! A measure, not yet a verdict: on MNIST the KL fell 1.6 % over iterations 900–1000 and
//! 7 % more by 2000, while on a 1.3M-point mixture it fell 0.25 % over the same tenth and
//! the 10-NN preservation still doubled by 2000 (`benches/RESULTS.md`, convergence). At
//! scale the KL flattens long before the neighbourhoods settle, so no warning is drawn
//! from it alone.

use serde::Serialize;

/// The measure of [`convergence`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Convergence {
    /// (KL at `from` − KL at `to`) / KL at `to`: the relative decrease over the last tenth.
    pub kl_drop: f64,
    /// The iterations it spans: the KL report nearest after 90 % of the run, and the end.
    pub from: usize,
    pub to: usize,
}

/// The convergence measure of a run of `done` steps whose early phase took `early` steps,
/// from its KL `history` ((iteration, KL), ascending): `None` when no two KL reports lie in
/// the last tenth after the early phase (short runs, or `kl_every` 0), whose exaggerated
/// KL values do not compare with the later ones.
pub fn convergence(history: &[(usize, f64)], done: usize, early: usize) -> Option<Convergence> {
    let &(to, last) = history.last()?;
    let start = early.max(done - done / 10);
    let &(from, first) = history
        .iter()
        .find(|(i, kl)| *i >= start && kl.is_finite())?;
    if from >= to || !(last.is_finite() && last > 0.0) {
        return None;
    }
    Some(Convergence {
        kl_drop: (first - last) / last,
        from,
        to,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A KL that decays like 1/iteration towards 2: still falling at 1000 steps when the
    /// decay is slow, flat when it is fast.
    fn history(scale: f64) -> Vec<(usize, f64)> {
        (0..=20)
            .map(|k| {
                let i = k * 50;
                (i, 2.0 + scale / (i as f64 + 1.0))
            })
            .collect()
    }

    #[test]
    fn a_flat_kl_is_converged_and_a_falling_one_is_not() {
        let flat = convergence(&history(1.0), 1000, 250).unwrap();
        assert_eq!((flat.from, flat.to), (900, 1000));
        assert!(flat.kl_drop < 1e-4);
        let falling = convergence(&history(500.0), 1000, 250).unwrap();
        let expected = (500.0 / 901.0 - 500.0 / 1001.0) / (2.0 + 500.0 / 1001.0);
        assert!((falling.kl_drop - expected).abs() < 1e-12);
    }

    #[test]
    fn no_measure_without_two_reports_after_the_early_phase() {
        assert_eq!(convergence(&[], 1000, 250), None);
        assert_eq!(convergence(&[(1000, 2.0)], 1000, 250), None);
        // A run that ends inside its early phase: nothing after it to compare.
        assert_eq!(convergence(&history(1.0)[..6], 250, 250), None);
    }
}
