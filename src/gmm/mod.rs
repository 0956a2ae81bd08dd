//! Gaussian mixture models fitted by expectation–maximisation (`sgtsne gmm`, and
//! `embed --clusters`).
//!
//! The model and the fit are scikit-learn's `GaussianMixture` (Dempster, Laird and Rubin
//! 1977; Bishop 2006, §9.2), so that its figures can be checked against ours iteration by
//! iteration: K components with weights π, means μ and `full`, `diag` or `spherical`
//! covariances Σ, each floored by `reg` on its diagonal (scikit-learn's `reg_covar`); the
//! E-step computes log π_k + log N(x | μ_k, Σ_k) through the Cholesky factor of each Σ_k and
//! normalises by log-sum-exp; the M-step re-estimates π, μ and Σ from the responsibilities
//! (each component's total weight gets 10 ε, as scikit-learn adds); EM stops when the mean
//! log-likelihood per sample changes by less than `tol` between iterations.
//!
//! Beyond scikit-learn: a component that loses its points is re-seeded at the worst-explained
//! sample, and a covariance whose Cholesky factorisation fails is floored further, each with a
//! note in [`Fit::notes`] rather than an error; the initial k-means (seeded by k-means++) and
//! every E- and M-step run on all cores and give the same result on any number of threads.
//!
//! Memory: the samples, the n × K responsibilities, the K covariances and per-group partial
//! sums bounded by 256 MiB — never an n × n or a K × n × d buffer.
//!
//! # The GPU
//!
//! With [`GmmBackend::Gpu`] the samples, the responsibilities and the log-likelihoods live
//! on the device for the whole fit, and each iteration's model (K means and covariances)
//! crosses PCIe once each way. The M-step's sums are cuBLAS products: n_k and the means one
//! GEMM each (Rᵀ·1 and X·Rᵀ), each full covariance the Gram matrix of the weighted
//! deviations √r_ik (x_i − μ_k) per chunk of samples (batched GEMMs over blocks of 4096
//! samples, then their sum); the diagonal sums a kernel of per-group partials.
//! The factorisations are cuSOLVER's POTRF (a failed one floored and repeated, as on the
//! host), the E-step's Mahalanobis terms a TRSM of each chunk of deviations by L_k, then
//! kernels for the log-densities and the log-sum-exp (`kernels/gmm.cu`). The initial
//! clusters (k-means++ and Lloyd's iterations) and the re-seeding of an emptied component
//! stay on the host. Device memory: the samples, the responsibilities, K factors and one
//! chunk of deviations of at most [`CHUNK_BYTES`] (256 MiB) — again no K × n × d buffer.

mod engine;
mod estep;
mod fit;
mod gaussian;
mod gpu;
mod kmeans;
mod model;
mod mstep;
mod real;
mod score;
mod select;

pub use fit::{fit, Fit};
pub use gpu::CHUNK_BYTES;
pub use model::{CovarianceType, Model};
pub use mstep::estimate;
pub use real::Real;
pub use score::{score, Scored};
pub use select::{select_k, Candidate, Selection};

use crate::{Error, Points, Result};

/// How the first responsibilities are drawn, from which the first M-step makes the
/// initial model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum GmmInit {
    /// k-means (up to 100 of Lloyd's iterations) seeded by greedy k-means++
    /// (Arthur and Vassilvitskii 2007), each sample given wholly to its cluster: scikit-learn's
    /// default `init_params='kmeans'`.
    #[default]
    #[serde(rename = "kmeans++")]
    KMeansPlusPlus,
    /// Responsibilities drawn uniformly at random and normalised (scikit-learn's `random`).
    #[serde(rename = "random")]
    Random,
}

/// Where a mixture is fitted (`--backend`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GmmBackend {
    /// The host: faer's products and factorisations on all cores.
    #[default]
    Cpu,
    /// The first GPU: cuBLAS's products (batched for the covariances) and triangular
    /// solves, cuSOLVER's Cholesky factorisations ([the GPU](self#the-gpu)).
    Gpu,
}

