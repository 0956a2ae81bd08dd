//! Exact affinities (`--affinities exact`): the perplexity calibration over all n − 1 other
//! points, not a kNN graph, as in the original t-SNE (van der Maaten & Hinton 2008) and
//! the exact GPU t-SNE this project grew from. With `--repulsion exact` it is exact t-SNE,
//! the reference every approximation in the tool can be measured against.
//!
//! Each row's n − 1 squared distances are computed directly (by the function the kNN
//! recomputes its distances with, so that a kNN of k = n − 1 sees the same numbers), calibrated by
//! the same bisection as the kNN path, and the n × (n − 1) conditionals symmetrised into a
//! P with every pair. Memory grows as n²: [`BYTES_PER_PAIR`] bytes per pair at the peak, so
//! the caller checks [`max_points`] against the memory available.
//!
//! This is the host's computation (the cpu backend's, and `sgtsne kl`'s); the gpu and hybrid
//! backends compute the same P on the device
//! ([`exact_affinities_gpu`](super::gpu::exact_affinities_gpu): the same distances bit for
//! bit, the same bisection, P equal to rounding) and bring it to the host in this CSR.

use rayon::prelude::*;

use super::perplexity::calibrate_row;
use super::{symmetrize, Affinities, AffinityError, PerplexityParams};
use crate::knn::sq_dist;
use crate::{Points, Result};

/// Peak host bytes per ordered pair: the conditionals (f64 value, u32 index) and the
/// symmetrised P (f32 value, u32 index) with its merge buffers.
pub const BYTES_PER_PAIR: u64 = 32;

/// Rows calibrated per parallel task.
const ROWS: usize = 64;

/// Device bytes per ordered pair on the gpu backend: P laid out for the attraction (its ELL
/// part, one f32 value and one i32 column per pair); the rest of the run's device memory
/// grows as n.
pub const DEVICE_BYTES_PER_PAIR: u64 = 8;

/// The most points whose exact affinities fit in `bytes` of memory.
pub fn max_points(bytes: u64) -> usize {
    max_points_at(bytes, BYTES_PER_PAIR)
}

/// The most points whose n² pairs at `per_pair` bytes each fit in `bytes`.
pub fn max_points_at(bytes: u64, per_pair: u64) -> usize {
    ((bytes / per_pair) as f64).sqrt() as usize
}

/// Refuses a perplexity that n points cannot carry: the entropy ln u is reached only over
/// more than u other points, so u must be below n − 1 (the kNN's rule with k = n − 1).
pub(crate) fn check_perplexity(n: usize, perplexity: f64) -> Result<(), AffinityError> {
    if (n.saturating_sub(1) as f64) <= perplexity {
        return Err(AffinityError::PerplexityTooLarge {
            perplexity,
            k: n.saturating_sub(1),
        });
    }
    Ok(())
}

/// P over every pair of `points`, calibrated to `perplexity` (which must be below n − 1).
pub fn exact_affinities(points: &Points, perplexity: f64) -> Result<Affinities> {
    let n = points.n;
    check_perplexity(n, perplexity)?;
    let m = n - 1;
    let params = PerplexityParams {
        perplexity,
        ..Default::default()
    };
    let target = perplexity.ln();
    let mut values = vec![0f64; n * m];
    values
        .par_chunks_mut(ROWS * m)
        .enumerate()
        .for_each(|(b, block)| {
            let mut d_row = vec![0f32; m];
            for (r, out) in block.chunks_exact_mut(m).enumerate() {
                let i = b * ROWS + r;
                let xi = points.row(i);
                for (slot, j) in d_row.iter_mut().zip((0..n).filter(|&j| j != i)) {
                    *slot = sq_dist(xi, points.row(j));
                }
                calibrate_row(&d_row, target, &params, out);
            }
        });
    let indptr: Vec<usize> = (0..=n).map(|i| i * m).collect();
    let indices: Vec<u32> = (0..n)
        .flat_map(|i| (0..n as u32).filter(move |&j| j as usize != i))
        .collect();
    // The kNN path rounds each conditional to f32 before symmetrising; so does this one.
    values.par_iter_mut().for_each(|v| *v = *v as f32 as f64);
    Ok(symmetrize(n, &indptr, &indices, &values)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knn::exact;
    use crate::progress::Silent;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// Exact affinities equal the kNN's when k = n − 1 (up to the order each row is summed
    /// in), and hold every pair.
    #[test]
    fn equal_the_knn_affinities_at_k_n_minus_1() {
        let (n, d) = (150, 6);
        let mut rng = StdRng::seed_from_u64(9);
        let p = Points::new(n, d, (0..n * d).map(|_| rng.random::<f32>()).collect());
        let ex = exact_affinities(&p, 20.0).unwrap();
        let nb = exact(&p, n - 1, &Silent).unwrap();
        let knn = super::super::from_neighbors(&nb, 20.0).unwrap();
        assert_eq!(ex.nnz(), n * (n - 1));
        assert_eq!(ex.indptr().raw_storage(), knn.indptr().raw_storage());
        assert_eq!(ex.indices(), knn.indices());
        for (a, b) in ex.data().iter().zip(knn.data()) {
            assert!((a - b).abs() <= 1e-5 * b.abs(), "{a} vs {b}");
        }
        let sum: f64 = ex.data().iter().map(|&v| v as f64).sum();
        assert!((sum - 1.0).abs() < 1e-5);
        assert!(exact_affinities(&p, 149.0).is_err());
    }
}
