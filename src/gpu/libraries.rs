//! CUDA libraries outside the dynamic loader's search path, loaded when a stage first needs
//! them.
//!
//! cudarc opens each CUDA library by its usual names, the first time one of its functions
//! is called. NVIDIA's pip wheels (the Python package's `cuda` extra) unpack under
//! `site-packages/nvidia/*/lib`, where the loader does not look; a caller that knows such
//! files registers them ([`register`]), and the stage about to use a library loads them by
//! their paths first (`load`), after which cudarc's lookup by name finds the library
//! already in the process. Registering costs nothing: a run pays for the libraries it
//! touches and no others. (Loading every wheel up front made a 10M-point run from Python
//! hold 0.2 GiB more than the command line's: cuBLASLt alone is 150 MiB of resident memory
//! once loaded, on an H200 host, and a large t-SNE run without PCA never calls it; the
//! exact kNN of fewer points and the PCA do, and load it as the GPU starts:
//! `blas::warm_up`.)

use std::path::PathBuf;
use std::sync::Mutex;

/// A CUDA library a stage may load, with the files that make it up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CudaLibrary {
    /// NVRTC and its builtins (kernel compilation).
    Nvrtc,
    /// cuFFT (the repulsion's grid convolution).
    Cufft,
    /// cuBLAS and cuBLASLt (PCA, the tiled exact kNN, the mixtures).
    Cublas,
    /// cuSOLVER (PCA, the mixtures); loads cuBLAS first, which it needs.
    Cusolver,
    /// NCCL (runs over several GPUs).
    Nccl,
}

impl CudaLibrary {
    /// Every library a stage may load.
    pub const ALL: [CudaLibrary; 5] = [
        CudaLibrary::Nvrtc,
        CudaLibrary::Cufft,
        CudaLibrary::Cublas,
        CudaLibrary::Cusolver,
        CudaLibrary::Nccl,
    ];

    /// The name and file a message names it by, e.g. "cuBLAS (libcublas)": each library's
    /// file is `lib` and its name in lower case.
    pub fn described(self) -> String {
        format!("{} (lib{})", self.name(), self.name().to_ascii_lowercase())
    }

    /// The name a user knows it by (for messages and `sgtsne.info()`).
    pub fn name(self) -> &'static str {
        match self {
            CudaLibrary::Nvrtc => "NVRTC",
            CudaLibrary::Cufft => "cuFFT",
            CudaLibrary::Cublas => "cuBLAS",
            CudaLibrary::Cusolver => "cuSOLVER",
            CudaLibrary::Nccl => "NCCL",
        }
    }

    /// The library of that name ([`CudaLibrary::name`], any case).
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(name))
    }
}

/// Registered files per library, in load order, and whether they were loaded.
struct Entry {
    files: Vec<PathBuf>,
    loaded: bool,
}

static REGISTERED: Mutex<Vec<(CudaLibrary, Entry)>> = Mutex::new(Vec::new());

/// Makes `files` (full paths, in load order: a library's dependencies first) the ones to
/// load for `library` before its first use, in place of a lookup on the loader's path.
/// A library registered again keeps its first files.
pub fn register(library: CudaLibrary, files: Vec<PathBuf>) {
    if files.is_empty() {
        return;
    }
    let mut known = REGISTERED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if known.iter().all(|(l, _)| *l != library) {
        let loaded = false;
        known.push((library, Entry { files, loaded }));
    }
}

/// Whether files were registered for `library` ([`register`]) and are all there: the
/// library can be had without the loader's path, though nothing is loaded yet.
pub fn registered(library: CudaLibrary) -> bool {
    REGISTERED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .find(|(l, _)| *l == library)
        .is_some_and(|(_, entry)| entry.files.iter().all(|f| f.is_file()))
}

/// Whether `library` can be had, without loading it for good: registered
/// ([`registered`]), or found by its usual names on the loader's path (opened and closed
/// again, as cudarc's probe does). What the set-up checks before a stage may call it: cudarc
/// panics where a library it calls is missing.
pub fn available(library: CudaLibrary) -> bool {
    // SAFETY: `is_culib_present` only tries to dlopen the library by its usual names.
    registered(library)
        || unsafe {
            match library {
                CudaLibrary::Nvrtc => cudarc::nvrtc::sys::is_culib_present(),
                CudaLibrary::Cufft => cudarc::cufft::sys::is_culib_present(),
                CudaLibrary::Cublas => cudarc::cublas::sys::is_culib_present(),
                CudaLibrary::Cusolver => cudarc::cusolver::sys::is_culib_present(),
                CudaLibrary::Nccl => cudarc::nccl::sys::is_culib_present(),
            }
        }
}

