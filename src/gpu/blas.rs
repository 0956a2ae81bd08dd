//! cuBLAS matrix products, checked: the one place the stages' GEMMs (the tiled kNN's
//! distance tiles, the PCA's scatter matrix and projection, the mixtures' sums) cross into
//! cuBLAS's `unsafe` interface.

use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::driver::{DevicePtr, DevicePtrMut};

use super::GpuError;

/// C = α op(A) op(B) + β C in single or double precision, cuBLAS's column-major
/// convention, after checking that the dimensions are positive, each leading dimension
/// covers its matrix's rows, and each matrix lies inside its buffer.
pub fn gemm<T, A, B, C>(
    blas: &CudaBlas,
    cfg: GemmConfig<T>,
    a: &A,
    b: &B,
    c: &mut C,
) -> Result<(), GpuError>
where
    CudaBlas: Gemm<T>,
    A: DevicePtr<T>,
    B: DevicePtr<T>,
    C: DevicePtrMut<T>,
{
    let (m, n, k) = (cfg.m, cfg.n, cfg.k);
    // Stored shape (rows × columns) of each operand.
    let stored = |op: cublasOperation_t, rows: i32, cols: i32| match op {
        cublasOperation_t::CUBLAS_OP_N => (rows, cols),
        _ => (cols, rows),
    };
    let (a_rows, a_cols) = stored(cfg.transa, m, k);
    let (b_rows, b_cols) = stored(cfg.transb, k, n);
    let check = |name: &str, rows: i32, cols: i32, ld: i32, have: usize| {
        let need = (ld as i64) * (cols as i64 - 1) + rows as i64;
        if rows < 1 || cols < 1 || ld < rows || need > have as i64 {
            return Err(GpuError::Gemm {
                what: format!(
                    "{name} is {rows} × {cols} with leading dimension {ld}: needs {need} \
                     elements, its buffer holds {have}"
                ),
            });
        }
        Ok(())
    };
    check("A", a_rows, a_cols, cfg.lda, a.len())?;
    check("B", b_rows, b_cols, cfg.ldb, b.len())?;
    check("C", m, n, cfg.ldc, c.len())?;
    // SAFETY: cuBLAS reads op(A) (m × k), op(B) (k × n) and writes C (m × n), column-major
    // with the leading dimensions given; each of those matrices lies inside its buffer
    // (checked above), and cudarc orders the call after earlier work on the buffers.
    unsafe { blas.gemm(cfg, a, b, c) }?;
    Ok(())
}

/// C_i = α op(A_i) op(B_i) + β C_i for `batch_size` products whose matrices lie `stride_*`
/// elements apart in A's, B's and C's buffers ([`gemm`]'s convention and checks, the last
/// product's matrices inside their buffers too).
pub fn gemm_strided_batched<T, A, B, C>(
    blas: &CudaBlas,
    cfg: StridedBatchedConfig<T>,
    a: &A,
    b: &B,
    c: &mut C,
) -> Result<(), GpuError>
where
    CudaBlas: Gemm<T>,
    A: DevicePtr<T>,
    B: DevicePtr<T>,
    C: DevicePtrMut<T>,
{
    let g = &cfg.gemm;
    let stored = |op: cublasOperation_t, rows: i32, cols: i32| match op {
        cublasOperation_t::CUBLAS_OP_N => (rows, cols),
        _ => (cols, rows),
    };
    let (a_rows, a_cols) = stored(g.transa, g.m, g.k);
    let (b_rows, b_cols) = stored(g.transb, g.k, g.n);
    let batches = cfg.batch_size as i64;
    let check = |name: &str, rows: i32, cols: i32, ld: i32, stride: i64, have: usize| {
        let one = (ld as i64) * (cols as i64 - 1) + rows as i64;
        let need = stride * (batches - 1) + one;
        if rows < 1 || cols < 1 || ld < rows || batches < 1 || stride < 0 || need > have as i64 {
            return Err(GpuError::Gemm {
                what: format!(
                    "{name}: {batches} matrices of {rows} × {cols} (leading dimension {ld}) \
                     {stride} apart need {need} elements, its buffer holds {have}"
                ),
            });
        }
        Ok(())
    };
    check("A", a_rows, a_cols, g.lda, cfg.stride_a, a.len())?;
    check("B", b_rows, b_cols, g.ldb, cfg.stride_b, b.len())?;
    check("C", g.m, g.n, g.ldc, cfg.stride_c, c.len())?;
    // SAFETY: every product's op(A_i), op(B_i) and C_i lie inside their buffers (checked
    // above, the last one included); cudarc orders the call after earlier work on them.
    unsafe { blas.gemm_strided_batched(cfg, a, b, c) }?;
    Ok(())
}
