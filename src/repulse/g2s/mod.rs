//! G2S, grid to points: every point interpolates its potentials from the `4^s` nodes S2G
//! spread it onto, and the interpolated self terms are summed for Z. [`cpu`] and [`gpu`]
//! alike are gathers without atomics.

pub mod cpu;
pub mod gpu;

pub use cpu::*;
