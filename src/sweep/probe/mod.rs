//! Measuring grids at one embedding: the exact reference for a sample of targets, then each
//! grid's interpolated repulsion, timed. [`Probe`] has a host and a device implementation
//! behind one interface; [`Recorder`] drives either from inside the optimisation loop.

pub(crate) mod cpu;
pub(crate) mod gpu;

use super::SweepRow;
use crate::optim::Observer;
use crate::progress::Progress;
use crate::repulse::{relative_error, ExactTargets, Grid, GridSpec, RepulseTimes, Repulsion};
use crate::Result;

/// One grid's repulsion at one Y.
pub(crate) struct Approximation {
    /// Forces at the targets, row-major targets × dims.
    pub forces: Vec<f64>,
    /// Its Z.
    pub z: f64,
    /// Nodes per axis of the grid the repulsion used (the host's and the device's ladders
    /// differ: [`crate::repulse::grid::Ladder`]).
    pub nodes: Option<usize>,
    /// Sub-stage seconds, medians over the timed runs.
    pub times: RepulseTimes,
}

/// Measures grids at an embedding stored as `Y` (host slice or device buffer).
pub(crate) trait Probe<Y: ?Sized> {
    /// Y on the host, row-major n × dims (to place the grids and measure the extent).
    fn host_y(&mut self, y: &Y) -> Result<Vec<f32>>;
    /// Exact sums for `targets` over all sources, and the exact Z.
    fn exact(&mut self, y: &Y, targets: &[usize]) -> Result<(ExactTargets, f64)>;
    /// Grid `k`'s repulsion at `y`: one untimed run (its forces at `targets` and Z are
    /// returned), then `repeats` timed runs.
    fn approximate(
        &mut self,
        k: usize,
        y: &Y,
        targets: &[usize],
        repeats: usize,
    ) -> Result<Approximation>;
}

/// Runs `repulse` (writing forces into `force`) once and `read`s the forces at the targets,
/// then runs it `repeats` more times for the per-stage medians of their times.
pub(crate) fn approximate_with<B: ?Sized>(
    force: &mut B,
    repeats: usize,
    mut repulse: impl FnMut(&mut B) -> Result<Repulsion>,
    read: impl FnOnce(&B) -> Result<Vec<f64>>,
) -> Result<Approximation> {
    let first = repulse(force)?;
    let forces = read(force)?;
    let runs: Vec<RepulseTimes> = (0..repeats)
        .map(|_| repulse(force).map(|r| r.times))
        .collect::<Result<_>>()?;
    let median = |f: fn(&RepulseTimes) -> f64| {
        let mut v: Vec<f64> = runs.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let times = if runs.is_empty() {
        first.times
    } else {
        RepulseTimes {
            s2g: median(|t| t.s2g),
            g2g: median(|t| t.g2g),
            g2s: median(|t| t.g2s),
            near: median(|t| t.near),
            phi2force: median(|t| t.phi2force),
        }
    };
    Ok(Approximation {
        forces,
        z: first.z,
        nodes: first.grid,
        times,
    })
}

/// The rows of `force` (n × dims) at `targets`, widened.
pub(crate) fn at_targets(force: &[f32], dims: usize, targets: &[usize]) -> Vec<f64> {
    targets
        .iter()
        .flat_map(|&t| force[t * dims..(t + 1) * dims].iter().map(|&v| v as f64))
        .collect()
}

/// What a [`Recorder`] measures and where it reports.
pub(crate) struct Plan<'a> {
    pub dims: usize,
    /// The grid the optimisation runs with.
    pub trajectory: GridSpec,
    /// The grids measured at each sample.
    pub grids: &'a [GridSpec],
    /// The grids (and the trajectory's) with the near field.
    pub near_field: bool,
    pub targets: &'a [usize],
    /// Iterations after which to measure.
    pub samples: &'a [usize],
    pub repeats: usize,
    pub progress: &'a dyn Progress,
}

/// An [`Observer`] that measures the plan's grids with probe `P` at the plan's iterations.
pub(crate) struct Recorder<'a, P> {
    probe: P,
    plan: Plan<'a>,
    /// What was measured so far.
    pub rows: Vec<SweepRow>,
}

impl<'a, P> Recorder<'a, P> {
    pub fn new(probe: P, plan: Plan<'a>) -> Self {
        Recorder {
            probe,
            plan,
            rows: Vec::new(),
        }
    }
}

impl<Y: ?Sized, P: Probe<Y>> Observer<Y> for Recorder<'_, P> {
    fn wants(&self, iter: usize) -> bool {
        self.plan.samples.contains(&iter)
    }

    fn observe(&mut self, iter: usize, y: &Y) -> Result<()> {
        let plan = &self.plan;
        let dims = plan.dims;
        let host = self.probe.host_y(y)?;
        let n = host.len() / dims;
        let (exact, z) = self.probe.exact(y, plan.targets)?;
        let reference = exact.forces(z);
        let extent = extent(&host, dims);
        let mut line = format!(
            "n {n} · run {} · iteration {iter} · extent {extent:.0}: force error",
            super::grid_label(plan.trajectory)
        );
        for (k, &spec) in plan.grids.iter().enumerate() {
            let a = self.probe.approximate(k, y, plan.targets, plan.repeats)?;
            let grid = Grid::fit(&host, dims, spec)?;
            let row = SweepRow {
                dims,
                n,
                trajectory: plan.trajectory,
                grid: spec,
                iteration: iter,
                nodes: a.nodes.unwrap_or(grid.p),
                spacing: grid.h,
                extent,
                force_error: relative_error(&reference, &a.forces),
                z_error: (a.z - z).abs() / z,
                times: a.times,
            };
            line += &format!(" {}:{:.1e}", super::grid_label(spec), row.force_error);
            self.rows.push(row);
        }
        plan.progress.status(&line);
        plan.progress.advance(1);
        Ok(())
    }
}

/// The largest side of the bounding box of `y` (n × dims).
fn extent(y: &[f32], dims: usize) -> f64 {
    (0..dims)
        .map(|a| {
            let (lo, hi) = y
                .iter()
                .skip(a)
                .step_by(dims)
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(l, h), &v| {
                    (l.min(v), h.max(v))
                });
            (hi - lo) as f64
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_targets() {
        let mut k = 0usize;
        let a = approximate_with(
            &mut k,
            3,
            |k| {
                *k += 1;
                Ok(Repulsion {
                    z: *k as f64,
                    grid: Some(8),
                    times: RepulseTimes {
                        s2g: [0.0, 5.0, 1.0, 3.0][*k - 1],
                        ..Default::default()
                    },
                    replan_seconds: 0.0,
                })
            },
            |k| Ok(vec![*k as f64]),
        )
        .unwrap();
        assert_eq!((a.z, a.times.s2g, a.forces), (1.0, 3.0, vec![1.0]));
        let f = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(at_targets(&f, 2, &[2, 0]), vec![5.0, 6.0, 1.0, 2.0]);
        assert_eq!(extent(&[0.0, 1.0, 4.0, -1.0], 2), 4.0);
    }
}
