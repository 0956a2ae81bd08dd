//! Preparing the input: the metric's transform of the rows ([`Metric`]), centring and PCA
//! (DESIGN §1.2).
//!
//! Input: [`Points`](crate::Points) (n × d). Output: the principal-component scores (n × m),
//! $S = (X - \mathbf{1}\mu^\top)\, V_m$, where $V_m$ holds the eigenvectors of the covariance
//! $C = (X - \mathbf{1}\mu^\top)^\top (X - \mathbf{1}\mu^\top) / (n - 1)$ for its m largest
//! eigenvalues. Columns come in decreasing variance, each axis signed so that its
//! largest-magnitude loading is positive (deterministic output).

pub mod gpu;
mod metric;
mod pca;
mod randomised;
mod screen;
mod sparse_pca;
mod wide_pca;

pub use metric::Metric;
pub use pca::{pca, Pca};
pub use screen::{
    duplicate_rows, fit_f32_range, fit_points_f32_range, in_f32_range, scale_to_f32_range,
    screen_rows,
};
pub use sparse_pca::{gpu::sparse_pca_gpu, sparse_pca};
pub(crate) use wide_pca::EXACT_MAX_D;

/// Clears the upper halves of the vector registers (`vzeroupper`) on this thread and on every
/// worker of the current rayon pool. The matrix products of the PCA (faer), which the PCA
/// initialisation runs last before the optimisation, leave them dirty on x86-64; until they
/// are cleared every legacy-SSE instruction waits on a merge with the stale upper state, and
/// scalar `ln` calls ran up to 40 times slower (measured on MNIST: Σ p ln p over P took
/// 1.2 s instead of 30 ms, the CSB layout stage 0.67 s instead of 0.10 s).
pub(crate) fn clear_vector_upper_state() {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: AVX is present (checked above); vzeroupper only zeroes register halves that
        // no live value of the compiled (baseline x86-64) code occupies.
        let clear = || unsafe { std::arch::x86_64::_mm256_zeroupper() };
        rayon::broadcast(|_| clear());
        clear();
    }
}
