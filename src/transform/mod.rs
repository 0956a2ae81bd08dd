//! Placing new points into an existing map (`sgtsne transform`), as openTSNE's
//! `TSNEEmbedding.transform` does (Poličar, Stražar, Zupan 2024, "openTSNE: a modular Python
//! library for t-SNE dimensionality reduction and embedding", §"Adding new data points").
//!
//! Input: a [`Model`] (the reference points after the metric's transform and PCA, their
//! embedding, the parameters) and new points with the reference's input features. Output:
//! the new points' coordinates in the reference map, which does not move.
//!
//! Steps, one per stage of `embed`: the same row transform and PCA projection
//! ([`crate::prep`]); each new point's exact nearest reference points
//! ([`crate::knn::query`]); $p_{j|i}$ over them calibrated to a perplexity
//! ([`crate::affinity::conditional_probabilities`]); each new point started at the median of
//! its neighbours' positions; then gradient descent on each new point's own
//! $\mathrm{KL}(P_i \,\|\, Q_i)$, $q_{j|i} = w_{ij} / \sum_l w_{il}$ over the reference points
//! only (`place`). The search and the descent run on the GPU (`gpu`, and
//! [`crate::knn::gpu::query_gpu`]) when the backend is gpu or hybrid.

mod gpu;
mod model;
mod place;

pub use model::{Model, ModelError, MAGIC, VERSION};
pub use place::{transform, Placed, TransformParams, TransformReport};
