//! Kernels shipped compiled: the cubins a single-precision run uses, compiled ahead by NVRTC
//! for one architecture of each recent major version and embedded in the program, so that a
//! machine's first run loads them instead of compiling them.
//!
//! A fresh machine's first MNIST run otherwise spent about 2 s of its 4.8 s (against 1.1 s
//! warm) waiting for NVRTC (`benches/history/2026-11-gpu.md`). A cubin runs on every device
//! of its major version whose minor version is at least its own (the CUDA C++ Programming
//! Guide's binary compatibility), so `sm_80` serves compute capabilities 8.0–8.9, `sm_90`
//! 9.0, `sm_100` 10.x and `sm_120` 12.x. Each kernel file's cubins for an architecture are
//! one zip archive, `kernels/cubin/<arch>/<file>.zip` (the file's variants, e.g. the kNN's list
//! lengths), its entries named as the on-disk cache names them
//! (`cubin_name`: the file, the architecture and a hash of the source and the options), so
//! a kernel whose source changed is simply not found here and compiles as before. The
//! double-precision grids (`--precision f64`) and the fused kNN's sweep for inputs of other
//! than 50 dimensions are not shipped: NVRTC compiles them on first use, then the cache
//! keeps them.
//!
//! `scripts/kernels/ship.sh` writes the archives; the test `archives_match_the_sources`
//! fails when a kernel changed and they were not written again.

use std::io::{Cursor, Read};

use super::compile::{cubin_name, is_elf};
use super::kernels::KernelId;

/// The archives of one architecture: each kernel file's stem (`s2g` for `s2g.cu`) and its zip.
type Archives = &'static [(&'static str, &'static [u8])];

/// `(architecture, archives)` for each architecture in `[..]`, each with the zip of every
/// kernel file in the second `[..]` (one `include_bytes!` per pair).
macro_rules! archives {
    ([$($arch:literal),*] $files:tt) => {
        [$(($arch, archives!(@files $arch $files))),*]
    };
    (@files $arch:literal [$($file:literal),*]) => {
        &[$(($file, include_bytes!(
            concat!("../../kernels/cubin/", $arch, "/", $file, ".zip")
        ) as &[u8])),*] as Archives
    };
}

/// The shipped architectures and their archives, a file of `kernels/` each (the test
/// `archives_cover_every_kernel_file` keeps the list whole).
const ARCHIVES: [(&str, Archives); 4] = archives!(
    ["sm_80", "sm_90", "sm_100", "sm_120"]
    [
        "affinity", "affinity_exact", "attract_hyb", "centre", "exact", "g2g", "g2s", "gmm",
        "grid_fft", "ivf", "knn", "knn_fused", "knn_refine", "near", "optim", "phi2force",
        "quality", "s2g", "sparse_pca", "transform"
    ]
);

/// The stem of a kernel file's name (`s2g` for `s2g.cu`), which names its archive.
fn stem(id: KernelId) -> &'static str {
    id.file().trim_end_matches(".cu")
}

