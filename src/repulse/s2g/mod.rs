//! S2G, points to grid: every point spreads its charges `(1, y − c)` onto the `4^s` nodes
//! around it with cubic Lagrange weights. [`cpu`]: per-task private grids and a reduction;
//! [`gpu`]: points sorted by cell, dense cells summed per warp.

pub mod cpu;
pub mod gpu;

pub use cpu::*;
