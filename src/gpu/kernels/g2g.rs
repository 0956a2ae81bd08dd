//! `kernels/g2g.cu`: the zero-padding-free convolution on the grid, every parity pattern at
//! once (`crate::repulse::g2g::gpu`), or the `count` patterns from `first` of a GPU's share
//! in a run over several. Complex arrays are pattern-major: channel c of the i-th pattern
//! taken at (i · channels + c) · `len`.

use crate::gpu::launch::kernels;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[];

kernels! {
    file: G2g;

    /// The `channels` real grids `charges` (channel-major) modulated for every pattern into
    /// `modulated`.
    pub struct G2gModulate<T> = "g2g_modulate" {
        len: usize as i64,
        p: usize as i32,
        dims: usize as i32,
        first: usize as i32,
        count: usize as i32,
        channels: usize as i32,
        charges: in T [channels * len],
        modulated: out T::Complex [count * channels * len],
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

    /// The products of the charges' spectra `xhat` (1 + dims channels) with the kernel
    /// `spectra` (G1 for ψ, G2 for φ) into `yhat` (2 + dims channels), scaled by 1 / `len`.
    pub struct G2gMultiply<T> = "g2g_multiply" {
        len: usize as i64,
        dims: usize as i32,
        count: usize as i32,
        xhat: in T::Complex [count * (1 + dims) * len],
        spectra: in T::Complex [count * 2 * len],
        yhat: out T::Complex [count * (2 + dims) * len],
    }

    /// The patterns' inverse transforms `patterns` demodulated and averaged into the
    /// `channels` real potentials `phi`.
    pub struct G2gDemodulate<T> = "g2g_demodulate" {
        len: usize as i64,
        p: usize as i32,
        dims: usize as i32,
        first: usize as i32,
        count: usize as i32,
        channels: usize as i32,
        patterns: in T::Complex [count * channels * len],
        phi: out T [channels * len],
    }
}
