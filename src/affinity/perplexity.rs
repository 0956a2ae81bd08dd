//! Perplexity calibration: one bisection on the Gaussian precision per point.

use rayon::prelude::*;

use super::AffinityError;
use crate::knn::Neighbors;

/// Parameters of the perplexity calibration.
#[derive(Clone, Copy, Debug)]
pub struct PerplexityParams {
    /// Target perplexity u (default 30); the entropy target is ln u. Must be below k.
    pub perplexity: f64,
    /// Tolerance on |H − ln u| in nats (default 1e-5).
    pub tolerance: f64,
    /// Bisection steps before giving up on a point (default 200); the best precision found
    /// is kept, which only happens for degenerate rows (all distances equal).
    pub max_steps: usize,
}

impl Default for PerplexityParams {
    fn default() -> Self {
        PerplexityParams {
            perplexity: 30.0,
            tolerance: 1e-5,
            max_steps: 200,
        }
    }
}

/// Row-stochastic conditional probabilities $p_{j|i}$ over each point's k neighbours,
/// laid out like `neighbors.indices` (n × k, row-major).
///
/// Distances are shifted by the row's smallest distance before exponentiation (the shift
/// cancels in the normalisation), so large distances never underflow to an all-zero row,
/// and duplicates (distance 0) are harmless. A row whose distances are all equal has
/// entropy ln k for every precision: it gets the uniform distribution, which is the
/// limit of the calibrated one.
pub fn conditional_probabilities(
    neighbors: &Neighbors,
    params: &PerplexityParams,
) -> Result<Vec<f32>, AffinityError> {
    let k = neighbors.k;
    if (k as f64) <= params.perplexity {
        return Err(AffinityError::PerplexityTooLarge {
            perplexity: params.perplexity,
            k,
        });
    }
    let target = params.perplexity.ln();
    let mut p = vec![0f32; neighbors.n * k];
    p.par_chunks_mut(k)
        .zip(neighbors.distances.par_chunks(k))
        .for_each_init(
            || vec![0f64; k],
            |scratch, (p_row, d_row)| {
                calibrate_row(d_row, target, params, scratch);
                for (out, &v) in p_row.iter_mut().zip(scratch.iter()) {
                    *out = v as f32;
                }
            },
        );
    Ok(p)
}

/// Entropy (nats) of the distribution ∝ exp(−β·dⱼ), and its normaliser Σ exp(−β·dⱼ);
/// the unnormalised weights go into `p` (the bisection needs only the entropy, so a step
/// does not divide them: [`normalise`] does, once, for the step it keeps). `d` are shifted
/// distances (min 0).
fn entropy_at(beta: f64, d: &[f64], p: &mut [f64]) -> (f64, f64) {
    let mut sum = 0.0;
    let mut weighted = 0.0;
    for (pj, &dj) in p.iter_mut().zip(d) {
        let e = (-beta * dj).exp();
        *pj = e;
        sum += e;
        weighted += e * dj;
    }
    (sum.ln() + beta * weighted / sum, sum)
}

/// The weights of [`entropy_at`] divided by their sum.
fn normalise(p: &mut [f64], sum: f64) {
    for pj in p.iter_mut() {
        *pj /= sum;
    }
}

