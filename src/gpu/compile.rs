//! NVRTC compilation with an on-disk PTX cache.
//!
//! Compiling a kernel file takes NVRTC a few hundred milliseconds; the PTX is cached under
//! `$SGTSNE_CACHE` (or `$XDG_CACHE_HOME/sgtsne`, or `~/.cache/sgtsne`) keyed by a hash of
//! the source, the target architecture and the options, so a second run starts at once.
//! A cache that cannot be read or written is skipped silently: it only saves time.

use std::path::PathBuf;

use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions, Ptx};

use super::kernels::KernelId;
use super::GpuError;

/// Options shared by every kernel: IEEE division and square root (the repulsion's 1e-3
/// accuracy target needs them more than the speed of the approximate ones); `defines`
/// (`-DNAME`) select a variant of a file, e.g. the repulsion's grids in double.
fn options(arch: &'static str, defines: &[&str]) -> CompileOptions {
    let mut options = vec!["--std=c++17".to_string()];
    options.extend(defines.iter().map(|d| d.to_string()));
    CompileOptions {
        arch: Some(arch),
        prec_div: Some(true),
        prec_sqrt: Some(true),
        fmad: Some(true),
        options,
        ..Default::default()
    }
}

/// `sm_XY` for a compute capability, as NVRTC's `--gpu-architecture` expects.
pub fn arch_name(cc: (i32, i32)) -> &'static str {
    match cc {
        (9, 0) => "sm_90",
        (8, 9) => "sm_89",
        (8, 6) => "sm_86",
        (8, 0) => "sm_80",
        (10, 0) => "sm_100",
        (12, 0) => "sm_120",
        (major, minor) => Box::leak(format!("sm_{major}{minor}").into_boxed_str()),
    }
}

/// PTX of `id` compiled with `defines` for `arch`, from the cache or freshly compiled (then
/// cached).
pub fn ptx(id: KernelId, defines: &[&str], arch: &'static str) -> Result<Ptx, GpuError> {
    ptx_cached_in(id, defines, arch, cache_dir())
}

/// [`ptx`] with an explicit cache folder (`None`: no cache).
fn ptx_cached_in(
    id: KernelId,
    defines: &[&str],
    arch: &'static str,
    cache: Option<PathBuf>,
) -> Result<Ptx, GpuError> {
    let source = id.source();
    let opts = options(arch, defines);
    let key = format!(
        "{:016x}",
        fnv1a(&[
            source.as_bytes(),
            arch.as_bytes(),
            format!("{opts:?}").as_bytes()
        ])
    );
    let cached = cache.map(|d| d.join(format!("{}-{arch}-{key}.ptx", id.file())));
    if let Some(text) = cached
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
    {
        return Ok(Ptx::from_src(text));
    }
    let ptx = compile_ptx_with_opts(&source, opts).map_err(|e| compile_error(id, arch, e))?;
    if let Some(path) = cached {
        let _ = store(&path, &ptx.to_src());
    }
    Ok(ptx)
}

fn compile_error(id: KernelId, arch: &str, e: CompileError) -> GpuError {
    let log = match &e {
        CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
        other => format!("{other:?}"),
    };
    GpuError::Compile {
        file: id.file(),
        arch: arch.to_string(),
        log,
    }
}

fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("SGTSNE_CACHE") {
        return Some(PathBuf::from(d));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("sgtsne"))
}

/// Writes through a temporary file so that a concurrent reader never sees half a PTX.
fn store(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().expect("cache paths have a parent");
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// FNV-1a, 64 bit: a stable hash for cache keys (std's hasher may change between releases).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for part in parts {
        for &b in *part {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compiles every kernel file with NVRTC (no GPU needed, only libnvrtc), and the
    /// repulsion's files also with double grids: a kernel that does not compile fails here,
    /// not on the device.
    #[test]
    fn every_kernel_compiles() {
        // SAFETY: only tries to dlopen libnvrtc.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            eprintln!("skipped: libnvrtc not found (CI installs it; see .ci/run)");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let f64_defines = <f64 as crate::gpu::real::DeviceReal>::DEFINES;
        let variants = KernelId::ALL.into_iter().map(|id| (id, &[][..])).chain(
            [
                KernelId::S2g,
                KernelId::G2g,
                KernelId::G2s,
                KernelId::Phi2force,
            ]
            .map(|id| (id, f64_defines)),
        );
        for (id, defines) in variants {
            let cache = Some(dir.path().to_path_buf());
            let ptx = ptx_cached_in(id, defines, "sm_90", cache.clone())
                .unwrap_or_else(|e| panic!("{e}"));
            // The double variant really computes in double.
            if !defines.is_empty() {
                assert!(ptx.to_src().contains(".f64"), "{} {defines:?}", id.file());
            }
            // The second call is served from the cache.
            let again = ptx_cached_in(id, defines, "sm_90", cache).unwrap();
            assert!(again.to_src().contains(".entry"));
        }
    }

    #[test]
    fn hash_is_stable() {
        assert_eq!(fnv1a(&[b"abc"]), fnv1a(&[b"abc"]));
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
    }
}
