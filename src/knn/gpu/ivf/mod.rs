//! The approximate all-points kNN on the GPU (`--knn approx`): IVF cells by k-means, then
//! the exact kNN's tensor-core sweep (`knn::gpu::fused`) over each query block's probe cells
//! only. The host side (sample, centroid updates, sort, probe lists, runs) is
//! [`crate::knn::ivf`]; why this method, and its numbers, are in its doc and in the README.
//!
//! Steps: k-means on a seeded sample (assignment on the device, [`IvfAssign`]; updates on
//! the host); every point assigned to its cell; the points sorted by cell, and within a
//! cell in a locality order; one sweep whose block b covers the cells nearest its queries
//! (planned on the host a share of the blocks at a time while the device sweeps the shares
//! planned before); the exact finish (`knn_finish`) in double; where the recall sample's
//! recall is below [`IvfParams::refine_below`], rounds of refinement by neighbours of
//! neighbours ([`super::refine`]). Memory: the points (input and sorted copy, FP16 split),
//! the answer (n × k, and one more index buffer for the refinement), and candidate lists
//! for as many query blocks at a time as the free memory holds; never n × n nor n × lists.
//!
//! Every run measures its recall: the exact kNN of [`RECALL_SAMPLE`] rows drawn at random
//! (a sweep of all references for them, on the device while the host orders the cells, or
//! over several GPUs on the last one as it joins the sweep), against the approximate rows
//! ([`crate::knn::ivf::sample_recall`]).
//!
//! Everything but the cells ranks by the search's [`Key`], as the CPU twin
//! ([`crate::knn::ivf_cpu`]) does: the cells probed (nearest to each query block by the key,
//! [`Cells::block_probes`]), the sweep (the key's rows and terms, `super::key_rows`), the
//! finish, the refinement and the recall sample. The k-means cells stay Euclidean: they
//! only group the points, and probing by the key is what finds each query's largest inner
//! products.
//!
//! By concern: the search's steps in order ([`approx_device`]); the cells (k-means, the
//! assignment, the sorted points on the device: `cells`); the takes of query blocks handed
//! to the GPUs and their plans (`takes`); the sweep (`sweep`); the recall sample
//! (`recall`); what a run measured ([`ApproxStats`]).
//!
//! [`IvfAssign`]: crate::gpu::kernels::ivf::IvfAssign
//! [`IvfParams::refine_below`]: crate::knn::ivf::IvfParams::refine_below
//! [`Key`]: crate::knn::Key
//! [`Cells::block_probes`]: crate::knn::ivf::Cells::block_probes

mod approx;
mod cells;
mod recall;
mod stats;
mod sweep;
mod takes;

pub use approx::{approx_device, approx_gpu, Approx};
pub use recall::RECALL_SAMPLE;
pub use stats::{ApproxSeconds, ApproxStats, CellSteps};

#[cfg(test)]
mod tests;
