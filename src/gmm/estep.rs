//! The E-step: responsibilities by log-sum-exp, and the log-likelihood of every sample.

use rayon::prelude::*;

use super::gaussian::Components;
use super::{Real, Samples};

/// Samples per block: one d × b product per component and block.
pub(crate) const BLOCK: usize = 512;

/// Fills `resp` (n × K, row-major) with the responsibilities p(k | x_i) and `ll` (n) with
/// log p(x_i) under `comps`; returns the mean of `ll` (scikit-learn's `score`), summed in
/// `f64` block by block in a fixed order, so that it does not depend on the threads.
pub(crate) fn e_step<T: Real>(
    x: &Samples<T>,
    comps: &Components<T>,
    resp: &mut [T],
    ll: &mut [T],
) -> f64 {
    let (d, k) = (x.d, comps.k());
    let sums: Vec<f64> = resp
        .par_chunks_mut(BLOCK * k)
        .zip(ll.par_chunks_mut(BLOCK))
        .enumerate()
        .map_init(Vec::new, |scratch, (b, (resp, ll))| {
            let rows = &x.data[b * BLOCK * d..(b * BLOCK + ll.len()) * d];
            comps.log_prob(rows, resp, scratch);
            let mut sum = 0.0;
            for (r, l) in resp.chunks_exact_mut(k).zip(ll.iter_mut()) {
                *l = normalise(r);
                sum += l.f64();
            }
            sum
        })
        .collect();
    sums.iter().sum::<f64>() / x.n as f64
}

/// Turns one sample's log π_k + log N(x | k) into responsibilities in place and returns
/// their log-sum-exp, log p(x).
fn normalise<T: Real>(r: &mut [T]) -> T {
    let max = r.iter().copied().fold(T::neg_infinity(), T::max);
    let mut total = T::zero();
    for v in r.iter_mut() {
        *v = (*v - max).exp();
        total += *v;
    }
    let inv = T::one() / total;
    for v in r.iter_mut() {
        *v *= inv;
    }
    max + total.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_is_log_sum_exp_and_survives_huge_logs() {
        let mut r = vec![-1000.0f64, -1001.0, -1000.0 - 2f64.ln()];
        let l = normalise(&mut r);
        let expected = -1000.0 + (1.0 + (-1.0f64).exp() + 0.5).ln();
        assert!((l - expected).abs() < 1e-12);
        assert!((r.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!((r[0] / r[2] - 2.0).abs() < 1e-12);
    }
}