impl GmmBackend {
    /// `--backend auto`: the GPU when one is usable with cuSOLVER and the samples hold at
    /// least [`AUTO_GPU_MIN_VALUES`] values; below that the host is as fast (copying the
    /// samples over, the first compilation of the kernels and a synchronisation per
    /// component and iteration cost more than the work), and the CPU otherwise.
    pub fn auto(n: usize, d: usize) -> GmmBackend {
        let usable = n.saturating_mul(d) >= AUTO_GPU_MIN_VALUES
            && crate::gpu::linalg::solver_present()
            && crate::gpu::Gpu::get().is_ok();
        if usable {
            GmmBackend::Gpu
        } else {
            GmmBackend::Cpu
        }
    }

    /// The name `--backend` takes.
    pub fn name(self) -> &'static str {
        match self {
            GmmBackend::Cpu => "cpu",
            GmmBackend::Gpu => "gpu",
        }
    }
}

/// Samples × features from which `--backend auto` fits on the GPU ([`GmmBackend::auto`]).
pub const AUTO_GPU_MIN_VALUES: usize = 1 << 20;

/// What to fit and how.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GmmParams {
    /// Components (K).
    pub k: usize,
    /// The covariances' form.
    pub covariance: CovarianceType,
    /// The initial responsibilities.
    pub init: GmmInit,
    /// EM iterations at most (each an E-step and an M-step).
    pub max_iter: usize,
    /// Convergence: the change of the mean log-likelihood per sample between iterations.
    pub tol: f64,
    /// Fits from different seeds; the one with the highest final log-likelihood is kept.
    pub restarts: usize,
    /// Added to every covariance's diagonal (scikit-learn's `reg_covar`).
    pub reg: f64,
    /// Seed of the initialisation (restart r uses `seed + r`).
    pub seed: u64,
    /// Where EM runs.
    pub backend: GmmBackend,
}

impl Default for GmmParams {
    /// scikit-learn's defaults: full covariances, 100 iterations, tol 1e-3, one start,
    /// reg 1e-6; K must still be set.
    fn default() -> Self {
        GmmParams {
            k: 1,
            covariance: CovarianceType::Full,
            init: GmmInit::KMeansPlusPlus,
            max_iter: 100,
            tol: 1e-3,
            restarts: 1,
            reg: 1e-6,
            seed: 0,
            backend: GmmBackend::Cpu,
        }
    }
}

impl GmmParams {
    /// Checks the parameters against `n` samples.
    pub(crate) fn validate(&self, n: usize) -> Result<()> {
        if self.k == 0 {
            return Err(Error::param("k", "must be at least 1"));
        }
        if self.k > n {
            return Err(Error::param(
                "k",
                format!("{} components cannot be fitted to {n} samples", self.k),
            ));
        }
        if self.max_iter == 0 {
            return Err(Error::param("iters", "must be at least 1"));
        }
        if self.restarts == 0 {
            return Err(Error::param("restarts", "must be at least 1"));
        }
        if !(self.tol >= 0.0 && self.tol.is_finite()) {
            return Err(Error::param("tol", "must be a finite number ≥ 0"));
        }
        if !(self.reg >= 0.0 && self.reg.is_finite()) {
            return Err(Error::param("reg", "must be a finite number ≥ 0"));
        }
        Ok(())
    }
}

/// The samples a mixture is fitted to: n rows of d values, row-major.
#[derive(Clone, Debug)]
pub struct Samples<T> {
    /// Rows.
    pub n: usize,
    /// Columns (features).
    pub d: usize,
    /// Row-major values, n·d of them.
    pub data: Vec<T>,
}

impl<T: Real> Samples<T> {
    /// The points in this precision. Errors name the first row holding NaN or ±∞, or say
    /// that there are no points or no features.
    pub fn from_points(points: &Points) -> Result<Self> {
        let (n, d) = (points.n, points.d);
        if n == 0 {
            return Err(Error::Data("no samples to fit a mixture to".into()));
        }
        if d == 0 {
            return Err(Error::Data("the samples have no features".into()));
        }
        if let Some(at) = points.data.iter().position(|v| !v.is_finite()) {
            return Err(Error::Data(format!(
                "row {} holds {} (column {}); a mixture needs finite values: drop or impute \
                 the row first",
                at / d,
                points.data[at],
                at % d
            )));
        }
        Ok(Samples {
            n,
            d,
            data: points.data.iter().map(|&v| T::of(v as f64)).collect(),
        })
    }

    /// Row `i`.
    pub(crate) fn row(&self, i: usize) -> &[T] {
        &self.data[i * self.d..(i + 1) * self.d]
    }
}
