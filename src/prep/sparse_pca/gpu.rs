//! The sparse PCA on the GPU: the two sparse products, A X and Aᵀ Y, by
//! `kernels/sparse_pca.cu` with A and its transpose in CSR on the device (uploaded once);
//! the small dense steps (QR of n × l, SVD of d × l, the centring's rank-one corrections) on
//! the host, as in the CPU path, so that both follow one algorithm and one sign rule. Per
//! product an n × l (or d × l) block of doubles crosses PCIe each way: 48 MB at 100k cells.

use cudarc::driver::CudaSlice;
use faer::Mat;

use super::{randomised, row_major, Side};
use crate::gpu::kernels::sparse_pca::CsrTimes;
use crate::gpu::Gpu;
use crate::{CsrPoints, Points, Result};

/// The top `m` principal-component scores of the rows of `a`, like [`super::sparse_pca`]
/// (equal up to the rounding of the products' sums), with the products on the device.
pub fn sparse_pca_gpu(gpu: &Gpu, a: &CsrPoints, m: usize, seed: u64) -> Result<Points> {
    let on_device = DeviceCsr::upload(gpu, a)?;
    let transposed = DeviceCsr::upload(gpu, &a.transposed())?;
    randomised(a, m, seed, |side, x| match side {
        Side::A => on_device.times(gpu, x),
        Side::At => transposed.times(gpu, x),
    })
}

/// A sparse matrix in CSR on the device.
struct DeviceCsr {
    rows: usize,
    cols: usize,
    indptr: CudaSlice<u64>,
    indices: CudaSlice<u32>,
    data: CudaSlice<f32>,
}

impl DeviceCsr {
    fn upload(gpu: &Gpu, a: &CsrPoints) -> Result<DeviceCsr> {
        let s = &gpu.stream;
        Ok(DeviceCsr {
            rows: a.n,
            cols: a.d,
            indptr: s.clone_htod(&a.indptr)?,
            indices: s.clone_htod(&a.indices)?,
            data: s.clone_htod(&a.data)?,
        })
    }

    /// This matrix times `x` (cols × l): rows × l.
    fn times(&self, gpu: &Gpu, x: &Mat<f64>) -> Result<Mat<f64>> {
        let s = &gpu.stream;
        let l = x.ncols();
        let x_dev = s.clone_htod(&row_major(x))?;
        let mut out = s.alloc_zeros::<f64>(self.rows * l)?;
        CsrTimes {
            cols: self.cols,
            nnz: self.data.len(),
            indptr: &self.indptr,
            indices: &self.indices,
            data: &self.data,
            rows: self.rows,
            x: &x_dev,
            l,
            out: &mut out,
        }
        .launch(gpu, s, gpu.config(self.rows * 32))?;
        let host = s.clone_dtoh(&out)?;
        Ok(Mat::from_fn(self.rows, l, |i, c| host[i * l + c]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::gpu::gpu_test! {
        /// The device's products give the host's scores up to the rounding of their sums.
        fn gpu_sparse_pca_equals_cpu(gpu) {
            let a = super::super::tests::low_rank_sparse(5000, 400, 3);
            let m = 8;
            let want = super::super::sparse_pca(&a, m, 11).unwrap();
            let got = sparse_pca_gpu(gpu, &a, m, 11).unwrap();
            assert_eq!((got.n, got.d), (5000, m));
            for c in 0..m {
                let (mut err, mut norm) = (0f64, 0f64);
                for i in 0..a.n {
                    let (w, g) = (want.data[i * m + c] as f64, got.data[i * m + c] as f64);
                    err += (w - g).powi(2);
                    norm += w * w;
                }
                assert!((err / norm).sqrt() < 1e-5, "component {c}: {}", (err / norm).sqrt());
            }
        }
    }
}
