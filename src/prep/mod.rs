//! Preparing the input: centring and PCA (DESIGN §1.2).
//!
//! Input: [`Points`] (n × d). Output: the principal-component scores (n × m),
//! $S = (X - \mathbf{1}\mu^\top)\, V_m$, where $V_m$ holds the eigenvectors of the covariance
//! $C = (X - \mathbf{1}\mu^\top)^\top (X - \mathbf{1}\mu^\top) / (n - 1)$ for its m largest
//! eigenvalues. Columns come in decreasing variance, each axis signed so that its
//! largest-magnitude loading is positive (deterministic output).

pub mod gpu;
mod pca;

pub use pca::{pca, Pca};
