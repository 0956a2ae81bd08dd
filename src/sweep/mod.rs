//! Grid-size sweeps (DESIGN §2.2): the error and the time of the FFT-interpolated repulsion
//! over (number of points × grid size), as the reference thesis used to choose its fixed
//! grids (about 150 / 90 / 50 nodes per axis in 1-D / 2-D / 3-D).
//!
//! For each subsample size n ([`SweepConfig::sizes`]) the kNN and P are computed once; then
//! for each grid an optimisation runs (or one shared optimisation, see [`Trajectory`]) and,
//! every `sample_every` iterations after early exaggeration, each grid is measured at the
//! current Y:
//!
//! - the relative error of the repulsive forces, $\lVert F_{exact} − F_{fft} \rVert /
//!   \lVert F_{exact} \rVert$, on a fixed random sample of target points whose exact forces
//!   are summed over all n sources ([`crate::repulse::exact_for_targets`], on the GPU
//!   [`crate::repulse::exact_for_targets_gpu`]), normalised by the exact Z of all
//!   n² pairs;
//! - the relative error of Z;
//! - the seconds of S2G, G2G, G2S and Phi2Force (medians of repeated runs; CUDA events on
//!   the GPU).
//!
//! Output ([`write_outputs`]): a CSV with one row per (n, grid, iteration), PNG heat maps
//! (mean error, total repulsion time, S2G time, G2G time) and the fit of the error model
//! error ≈ C·h⁴ ([`ErrorFit`]) behind [`crate::repulse::GridSpec::for_error`].

mod config;
mod fit;
mod probe;
mod run;
mod table;

pub use config::{ConfigError, DataSource, SweepConfig, Trajectory};
pub use fit::{fit_error_model, ErrorFit};
pub use run::run_sweep;
pub use table::{grid_label, write_outputs};

use crate::repulse::{GridSpec, RepulseTimes};

/// One measurement: one grid at one iteration of one optimisation.
#[derive(Clone, Debug)]
pub struct SweepRow {
    /// Embedding dimension.
    pub dims: usize,
    /// Points.
    pub n: usize,
    /// The grid the optimisation ran with.
    pub trajectory: GridSpec,
    /// The grid measured.
    pub grid: GridSpec,
    /// Iterations done when measured.
    pub iteration: usize,
    /// Nodes per axis of the measured grid at this Y.
    pub nodes: usize,
    /// Its spacing h (embedding units).
    pub spacing: f64,
    /// Largest side of Y's bounding box.
    pub extent: f64,
    /// ‖F_exact − F_fft‖ / ‖F_exact‖ over the targets.
    pub force_error: f64,
    /// |Z_fft − Z_exact| / Z_exact.
    pub z_error: f64,
    /// Sub-stage seconds, medians of the timed runs.
    pub times: RepulseTimes,
}
