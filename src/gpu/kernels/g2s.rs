//! `kernels/g2s.cu`: the gather of potentials from the grid, and Z
//! (`crate::repulse::g2s::gpu`).

use super::repulse::GridGeom;
use crate::gpu::launch::kernels;
use crate::gpu::sum::WORDS;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[];

kernels! {
    file: G2s;

    /// Every point (in 3-D taken in the cell order `order`, a permutation of 0..n) gathers
    /// its 2 + dims potentials from the node-major grids `phi` (`len` nodes) into
    /// `out` (point-major); Σ ψ minus the self terms (of the kernel of `dof` degrees of
    /// freedom, as G2G's) added to `z` (zeroed). Blocks of a multiple of 32 threads.
    pub struct G2sGather<T> = "g2s_gather_{dims}d" {
        dims: host,
        len: host,
        n: usize as i32,
        geom: GridGeom,
        dof: f64,
        y: in f32 [n * dims],
        order: in i32 [n],
        phi: in T [(2 + dims) * len],
        out: out T [n * (2 + dims)],
        z: out u64 [WORDS],
    }
}
