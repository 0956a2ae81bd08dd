//! The GPU layer: the one place that talks to CUDA through cudarc's `unsafe` interfaces.
//!
//! - [`probe`]: a usable CUDA device, found without ever letting cudarc panic. cudarc loads
//!   the CUDA libraries lazily (feature `dynamic-loading`) and panics when a symbol's
//!   library is missing, so every library a backend will touch is probed with its
//!   `is_culib_present` first; only then is a context created. [`libraries`]: libraries
//!   outside the loader's path (NVIDIA's pip wheels), loaded when a stage first needs them.
//! - [`context`]: the process's [`Gpu`] (context, stream, compiled modules);
//!   [`compile`]: NVRTC to cubin with an on-disk cache; [`kernels`]: the CUDA sources and
//!   their declarations; [`launch`]: typed, checked kernel launches.
//! - Device helpers shared by stages: [`centre`] (centring n × d points, for the kNN and
//!   the PCA), [`blas`] (checked cuBLAS products), [`linalg`] (checked Cholesky
//!   factorisations, triangular solves and Gram matrices, for the mixtures), [`memory`]
//!   (free-memory checks, uninitialised and pinned buffers), [`progress`] (progress over
//!   queued work), [`fft`] (batched cuFFT plans), [`real`] (the repulsion's grid precision), [`sum`] (sums that
//!   do not depend on the order of their terms).
//! - [`GpuError`], convertible into [`crate::Error`] with `?` from every cudarc error.
//!
//! Outside this module `unsafe` appears only where the CPU needs it (SIMD in the kNN scan,
//! `vzeroupper` after the PCA). The stages' GPU code is safe Rust over [`launch`],
//! [`blas`], [`memory`] and cudarc's safe types.
//!
//! Naming, the same in every stage: a stage's GPU sibling is the module `gpu` beside its CPU
//! code (`knn::gpu`, `repulse::s2g::gpu`, …); its types end in `Gpu` (`HybGpu`,
//! `FftRepulsionGpu`, `OptimizerGpu`); its functions end in `_gpu` when they take and return
//! host data (`exact_gpu`, `pca_gpu`) and in `_device` when their data stay on the device
//! (`exact_device`, `affinities_device`, `attract_device`).

pub mod blas;
pub mod centre;
pub mod comm;
pub mod compile;
pub mod context;
pub mod end;
pub mod error;
pub mod fft;
pub mod kernels;
pub mod launch;
pub mod libraries;
pub mod linalg;
pub mod memory;
pub mod progress;
pub mod real;
pub mod shipped;
pub mod sum;

pub use context::Gpu;
pub use error::GpuError;

use std::sync::{Arc, OnceLock};

use cudarc::driver::CudaContext;

/// A usable device: its context and what `sgtsne info` shows of it.
pub struct Device {
    /// The primary context of the device.
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
    probe_device(0)
}

/// The CUDA devices the process sees (`CUDA_VISIBLE_DEVICES` applied by the driver), or
/// why there are none usable, as [`probe`] says it.
pub fn device_count() -> Result<usize, String> {
    libraries_present()?;
    let count = CudaContext::device_count().map_err(|e| format!("CUDA driver: {e}"))?;
    if count < 1 {
        return Err("the CUDA driver reports no device".into());
    }
    Ok(count as usize)
}

/// The CUDA libraries every GPU run touches, each probed before cudarc may load it; once
/// per process (each probe opens and closes the library, cuFFT's hundreds of MB: 0.13–0.16 s
/// of a two-GPU run's set-up on an H100 host went to probing them again). The others are
/// asked for by the stage that calls them ([`libraries::require`]).
fn libraries_present() -> Result<(), String> {
    static PRESENT: OnceLock<Result<(), String>> = OnceLock::new();
    PRESENT.get_or_init(probe_libraries).clone()
}

/// [`libraries_present`]'s probe: each library on the loader's path, or registered
/// ([`libraries::available`]: found, not loaded until a stage needs it).
fn probe_libraries() -> Result<(), String> {
    use libraries::{available, CudaLibrary};
    // SAFETY: `is_culib_present` only tries to dlopen the library by its usual names.
    let driver = unsafe { cudarc::driver::sys::is_culib_present() };
    let libraries = [
        ("CUDA driver (libcuda)".to_string(), driver),
        (
            CudaLibrary::Cufft.described(),
            available(CudaLibrary::Cufft),
        ),
    ];
    let missing: Vec<&str> = libraries
        .iter()
        .filter(|(_, present)| !present)
        .map(|(name, _)| name.as_str())
        .collect();
    crate::trace::event(|| "CUDA libraries probed".into());
    if !missing.is_empty() {
        return Err(format!("library not found: {}", missing.join(", ")));
    }
    Ok(())
}

/// Finds device `ordinal` (of the devices the process sees) or explains why it is unusable.
pub fn probe_device(ordinal: usize) -> Result<Device, String> {
    let count = device_count()?;
    if ordinal >= count {
        return Err(format!(
            "there is no GPU {ordinal}: the CUDA driver reports {count} (CUDA_VISIBLE_DEVICES \
             chooses which)"
        ));
    }
    crate::trace::event(|| format!("GPU {ordinal}: the driver started, {count} devices"));
    let context = CudaContext::new(ordinal).map_err(|e| format!("cannot create a context: {e}"))?;
    crate::trace::event(|| format!("GPU {ordinal}: context made"));
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

/// The GPU for a test, or `None` after printing why the test is skipped (CI has no GPU);
/// with `SGTSNE_REQUIRE_GPU=1` in the environment a missing GPU fails the test instead, so
/// that a run on a broken GPU host cannot pass by skipping everything.
#[cfg(test)]
pub(crate) fn for_test() -> Option<&'static Gpu> {
    match Gpu::get() {
        Ok(g) => Some(g),
        Err(e) => {
            let required = std::env::var_os("SGTSNE_REQUIRE_GPU").is_some_and(|v| v == "1");
            assert!(!required, "SGTSNE_REQUIRE_GPU=1, but {e}");
            eprintln!("skipped: {e}");
            None
        }
    }
}

/// Device tests: each `fn name(gpu) { body }` becomes a `#[test]` that runs `body` with
/// `gpu: &'static Gpu`, or skips (fails, with `SGTSNE_REQUIRE_GPU=1`) without a device
/// ([`for_test`]). Attributes (docs, `#[ignore]` for benchmarks) go through.
#[cfg(test)]
macro_rules! gpu_test {
    ($($(#[$meta:meta])* fn $name:ident($gpu:ident) $body:block)*) => {
        $(
            $(#[$meta])*
            #[test]
            fn $name() {
                let Some($gpu) = $crate::gpu::for_test() else {
                    return;
                };
                $body
            }
        )*
    };
}

#[cfg(test)]
pub(crate) use gpu_test;
