//! Errors of the GPU layer, each readable on its own, and their way into [`crate::Error`]:
//! every cudarc error converts with `?`, in the GPU layer and in the stages alike.

use thiserror::Error;

use super::launch::KernelError;

/// What can go wrong on the device.
#[derive(Debug, Error)]
pub enum GpuError {
    /// A CUDA driver call outside a kernel launch failed (copy, allocation, event, …).
    #[error("CUDA driver: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
    /// NVRTC could not compile a kernel file; `log` is the compiler's output.
    #[error("NVRTC could not compile kernels/{file} for {arch}:\n{log}")]
    Compile {
        file: &'static str,
        arch: String,
        log: String,
    },
    /// A kernel could not be launched (bad arguments, or the driver refused it), or failed
    /// while it ran (reported with `SGTSNE_SYNC_KERNELS=1`, see [`crate::gpu::launch`]).
    #[error("kernel `{name}` (kernels/{file}): {error}")]
    Kernel {
        file: &'static str,
        name: String,
        #[source]
        error: KernelError,
    },
    /// A cuBLAS product's dimensions do not fit its buffers.
    #[error("cuBLAS GEMM: {what}")]
    Gemm { what: String },
    /// cuBLAS failed.
    #[error("cuBLAS: {0:?}")]
    Cublas(#[from] cudarc::cublas::result::CublasError),
    /// cuSOLVER failed.
    #[error("cuSOLVER: {0:?}")]
    Cusolver(#[from] cudarc::cusolver::result::CusolverError),
    /// cuFFT failed.
    #[error("cuFFT: {0:?}")]
    Cufft(#[from] cudarc::cufft::result::CufftError),
    /// NCCL failed (a collective between the GPUs of a run over several).
    #[error("NCCL: {0}")]
    Nccl(String),
    /// A CUDA library a stage calls is neither on the loader's path nor registered
    /// ([`super::libraries::require`]); `library` names it and its file.
    #[error("library not found: {}, which this stage needs", library.described())]
    MissingLibrary {
        library: super::libraries::CudaLibrary,
    },
    /// The problem does not fit in the device's memory.
    #[error("out of GPU memory: {what} needs {needed_mib} MiB, {free_mib} MiB free")]
    OutOfMemory {
        what: String,
        needed_mib: usize,
        free_mib: usize,
    },
}

impl GpuError {
    /// Whether the device ran out of memory: an allocation the driver refused, a kernel
    /// launch it could not find room for, cuBLAS's or cuFFT's workspace, or a phase that
    /// checked first ([`GpuError::OutOfMemory`]).
    pub fn is_out_of_memory(&self) -> bool {
        use cudarc::driver::sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY;
        match self {
            GpuError::Driver(e) => e.0 == CUDA_ERROR_OUT_OF_MEMORY,
            GpuError::Kernel {
                error: KernelError::Driver(e),
                ..
            } => e.0 == CUDA_ERROR_OUT_OF_MEMORY,
            GpuError::Cublas(e) => {
                e.0 == cudarc::cublas::sys::cublasStatus_t::CUBLAS_STATUS_ALLOC_FAILED
            }
            GpuError::Cufft(e) => e.0 == cudarc::cufft::sys::cufftResult::CUFFT_ALLOC_FAILED,
            GpuError::Cusolver(e) => {
                e.0 == cudarc::cusolver::sys::cusolverStatus_t::CUSOLVER_STATUS_ALLOC_FAILED
            }
            GpuError::OutOfMemory { .. } => true,
            _ => false,
        }
    }
}

impl From<cudarc::nccl::result::NcclError> for GpuError {
    fn from(e: cudarc::nccl::result::NcclError) -> Self {
        GpuError::Nccl(format!("{e:?}"))
    }
}

impl From<GpuError> for crate::Error {
    fn from(e: GpuError) -> Self {
        crate::Error::Gpu(Box::new(e))
    }
}

/// `?` on a cudarc error in code returning [`crate::Error`].
macro_rules! into_error {
    ($($t:ty),*) => {
        $(
            impl From<$t> for crate::Error {
                fn from(e: $t) -> Self {
                    GpuError::from(e).into()
                }
            }
        )*
    };
}

into_error!(
    cudarc::driver::DriverError,
    cudarc::cublas::result::CublasError,
    cudarc::cufft::result::CufftError,
    cudarc::cusolver::result::CusolverError,
    cudarc::nccl::result::NcclError
);
