//! Dense linear algebra on the device beyond GEMM, checked: Cholesky factorisations
//! (cuSOLVER's POTRF), triangular solves (cuBLAS's TRSM) and Gram matrices A Aᵀ of long,
//! thin A (batched GEMMs), in single or double precision, for the Gaussian mixtures
//! ([`crate::gmm`]). The one place those libraries' `unsafe` interfaces are called: every
//! wrapper checks that its matrices lie inside their buffers first.
//!
//! cuSOLVER is loaded only when a mixture is fitted on the GPU: [`solver_present`] probes it
//! (cudarc panics on a missing library), so a machine without it still embeds.

use std::sync::Arc;

use cudarc::cublas::sys::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
use cudarc::cublas::sys::{
    cublasDiagType_t, cublasFillMode_t, cublasOperation_t, cublasSideMode_t, cublasStatus_t,
};
use cudarc::cublas::{CudaBlas, GemmConfig, StridedBatchedConfig};
use cudarc::cusolver::sys::{cublasFillMode_t as SolverFill, cusolverDnHandle_t, cusolverStatus_t};
use cudarc::cusolver::DnHandle;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

use super::memory::AnyBits;
use super::real::DeviceReal;
use super::GpuError;

/// Whether cuSOLVER can be loaded.
pub fn solver_present() -> bool {
    super::libraries::available(super::libraries::CudaLibrary::Cusolver)
}

/// A type the dense routines exist for (`f32`, `f64`): cuBLAS's and cuSOLVER's entry points
/// of that precision.
pub trait Dense: DeviceReal + AnyBits {
    /// The value one, for the routines' α and β.
    const ONE: Self;
    /// The value zero.
    const ZERO: Self;

    /// [`super::blas::gemm`] in this precision.
    fn gemm<A: DevicePtr<Self>, B: DevicePtr<Self>, C: DevicePtrMut<Self>>(
        blas: &CudaBlas,
        cfg: GemmConfig<Self>,
        a: &A,
        b: &B,
        c: &mut C,
    ) -> Result<(), GpuError>;

    /// [`super::blas::gemm_strided_batched`] in this precision.
    fn gemm_batched<A: DevicePtr<Self>, B: DevicePtr<Self>, C: DevicePtrMut<Self>>(
        blas: &CudaBlas,
        cfg: StridedBatchedConfig<Self>,
        a: &A,
        b: &B,
        c: &mut C,
    ) -> Result<(), GpuError>;

    /// cuSOLVER's `?potrf_bufferSize`.
    ///
    /// # Safety
    /// `a` is a device pointer to an `n` × `n` matrix with leading dimension `lda`.
    unsafe fn potrf_buffer_size(
        h: cusolverDnHandle_t,
        n: i32,
        a: *mut Self,
        lda: i32,
        lwork: *mut i32,
    ) -> cusolverStatus_t;

    /// cuSOLVER's `?potrf` on the lower triangle.
    ///
    /// # Safety
    /// `a` (`n` × `n`, leading dimension `lda`), `work` (`lwork` elements) and `info` (one)
    /// are device pointers to live buffers.
    unsafe fn potrf(
        h: cusolverDnHandle_t,
        n: i32,
        a: *mut Self,
        lda: i32,
        work: *mut Self,
        lwork: i32,
        info: *mut i32,
    ) -> cusolverStatus_t;

    /// cuBLAS's `?trsm` from the left with a lower, non-unit triangle, not transposed.
    ///
    /// # Safety
    /// `l` (`m` × `m`, `ldl`) and `b` (`m` × `n`, `ldb`) are device pointers to live
    /// buffers; `alpha` points to host memory.
    #[allow(clippy::too_many_arguments)]
    unsafe fn trsm_lower(
        h: cudarc::cublas::sys::cublasHandle_t,
        m: i32,
        n: i32,
        alpha: *const Self,
        l: *const Self,
        ldl: i32,
        b: *mut Self,
        ldb: i32,
    ) -> cublasStatus_t;
}

