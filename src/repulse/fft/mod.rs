//! The FFT-accelerated interpolated repulsion, S2G → G2G → G2S → Phi2Force with each
//! sub-stage timed: [`FftRepulsion`] on the CPU, [`FftRepulsionGpu`] on the GPU, on the same
//! grid ([`crate::repulse::Grid`]) and stencil.

pub mod cpu;
pub mod gpu;

pub use cpu::*;
pub use gpu::FftRepulsionGpu;
