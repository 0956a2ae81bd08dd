//! NVRTC compilation to device code (cubin), with an on-disk cache, and ahead of use on
//! background threads; the cubins a single-precision run uses also come shipped, compiled
//! ahead for the common architectures ([`super::shipped`]), which a fresh machine then
//! loads without compiling.
//!
//! Kernels are compiled for the device's real architecture (`sm_XY`), so NVRTC runs
//! `ptxas` and the driver loads machine code as is. (Loading PTX instead makes the driver
//! compile it at every module load, in whichever stage first uses the file: ≈ 0.2 s for the
//! kNN files, paid again by every process whose driver cache is cold.) Compiling takes
//! NVRTC a few hundred milliseconds to a few seconds per file; the cubin is cached under
//! `$SGTSNE_CACHE` (or `$XDG_CACHE_HOME/sgtsne`, or `~/.cache/sgtsne`) keyed by a hash of
//! the source, the architecture and the options, so a second run starts at once. A cache
//! that cannot be read or written is skipped silently: it only saves time.
//!
//! With an empty cache, compiling each file when a stage first uses it, one after the
//! other, cost a 1.3M-point run on the H100 about 10 s of its 32 s. So a run names the
//! variants it will use up front ([`Cubins::precompile`]) and they compile on as many
//! threads as the run may use (NVRTC is thread-safe for distinct programs) while the run
//! loads, reduces and searches its points; a stage that needs a file still in compilation
//! waits for that compilation rather than starting a second one ([`Cubins::get`]).

use std::collections::HashMap;
use std::ffi::{c_char, CString};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;

use cudarc::nvrtc::{result, sys};

use super::kernels::KernelId;
use super::GpuError;

/// Options shared by every kernel: IEEE division and square root (the repulsion's 1e-3
/// accuracy target needs them more than the speed of the approximate ones), fused
/// multiply-adds; then the file's constants ([`KernelId::constants`]) and `defines`
/// (`-DNAME`), which select a variant of a file, e.g. the repulsion's grids in double.
fn options(arch: &str, id: KernelId, defines: &[&str]) -> Vec<String> {
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
        "--prec-div=true".to_string(),
        "--prec-sqrt=true".to_string(),
        "--fmad=true".to_string(),
    ];
    options.extend(id.constants().iter().map(|(k, v)| format!("-D{k}={v}")));
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

/// Where a cubin came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// NVRTC compiled it now.
    Compiled,
    /// The on-disk cache held it.
    Cached,
    /// It came with the program ([`super::shipped`]).
    Shipped,
}

/// A kernel file and the NVRTC defines that select one of its variants (`&[]` for the
/// plain file, [`crate::gpu::real::DeviceReal::DEFINES`] for the repulsion's grids in
/// double): what is compiled, cached and loaded as one module.
pub type Variant = (KernelId, &'static [&'static str]);

/// What compiling one variant gave: its cubin, or the compiler's log (kept as text, since
/// [`GpuError`] is not `Clone`, and turned into [`GpuError::Compile`] by each caller).
type Outcome = Result<Vec<u8>, String>;

/// The cubins of one architecture, each compiled (or read from the disk cache) at most once
/// per process, by whichever comes first: a background worker of [`Cubins::precompile`] or
/// a caller of [`Cubins::get`], the other waiting for it.
pub struct Cubins {
    arch: &'static str,
    cache: Option<PathBuf>,
    /// Whether the shipped cubins are looked up first (not by the tests of NVRTC itself).
    shipped: bool,
    slots: Mutex<HashMap<Variant, Arc<OnceLock<Outcome>>>>,
}

impl Cubins {
    /// The cubins for `arch`: shipped, else cached in the usual folder.
    pub fn new(arch: &'static str) -> Self {
        Self::in_cache(arch, cache_dir(), true)
    }

