//! G2G, grid to grid: the convolutions of the charge grids with the kernels G₁ = w and
//! G₂ = w² by FFTs. [`cpu`]: pruned zero-padded real transforms; [`gpu`]: the
//! zero-padding-free method with cuFFT, every parity pattern in one batched transform.

pub mod cpu;
pub mod gpu;

pub use cpu::*;
