//! `kernels/phi2force.cu`: potentials to repulsive forces (`crate::repulse::phi2force::gpu`).

use crate::gpu::launch::kernels;
use crate::gpu::sum::WORDS;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[];

kernels! {
    file: Phi2force;

    /// F_rep,i = ((y_i − c) φ₀,i − φ_i) / Z from the potentials `pot` that the gather
    /// wrote and Z in `z`; (`c0`, `c1`, `c2`) is the grid's centre.
    pub struct Phi2Force<T> = "phi2force_{dims}d" {
        dims: host,
        n: usize as i32,
        c0: f32,
        c1: f32,
        c2: f32,
        y: in f32 [n * dims],
        pot: in T [n * (2 + dims)],
        z: in u64 [WORDS],
        force: out f32 [n * dims],
    }
}
