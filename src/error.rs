//! The library's error type: one enum per layer, folded into [`enum@Error`].

use thiserror::Error;

/// Everything that can go wrong in a run, each variant readable as it stands.
#[derive(Debug, Error)]
pub enum Error {
    /// Reading or writing a file failed (the message names the file).
    #[error(transparent)]
    Io(#[from] crate::io::IoError),
    /// A parameter is out of its range or inconsistent with the data.
    #[error("invalid parameter `{name}`: {reason}")]
    Param { name: &'static str, reason: String },
    /// The input data cannot be embedded as given (too few points, …).
    #[error("{0}")]
    Data(String),
    /// The affinity stage failed.
    #[error(transparent)]
    Affinity(#[from] crate::affinity::AffinityError),
    /// A sparse-layout invariant was violated.
    #[error(transparent)]
    Sparse(#[from] crate::sparse::SparseError),
    /// A GPU was asked for but none can be used.
    #[error("no usable GPU: {reason}")]
    GpuUnavailable { reason: String },
    /// A GPU operation failed.
    #[error(transparent)]
    Gpu(Box<crate::gpu::GpuError>),
    /// The run would need more memory than the machine has (checked before the work).
    #[error(
        "this run needs about {:.1} GiB of {what} memory, but {:.1} GiB is available; \
         lower it with {hints}",
        gib(*needed),
        gib(*available)
    )]
    Memory {
        what: &'static str,
        needed: u64,
        available: u64,
        hints: String,
    },
    /// The device ran out of memory during a run whose estimate had fitted (another
    /// process took memory, or the estimate fell short): the stage it happened in, the
    /// estimate, and the way round.
    #[error(
        "out of GPU memory during {stage} ({error}); the run was estimated to need about \
         {:.1} GiB of device memory and {:.1} GiB was free when it started. Free the GPU \
         (another process may hold memory), lower the need with --perplexity, --pca or \
         --knn approx, or run with --backend cpu",
        gib(*estimated),
        gib(*free)
    )]
    DeviceMemory {
        stage: String,
        estimated: u64,
        free: u64,
        error: Box<crate::gpu::GpuError>,
    },
    /// An observer aborted the optimisation ([`crate::optim::Stop::Abort`]), e.g. on an
    /// interrupt: nothing of the run is kept.
    #[error("interrupted at iteration {iter} of {iters}")]
    Interrupted { iter: usize, iters: usize },
    /// A model file cannot be used (the message names it).
    #[error(transparent)]
    Model(#[from] crate::transform::ModelError),
    /// An embedding or its columns cannot be drawn as a map, or the map cannot be served.
    #[error(transparent)]
    View(#[from] crate::view::ViewError),
    /// A sweep configuration cannot be used.
    #[error(transparent)]
    SweepConfig(#[from] crate::sweep::ConfigError),
}

/// Bytes in GiB, for messages.
fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// Result with [`enum@Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Shorthand for [`Error::Param`].
    pub fn param(name: &'static str, reason: impl Into<String>) -> Self {
        Error::Param {
            name,
            reason: reason.into(),
        }
    }
}
