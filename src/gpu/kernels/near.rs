//! `kernels/near.cu`: the near field's short-range sums (`crate::repulse::near::gpu`).

use super::repulse::GridGeom;
use crate::gpu::launch::kernels;
use crate::gpu::sum::WORDS;

/// Threads per block of the sums, which their launch bounds assume: the default block
/// ([`crate::gpu::context::BLOCK`], what `Gpu::config` launches).
pub(crate) const NEAR_THREADS: usize = crate::gpu::context::BLOCK as usize;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[("NEAR_THREADS", NEAR_THREADS)];

kernels! {
    file: Near;

    /// `ys[t]` = the point `order[t]` of `y` (n × dims), padded to 4 floats.
    pub struct NearSortedCoords = "near_sorted_coords" {
        real: defines,
        n: usize as i32,
        dims: usize as i32,
        order: in i32 [n],
        y: in f32 [n * dims],
        ys: out f32 [4 * n],
    }

    /// Adds every point's short-range sums over the points within `cutoff` (split at `t0`)
    /// to the potentials `pot` that the gather wrote, and their ψ terms to `z`; `order` and
    /// `starts` are S2G's sort by cell (`cells` = (p − 3)^dims cells), `ys` the sorted
    /// coordinates. Blocks of `NEAR_THREADS`.
    pub struct NearSums<T> = "near_sums_{dims}d" {
        dims: host,
        cells: host,
        n: usize as i32,
        geom: GridGeom,
        t0: f32,
        cutoff: f32,
        order: in i32 [n],
        starts: in i32 [cells + 1],
        ys: in f32 [4 * n],
        pot: out T [n * (2 + dims)],
        z: out u64 [WORDS],
    }
}