    /// The cubins for `arch`, the `shipped` ones first if asked, then cached in `cache`
    /// (`None`: no cache).
    fn in_cache(arch: &'static str, cache: Option<PathBuf>, shipped: bool) -> Self {
        Cubins {
            arch,
            cache,
            shipped,
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// The one slot of `variant`, made empty on first request.
    fn slot(&self, variant: Variant) -> Arc<OnceLock<Outcome>> {
        // A poisoned map is still whole: a panic elsewhere cannot leave an insert half done.
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots.entry(variant).or_default().clone()
    }

    /// Fills `slot` from the cache or NVRTC, unless it is filled or being filled (then waits).
    fn fill<'s>(&self, slot: &'s OnceLock<Outcome>, (id, defines): Variant) -> &'s Outcome {
        slot.get_or_init(|| {
            let cache = self.cache.clone();
            cubin_cached_in(id, defines, self.arch, cache, self.shipped).map(|(bin, _)| bin)
        })
    }

    /// Whether the cubin of `id` with `defines` is at hand (compiled or read from the
    /// cache by an earlier request or a background compilation), so that
    /// [`Cubins::get`] would not wait.
    pub fn ready(&self, id: KernelId, defines: &'static [&'static str]) -> bool {
        let slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots
            .get(&(id, defines))
            .is_some_and(|slot| slot.get().is_some())
    }

    /// The cubin of `id` compiled with `defines`: from this process's earlier request, from
    /// a background compilation (waiting for it to finish), from the disk cache, or compiled
    /// now (then cached).
    pub fn get(&self, id: KernelId, defines: &'static [&'static str]) -> Result<Vec<u8>, GpuError> {
        self.fill(&self.slot((id, defines)), (id, defines))
            .clone()
            .map_err(|log| GpuError::Compile {
                file: id.file(),
                arch: self.arch.to_string(),
                log,
            })
    }

    /// Starts compiling `variants` on at most `threads` background threads, taking them in
    /// the order given (put first what the run uses first: with fewer threads than
    /// variants, the early stages then wait least). Each outcome, error included, waits in
    /// its slot for [`Cubins::get`]. Fewer threads start when the system refuses more; with
    /// none, each variant compiles on first use as before.
    pub fn precompile(self: &Arc<Self>, variants: &[Variant], threads: usize) -> Precompile {
        let jobs: Arc<[Variant]> = variants.into();
        let next = Arc::new(AtomicUsize::new(0));
        let workers = (0..threads.clamp(1, jobs.len().max(1)))
            .map_while(|_| {
                let (cubins, jobs, next) = (self.clone(), jobs.clone(), next.clone());
                std::thread::Builder::new()
                    .name("sgtsne-nvrtc".into())
                    .spawn(move || {
                        while let Some(&variant) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                            cubins.fill(&cubins.slot(variant), variant);
                        }
                    })
                    .ok()
            })
            .collect();
        Precompile {
            next,
            end: jobs.len(),
            workers,
        }
    }
}

/// The background compilation [`Cubins::precompile`] started. Dropping it cancels the
/// variants no worker has begun and waits for those under way: NVRTC cannot be stopped in
/// the middle of a program, and a process that exits while a worker is inside it would run
/// the compiler library's exit-time destructors under that worker's feet. A run holds it
/// until it ends, when what it used has been compiled anyway; a run that fails early waits
/// at most for the compilations in flight.
pub struct Precompile {
    next: Arc<AtomicUsize>,
    end: usize,
    workers: Vec<JoinHandle<()>>,
}

impl Precompile {
    /// Waits for the workers to run out of variants (without cancelling any).
    fn join(&mut self) {
        for worker in self.workers.drain(..) {
            // A worker's outcome is in its slot; a panicked worker left its slot empty,
            // and the variant compiles again on first use.
            let _ = worker.join();
        }
    }

    /// Waits until every variant is compiled, for tests that look at all of them.
    #[cfg(test)]
    fn finish(mut self) {
        self.join();
    }
}

