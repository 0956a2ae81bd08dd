//! The CUDA sources in `kernels/`, embedded at build time, and their Rust side: one
//! [`KernelId`] per file, and one module per file (named after it) that declares the file's
//! kernels with their arguments ([`crate::gpu::launch`]) and the constants the file shares
//! with its callers (tile sizes, threads per block), which are defined there once and given
//! to NVRTC as `-DNAME=VALUE`. NVRTC sees no file system, so `kernels/common.cuh` (and the
//! repulsion's `kernels/repulse.cuh`) are prepended rather than `#include`d.

pub mod affinity;
pub mod affinity_exact;
pub mod attract_hyb;
pub mod centre;
pub mod exact;
pub mod g2g;
pub mod g2s;
pub mod gmm;
pub mod grid_fft;
pub mod ivf;
pub mod knn;
pub mod knn_fused;
pub mod knn_refine;
pub mod near;
pub mod optim;
pub mod phi2force;
pub mod quality;
pub mod repulse;
pub mod s2g;
pub mod sparse_pca;
pub mod transform;

use super::launch::Declared;

/// Prepended to every kernel file: shared device helpers.
pub const COMMON: &str = include_str!("../../../kernels/common.cuh");

/// Prepended to the repulsion kernels after [`COMMON`]: grid geometry, stencil and the
/// grids' element type `real` (float, or double under [`crate::gpu::real::DeviceReal`]'s
/// define).
pub const REPULSE: &str = include_str!("../../../kernels/repulse.cuh");

/// The table of kernel files: variant, file, declaring module, whether the file uses
/// `repulse.cuh`.
macro_rules! kernel_files {
    ($($(#[$doc:meta])* $id:ident => $file:literal, $module:ident, $repulse:literal;)*) => {
        /// One kernel source file (one pipeline stage, or a helper shared by stages).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum KernelId {
            $($(#[$doc])* $id,)*
        }

        impl KernelId {
            /// Every kernel file, for compile-all checks.
            pub const ALL: &'static [KernelId] = &[$(KernelId::$id),*];

            /// File name under `kernels/`.
            pub fn file(self) -> &'static str {
                match self {
                    $(KernelId::$id => $file,)*
                }
            }

            /// The file's own source.
            fn body(self) -> &'static str {
                match self {
                    $(KernelId::$id => include_str!(concat!("../../../kernels/", $file)),)*
                }
            }

            /// Constants the file shares with its callers, given to NVRTC as
            /// `-DNAME=VALUE` (defined in the file's module here).
            pub fn constants(self) -> &'static [(&'static str, usize)] {
                // The fused kNN's merge threshold may be set for a run
                // (`knn_fused::MERGE_VAR`).
                if self == KernelId::KnnFused {
                    return knn_fused::constants();
                }
                match self {
                    $(KernelId::$id => $module::CONSTANTS,)*
                }
            }

            /// The kernels the file's module declares.
            pub fn declared(self) -> &'static [Declared] {
                match self {
                    $(KernelId::$id => $module::DECLARED,)*
                }
            }

            /// Whether the file uses the repulsion's header (and so comes in a `float` and a
            /// `double` variant, [`crate::gpu::real::DeviceReal`]).
            pub fn repulse(self) -> bool {
                match self {
                    $(KernelId::$id => $repulse,)*
                }
            }
        }
    };
}

kernel_files! {
    /// Attraction over P in HYB (ELL + COO).
    AttractHyb => "attract_hyb.cu", attract_hyb, false;
    /// Gradient, gains, momentum, update and re-centring.
    Optim => "optim.cu", optim, false;
    /// Bounding box and cubic Lagrange scatter of charges to the grid.
    S2g => "s2g.cu", s2g, true;
    /// Zero-padding-free convolution: modulation, kernel spectra, products.
    G2g => "g2g.cu", g2g, true;
    /// The convolution's 2-D FFTs without cuFFT (square grids of 7-smooth sides).
    GridFft => "grid_fft.cu", grid_fft, true;
    /// Cubic Lagrange gather of potentials from the grid, and Z.
    G2s => "g2s.cu", g2s, true;
    /// The near field of the split kernel: short-range sums over the cells within a cutoff.
    Near => "near.cu", near, true;
    /// Potentials to repulsive forces.
    Phi2force => "phi2force.cu", phi2force, true;
    /// Exact O(n²) repulsion, the reference.
    Exact => "exact.cu", exact, false;
    /// Centring of n × d points: column sums, centred copy, squared norms.
    Centre => "centre.cu", centre, false;
    /// Exact kNN: top-k selection across SGEMM distance tiles, exact finish.
    Knn => "knn.cu", knn, false;
    /// Exact kNN with 3xFP16 tensor-core keys and the selection fused behind them.
    KnnFused => "knn_fused.cu", knn_fused, false;
    /// The approximate kNN's k-means assignment and the return to input order.
    Ivf => "ivf.cu", ivf, false;
    /// The approximate kNN's refinement by neighbours of neighbours.
    KnnRefine => "knn_refine.cu", knn_refine, false;
    /// Perplexity calibration and symmetrisation of P into HYB.
    Affinity => "affinity.cu", affinity, false;
    /// Exact affinities: distances, perplexity calibration and P over every pair.
    AffinityExact => "affinity_exact.cu", affinity_exact, false;
    /// Sparse matrix products of the randomised PCA of sparse points.
    SparsePca => "sparse_pca.cu", sparse_pca, false;
    /// One gradient step of the points `sgtsne transform` places into a saved map.
    Transform => "transform.cu", transform, true;
    /// The Gaussian mixtures' deviations, log-densities, log-sum-exp and diagonal sums.
    Gmm => "gmm.cu", gmm, false;
    /// The quality measures' exact kNN in the embedding.
    Quality => "quality.cu", quality, false;
}