/// `(major, minor)` of an architecture named `sm_XY` (the last digit is the minor version).
fn version(arch: &str) -> Option<(u32, u32)> {
    let digits = arch.strip_prefix("sm_")?;
    if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (major, minor) = digits.split_at(digits.len() - 1);
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The shipped archives whose cubins run on a device of architecture `arch`: those of the
/// same major version with the highest minor version not above the device's.
fn archive_for(arch: &str) -> Option<(&'static str, Archives)> {
    let (major, minor) = version(arch)?;
    ARCHIVES
        .iter()
        .filter_map(|&(name, bytes)| Some((version(name)?, name, bytes)))
        .filter(|&((m, n), _, _)| m == major && n <= minor)
        .max_by_key(|&((_, n), _, _)| n)
        .map(|(_, name, bytes)| (name, bytes))
}

/// The shipped cubin of `id` compiled with `defines` that runs on `arch`, if the program
/// holds one for this source.
pub(super) fn cubin(id: KernelId, defines: &[&str], arch: &str) -> Option<Vec<u8>> {
    let (shipped, archives) = archive_for(arch)?;
    let &(_, bytes) = archives.iter().find(|&&(file, _)| file == stem(id))?;
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).ok()?;
    let mut entry = archive.by_name(&cubin_name(id, defines, shipped)).ok()?;
    let mut cubin = Vec::with_capacity(entry.size() as usize);
    entry.read_to_end(&mut cubin).ok()?;
    is_elf(&cubin).then_some(cubin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::compile::{every_variant, Variant};
    use std::path::PathBuf;

    /// The variants shipped: every variant but the double-precision ones.
    fn shipped_variants() -> Vec<Variant> {
        let double = <f64 as crate::gpu::real::DeviceReal>::DEFINES;
        every_variant()
            .into_iter()
            .filter(|&(_, defines)| defines != double)
            .collect()
    }

    fn archive_path(arch: &str, id: KernelId) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(format!("kernels/cubin/{arch}/{}.zip", stem(id)))
    }

    /// Every kernel file has its archive for every architecture, and no archive is left of a
    /// file that is gone.
    #[test]
    fn archives_cover_every_kernel_file() {
        let mut files: Vec<&str> = KernelId::ALL.iter().map(|&id| stem(id)).collect();
        files.sort_unstable();
        for (arch, archives) in ARCHIVES {
            let held: Vec<&str> = archives.iter().map(|&(file, _)| file).collect();
            assert_eq!(held, files, "{arch}");
        }
    }

    /// Each archive holds exactly the shipped variants of its file's source today, as
    /// cubins: a kernel edited without `scripts/kernels/ship.sh` fails here (its cubin would
    /// be silently unused), and so does a leftover of an older source.
    #[test]
    fn archives_match_the_sources() {
        for (arch, archives) in ARCHIVES {
            for &id in KernelId::ALL {
                let mut want: Vec<String> = shipped_variants()
                    .iter()
                    .filter(|&&(v, _)| v == id)
                    .map(|&(id, defines)| cubin_name(id, defines, arch))
                    .collect();
                want.sort();
                let &(_, bytes) = archives.iter().find(|&&(f, _)| f == stem(id)).unwrap();
                check_archive(arch, id, bytes, &want);
            }
        }
    }

    /// `bytes`, the archive of `id` for `arch`, holds the cubins `want` and nothing else.
    fn check_archive(arch: &str, id: KernelId, bytes: &[u8], want: &[String]) {
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let mut held: Vec<String> = (0..archive.len())
            .map(|i| archive.by_index(i).unwrap().name().unwrap().to_string())
            .collect();
        held.sort();
        assert_eq!(
            held,
            want,
            "kernels/cubin/{arch}/{}.zip does not match the kernel's source: run scripts/kernels/ship.sh",
            stem(id)
        );
        for name in want {
            let mut cubin = Vec::new();
            archive
                .by_name(name)
                .unwrap()
                .read_to_end(&mut cubin)
                .unwrap();
            assert!(is_elf(&cubin), "{arch}: {name} is not a cubin");
        }
    }

    /// A device takes its own major version's archive, of the highest minor version it runs.
    #[test]
    fn devices_take_their_major_versions_archive() {
        let take = |arch| archive_for(arch).map(|(name, _)| name);
        assert_eq!(take("sm_90"), Some("sm_90"));
        assert_eq!(take("sm_86"), Some("sm_80"));
        assert_eq!(take("sm_89"), Some("sm_80"));
        assert_eq!(take("sm_103"), Some("sm_100"));
        assert_eq!(take("sm_121"), Some("sm_120"));
        assert_eq!(take("sm_75"), None);
        assert_eq!(take("sm_110"), None);
        assert_eq!(take("compute_90"), None);
        assert_eq!(version("sm_120"), Some((12, 0)));
    }

    /// A shipped variant is found for its architecture; a double-precision one is not.
    #[test]
    fn shipped_cubins_are_found() {
        assert!(cubin(KernelId::Optim, &[], "sm_90").is_some());
        assert!(cubin(KernelId::Optim, &[], "sm_86").is_some());
        let double = <f64 as crate::gpu::real::DeviceReal>::DEFINES;
        assert!(cubin(KernelId::S2g, double, "sm_90").is_none());
        assert!(cubin(KernelId::Optim, &[], "sm_75").is_none());
    }

    /// Writes the archives with this process's NVRTC (`scripts/kernels/ship.sh`): every
    /// shipped variant for every shipped architecture, one archive per kernel file, entries
    /// sorted and dated 1980-01-01 so that the same cubins give the same bytes.
    #[test]
    #[ignore]
    fn write_archives() {
        use std::io::Write;
        assert!(
            crate::gpu::compile::nvrtc_for_test(),
            "writing the archives needs libnvrtc"
        );
        for (arch, _) in ARCHIVES {
            let mut variants = shipped_variants();
            variants.sort_by_key(|&(id, defines)| cubin_name(id, defines, arch));
            let cubins: Vec<(KernelId, String, Vec<u8>)> = std::thread::scope(|s| {
                let jobs: Vec<_> = variants
                    .iter()
                    .map(|&(id, defines)| {
                        s.spawn(move || {
                            let bin = crate::gpu::compile::compile_variant(id, defines, arch)
                                .unwrap_or_else(|log| panic!("kernels/{}: {log}", id.file()));
                            (id, cubin_name(id, defines, arch), bin)
                        })
                    })
                    .collect();
                jobs.into_iter().map(|j| j.join().unwrap()).collect()
            });
            let options = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated)
                .compression_level(Some(9))
                .last_modified_time(zip::DateTime::default());
            for &id in KernelId::ALL {
                let path = archive_path(arch, id);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
                for (_, name, bin) in cubins.iter().filter(|(of, _, _)| *of == id) {
                    zip.start_file(name.as_str(), options).unwrap();
                    zip.write_all(bin).unwrap();
                }
                zip.finish().unwrap();
            }
            println!("kernels/cubin/{arch}/");
        }
    }
}