impl Drop for Precompile {
    fn drop(&mut self) {
        self.next.fetch_max(self.end, Ordering::Relaxed);
        self.join();
    }
}

/// The name a cubin of `id` compiled with `defines` for `arch` has in the cache folder and
/// in the shipped archives: the file, the architecture and a hash of the source, the
/// architecture and the options, so that a changed source or option never finds a stale
/// cubin.
pub(super) fn cubin_name(id: KernelId, defines: &[&str], arch: &str) -> String {
    let opts = options(arch, id, defines);
    let key = fnv1a(&[
        id.source().as_bytes(),
        arch.as_bytes(),
        opts.join(" ").as_bytes(),
    ]);
    format!("{}-{arch}-{key:016x}.cubin", id.file())
}

/// The cubin of `id` compiled with `defines` for `arch`: shipped (when `shipped` is set and
/// the program holds it), from the cache folder `cache` (`None`: no cache) or freshly
/// compiled (then cached), and where it came from; on failure, the compiler's log.
fn cubin_cached_in(
    id: KernelId,
    defines: &[&str],
    arch: &'static str,
    cache: Option<PathBuf>,
    shipped: bool,
) -> Result<(Vec<u8>, Origin), String> {
    if let Some(bytes) = shipped
        .then(|| super::shipped::cubin(id, defines, arch))
        .flatten()
    {
        return Ok((bytes, Origin::Shipped));
    }
    let cached = cache.map(|d| d.join(cubin_name(id, defines, arch)));
    if let Some(bytes) = cached.as_ref().and_then(|p| std::fs::read(p).ok()) {
        if is_elf(&bytes) {
            return Ok((bytes, Origin::Cached));
        }
    }
    let bin = compile_variant(id, defines, arch)?;
    if let Some(path) = cached {
        let _ = store(&path, &bin);
    }
    Ok((bin, Origin::Compiled))
}

/// The cubin of `id` with `defines` compiled by NVRTC for `arch` now; on failure, the log.
pub(super) fn compile_variant(
    id: KernelId,
    defines: &[&str],
    arch: &str,
) -> Result<Vec<u8>, String> {
    Ok(compile(&id.source(), &options(arch, id, defines))?.cubin)
}

