//! Affinities P: the symmetric, sparse joint probabilities that t-SNE's attraction pulls
//! along (DESIGN §1.4).
//!
//! - Point mode ([`perplexity`]): for every point i a Gaussian precision βᵢ is found by
//!   bisection so that the conditional distribution over its k nearest neighbours,
//!   $p_{j|i} \propto \exp(-β_i d_{ij}^2)$, has entropy $\ln u$ (u = perplexity;
//!   van der Maaten & Hinton 2008, §2).
//! - Graph mode ([`graph`]): a sparse weighted graph is made stochastic per node and
//!   λ-rescaled as in SG-t-SNE-Π (Pitsianis et al. 2019, §3): each node's weights are
//!   raised to a power σᵢ found by bisection so that they sum to λ, then renormalised.
//!
//! Both end in [`symmetrize()`]: $P = (P_{cond} + P_{cond}^T) / \sum$, in canonical CSR.

pub mod exact;
pub mod given;
pub mod gpu;
pub mod graph;
pub mod perplexity;
pub mod symmetrize;

pub use exact::exact_affinities;
pub use given::given;
pub use graph::{graph_affinities, GraphParams};
pub use perplexity::{conditional_probabilities, PerplexityParams};
pub use symmetrize::symmetrize;

use rayon::prelude::*;

use crate::knn::Neighbors;

/// Errors of the affinity stage.
#[derive(Debug, thiserror::Error)]
pub enum AffinityError {
    /// The perplexity is not below the number of neighbours (an entropy of ln u cannot be
    /// reached over k < u points).
    #[error(
        "perplexity {perplexity} needs more than {k} neighbours (k must exceed the perplexity)"
    )]
    PerplexityTooLarge { perplexity: f64, k: usize },
    /// A graph is not square or has a negative or non-finite weight.
    #[error("graph: {what}")]
    BadGraph { what: String },
}

/// The joint probabilities as a canonical CSR matrix (sorted column indices, no explicit
/// zeros, no duplicates), symmetric, summing to 1.
pub type Affinities = sprs::CsMatI<f32, u32, usize>;

/// Point-mode P from the kNN graph: the perplexity-calibrated conditionals $p_{j|i}$ over each
/// point's k neighbours, symmetrised (the CPU path of stage 4).
pub fn from_neighbors(nb: &Neighbors, perplexity: f64) -> crate::Result<Affinities> {
    from_neighbors_multiscale(nb, &[perplexity])
}

/// Multiscale P (Lee et al. 2015, as openTSNE's `Multiscale`): the conditionals
/// $p_{j|i}$ calibrated at each perplexity of `scales` over the same k neighbours, averaged,
/// then symmetrised. Small scales keep the local detail, large ones the arrangement of the
/// clusters. One scale gives [`from_neighbors`]' P exactly.
pub fn from_neighbors_multiscale(nb: &Neighbors, scales: &[f64]) -> crate::Result<Affinities> {
    let mut cond = vec![0f64; nb.n * nb.k];
    for &perplexity in scales {
        let pp = PerplexityParams {
            perplexity,
            ..Default::default()
        };
        let c = conditional_probabilities(nb, &pp)?;
        cond.par_iter_mut()
            .zip(c.par_iter())
            .for_each(|(sum, &v)| *sum += v as f64);
    }
    if scales.len() > 1 {
        let m = scales.len() as f64;
        cond.par_iter_mut().for_each(|v| *v /= m);
    }
    let indptr: Vec<usize> = (0..=nb.n).map(|i| i * nb.k).collect();
    Ok(symmetrize(nb.n, &indptr, &nb.indices, &cond)?)
}

/// $\sum_{ij} p_{ij} \ln p_{ij}$, the constant part of KL(P‖Q).
pub fn p_log_p(p: &Affinities) -> f64 {
    crate::ordered::sum_in_order(p.data().par_chunks(4096).map(|part| {
        part.iter()
            .filter(|&&v| v > 0.0)
            .map(|&v| v as f64 * v.ln() as f64)
            .sum::<f64>()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knn::exact;
    use crate::progress::Silent;
    use crate::Points;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    fn neighbors(n: usize, d: usize, k: usize) -> Neighbors {
        let mut rng = StdRng::seed_from_u64(5);
        let p = Points::new(n, d, (0..n * d).map(|_| rng.random::<f32>()).collect());
        exact(&p, k, &Silent).unwrap()
    }

    /// Multiscale P is the symmetrised mean of each scale's conditionals; one scale is the
    /// single-perplexity P bit for bit.
    #[test]
    fn multiscale_averages_the_scales() {
        let nb = neighbors(300, 5, 45);
        let one = from_neighbors(&nb, 12.0).unwrap();
        let same = from_neighbors_multiscale(&nb, &[12.0]).unwrap();
        assert_eq!(one.data(), same.data());
        assert_eq!(one.indices(), same.indices());

        let scales = [4.0, 12.0];
        let multi = from_neighbors_multiscale(&nb, &scales).unwrap();
        let cond: Vec<Vec<f32>> = scales
            .iter()
            .map(|&u| {
                let pp = PerplexityParams {
                    perplexity: u,
                    ..Default::default()
                };
                conditional_probabilities(&nb, &pp).unwrap()
            })
            .collect();
        let n = nb.n as f64;
        for i in [0usize, 17, 299] {
            for (t, &j) in nb.row_indices(i).iter().enumerate() {
                let j = j as usize;
                let mean = |row: usize, col: usize| -> f64 {
                    let pos = nb.row_indices(row).iter().position(|&c| c as usize == col);
                    pos.map_or(0.0, |q| {
                        cond.iter().map(|c| c[row * nb.k + q] as f64).sum::<f64>() / 2.0
                    })
                };
                let want = (mean(i, j) + mean(j, i)) / (2.0 * n);
                let got = *multi.get(i, j).unwrap() as f64;
                assert!(
                    (got - want).abs() < 1e-6 * want,
                    "({i}, {j}) #{t}: {got} vs {want}"
                );
            }
        }
        // The small scale sharpens each row: the nearest neighbour gains mass.
        assert!(
            multi.get(0, nb.row_indices(0)[0] as usize) > one.get(0, nb.row_indices(0)[0] as usize)
        );
    }
}