/// One [`Dense`] impl from the entry points of its precision.
macro_rules! dense {
    ($t:ty, $size:ident, $potrf:ident, $trsm:ident) => {
        impl Dense for $t {
            const ONE: Self = 1.0;
            const ZERO: Self = 0.0;

            fn gemm<A: DevicePtr<Self>, B: DevicePtr<Self>, C: DevicePtrMut<Self>>(
                blas: &CudaBlas,
                cfg: GemmConfig<Self>,
                a: &A,
                b: &B,
                c: &mut C,
            ) -> Result<(), GpuError> {
                super::blas::gemm(blas, cfg, a, b, c)
            }

            fn gemm_batched<A: DevicePtr<Self>, B: DevicePtr<Self>, C: DevicePtrMut<Self>>(
                blas: &CudaBlas,
                cfg: StridedBatchedConfig<Self>,
                a: &A,
                b: &B,
                c: &mut C,
            ) -> Result<(), GpuError> {
                super::blas::gemm_strided_batched(blas, cfg, a, b, c)
            }

            unsafe fn potrf_buffer_size(
                h: cusolverDnHandle_t,
                n: i32,
                a: *mut Self,
                lda: i32,
                lwork: *mut i32,
            ) -> cusolverStatus_t {
                // SAFETY: the caller's contract.
                unsafe {
                    cudarc::cusolver::sys::$size(
                        h,
                        SolverFill::CUBLAS_FILL_MODE_LOWER,
                        n,
                        a,
                        lda,
                        lwork,
                    )
                }
            }

            unsafe fn potrf(
                h: cusolverDnHandle_t,
                n: i32,
                a: *mut Self,
                lda: i32,
                work: *mut Self,
                lwork: i32,
                info: *mut i32,
            ) -> cusolverStatus_t {
                // SAFETY: the caller's contract.
                unsafe {
                    cudarc::cusolver::sys::$potrf(
                        h,
                        SolverFill::CUBLAS_FILL_MODE_LOWER,
                        n,
                        a,
                        lda,
                        work,
                        lwork,
                        info,
                    )
                }
            }

            unsafe fn trsm_lower(
                h: cudarc::cublas::sys::cublasHandle_t,
                m: i32,
                n: i32,
                alpha: *const Self,
                l: *const Self,
                ldl: i32,
                b: *mut Self,
                ldb: i32,
            ) -> cublasStatus_t {
                // SAFETY: the caller's contract.
                unsafe {
                    cudarc::cublas::sys::$trsm(
                        h,
                        cublasSideMode_t::CUBLAS_SIDE_LEFT,
                        cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
                        cublasOperation_t::CUBLAS_OP_N,
                        cublasDiagType_t::CUBLAS_DIAG_NON_UNIT,
                        m,
                        n,
                        alpha,
                        l,
                        ldl,
                        b,
                        ldb,
                    )
                }
            }
        }
    };
}

dense!(
    f32,
    cusolverDnSpotrf_bufferSize,
    cusolverDnSpotrf,
    cublasStrsm_v2
);
dense!(
    f64,
    cusolverDnDpotrf_bufferSize,
    cusolverDnDpotrf,
    cublasDtrsm_v2
);

/// `rows` × `cols` column-major with leading dimension `rows` fits in `len` elements, and
/// both are positive and fit cuBLAS's `int`.
fn check(what: &str, rows: usize, cols: usize, len: usize) -> Result<(i32, i32), GpuError> {
    let fits = rows > 0
        && cols > 0
        && rows.checked_mul(cols).is_some_and(|e| e <= len)
        && i32::try_from(cols).is_ok();
    match (fits, i32::try_from(rows)) {
        (true, Ok(r)) => Ok((r, cols as i32)),
        _ => Err(GpuError::Gemm {
            what: format!("{what} is {rows} × {cols}; its buffer holds {len} elements"),
        }),
    }
}

/// The dense routines of a fit on one stream, for d × d matrices: cuBLAS's and cuSOLVER's
/// handles, cuSOLVER's workspace and status word, made once and reused for every call.
pub struct Linalg<T: Dense> {
    stream: Arc<CudaStream>,
    blas: CudaBlas,
    solver: DnHandle,
    work: CudaSlice<T>,
    info: CudaSlice<i32>,
    d: usize,
}

impl<T: Dense> Linalg<T> {
    /// The routines for `d` × `d` triangles and products on `stream` (cuSOLVER's workspace
    /// allocated now).
    pub fn new(stream: &Arc<CudaStream>, d: usize) -> Result<Self, GpuError> {
        super::libraries::require(super::libraries::CudaLibrary::Cusolver)?;
        let blas = super::blas::handle(stream)?;
        let solver = DnHandle::new(stream.clone())?;
        let mut probe = stream.alloc_zeros::<T>(d * d)?;
        let (n, _) = check("the matrix to factor", d, d, probe.len())?;
        let mut lwork = 0i32;
        {
            let (a, _record) = probe.device_ptr_mut(stream);
            // SAFETY: `a` points to a live d × d buffer (checked); `lwork` is a host int.
            unsafe { T::potrf_buffer_size(solver.cu(), n, a as *mut T, n, &mut lwork) }.result()?;
        }
        let work = stream.alloc_zeros::<T>(lwork.max(1) as usize)?;
        let info = stream.alloc_zeros::<i32>(1)?;
        Ok(Linalg {
            stream: stream.clone(),
            blas,
            solver,
            work,
            info,
            d,
        })
    }

    /// C = α op(A) op(B) + β C ([`super::blas::gemm`]).
    pub fn gemm<A: DevicePtr<T>, B: DevicePtr<T>, C: DevicePtrMut<T>>(
        &self,
        cfg: GemmConfig<T>,
        a: &A,
        b: &B,
        c: &mut C,
    ) -> Result<(), GpuError> {
        T::gemm(&self.blas, cfg, a, b, c)
    }