/// A cubin is an ELF image; anything else in the cache (a torn or foreign file) is ignored.
pub(super) fn is_elf(bytes: &[u8]) -> bool {
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

/// What one compilation produces.
struct Output {
    cubin: Vec<u8>,
    /// The PTX NVRTC generated on the way (kept for the declarations' check).
    #[cfg_attr(not(test), allow(dead_code))]
    ptx: String,
}

/// Compiles `source` with `opts` (a real architecture among them) to a cubin and its PTX;
/// on failure, the compiler's log.
fn compile(source: &str, opts: &[String]) -> Result<Output, String> {
    super::libraries::require(super::libraries::CudaLibrary::Nvrtc).map_err(|e| e.to_string())?;
    let src = CString::new(source).map_err(|_| "the source holds a NUL byte".to_string())?;
    let prog = Program(result::create_program(&src, None).map_err(|e| format!("{e}"))?);
    // SAFETY: `prog` is live; `src` outlives it (declared first, dropped last).
    if let Err(e) = unsafe { result::compile_program(prog.0, opts) } {
        // SAFETY: as above; the log exists once compilation was attempted.
        let log = unsafe { result::get_program_log(prog.0) }
            .map(|raw| text(raw.iter().map(|&c| c as u8).collect()))
            .unwrap_or_default();
        return Err(format!("{e}\n{log}"));
    }
    let mut size = 0usize;
    // SAFETY: `prog` compiled successfully for a real architecture, so it holds a cubin
    // of `size` bytes, copied into a buffer of that size.
    let cubin = unsafe {
        sys::nvrtcGetCUBINSize(prog.0, &mut size)
            .result()
            .map_err(|e| format!("{e}"))?;
        let mut bin = vec![0u8; size];
        sys::nvrtcGetCUBIN(prog.0, bin.as_mut_ptr() as *mut c_char)
            .result()
            .map_err(|e| format!("{e}"))?;
        bin
    };
    // SAFETY: as above; a successful compilation also holds its PTX.
    let ptx = unsafe { result::get_ptx(prog.0) }
        .map(|raw| text(raw.iter().map(|&c| c as u8).collect()))
        .map_err(|e| format!("{e}"))?;
    Ok(Output { cubin, ptx })
}

/// NVRTC's NUL-terminated text.
fn text(bytes: Vec<u8>) -> String {
    String::from_utf8_lossy(&bytes)
        .trim_end_matches('\0')
        .to_string()
}

/// Where compiled kernels are kept between runs: `SGTSNE_CACHE`, else `sgtsne` in the
/// user's cache directory. Public for a process that ends at once (the CLI on a second
/// Ctrl-C), which clears its temporary files here as in its output directories.
pub fn cache_dir() -> Option<PathBuf> {
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
    // Named as the outputs' temporary files are, so that a process ending at once can
    // find and remove its own (`crate::io::remove_temp_files`).
    let mut tmp = tempfile::Builder::new()
        .prefix(&crate::io::temp_prefix())
        .tempfile_in(dir)?;
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

/// Whether tests that need libnvrtc run: it is there, or `SGTSNE_REQUIRE_NVRTC=1` makes its
/// absence a failure (CI sets it, so that a missing compiler never passes silently).
#[cfg(test)]
pub(crate) fn nvrtc_for_test() -> bool {
    // SAFETY: only tries to dlopen libnvrtc.
    if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return true;
    }
    assert!(
        std::env::var_os("SGTSNE_REQUIRE_NVRTC").is_none_or(|v| v != "1"),
        "libnvrtc not found, and SGTSNE_REQUIRE_NVRTC=1 requires it"
    );
    eprintln!("skipped: libnvrtc not found (CI installs it; see .ci/run)");
    false
}

/// Compiles every kernel file and variant (the double grids, the list lengths) for `arch`
/// (e.g. `sm_90`) with this process's NVRTC, on `threads` threads, caching nothing: no
/// device is needed.
/// Tells whether the NVRTC found (e.g. NVIDIA's pip wheel, for the Python package) builds
/// the kernels; returns how many variants compiled, or the first failure with its log.
pub fn compile_every_kernel(arch: &'static str, threads: usize) -> crate::Result<usize> {
    super::libraries::load(super::libraries::CudaLibrary::Nvrtc);
    // SAFETY: only tries to dlopen libnvrtc, so that its absence is an error, not a panic.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(crate::Error::GpuUnavailable {
            reason: "library not found: NVRTC (libnvrtc)".into(),
        });
    }
    let jobs = every_variant();
    let next = AtomicUsize::new(0);
    let failures: Mutex<Vec<GpuError>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, jobs.len()) {
            s.spawn(|| {
                while let Some(&(id, defines)) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if let Err(log) = compile_variant(id, defines, arch) {
                        let mut failed = failures.lock().unwrap_or_else(PoisonError::into_inner);
                        failed.push(GpuError::Compile {
                            file: id.file(),
                            arch: arch.to_string(),
                            log,
                        });
                    }
                }
            });
        }
    });
    let mut failures = failures
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    match failures.is_empty() {
        true => Ok(jobs.len()),
        false => Err(failures.swap_remove(0).into()),
    }
}

