//! NVRTC compilation to device code (cubin), with an on-disk cache.
//!
//! Kernels are compiled for the device's real architecture (`sm_XY`), so NVRTC runs
//! `ptxas` and the driver loads machine code as is. (Loading PTX instead makes the driver
//! compile it at every module load, in whichever stage first uses the file: ≈ 0.2 s for the
//! kNN files, paid again by every process whose driver cache is cold.) Compiling takes
//! NVRTC a few hundred milliseconds per file; the cubin is cached under `$SGTSNE_CACHE` (or
//! `$XDG_CACHE_HOME/sgtsne`, or `~/.cache/sgtsne`) keyed by a hash of the source, the
//! architecture and the options, so a second run starts at once. A cache that cannot be
//! read or written is skipped silently: it only saves time.

use std::ffi::{c_char, CString};
use std::path::PathBuf;

use cudarc::nvrtc::{result, sys};

use super::kernels::KernelId;
use super::GpuError;

/// Options shared by every kernel: IEEE division and square root (the repulsion's 1e-3
/// accuracy target needs them more than the speed of the approximate ones), fused
/// multiply-adds; `defines` (`-DNAME`) select a variant of a file, e.g. the repulsion's
/// grids in double.
fn options(arch: &str, defines: &[&str]) -> Vec<String> {
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
        "--prec-div=true".to_string(),
        "--prec-sqrt=true".to_string(),
        "--fmad=true".to_string(),
    ];
    options.extend(defines.iter().map(|d| d.to_string()));
    options
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

/// The cubin of `id` compiled with `defines` for `arch`, from the cache or freshly
/// compiled (then cached).
pub fn cubin(id: KernelId, defines: &[&str], arch: &'static str) -> Result<Vec<u8>, GpuError> {
    cubin_cached_in(id, defines, arch, cache_dir())
}

/// [`cubin`] with an explicit cache folder (`None`: no cache).
fn cubin_cached_in(
    id: KernelId,
    defines: &[&str],
    arch: &'static str,
    cache: Option<PathBuf>,
) -> Result<Vec<u8>, GpuError> {
    let source = id.source();
    let opts = options(arch, defines);
    let key = format!(
        "{:016x}",
        fnv1a(&[
            source.as_bytes(),
            arch.as_bytes(),
            opts.join(" ").as_bytes()
        ])
    );
    let cached = cache.map(|d| d.join(format!("{}-{arch}-{key}.cubin", id.file())));
    if let Some(bytes) = cached.as_ref().and_then(|p| std::fs::read(p).ok()) {
        if is_elf(&bytes) {
            return Ok(bytes);
        }
    }
    let compile_error = |log: String| GpuError::Compile {
        file: id.file(),
        arch: arch.to_string(),
        log,
    };
    let bin = compile(&source, &opts).map_err(compile_error)?;
    if let Some(path) = cached {
        let _ = store(&path, &bin);
    }
    Ok(bin)
}

/// A cubin is an ELF image; anything else in the cache (a torn or foreign file) is ignored.
fn is_elf(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x7fELF")
}

/// An NVRTC program, destroyed on drop.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram and destroyed once, here.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

/// Compiles `source` with `opts` (a real architecture among them) to a cubin; on failure,
/// the compiler's log.
fn compile(source: &str, opts: &[String]) -> Result<Vec<u8>, String> {
    let src = CString::new(source).map_err(|_| "the source holds a NUL byte".to_string())?;
    let prog = Program(result::create_program(&src, None).map_err(|e| format!("{e}"))?);
    // SAFETY: `prog` is live; `src` outlives it (declared first, dropped last).
    if let Err(e) = unsafe { result::compile_program(prog.0, opts) } {
        // SAFETY: as above; the log exists once compilation was attempted.
        let log = unsafe { result::get_program_log(prog.0) }
            .map(|raw| {
                let bytes: Vec<u8> = raw.iter().map(|&c| c as u8).collect();
                String::from_utf8_lossy(&bytes)
                    .trim_end_matches('\0')
                    .to_string()
            })
            .unwrap_or_default();
        return Err(format!("{e}\n{log}"));
    }
    let mut size = 0usize;
    // SAFETY: `prog` compiled successfully for a real architecture, so it holds a cubin
    // of `size` bytes, copied into a buffer of that size.
    unsafe {
        sys::nvrtcGetCUBINSize(prog.0, &mut size)
            .result()
            .map_err(|e| format!("{e}"))?;
        let mut bin = vec![0u8; size];
        sys::nvrtcGetCUBIN(prog.0, bin.as_mut_ptr() as *mut c_char)
            .result()
            .map_err(|e| format!("{e}"))?;
        Ok(bin)
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

/// Writes through a temporary file so that a concurrent reader never sees half a cubin.
fn store(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().expect("cache paths have a parent");
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
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

    /// Compiles every kernel file with NVRTC to sm_90 machine code (no GPU needed, only
    /// libnvrtc), and the repulsion's files also with double grids: a kernel that does not
    /// compile fails here, not on the device.
    #[test]
    fn every_kernel_compiles() {
        // SAFETY: only tries to dlopen libnvrtc.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            eprintln!("skipped: libnvrtc not found (CI installs it; see .ci/run)");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let f64_defines = <f64 as crate::gpu::real::DeviceReal>::DEFINES;
        let double = [
            KernelId::S2g,
            KernelId::G2g,
            KernelId::G2s,
            KernelId::Phi2force,
        ];
        let variants = KernelId::ALL
            .into_iter()
            .map(|id| (id, &[][..]))
            .chain(double.map(|id| (id, f64_defines)));
        for (id, defines) in variants {
            let cache = Some(dir.path().to_path_buf());
            let bin = cubin_cached_in(id, defines, "sm_90", cache.clone())
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(is_elf(&bin), "{}", id.file());
            // The second call is served from the cache.
            let again = cubin_cached_in(id, defines, "sm_90", cache).unwrap();
            assert_eq!(again, bin);
        }
        // The double variant really computes in double (its PTX, from the same options).
        for id in double {
            let opts = cudarc::nvrtc::CompileOptions {
                arch: Some("sm_90"),
                options: vec!["--std=c++17".into(), f64_defines[0].into()],
                ..Default::default()
            };
            let ptx = cudarc::nvrtc::compile_ptx_with_opts(id.source(), opts).unwrap();
            assert!(ptx.to_src().contains(".f64"), "{}", id.file());
        }
    }

    /// A compile error comes back with the compiler's log, naming the file.
    #[test]
    fn compile_errors_carry_the_log() {
        // SAFETY: only tries to dlopen libnvrtc.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            eprintln!("skipped: libnvrtc not found (CI installs it; see .ci/run)");
            return;
        }
        let log = compile(
            "extern \"C\" __global__ void k() { undeclared(); }",
            &options("sm_90", &[]),
        )
        .unwrap_err();
        assert!(log.contains("undeclared"), "{log}");
    }

    #[test]
    fn hash_is_stable() {
        assert_eq!(fnv1a(&[b"abc"]), fnv1a(&[b"abc"]));
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
    }
}