impl KernelId {
    /// Whether the file comes in a `float` and a `double` variant ([`crate::gpu::real::DeviceReal`]'s
    /// defines): the repulsion's files and the mixtures'.
    pub fn two_precisions(self) -> bool {
        self.repulse() || self == KernelId::Gmm
    }

    /// What NVRTC compiles: the headers, then the file with `#line` so that compiler
    /// messages name the file and its own line numbers.
    pub fn source(self) -> String {
        let mut src = String::from(COMMON);
        if self.repulse() {
            src.push_str(REPULSE);
        }
        src.push_str(&format!("\n#line 1 \"{}\"\n", self.file()));
        src.push_str(self.body());
        src
    }
}

#[cfg(test)]
mod tests {
    use crate::gpu::compile::{compile_for_test, Compiled};
    use crate::gpu::launch::Param;

    /// One PTX parameter: its type (`.u32`, `.b8`, …) and, for byte arrays, their length.
    type PtxParam = (String, Option<usize>);

    /// The parameters of every `.entry` of a PTX text, by kernel name.
    fn entries(ptx: &str) -> Vec<(String, Vec<PtxParam>)> {
        let mut out = Vec::new();
        let mut lines = ptx.lines();
        while let Some(line) = lines.next() {
            let Some(rest) = line.trim().strip_prefix(".visible .entry ") else {
                continue;
            };
            let name = rest.trim_end_matches('(').trim().to_string();
            let mut params = Vec::new();
            for line in lines.by_ref() {
                let line = line.trim();
                if line.starts_with(')') {
                    break;
                }
                let words: Vec<&str> = line.trim_end_matches(',').split_whitespace().collect();
                let ty = words
                    .iter()
                    .skip(1)
                    .find(|w| !w.starts_with(".align") && w.starts_with('.'))
                    .expect("a parameter has a type")
                    .to_string();
                let bytes = words
                    .last()
                    .and_then(|w| w.split_once('['))
                    .and_then(|(_, n)| n.trim_end_matches(']').parse().ok());
                params.push((ty, bytes));
            }
            out.push((name, params));
        }
        out
    }

    /// Every kernel of every file is declared once in Rust, with the arguments the compiled
    /// kernel takes: same count, same order, same size and kind (pointer or 64-bit integer,
    /// 32-bit integer, float, double, struct of N bytes). A kernel nobody declared, or a
    /// declaration that names no kernel, fails too. Needs only libnvrtc (CI installs it).
    #[test]
    fn declarations_match_ptx() {
        let Some(files) = compile_for_test() else {
            return;
        };
        for Compiled { id, ptx, .. } in files {
            let declared = id.declared();
            let mut used = vec![false; declared.len()];
            for (name, params) in entries(&ptx) {
                let matching: Vec<usize> = (0..declared.len())
                    .filter(|&d| declared[d].names(&name))
                    .collect();
                assert_eq!(
                    matching.len(),
                    1,
                    "kernels/{}: kernel `{name}` is declared {} times in src/gpu/kernels/",
                    id.file(),
                    matching.len()
                );
                let d = &declared[matching[0]];
                used[matching[0]] = true;
                let want: Vec<Param> = d.received();
                assert_eq!(
                    want.len(),
                    params.len(),
                    "kernels/{}: `{name}` takes {} parameters, its declaration {}",
                    id.file(),
                    params.len(),
                    want.len()
                );
                for (i, (p, (ty, bytes))) in want.iter().zip(&params).enumerate() {
                    let array = bytes.map(|b| format!("[{b}]")).unwrap_or_default();
                    assert!(
                        p.matches(ty, *bytes),
                        "kernels/{}: `{name}` parameter {i} is {ty}{array} in PTX, declared {p:?}",
                        id.file()
                    );
                }
            }
            for (d, used) in declared.iter().zip(used) {
                assert!(
                    used,
                    "kernels/{}: the declaration `{}` names no kernel",
                    id.file(),
                    d.template
                );
            }
        }
    }

    #[test]
    fn ptx_entries_parse() {
        let ptx = "\n.visible .entry k(\n\t.param .u32 k_param_0,\n\t.param .align 4 .b8 \
                   k_param_1[32],\n\t.param .u64 .ptr .align 1 k_param_2\n)\n.maxntid 256\n{";
        let e = entries(ptx);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].0, "k");
        assert_eq!(
            e[0].1,
            vec![
                (".u32".to_string(), None),
                (".b8".to_string(), Some(32)),
                (".u64".to_string(), None)
            ]
        );
    }
}
