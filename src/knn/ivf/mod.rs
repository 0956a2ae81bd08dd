//! The host side of the approximate all-points kNN (`--knn approx`): an inverted file
//! (IVF-Flat, Jégou et al. 2011; FAISS' `IndexIVFFlat`) whose cells are the k-means cells of
//! the points, searched all at once rather than one query at a time.
//!
//! The points are sorted by cell, so that every cell is a contiguous range of rows, and the
//! cells are numbered in a locality order of their centroids ([`super::pca_tree_order`]):
//! neighbouring cells sit close in memory too; within a cell the points follow a locality
//! order of their own. A block of consecutive queries is then a compact part of a cell, and
//! its candidates are the points of the `probes` cells whose centroids are nearest the
//! block's mean, widened or narrowed by the spread of distances ([`Probing`]): a few
//! contiguous ranges of rows, which the GPU sweeps with the tensor-core kernel of the exact
//! kNN (`crate::knn::gpu::ivf`). Probing per block rather than per query loses a little
//! recall for the block's outlying queries, and buys the dense product tiles that make the
//! sweep fast; the recall is measured on every run ([`sample_recall`]).
//!
//!
//! What the host computes, by concern: the settings ([`IvfParams`]); the sample and the
//! centroid updates of k-means (`kmeans`; the assignment runs on the device); the sort by
//! cell ([`Cells`]); each query block's probe cells (`probes`) and its runs of reference
//! chunks (`runs`); the recall sample (`recall`).

mod cells;
mod kmeans;
mod params;
mod probes;
mod recall;
mod runs;

pub use cells::Cells;
pub use kmeans::{initial_centroids, kmeans_sample, order_cells, update_centroids};
pub use params::IvfParams;
pub use probes::{ProbePlanner, Probing, FAR};
pub(crate) use recall::scan_candidates;
pub use recall::{recall_by_scan, recall_sample, sample_recall};
pub use runs::flatten_runs;
