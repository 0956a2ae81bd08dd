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

pub mod given;
pub mod gpu;
pub mod graph;
pub mod perplexity;
pub mod symmetrize;

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
    let pp = PerplexityParams {
        perplexity,
        ..Default::default()
    };
    let cond = conditional_probabilities(nb, &pp)?;
    let indptr: Vec<usize> = (0..=nb.n).map(|i| i * nb.k).collect();
    let cond: Vec<f64> = cond.iter().map(|&v| v as f64).collect();
    Ok(symmetrize(nb.n, &indptr, &nb.indices, &cond)?)
}

/// $\sum_{ij} p_{ij} \ln p_{ij}$, the constant part of KL(P‖Q).
pub fn p_log_p(p: &Affinities) -> f64 {
    p.data()
        .par_iter()
        .filter(|&&v| v > 0.0)
        .map(|&v| v as f64 * v.ln() as f64)
        .sum()
}
