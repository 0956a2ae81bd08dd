//! Repulsive forces (DESIGN §2.2).
//!
//! INTERFACE (owned by the repulse helper; signatures fixed):
//! - `trait Repulse: Send { fn repulse(&mut self, y: &[f32], dims: usize, force: &mut [f32]) -> Result<Repulsion>; }`
//!   writes F_rep,i = (1/Z) Σ_j w_ij² (y_i − y_j) (row-major n × dims) and returns Z.
//! - `Repulsion { z: f64, grid: Option<usize>, times: RepulseTimes }`
//! - `RepulseTimes { s2g, g2g, g2s, phi2force }` in seconds (f64)
//! - `GridSpec::{Fixed(usize), Auto { h: f64 }}` with `GridSpec::default_auto()`
//! - `FftRepulsion::new(grid: GridSpec) -> Self` (CPU, rayon); `ExactRepulsion::new() -> Self`

use crate::Result;

/// Seconds spent in each sub-stage of one repulsion evaluation.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct RepulseTimes {
    pub s2g: f64,
    pub g2g: f64,
    pub g2s: f64,
    pub phi2force: f64,
}

/// What one repulsion evaluation returns besides the forces.
#[derive(Clone, Copy, Debug, Default)]
pub struct Repulsion {
    pub z: f64,
    pub grid: Option<usize>,
    pub times: RepulseTimes,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GridSpec {
    Fixed(usize),
    Auto { h: f64 },
}

impl GridSpec {
    pub fn default_auto() -> Self {
        GridSpec::Auto { h: 0.5 }
    }
}

pub trait Repulse: Send {
    fn repulse(&mut self, y: &[f32], dims: usize, force: &mut [f32]) -> Result<Repulsion>;
}

pub struct FftRepulsion {
    pub grid: GridSpec,
}
impl FftRepulsion {
    pub fn new(grid: GridSpec) -> Self {
        FftRepulsion { grid }
    }
}
impl Repulse for FftRepulsion {
    fn repulse(&mut self, y: &[f32], dims: usize, force: &mut [f32]) -> Result<Repulsion> {
        unimplemented!("{} {dims} {}", y.len(), force.len())
    }
}
#[derive(Default)]
pub struct ExactRepulsion;
impl ExactRepulsion {
    pub fn new() -> Self {
        ExactRepulsion
    }
}
impl Repulse for ExactRepulsion {
    fn repulse(&mut self, y: &[f32], dims: usize, force: &mut [f32]) -> Result<Repulsion> {
        unimplemented!("{} {dims} {}", y.len(), force.len())
    }
}
