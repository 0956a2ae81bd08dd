//! The exact O(n²) repulsion, the reference every approximation is measured against:
//! [`ExactRepulsion`] on the CPU, [`ExactRepulsionGpu`] on the GPU, and both sides' sums
//! for target subsets and for Z alone (the grid-size sweep's reference at large n).

pub mod cpu;
pub mod gpu;

pub use cpu::*;
pub use gpu::{exact_for_targets_gpu, exact_z_gpu, ExactRepulsionGpu};
