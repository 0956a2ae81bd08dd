//! The CUDA sources in `kernels/`, embedded at build time: one [`KernelId`] per file, with
//! `kernels/common.cuh` prepended to each before NVRTC compiles it.

/// Prepended to every kernel file: shared device helpers.
pub const COMMON: &str = include_str!("../../kernels/common.cuh");

/// Prepended to the repulsion kernels after [`COMMON`]: grid geometry, stencil and the
/// grids' element type `real` (float, or double under [`crate::gpu::real::DeviceReal`]'s
/// define).
pub const REPULSE: &str = include_str!("../../kernels/repulse.cuh");

/// One kernel source file (one pipeline stage).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelId {
    /// Attraction over P in HYB (ELL + COO).
    AttractHyb,
    /// Gradient, gains, momentum, update and re-centring.
    Optim,
    /// Bounding box and cubic Lagrange scatter of charges to the grid.
    S2g,
    /// Zero-padding-free convolution: modulation, kernel spectra, products.
    G2g,
    /// Cubic Lagrange gather of potentials from the grid, and Z.
    G2s,
    /// Potentials to repulsive forces.
    Phi2force,
    /// Exact O(n²) repulsion, the reference.
    Exact,
    /// Exact kNN: centring, top-k selection across SGEMM distance tiles, exact finish.
    Knn,
    /// Exact kNN with TF32 tensor-core keys and the selection fused behind them.
    KnnFused,
    /// Perplexity calibration and symmetrisation of P into HYB.
    Affinity,
}

impl KernelId {
    /// Every kernel file, for compile-all checks.
    pub const ALL: [KernelId; 10] = [
        KernelId::AttractHyb,
        KernelId::Optim,
        KernelId::S2g,
        KernelId::G2g,
        KernelId::G2s,
        KernelId::Phi2force,
        KernelId::Exact,
        KernelId::Knn,
        KernelId::KnnFused,
        KernelId::Affinity,
    ];

    /// File name under `kernels/`.
    pub fn file(self) -> &'static str {
        match self {
            KernelId::AttractHyb => "attract_hyb.cu",
            KernelId::Optim => "optim.cu",
            KernelId::S2g => "s2g.cu",
            KernelId::G2g => "g2g.cu",
            KernelId::G2s => "g2s.cu",
            KernelId::Phi2force => "phi2force.cu",
            KernelId::Exact => "exact.cu",
            KernelId::Knn => "knn.cu",
            KernelId::KnnFused => "knn_fused.cu",
            KernelId::Affinity => "affinity.cu",
        }
    }

    /// The file's own source.
    fn body(self) -> &'static str {
        match self {
            KernelId::AttractHyb => include_str!("../../kernels/attract_hyb.cu"),
            KernelId::Optim => include_str!("../../kernels/optim.cu"),
            KernelId::S2g => include_str!("../../kernels/s2g.cu"),
            KernelId::G2g => include_str!("../../kernels/g2g.cu"),
            KernelId::G2s => include_str!("../../kernels/g2s.cu"),
            KernelId::Phi2force => include_str!("../../kernels/phi2force.cu"),
            KernelId::Exact => include_str!("../../kernels/exact.cu"),
            KernelId::Knn => include_str!("../../kernels/knn.cu"),
            KernelId::KnnFused => include_str!("../../kernels/knn_fused.cu"),
            KernelId::Affinity => include_str!("../../kernels/affinity.cu"),
        }
    }

    /// Headers the file uses besides [`COMMON`] (NVRTC sees no file system, so headers are
    /// prepended rather than `#include`d).
    fn headers(self) -> &'static [&'static str] {
        match self {
            KernelId::S2g | KernelId::G2g | KernelId::G2s | KernelId::Phi2force => &[REPULSE],
            _ => &[],
        }
    }

    /// What NVRTC compiles: the headers, then the file with `#line` so that compiler
    /// messages name the file and its own line numbers.
    pub fn source(self) -> String {
        let mut src = String::from(COMMON);
        for h in self.headers() {
            src.push_str(h);
        }
        src.push_str(&format!("\n#line 1 \"{}\"\n", self.file()));
        src.push_str(self.body());
        src
    }
}
