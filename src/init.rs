//! Initial embeddings (DESIGN §1.6), both seeded and reproducible.
//!
//! PCA initialisation (Kobak & Linderman 2021) keeps the global structure of the data;
//! scaling its first axis to standard deviation 1e-4 makes the start as small as the
//! customary random one, so early exaggeration behaves the same.

use rand::{rngs::StdRng, SeedableRng};
use rand_distr::{Distribution, Normal};

use crate::{prep, Points, Result};

/// Standard deviation of the initial embedding along its first axis.
pub const INIT_STD: f32 = 1e-4;

/// How to initialise Y.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InitKind {
    /// Top principal components of the input, first axis scaled to std 1e-4.
    Pca,
    /// Isotropic Gaussian with std 1e-4 from the seed.
    Random,
}

/// The first `dims` principal components of `points`, scaled to std [`INIT_STD`] on the
/// first axis (the other axes keep their relative variance).
pub fn pca(points: &Points, dims: usize) -> Result<Vec<f32>> {
    let scores = prep::pca(points, dims)?;
    let n = scores.n as f64;
    let mean = scores
        .data
        .iter()
        .step_by(dims)
        .map(|&v| v as f64)
        .sum::<f64>()
        / n;
    let var = scores
        .data
        .iter()
        .step_by(dims)
        .map(|&v| (v as f64 - mean).powi(2))
        .sum::<f64>()
        / n;
    if var <= 0.0 {
        // All points coincide along every axis: no direction to keep.
        return Ok(random(points.n, dims, 0));
    }
    let scale = INIT_STD as f64 / var.sqrt();
    Ok(scores
        .data
        .iter()
        .map(|&v| (v as f64 * scale) as f32)
        .collect())
}

/// n × dims Gaussian values with std [`INIT_STD`], from `seed`.
pub fn random(n: usize, dims: usize, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    let normal = Normal::new(0.0f32, INIT_STD).expect("constant, valid std");
    (0..n * dims).map(|_| normal.sample(&mut rng)).collect()
}
