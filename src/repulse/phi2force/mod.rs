//! Phi2Force: the potentials into Z and the repulsive forces. [`cpu`] and [`gpu`].

pub mod cpu;
pub mod gpu;

pub use cpu::*;
