//! `kernels/sparse_pca.cu`: the sparse matrix products of the randomised PCA
//! (`crate::prep::sparse_pca`).

use crate::gpu::launch::kernels;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[];

kernels! {
    file: SparsePca;

    /// `out` (rows × l, row-major) = A · `x` for A in CSR (`indptr`, `indices`, `data`) and
    /// `x` (cols × l, row-major; every index < cols); one warp per row, any grid.
    pub struct CsrTimes = "csr_times" {
        cols: host,
        nnz: host,
        indptr: in u64 [rows + 1],
        indices: in u32 [nnz],
        data: in f32 [nnz],
        rows: usize as i64,
        x: in f64 [cols * l],
        l: usize as i32,
        out: out f64 [rows * l],
    }
}
