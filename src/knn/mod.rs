//! k nearest neighbours of every point (DESIGN §1.3).
//!
//! INTERFACE (owned by the knn helper; signatures fixed):
//! - `Neighbors { n, k, indices: Vec<u32>, distances: Vec<f32> }`: row i holds the k nearest
//!   other points of i (self excluded), ascending squared Euclidean distance.
//! - `exact(points: &Points, k: usize, progress: &dyn Progress) -> Result<Neighbors>`
//! - `hnsw(points: &Points, k: usize, seed: u64, progress: &dyn Progress) -> Result<Neighbors>`
//! - `recall(approx: &Neighbors, exact: &Neighbors) -> f64`

use crate::progress::Progress;
use crate::{Points, Result};

/// The k nearest neighbours of every point.
///
/// # Invariants
/// - `indices.len() == distances.len() == n * k`
/// - row i never contains i; distances are squared Euclidean, ascending within a row
#[derive(Clone, Debug)]
pub struct Neighbors {
    pub n: usize,
    pub k: usize,
    pub indices: Vec<u32>,
    pub distances: Vec<f32>,
}

pub fn exact(points: &Points, k: usize, progress: &dyn Progress) -> Result<Neighbors> {
    let _ = progress;
    unimplemented!("{} {k}", points.n)
}
pub fn hnsw(points: &Points, k: usize, seed: u64, progress: &dyn Progress) -> Result<Neighbors> {
    let _ = progress;
    unimplemented!("{} {k} {seed}", points.n)
}
pub fn recall(approx: &Neighbors, exact: &Neighbors) -> f64 {
    unimplemented!("{} {}", approx.n, exact.n)
}
pub mod gpu;