    /// Factors the symmetric positive definite `a` (d × d, column-major; its lower triangle
    /// is read) in place into L with A = L Lᵀ in the lower triangle; `false` (and `a`
    /// partly overwritten) when A is not positive definite. Waits for the device, to read
    /// the status.
    pub fn cholesky<A: DevicePtrMut<T>>(&mut self, a: &mut A) -> Result<bool, GpuError> {
        let (n, _) = check("the matrix to factor", self.d, self.d, a.len())?;
        let lwork = i32::try_from(self.work.len()).unwrap_or(i32::MAX);
        {
            let stream = &self.stream;
            let (a, _ra) = a.device_ptr_mut(stream);
            let (work, _rw) = self.work.device_ptr_mut(stream);
            let (info, _ri) = self.info.device_ptr_mut(stream);
            // SAFETY: `a` is a live d × d buffer (checked above), `work` holds the `lwork`
            // elements cuSOLVER asked for at `new` for this d, `info` one int; the call is
            // queued on the handle's stream, after earlier work on the buffers.
            unsafe {
                T::potrf(
                    self.solver.cu(),
                    n,
                    a as *mut T,
                    n,
                    work as *mut T,
                    lwork,
                    info as *mut i32,
                )
            }
            .result()?;
        }
        let info = self.stream.clone_dtoh(&self.info)?;
        Ok(info[0] == 0)
    }

    /// Y ← L⁻¹ Y for the d × d lower triangle `l` (column-major) and the d × b matrix `y`
    /// (column-major: b columns of d values, i.e. b rows of d values row-major).
    pub fn solve_lower<L: DevicePtr<T>, Y: DevicePtrMut<T>>(
        &self,
        l: &L,
        y: &mut Y,
        b: usize,
    ) -> Result<(), GpuError> {
        let (m, _) = check("the triangle", self.d, self.d, l.len())?;
        let (_, n) = check("the right-hand sides", self.d, b, y.len())?;
        let (l, _rl) = l.device_ptr(&self.stream);
        let (y, _ry) = y.device_ptr_mut(&self.stream);
        let one = T::ONE;
        // SAFETY: `l` holds d × d and `y` d × b elements (checked), leading dimension d; α is
        // a host value alive for the call; the call is queued on the handle's stream.
        unsafe {
            T::trsm_lower(
                *self.blas.handle(),
                m,
                n,
                &one,
                l as *const T,
                m,
                y as *mut T,
                m,
            )
        }
        .result()?;
        Ok(())
    }

    /// C ← A Aᵀ + β C for the d × b matrix `a` (column-major) into the d × d `c`
    /// (column-major, both triangles): the samples in column blocks of [`GRAM_BLOCK`], one
    /// batched GEMM of their products into `partials` (d × d each), then their sum by a GEMM
    /// with `ones`. cuBLAS's SYRK over a long, thin A runs on as many thread blocks as its
    /// result has tiles (one for a 50 × 50 result), where the batch spreads the samples over
    /// the device; the whole product costs twice SYRK's flops at DGEMM's rate.
    pub fn gram<C: DevicePtrMut<T>>(
        &self,
        a: &CudaSlice<T>,
        b: usize,
        partials: &mut CudaSlice<T>,
        ones: &CudaSlice<T>,
        beta: T,
        c: &mut C,
    ) -> Result<(), GpuError> {
        let d = self.d;
        let (full, rest) = (b / GRAM_BLOCK, b % GRAM_BLOCK);
        let parts = gram_parts(b);
        check("the product's factor", d, b, a.len())?;
        check("the partial products", d * d, parts, partials.len())?;
        check("the ones", parts, 1, ones.len())?;
        let (di, dd, block) = (d as i32, (d * d) as i32, GRAM_BLOCK as i32);
        let product = |k| GemmConfig {
            transa: CUBLAS_OP_N,
            transb: CUBLAS_OP_T,
            m: di,
            n: di,
            k,
            alpha: T::ONE,
            lda: di,
            ldb: di,
            beta: T::ZERO,
            ldc: di,
        };
        if full > 0 {
            let cfg = StridedBatchedConfig {
                gemm: product(block),
                batch_size: full as i32,
                stride_a: (d * GRAM_BLOCK) as i64,
                stride_b: (d * GRAM_BLOCK) as i64,
                stride_c: (d * d) as i64,
            };
            T::gemm_batched(&self.blas, cfg, a, a, partials)?;
        }
        if rest > 0 {
            let tail = a.slice(full * GRAM_BLOCK * d..b * d);
            let mut last = partials.slice_mut(full * d * d..parts * d * d);
            T::gemm(&self.blas, product(rest as i32), &tail, &tail, &mut last)?;
        }
        let sum = GemmConfig {
            transa: CUBLAS_OP_N,
            transb: CUBLAS_OP_N,
            m: dd,
            n: 1,
            k: parts as i32,
            alpha: T::ONE,
            lda: dd,
            ldb: parts as i32,
            beta,
            ldc: dd,
        };
        T::gemm(&self.blas, sum, partials, ones, c)
    }
}

/// Samples per partial product of [`Linalg::gram`].
pub const GRAM_BLOCK: usize = 4096;

/// The partial products [`Linalg::gram`] makes of `b` samples.
pub fn gram_parts(b: usize) -> usize {
    b.div_ceil(GRAM_BLOCK)
}
