//! The host [`Probe`]: exact sums with rayon, [`FftRepulsion`] per grid.

use super::{approximate_with, at_targets, Approximation, Probe};
use crate::repulse::{exact_for_targets, exact_z, ExactTargets, FftRepulsion, GridSpec, Repulse};
use crate::Result;

/// Measures on the CPU; one repulsion per grid, kept across samples (its FFT plans and
/// kernel spectra are reused as they would be in an optimisation).
pub(crate) struct ProbeCpu {
    dims: usize,
    repulsions: Vec<FftRepulsion>,
    force: Vec<f32>,
}

impl ProbeCpu {
    /// A repulsion per grid of `grids`, with the near field when `near_field`.
    pub fn new(dims: usize, (grids, near_field): (&[GridSpec], bool)) -> Self {
        ProbeCpu {
            dims,
            repulsions: grids
                .iter()
                .map(|&g| FftRepulsion::new(g).with_near_field(near_field))
                .collect(),
            force: Vec::new(),
        }
    }
}

impl Probe<[f32]> for ProbeCpu {
    fn host_y(&mut self, y: &[f32]) -> Result<Vec<f32>> {
        Ok(y.to_vec())
    }

    fn exact(&mut self, y: &[f32], targets: &[usize]) -> Result<(ExactTargets, f64)> {
        Ok((
            exact_for_targets(y, self.dims, targets)?,
            exact_z(y, self.dims)?,
        ))
    }

    fn approximate(
        &mut self,
        k: usize,
        y: &[f32],
        targets: &[usize],
        repeats: usize,
    ) -> Result<Approximation> {
        let dims = self.dims;
        self.force.resize(y.len(), 0.0);
        let rep = &mut self.repulsions[k];
        approximate_with(
            &mut self.force,
            repeats,
            |force| rep.repulse(y, dims, force),
            |force| Ok(at_targets(force, dims, targets)),
        )
    }
}
