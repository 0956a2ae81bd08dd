//! PCA on the GPU: centring on the device (exact column sums), the d × d scatter matrix by
//! one cuBLAS SGEMM, the small symmetric eigenproblem on the host (the same
//! [`Pca::from_covariance`] as the CPU path, so axes and signs follow one rule), and the
//! projection by a second SGEMM. The n × d data cross PCIe once, the n × m scores once back.
//!
//! Wide data (more than `EXACT_MAX_D` features, as the host's [`super::pca`]) takes the
//! randomised method instead ([`wide_pca_gpu`]): a d × d scatter matrix of 30,000 genes
//! would be 3.6 GB on the device and 7.2 GB in doubles on the host. There the centred data
//! stay on the device and only their products with thin matrices (l = m + 10 columns) are
//! taken, by SGEMM; the small dense steps run on the host, as the host's path runs them.

use cudarc::cublas::{sys::cublasOperation_t, CudaBlas, GemmConfig};
use cudarc::driver::CudaSlice;
use faer::Mat;

use super::pca::{validate, Pca};
use super::randomised::{randomised_pca, row_major, Side};
use super::wide_pca::{EXACT_MAX_D, SEED};
use crate::gpu::blas::gemm;
use crate::gpu::centre::{centre_on_device, Centred};
use crate::gpu::Gpu;
use crate::{Points, Result};

/// The scores of `points` on their top `m` principal axes (n × m), like [`super::pca`].
pub fn pca_gpu(gpu: &Gpu, points: &Points, m: usize) -> Result<Points> {
    validate(points, m)?;
    if points.d > EXACT_MAX_D {
        return wide_pca_gpu(gpu, points, m);
    }
    let (n, d) = (points.n, points.d);
    let s = &gpu.stream;
    let x = crate::gpu::memory::htod_staged(gpu, &points.data)?;
    let Centred { xc, mean, .. } = centre_on_device(gpu, &x, n, d, n)?;
    drop(x);
    let blas = crate::gpu::blas::handle(s)?;

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
    gemm(&blas, cfg, &xc, &xc, &mut cov)?;
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
    gemm(&blas, cfg, &axes, &xc, &mut scores)?;
    let data = s.clone_dtoh(&scores)?;
    Ok(Points::new(n, m, data))
}

/// The top `m` principal-component scores of wide `points` by the randomised method
/// (`prep/randomised.rs`, the host's `wide_pca` with the same Ω), the products with the
/// centred data by SGEMM on the device. Device memory: the data and its centred copy
/// (the first freed once centred) and O((n + d)·l) for the products.
pub fn wide_pca_gpu(gpu: &Gpu, points: &Points, m: usize) -> Result<Points> {
    validate(points, m)?;
    let (n, d) = (points.n, points.d);
    let s = &gpu.stream;
    let x = crate::gpu::memory::htod_staged(gpu, &points.data)?;
    let Centred { xc, .. } = centre_on_device(gpu, &x, n, d, n)?;
    drop(x);
    let blas = crate::gpu::blas::handle(s)?;
    randomised_pca(n, d, m, SEED, |side, thin| {
        let l = thin.ncols();
        let thin_dev = s.clone_htod(
            &row_major(thin)
                .iter()
                .map(|&v| v as f32)
                .collect::<Vec<f32>>(),
        )?;
        let rows = if side == Side::A { n } else { d };
        let mut out = s.alloc_zeros::<f32>(rows * l)?;
        product(&blas, side, (n, d, l), &xc, &thin_dev, &mut out)?;
        let host = s.clone_dtoh(&out)?;
        Ok(Mat::from_fn(rows, l, |i, c| host[i * l + c] as f64))
    })
}

/// One product of the randomised PCA with the centred n × d data `xc` (row-major, that is
/// column-major d × n): A_c X (`thin` d × l, `out` n × l) or A_cᵀ Y (`thin` n × l, `out`
/// d × l), all row-major, so column-major transposed: out_cmᵀ = thin_cmᵀ · xc_cm or
/// thin_cm · xc_cmᵀ.
fn product(
    blas: &CudaBlas,
    side: Side,
    (n, d, l): (usize, usize, usize),
    xc: &CudaSlice<f32>,
    thin: &CudaSlice<f32>,
    out: &mut CudaSlice<f32>,
) -> Result<()> {
    let (n32, d32, l32) = (n as i32, d as i32, l as i32);
    let (transb, cols, inner) = match side {
        Side::A => (cublasOperation_t::CUBLAS_OP_N, n32, d32),
        Side::At => (cublasOperation_t::CUBLAS_OP_T, d32, n32),
    };
    let cfg = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_N,
        transb,
        m: l32,
        n: cols,
        k: inner,
        alpha: 1.0f32,
        lda: l32,
        ldb: d32,
        beta: 0.0f32,
        ldc: l32,
    };
    gemm(blas, cfg, thin, xc, out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    crate::gpu::gpu_test! {
        /// GPU scores equal the CPU's (same axes and signs) on anisotropic data, d = 784 and
        /// 60, and d = 2,500 (past `EXACT_MAX_D`: the randomised method on both sides).
        fn gpu_pca_equals_cpu_pca(gpu) {
            let seed = rand::random();
            let mut rng = StdRng::seed_from_u64(seed);
            for (n, d, m) in [(20_000, 784, 50), (5000, 60, 3), (3000, 2500, 10)] {
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
