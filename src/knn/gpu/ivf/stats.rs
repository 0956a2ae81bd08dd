//! What an approximate kNN run measured, for the report: the recalls, the cells and the
//! seconds of each step.

/// What an approximate kNN run measured, for the report.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ApproxStats {
    /// The recall measured on the sample ([`RECALL_SAMPLE`] points or all): of the final
    /// graph.
    ///
    /// [`RECALL_SAMPLE`]: super::RECALL_SAMPLE
    pub recall_sample: f64,
    /// The same sample's recall after the sweep of the cells, before the refinement.
    pub recall_sweep: f64,
    /// Points in the recall sample.
    pub sample: usize,
    /// k-means cells.
    pub lists: usize,
    /// Nearest cells probed per query (its own included; more where cells are small).
    pub probes: usize,
    /// The spread rule's ε and cap ([`crate::knn::ivf::Probing`]; 0: off).
    pub spread: f64,
    pub max_probes: usize,
    /// References swept per query, on average.
    pub candidates: f64,
    /// Refinement rounds run (none where the sweep's sample recall reached
    /// [`IvfParams::refine_below`]) and their fan (`crate::knn::gpu::refine`).
    ///
    /// [`IvfParams::refine_below`]: crate::knn::ivf::IvfParams::refine_below
    pub refine: usize,
    pub fan: usize,
    /// Seconds per step.
    pub seconds: ApproxSeconds,
}

/// Seconds per step of the approximate kNN.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct ApproxSeconds {
    /// k-means on the sample.
    pub kmeans: f64,
    /// Assignment of every point, the sort by cell, the probe plan and the split points
    /// (the sum of [`ApproxSeconds::cell_steps`]).
    pub cells: f64,
    /// The cells stage's steps.
    pub cell_steps: CellSteps,
    /// The sweep of each block's probe cells, with the exact finish (the host planning
    /// the blocks beside it, a share at a time).
    pub sweep: f64,
    /// The refinement rounds.
    pub refine: f64,
    /// What the recall sample adds: the wait for its exact neighbours beyond the cells'
    /// order (which they run beside; over several GPUs they are searched in the sweep) and
    /// both recalls.
    pub recall: f64,
}

/// Seconds of the cells stage's steps: the largest part of the kNN that runs on one GPU
/// and the host in a run over several.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct CellSteps {
    /// Every point to its nearest centroid (on the GPU: the points' upload, the assignment
    /// and the labels' download).
    pub assign: f64,
    /// The sort by cell and the PCA-tree order within each cell (host).
    pub order: f64,
    /// The probe plan's shared part (each cell's mean squared radius, host); the blocks'
    /// probe cells and runs of reference chunks are planned during the sweep.
    pub plan: f64,
    /// The sorted points to the device and their split for the sweep (0 on the host).
    pub upload: f64,
}
