//! cuBLAS matrix products, checked: the one place the stages' GEMMs (the tiled kNN's
//! distance tiles, the PCA's scatter matrix and projection, the mixtures' sums) cross into
//! cuBLAS's `unsafe` interface.

use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::driver::{DevicePtr, DevicePtrMut};
use std::sync::atomic::{AtomicBool, Ordering};

use super::GpuError;

/// A cuBLAS handle on `stream`, its library loaded first where it was registered
/// ([`super::libraries`]).
pub fn handle(stream: &std::sync::Arc<cudarc::driver::CudaStream>) -> Result<CudaBlas, GpuError> {
    super::libraries::require(super::libraries::CudaLibrary::Cublas)?;
    Ok(CudaBlas::new(stream.clone())?)
}

/// Loads cuBLAS once per process on `gpu`, on a thread of its own: a handle and one small
/// product, which bring in the library and the kernels its products load on first use, so
/// that the first stage to multiply (the exact kNN's distance tiles, the PCA's products)
/// finds them ready: on an H200 they took 0.14 s, and a command line's first MNIST kNN
/// 0.13–0.21 s against 0.22–0.26 (benches/RESULTS.md). Loading the library beside the
/// GPU's start instead delayed the start by as much; a run that never multiplies should
/// not ask (cuBLASLt alone holds 150 MiB of host memory once loaded). Errors are left to
/// that stage.
pub fn warm_up(gpu: &'static super::Gpu) -> WarmingUp {
    static STARTED: AtomicBool = AtomicBool::new(false);
    if STARTED.swap(true, Ordering::SeqCst) {
        return WarmingUp(None);
    }
    let warm = move || -> Result<(), GpuError> {
        let s = gpu.device.context.new_stream()?;
        let blas = handle(&s)?;
        const SIDE: usize = 64;
        let a = s.alloc_zeros::<f32>(SIDE * SIDE)?;
        let mut c = s.alloc_zeros::<f32>(SIDE * SIDE)?;
        let cfg = GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_T,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: SIDE as i32,
            n: SIDE as i32,
            k: SIDE as i32,
            alpha: 1f32,
            lda: SIDE as i32,
            ldb: SIDE as i32,
            beta: 0f32,
            ldc: SIDE as i32,
        };
        gemm(&blas, cfg, &a, &a, &mut c)?;
        s.synchronize()?;
        crate::trace::event(|| "cuBLAS: warm".into());
        Ok(())
    };
    WarmingUp(
        std::thread::Builder::new()
            .name("sgtsne-blas".into())
            .spawn(move || _ = warm())
            .ok(),
    )
}

/// The thread of [`warm_up`]; dropping it waits for it, so that nothing ends the process's
/// GPUs while it is inside the driver.
#[must_use = "dropping it at once waits for the warm-up"]
pub struct WarmingUp(Option<std::thread::JoinHandle<()>>);

impl Drop for WarmingUp {
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            let _ = thread.join();
        }
    }
}

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
    check_operands(&cfg, 1, [0; 3], [a.len(), b.len(), c.len()])?;
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
    let strides = [cfg.stride_a, cfg.stride_b, cfg.stride_c];
    check_operands(
        &cfg.gemm,
        cfg.batch_size as i64,
        strides,
        [a.len(), b.len(), c.len()],
    )?;
    // SAFETY: every product's op(A_i), op(B_i) and C_i lie inside their buffers (checked
    // above, the last one included); cudarc orders the call after earlier work on them.
    unsafe { blas.gemm_strided_batched(cfg, a, b, c) }?;
    Ok(())
}

/// Checks `batches` products of `cfg`'s shape, their A, B and C `strides` elements apart in
/// buffers of `lens` elements: positive dimensions, leading dimensions covering their
/// matrices' rows, and the last product's matrices inside their buffers.
fn check_operands<T>(
    cfg: &GemmConfig<T>,
    batches: i64,
    strides: [i64; 3],
    lens: [usize; 3],
) -> Result<(), GpuError> {
    // Stored shape (rows × columns) of each operand.
    let stored = |op: cublasOperation_t, rows: i32, cols: i32| match op {
        cublasOperation_t::CUBLAS_OP_N => (rows, cols),
        _ => (cols, rows),
    };
    let (a_rows, a_cols) = stored(cfg.transa, cfg.m, cfg.k);
    let (b_rows, b_cols) = stored(cfg.transb, cfg.k, cfg.n);
    let operands = [
        ("A", a_rows, a_cols, cfg.lda),
        ("B", b_rows, b_cols, cfg.ldb),
        ("C", cfg.m, cfg.n, cfg.ldc),
    ];
    for (((name, rows, cols, ld), stride), have) in operands.into_iter().zip(strides).zip(lens) {
        let one = (ld as i64) * (cols as i64 - 1) + rows as i64;
        let need = stride * (batches - 1) + one;
        if rows < 1 || cols < 1 || ld < rows || batches < 1 || stride < 0 || need > have as i64 {
            let what = match batches {
                1 => format!(
                    "{name} is {rows} × {cols} with leading dimension {ld}: needs {need} \
                     elements, its buffer holds {have}"
                ),
                _ => format!(
                    "{name}: {batches} matrices of {rows} × {cols} (leading dimension {ld}) \
                     {stride} apart need {need} elements, its buffer holds {have}"
                ),
            };
            return Err(GpuError::Gemm { what });
        }
    }
    Ok(())
}
