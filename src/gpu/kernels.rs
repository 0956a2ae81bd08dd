//! The CUDA sources in `kernels/`, embedded at build time: one [`KernelId`] per file, with
//! `kernels/common.cuh` prepended to each before NVRTC compiles it.

/// Prepended to every kernel file: shared device helpers.
pub const COMMON: &str = include_str!("../../kernels/common.cuh");

/// One kernel source file (one pipeline stage).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelId {
    /// Attraction over P in HYB (ELL + COO).
    AttractHyb,
    /// Gradient, gains, momentum, update and re-centring.
    Optim,
    /// Perplexity calibration and symmetrisation of P into HYB.
    Affinity,
}

impl KernelId {
    /// Every kernel file, for compile-all checks.
    pub const ALL: [KernelId; 3] = [KernelId::AttractHyb, KernelId::Optim, KernelId::Affinity];

    /// File name under `kernels/`.
    pub fn file(self) -> &'static str {
        match self {
            KernelId::AttractHyb => "attract_hyb.cu",
            KernelId::Optim => "optim.cu",
            KernelId::Affinity => "affinity.cu",
        }
    }

    /// The file's source (without the common header).
    pub fn source(self) -> &'static str {
        match self {
            KernelId::AttractHyb => include_str!("../../kernels/attract_hyb.cu"),
            KernelId::Optim => include_str!("../../kernels/optim.cu"),
            KernelId::Affinity => include_str!("../../kernels/affinity.cu"),
        }
    }
}
