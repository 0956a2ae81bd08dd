//! `kernels/exact.cu`: the exact O(n²) repulsion, the reference (`crate::repulse::exact`),
//! and the sums for target subsets and for Z alone that the grid-size sweep measures against.

use crate::gpu::launch::kernels;
use crate::gpu::sum::WORDS;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[];

kernels! {
    file: Exact;

    /// For every target i, Σ_j G1(d_ij) (added to `z`, zeroed; an exact sum, `crate::gpu::sum`) and the unnormalised force
    /// Σ_j G2(d_ij) (y_i − y_j) into `force`, in double, for Student's t kernel of `dof`
    /// degrees of freedom (dof 1: w and w²). One thread per target, sources staged through
    /// blockDim · dims floats of dynamic shared memory.
    pub struct ExactSums = "exact_sums_{dims}d" {
        dims: host,
        n: usize as i32,
        y: in f32 [n * dims],
        dof: f64,
        force: out f32 [n * dims],
        z: out u64 [WORDS],
    }

    /// Per-target sums over all n sources for the `m` targets `targets` (indices < n):
    /// block column c sums the sources [c · `chunk`, (c + 1) · `chunk`) and adds into
    /// `z_row` and `force_z` (zeroed). blockDim · dims floats of dynamic shared memory.
    pub struct ExactTargets = "exact_targets_{dims}d" {
        dims: host,
        n: usize as i32,
        m: usize as i32,
        targets: in i32 [m],
        y: in f32 [n * dims],
        dof: f64,
        chunk: usize as i32,
        z_row: out f64 [m],
        force_z: out f64 [m * dims],
    }

    /// Z alone over all n² pairs into `z` (zeroed): pair weights G1 in float (`inv_dof` =
    /// 1 / `dof`), summed in double every 32 sources. As [`ExactSums`] for the launch.
    pub struct ExactZ = "exact_z_{dims}d" {
        dims: host,
        n: usize as i32,
        y: in f32 [n * dims],
        inv_dof: f32,
        dof: f32,
        z: out u64 [WORDS],
    }

    /// `force` /= Z.
    pub struct ExactNormalise = "exact_normalise" {
        len: usize as i64,
        force: out f32 [len],
        z: in u64 [WORDS],
    }
}
