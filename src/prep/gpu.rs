//! PCA on the GPU: centring on the device (exact column sums), the d × d scatter matrix by
//! one cuBLAS SGEMM, the small symmetric eigenproblem on the host (the same
//! [`Pca::from_covariance`] as the CPU path, so axes and signs follow one rule), and the
//! projection by a second SGEMM. The n × d data cross PCIe once, the n × m scores once back.

use cudarc::cublas::{sys::cublasOperation_t, CudaBlas, GemmConfig};
use faer::Mat;

use super::pca::{validate, Pca};
use crate::gpu::blas::sgemm;
use crate::gpu::centre::{centre_on_device, Centred};
use crate::gpu::Gpu;
use crate::{Points, Result};

/// The scores of `points` on their top `m` principal axes (n × m), like [`super::pca`].
pub fn pca_gpu(gpu: &Gpu, points: &Points, m: usize) -> Result<Points> {
    validate(points, m)?;
    let (n, d) = (points.n, points.d);
    let s = &gpu.stream;
    let x = s.clone_htod(&points.data)?;
    let Centred { xc, mean, .. } = centre_on_device(gpu, &x, n, d, n)?;
    drop(x);
    let blas = CudaBlas::new(s.clone())?;

    // Scatter matrix C = Xcᵀ Xc: row-major Xc (n × d) is column-major A (d × n, lda d), and
    // C = A Aᵀ (d × d, symmetric, so its layout does not matter).
    let mut cov = s.alloc_zeros::<f32>(d * d)?;
    let (d32, n32, m32) = (d as i32, n as i32, m as i32);
    let cfg = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_N,
        transb: cublasOperation_t::CUBLAS_OP_T,
        m: d32,
        n: d32,
        k: n32,
        alpha: 1.0f32,
        lda: d32,
        ldb: d32,
        beta: 0.0f32,
        ldc: d32,
    };
    sgemm(&blas, cfg, &xc, &xc, &mut cov)?;
    let cov_host = s.clone_dtoh(&cov)?;
    let mean: Vec<f64> = s.clone_dtoh(&mean)?;
    let cov64 = Mat::<f64>::from_fn(d, d, |r, c| cov_host[r * d + c] as f64);
    let pca = Pca::from_covariance(cov64, mean, n, m)?;

    // Scores Sᵀ (m × n, column-major = S row-major n × m) = Vᵀᵀ·A, with the axes (row-major
    // m × d) seen as column-major d × m.
    let axes: Vec<f32> = pca.axes.iter().map(|&v| v as f32).collect();
    let axes = s.clone_htod(&axes)?;
    let mut scores = s.alloc_zeros::<f32>(n * m)?;
    let cfg = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_T,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: m32,
        n: n32,
        k: d32,
        alpha: 1.0f32,
        lda: d32,
        ldb: d32,
        beta: 0.0f32,
        ldc: m32,
    };
    sgemm(&blas, cfg, &axes, &xc, &mut scores)?;
    let data = s.clone_dtoh(&scores)?;
    Ok(Points::new(n, m, data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    crate::gpu::gpu_test! {
        /// GPU scores equal the CPU's (same axes and signs) on anisotropic data, d = 784 and 60.
        fn gpu_pca_equals_cpu_pca(gpu) {
            let seed = rand::random();
            let mut rng = StdRng::seed_from_u64(seed);
            for (n, d, m) in [(20_000, 784, 50), (5000, 60, 3)] {
                // Feature j has spread ∝ 1/(j+1) plus an offset, so the axes are well separated.
                let data: Vec<f32> = (0..n * d)
                    .map(|t| {
                        let j = t % d;
                        3.0 + j as f32 * 0.01
                            + rng.random_range(-1.0..1.0f32) * 10.0 / (j + 1) as f32
                    })
                    .collect();
                let points = Points::new(n, d, data);
                let want = super::super::pca(&points, m).unwrap();
                let got = pca_gpu(gpu, &points, m).unwrap();
                assert_eq!((got.n, got.d), (n, m));
                // Leading axes are well separated; compare the first few columns' scores.
                for a in 0..m.min(3) {
                    let (mut err, mut norm) = (0f64, 0f64);
                    for i in 0..n {
                        let (w, g) = (want.data[i * m + a] as f64, got.data[i * m + a] as f64);
                        err += (w - g).powi(2);
                        norm += w * w;
                    }
                    let rel = (err / norm).sqrt();
                    assert!(
                        rel < 1e-3,
                        "seed {seed} n={n} d={d} axis {a}: rel err {rel}"
                    );
                }
            }
        }
    }
}