/// Every kernel file, the repulsion's also with double grids, and the fused kNN's sweep
/// alone for 50 dimensions (the variant runs use).
pub(super) fn every_variant() -> Vec<Variant> {
    let f64_defines = <f64 as crate::gpu::real::DeviceReal>::DEFINES;
    use crate::gpu::kernels::knn::{list_variant, MAX_KR};
    let variants = KernelId::ALL.iter().flat_map(|&id| {
        let double = id.two_precisions().then_some((id, f64_defines));
        let fused = (id == KernelId::KnnFused).then(|| (id, crate::knn::gpu::sweep_variant(50)));
        // `knn.cu` is only ever compiled for one list length.
        let plain: Vec<Variant> = if id == KernelId::Knn {
            (1..=MAX_KR).map(|kr| (id, list_variant(kr))).collect()
        } else {
            vec![(id, &[][..])]
        };
        plain.into_iter().chain(double).chain(fused)
    });
    variants.collect()
}

/// Every kernel file and variant (the repulsion's and the mixtures' also in double), compiled for
/// sm_90 now.
#[cfg(test)]
pub(crate) struct Compiled {
    pub id: KernelId,
    pub defines: &'static [&'static str],
    pub cubin: Vec<u8>,
    pub ptx: String,
}

/// [`Compiled`] for every file and variant, once per test process; `None` (after printing
/// why) without libnvrtc.
#[cfg(test)]
pub(crate) fn compile_for_test() -> Option<Vec<Compiled>> {
    use std::sync::OnceLock;
    type Variant = (KernelId, &'static [&'static str], Vec<u8>, String);
    static ALL: OnceLock<Vec<Variant>> = OnceLock::new();
    if !nvrtc_for_test() {
        return None;
    }
    let all = ALL.get_or_init(|| {
        let jobs = every_variant();
        std::thread::scope(|s| {
            let handles: Vec<_> = jobs
                .iter()
                .map(|&(id, defines)| {
                    s.spawn(move || {
                        let out = compile(&id.source(), &options("sm_90", id, defines))
                            .unwrap_or_else(|log| panic!("kernels/{}: {log}", id.file()));
                        (id, defines, out.cubin, out.ptx)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    });
    Some(
        all.iter()
            .map(|(id, defines, cubin, ptx)| Compiled {
                id: *id,
                defines,
                cubin: cubin.clone(),
                ptx: ptx.clone(),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kernel file compiles with NVRTC to sm_90 machine code (no GPU needed, only
    /// libnvrtc), the repulsion's and the mixtures' files also in double, which really compute in
    /// double, the fused kNN's one-sweep variant and the tiled kNN's every list length; and
    /// the cache serves a second request without compiling: the first request into an
    /// empty cache is a compilation, the second a cache hit of the same bytes.
    #[test]
    fn every_kernel_compiles() {
        let Some(files) = compile_for_test() else {
            return;
        };
        let lengths = crate::gpu::kernels::knn::MAX_KR - 1;
        assert_eq!(
            files.len(),
            KernelId::ALL.len()
                + KernelId::ALL
                    .iter()
                    .filter(|id| id.two_precisions())
                    .count()
                + 1
                + lengths
        );
        for file in &files {
            assert!(is_elf(&file.cubin), "{}", file.id.file());
            assert!(file.ptx.contains(".entry"), "{}", file.id.file());
            if file.id.two_precisions() && !file.defines.is_empty() {
                assert!(file.ptx.contains(".f64"), "{} in double", file.id.file());
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let cache = Some(dir.path().to_path_buf());
        let (first, origin) =
            cubin_cached_in(KernelId::Optim, &[], "sm_90", cache.clone(), false).unwrap();
        assert_eq!(origin, Origin::Compiled);
        let (again, origin) = cubin_cached_in(KernelId::Optim, &[], "sm_90", cache, false).unwrap();
        assert_eq!(origin, Origin::Cached);
        assert_eq!(again, first);
    }

    fn cores() -> usize {
        std::thread::available_parallelism().map_or(1, |c| c.get())
    }

    /// The background compilation gives every variant the bytes a compilation of its own
    /// gives, keeps them for later requests and writes them to the cache, where a fresh
    /// process finds them.
    #[test]
    fn precompile_matches_serial_and_fills_the_cache() {
        let Some(files) = compile_for_test() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let cubins = Arc::new(Cubins::in_cache(
            "sm_90",
            Some(dir.path().to_path_buf()),
            false,
        ));
        cubins.precompile(&every_variant(), cores()).finish();
        for file in files {
            let variant = (file.id, file.defines);
            let kept = cubins.slot(variant).get().cloned();
            assert_eq!(kept, Some(Ok(file.cubin.clone())), "{}", file.id.file());
            let cache = Some(dir.path().to_path_buf());
            let (cached, origin) =
                cubin_cached_in(file.id, file.defines, "sm_90", cache, false).unwrap();
            assert_eq!(origin, Origin::Cached, "{}", file.id.file());
            assert_eq!(cached, file.cubin, "{}", file.id.file());
        }
    }

    /// A variant that fails in the background fails its first use with the compiler's log,
    /// as [`GpuError::Compile`] naming the file.
    #[test]
    fn precompile_errors_wait_for_first_use() {
        if !nvrtc_for_test() {
            return;
        }
        let cubins = Arc::new(Cubins::in_cache("sm_90", None, false));
        let bad: Variant = (KernelId::Optim, &["--no-such-option"]);
        cubins.precompile(&[bad], 1).finish();
        assert!(cubins.slot(bad).get().is_some_and(|r| r.is_err()));
        match cubins.get(bad.0, bad.1) {
            Err(GpuError::Compile { file, arch, log }) => {
                assert_eq!((file, arch.as_str()), ("optim.cu", "sm_90"));
                assert!(!log.is_empty());
            }
            other => panic!("expected a compile error, got {other:?}"),
        }
    }

    /// Compiling every variant one after the other, as first use did (each one's time, and
    /// the sum), against [`Cubins::precompile`] on every core; no cache. The slowest file
    /// bounds what a cold run can still wait for. `--ignored --nocapture`.
    #[test]
    #[ignore]
    fn precompile_bench() {
        if !nvrtc_for_test() {
            return;
        }
        let variants = every_variant();
        let mut serial = 0.0;
        for &(id, defines) in &variants {
            let t = std::time::Instant::now();
            cubin_cached_in(id, defines, "sm_90", None, false).unwrap();
            let seconds = t.elapsed().as_secs_f64();
            println!("{:>15} {defines:?}: {seconds:.2} s", id.file());
            serial += seconds;
        }
        let t = std::time::Instant::now();
        let cubins = Arc::new(Cubins::in_cache("sm_90", None, false));
        cubins.precompile(&variants, cores()).finish();
        let parallel = t.elapsed().as_secs_f64();
        let cores = cores();
        println!(
            "{} variants for sm_90: serial {serial:.2} s, parallel on {cores} cores {parallel:.2} s",
            variants.len()
        );
    }

    /// A compile error comes back with the compiler's log, naming the file.
    #[test]
    fn compile_errors_carry_the_log() {
        if !nvrtc_for_test() {
            return;
        }
        let err = compile(
            "extern \"C\" __global__ void k() { undeclared(); }",
            &options("sm_90", KernelId::Optim, &[]),
        );
        let log = err.err().expect("the source does not compile");
        assert!(log.contains("undeclared"), "{log}");
    }

    /// A file's constants reach NVRTC as defines.
    #[test]
    fn constants_become_defines() {
        let opts = options("sm_90", KernelId::Knn, &["-DEXTRA"][..]);
        assert!(opts.contains(&format!(
            "-DKNN_WARPS={}",
            super::super::kernels::knn::WARPS
        )));
        assert_eq!(opts.last().unwrap(), "-DEXTRA");
    }

    #[test]
    fn hash_is_stable() {
        assert_eq!(fnv1a(&[b"abc"]), fnv1a(&[b"abc"]));
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
    }
}
