//! Preparing the input: centring and PCA (DESIGN §1.2).
//!
//! INTERFACE (owned by the knn/prep helper; signatures fixed):
//! - `pca(points: &Points, m: usize) -> Result<Points>`: centre, project on the top m
//!   principal axes (scores, n × m), columns ordered by decreasing variance, sign fixed so
//!   results are deterministic.

use crate::{Points, Result};

pub fn pca(points: &Points, m: usize) -> Result<Points> {
    unimplemented!("{} {m}", points.n)
}
