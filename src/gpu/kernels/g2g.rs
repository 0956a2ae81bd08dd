//! `kernels/g2g.cu`: the zero-padding-free convolution on the grid, every parity pattern at
//! once (`crate::repulse::g2g::gpu`), or the `count` patterns from `first` of a GPU's share
//! in a run over several. Complex arrays are pattern-major: packed grid q of the i-th
//! pattern taken at (i · [`packed_grids`] + q) · `len`.

use super::s2g::charge_stride;
use crate::gpu::launch::kernels;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[];

/// Complex grids per pattern of a `dims`-dimensional grid, in both directions: the charge
/// alone, then the coordinate channels two to a grid (`kernels/g2g.cu`, the two-for-one
/// transform of real data).
pub const fn packed_grids(dims: usize) -> usize {
    1 + dims.div_ceil(2)
}

kernels! {
    file: G2g;

    /// The charge grids `charges` (node-major, [`charge_stride`] reals a node) modulated for
    /// every pattern into `modulated`, two to a complex grid.
    pub struct G2gModulate<T> = "g2g_modulate" {
        len: usize as i64,
        p: usize as i32,
        dims: usize as i32,
        first: usize as i32,
        count: usize as i32,
        charges: in T [charge_stride(dims) * len],
        modulated: out T::Complex [count * packed_grids(dims) * len],
    }

    /// The kernels G1 and G2 of Student's t with `dof` degrees of freedom
    /// ([`crate::kernel::Kernel`]) at spacing `h`, or with `t0` > 0 the long parts of their
    /// split ([`crate::repulse::near`], `dof` 1), folded and modulated per pattern, into
    /// `kernel` (their spectra after the forward FFT).
    pub struct G2gKernel<T> = "g2g_kernel" {
        len: usize as i64,
        p: usize as i32,
        dims: usize as i32,
        first: usize as i32,
        count: usize as i32,
        h: f32,
        dof: f64,
        t0: f64,
        kernel: out T::Complex [count * 2 * len],
    }

    /// The products of the charges' spectra `xhat` with the kernel `spectra` (G1 for ψ, G2
    /// for φ) into `yhat`, packed alike, scaled by 1 / `len`.
    pub struct G2gMultiply<T> = "g2g_multiply" {
        len: usize as i64,
        dims: usize as i32,
        count: usize as i32,
        xhat: in T::Complex [count * packed_grids(dims) * len],
        spectra: in T::Complex [count * 2 * len],
        yhat: out T::Complex [count * packed_grids(dims) * len],
    }

    /// The patterns' inverse transforms `patterns` demodulated and averaged into the
    /// 2 + dims real potentials `phi`, node-major (a node's channels side by side, as G2S
    /// reads them).
    pub struct G2gDemodulate<T> = "g2g_demodulate" {
        len: usize as i64,
        p: usize as i32,
        dims: usize as i32,
        first: usize as i32,
        count: usize as i32,
        patterns: in T::Complex [count * packed_grids(dims) * len],
        phi: out T [(2 + dims) * len],
    }
}