/// [`available`], asked once per process and library, then loaded: where it is not
/// available, the error a stage returns instead of calling into it (cudarc panics where a
/// library it calls is missing).
/// The stages that need a library no run can do without (the driver, cuFFT) are checked as
/// the GPU starts (`gpu::probe`); NVRTC (only for kernels not shipped compiled) and cuBLAS
/// (PCA, the tiled exact kNN, the mixtures) here, by the stage about to call them, so that a
/// run that never calls them does not pay for opening them: the probe of cuBLAS and
/// cuBLASLt mapped about 200 MiB, most of the 0.12 s that probing took before the driver
/// could start.
pub fn require(library: CudaLibrary) -> Result<(), super::GpuError> {
    static KNOWN: Mutex<Vec<(CudaLibrary, bool)>> = Mutex::new(Vec::new());
    let mut known = KNOWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let present = match known.iter().find(|(l, _)| *l == library) {
        Some(&(_, present)) => present,
        None => {
            let present = available(library);
            known.push((library, present));
            present
        }
    };
    drop(known);
    if !present {
        return Err(super::GpuError::MissingLibrary { library });
    }
    load(library);
    Ok(())
}

/// Loads the files registered for `library`, once per process, before a stage uses it
/// (cuSOLVER's dependencies, cuBLAS's, first). Nothing registered: nothing to do, and the
/// library is left to the loader's path. A file that does not load is skipped: the stage's
/// own probe then reports the library missing.
pub(crate) fn load(library: CudaLibrary) {
    if library == CudaLibrary::Cusolver {
        load(CudaLibrary::Cublas);
    }
    let mut known = REGISTERED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some((_, entry)) = known.iter_mut().find(|(l, _)| *l == library) else {
        return;
    };
    if entry.loaded {
        return;
    }
    entry.loaded = true;
    for file in &entry.files {
        // SAFETY: opening a shared library runs its initialisers; these are the NVIDIA
        // libraries cudarc would open by name for the same stage, loaded once and never
        // closed (the handle is leaked), so no symbol cudarc resolves later dangles.
        let opened = unsafe {
            libloading::os::unix::Library::open(
                Some(file),
                libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
            )
        };
        if let Ok(lib) = opened {
            std::mem::forget(lib);
            crate::trace::event(|| format!("{}: loaded {}", library.name(), file.display()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A library that cannot be had is an error naming it and its file, asked again
    /// with the same answer.
    #[test]
    fn a_missing_library_is_an_error_naming_it() {
        register(
            CudaLibrary::Cusolver,
            vec![PathBuf::from("/nonexistent/libcusolver.so.11")],
        );
        if available(CudaLibrary::Cusolver) {
            return; // found on the loader's path: nothing to check here
        }
        for _ in 0..2 {
            let e = require(CudaLibrary::Cusolver).unwrap_err().to_string();
            assert_eq!(
                e,
                "library not found: cuSOLVER (libcusolver), which this stage needs"
            );
        }
    }

    #[test]
    fn libraries_are_named_as_users_know_them() {
        for lib in CudaLibrary::ALL {
            assert_eq!(CudaLibrary::named(lib.name()), Some(lib));
            assert_eq!(CudaLibrary::named(&lib.name().to_uppercase()), Some(lib));
        }
        assert_eq!(CudaLibrary::named("cuDNN"), None);
    }

    /// A registered file that is not there does not count as the library, and loading it
    /// is skipped, once, without a panic; loading a library with nothing registered does
    /// nothing.
    #[test]
    fn a_file_that_does_not_load_is_skipped() {
        load(CudaLibrary::Nccl);
        register(
            CudaLibrary::Nccl,
            vec![PathBuf::from("/nonexistent/libnccl.so.2")],
        );
        assert!(!registered(CudaLibrary::Nccl));
        load(CudaLibrary::Nccl);
        load(CudaLibrary::Nccl);
        register(CudaLibrary::Nvrtc, Vec::new());
        assert!(!registered(CudaLibrary::Nvrtc));
    }
}
