//! The GPU: probing for a usable CUDA device without ever letting cudarc panic.
//!
//! cudarc loads the CUDA libraries lazily (feature `dynamic-loading`) and panics when a
//! symbol's library is missing, so every library a backend will touch is probed with its
//! `is_culib_present` first; only then is a context created.

pub mod compile;
pub mod context;
pub mod error;
pub mod fft;
pub mod kernels;
pub mod real;

pub use context::Gpu;
pub use error::GpuError;

use std::sync::Arc;

use cudarc::driver::CudaContext;

/// A usable device: its context and what `sgtsne info` shows of it.
pub struct Device {
    /// The primary context of device 0.
    pub context: Arc<CudaContext>,
    /// Marketing name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Compute capability (major, minor), e.g. (9, 0).
    pub compute_capability: (i32, i32),
    /// Total device memory in bytes.
    pub total_memory: usize,
}

/// Finds device 0 or explains, in one line, why there is no usable GPU.
pub fn probe() -> Result<Device, String> {
    // SAFETY: `is_culib_present` only tries to dlopen the library by its usual names.
    let libraries = [
        ("CUDA driver (libcuda)", unsafe {
            cudarc::driver::sys::is_culib_present()
        }),
        ("NVRTC (libnvrtc)", unsafe {
            cudarc::nvrtc::sys::is_culib_present()
        }),
        ("cuFFT (libcufft)", unsafe {
            cudarc::cufft::sys::is_culib_present()
        }),
        ("cuBLAS (libcublas)", unsafe {
            cudarc::cublas::sys::is_culib_present()
        }),
    ];
    let missing: Vec<&str> = libraries
        .iter()
        .filter(|(_, present)| !present)
        .map(|(name, _)| *name)
        .collect();
    if !missing.is_empty() {
        return Err(format!("library not found: {}", missing.join(", ")));
    }
    let count = CudaContext::device_count().map_err(|e| format!("CUDA driver: {e}"))?;
    if count < 1 {
        return Err("the CUDA driver reports no device".into());
    }
    let context = CudaContext::new(0).map_err(|e| format!("cannot create a context: {e}"))?;
    let name = context.name().map_err(|e| e.to_string())?;
    let compute_capability = context.compute_capability().map_err(|e| e.to_string())?;
    let total_memory = context.total_mem().map_err(|e| e.to_string())?;
    Ok(Device {
        context,
        name,
        compute_capability,
        total_memory,
    })
}

/// The GPU for a test, or `None` after printing why the test is skipped (CI has no GPU).
#[cfg(test)]
pub(crate) fn for_test() -> Option<&'static Gpu> {
    match Gpu::get() {
        Ok(g) => Some(g),
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}