/// Bisection on β ∈ (0, ∞) for one row; the entropy falls monotonically as β grows.
/// On return `out` holds the calibrated distribution.
pub(super) fn calibrate_row(
    d_row: &[f32],
    target: f64,
    params: &PerplexityParams,
    out: &mut [f64],
) {
    let d_min = d_row.iter().copied().fold(f32::INFINITY, f32::min) as f64;
    let shifted: Vec<f64> = d_row.iter().map(|&v| v as f64 - d_min).collect();
    let spread = shifted.iter().sum::<f64>() / shifted.len() as f64;
    if spread <= 0.0 {
        out.fill(1.0 / d_row.len() as f64);
        return;
    }
    let (mut lo, mut hi) = (0.0f64, f64::INFINITY);
    // Start at the precision whose length scale is the mean neighbour distance.
    let mut beta = 1.0 / spread;
    let mut best = (f64::INFINITY, beta);
    for _ in 0..params.max_steps {
        let (h, sum) = entropy_at(beta, &shifted, out);
        let gap = h - target;
        if gap.abs() < best.0 {
            best = (gap.abs(), beta);
        }
        if gap.abs() < params.tolerance {
            normalise(out, sum);
            return;
        }
        if gap > 0.0 {
            lo = beta;
            beta = if hi.is_finite() {
                0.5 * (lo + hi)
            } else {
                beta * 2.0
            };
        } else {
            hi = beta;
            beta = 0.5 * (lo + hi);
        }
    }
    let (_, sum) = entropy_at(best.1, &shifted, out);
    normalise(out, sum);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    fn entropy(p: &[f32]) -> f64 {
        p.iter()
            .filter(|&&v| v > 0.0)
            .map(|&v| -(v as f64) * (v as f64).ln())
            .sum()
    }

    fn random_neighbors(n: usize, k: usize, seed: u64) -> Neighbors {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut distances = Vec::with_capacity(n * k);
        for _ in 0..n {
            let scale: f32 = rng.random_range(0.01..100.0);
            let mut row: Vec<f32> = (0..k).map(|_| rng.random::<f32>() * scale).collect();
            row.sort_by(f32::total_cmp);
            distances.extend(row);
        }
        let indices = (0..n * k)
            .map(|x| ((x / k + 1 + x % k) % n) as u32)
            .collect();
        Neighbors {
            n,
            k,
            indices,
            distances,
        }
    }

    #[test]
    fn perplexity_hits_its_target() {
        for (n, k, u) in [(50, 10, 3.0), (200, 90, 30.0), (500, 150, 50.0)] {
            let nb = random_neighbors(n, k, 7 + n as u64);
            let params = PerplexityParams {
                perplexity: u,
                ..Default::default()
            };
            let p = conditional_probabilities(&nb, &params).unwrap();
            for row in p.chunks(k) {
                let s: f64 = row.iter().map(|&v| v as f64).sum();
                assert!((s - 1.0).abs() < 1e-5, "row sums to {s}");
                // Entropy measured from the f32 output: allow for its rounding.
                let h = entropy(row);
                assert!((h - u.ln()).abs() < 1e-4, "H = {h}, ln u = {}", u.ln());
            }
        }
    }

    #[test]
    fn calibration_meets_tolerance_in_f64() {
        let nb = random_neighbors(100, 90, 3);
        let params = PerplexityParams::default();
        let target = params.perplexity.ln();
        let mut out = vec![0f64; 90];
        for d in nb.distances.chunks(90) {
            calibrate_row(d, target, &params, &mut out);
            let h: f64 = out.iter().filter(|&&v| v > 0.0).map(|&v| -v * v.ln()).sum();
            assert!(
                (h - target).abs() < 1e-5,
                "|H − ln u| = {}",
                (h - target).abs()
            );
        }
    }

    #[test]
    fn duplicates_and_equal_distances_are_finite() {
        let k = 12;
        let mut distances = vec![0f32; k]; // all duplicates
        distances.extend(std::iter::repeat_n(4.0f32, k)); // all equal
        let mut mixed = vec![0f32; 6];
        mixed.extend(std::iter::repeat_n(1e30f32, 6)); // huge gap
        distances.extend(mixed);
        let nb = Neighbors {
            n: 3,
            k,
            indices: vec![0; 3 * k],
            distances,
        };
        let params = PerplexityParams {
            perplexity: 5.0,
            ..Default::default()
        };
        let p = conditional_probabilities(&nb, &params).unwrap();
        assert!(p.iter().all(|v| v.is_finite() && *v >= 0.0));
        for row in p.chunks(k) {
            let s: f32 = row.iter().sum();
            assert!((s - 1.0).abs() < 1e-5);
        }
        assert!((p[0] - 1.0 / k as f32).abs() < 1e-6);
    }

    /// The calibration depends on each row's distances only up to a shift, as the
    /// inner product's keys 2(c − x · y) need: p_{j|i} ∝ exp(2β x_i · x_j), whatever c.
    /// Rows shifted by powers of two up to 2²⁰ (exact in f32, and far beyond the
    /// distances' spread: exp(−β · 2²⁰) would underflow) give the same P bit for bit.
    #[test]
    fn calibration_is_invariant_to_a_shift_of_each_row() {
        let mut nb = random_neighbors(60, 20, 5);
        nb.distances
            .iter_mut()
            .for_each(|v| *v = (*v / 4.0).round());
        let params = PerplexityParams {
            perplexity: 6.0,
            ..Default::default()
        };
        let mut shifted = nb.clone();
        for (r, row) in shifted.distances.chunks_mut(20).enumerate() {
            let shift = [256.0f32, 1024.0, 1048576.0][r % 3];
            row.iter_mut().for_each(|v| *v += shift);
        }
        let p = conditional_probabilities(&nb, &params).unwrap();
        assert!(p.iter().all(|v| v.is_finite()));
        assert_eq!(conditional_probabilities(&shifted, &params).unwrap(), p);
    }

    #[test]
    fn perplexity_must_be_below_k() {
        let nb = random_neighbors(10, 5, 1);
        let err = conditional_probabilities(&nb, &PerplexityParams::default()).unwrap_err();
        assert!(err.to_string().contains("perplexity 30"), "{err}");
    }
}
