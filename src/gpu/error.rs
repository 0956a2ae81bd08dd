//! Errors of the GPU layer, each readable on its own.

use thiserror::Error;

/// What can go wrong on the device.
#[derive(Debug, Error)]
pub enum GpuError {
    /// A CUDA driver call failed (launch, copy, allocation, …).
    #[error("CUDA driver: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
    /// NVRTC could not compile a kernel file; `log` is the compiler's output.
    #[error("NVRTC could not compile kernels/{file} for {arch}:\n{log}")]
    Compile {
        file: &'static str,
        arch: String,
        log: String,
    },
    /// cuBLAS failed.
    #[error("cuBLAS: {0:?}")]
    Cublas(#[from] cudarc::cublas::result::CublasError),
    /// cuFFT failed.
    #[error("cuFFT: {0:?}")]
    Cufft(#[from] cudarc::cufft::result::CufftError),
    /// The problem does not fit in the device's memory.
    #[error("out of GPU memory: {what} needs {needed_mib} MiB, {free_mib} MiB free")]
    OutOfMemory {
        what: String,
        needed_mib: usize,
        free_mib: usize,
    },
}

impl From<GpuError> for crate::Error {
    fn from(e: GpuError) -> Self {
        crate::Error::Gpu(Box::new(e))
    }
}
