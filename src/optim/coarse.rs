//! The coarse step of the late phase (`--coarse-boost`): each point's gradient plus β times
//! the mean gradient of its cell of a coarse grid over the map, a two-level preconditioner of
//! the descent in map space.
//!
//! **Why.** After the early phase a map's slowest motions are smooth ones: regions drifting
//! together and clusters spreading out. On MNIST between iterations 1000 and 4000, 89 % of
//! the non-rigid displacement was shared by each point's 1000 nearest points in the map and
//! 55–60 % by its whole class. The attraction's stiffness, set by each point's nearest
//! neighbours, limits every point to steps that suit its own neighbourhood, and a smooth
//! motion, in which the neighbours move alike, sees only a small, slowly changing gradient:
//! gradient descent moves it last (the iterations a converged map needs grew as √n, 1000 at
//! 70k and 4500 at 1.3M). Adding β times the mean over a cell of side
//! [`OptimParams::coarse_cell`] steps the part of the gradient that a cell's points share
//! (1 + β) times as far and leaves the rest, where they disagree, as it was: an additive
//! two-level correction on piecewise-constant cells, as aggregation multigrid takes for
//! graph Laplacians. Cells of the map rather than of the input (blocks of the points'
//! numbering) keep points of two clusters from being dragged together: with blocks of 1024
//! in the numbering the 10-NN accuracy of 1.3M deformed digits fell from 0.944 to 0.940.
//!
//! The grid is fixed: [`cells_per_axis`] cells of side `coarse_cell` centred on the origin
//! (Y is re-centred every step), points beyond it in the edge cells. Each point's step η·g is
//! summed per cell in fixed point (multiples of [`UNIT`], each term clamped to
//! ±[`MAX_STEP`]), so that the sums, and so the run, are the same in any order: the device's
//! atomics (`kernels/optim.cu`) and GPUs' sums over NCCL give the host's words exactly.
//!
//! Measured (`benches/RESULTS.md`, convergence): β = 3, cells of 20, 1.3M deformed digits
//! within 1 % of a 10000-iteration run's KL from 1800 iterations against 4550 without;
//! 10M from 1050 against 2350; MNIST's KL at 1000 iterations 2.471 against 2.643.
//!
//! [`OptimParams::coarse_cell`]: super::OptimParams::coarse_cell

use std::collections::HashMap;

use rayon::prelude::*;

/// Cells per axis of the coarse grid in `dims` dimensions: 2¹⁸ in 1-D, 512² in 2-D, 64³ in
/// 3-D (at the default side of 20 they span ±2.6M, ±5120 and ±640 units, beyond the maps
/// of 10M points).
pub fn cells_per_axis(dims: usize) -> usize {
    match dims {
        1 => 1 << 18,
        2 => 512,
        _ => 64,
    }
}

/// The fixed point of the cells' sums: a step's coordinate in multiples of 2⁻³².
pub const UNIT: f64 = 1.0 / 4_294_967_296.0;

/// The largest step coordinate a sum takes in, in embedding units (larger ones are clamped):
/// terms stay below 2⁴², so 2²¹ of the largest still fit a cell's 64-bit sum.
pub const MAX_STEP: f64 = 1024.0;

/// The coarse cell of one point (`dims` coordinates), flat: axis 0 fastest. The device's
/// `boost_cell` (`kernels/optim.cu`) is its mirror.
#[inline]
pub fn cell_of(point: &[f32], inv_cell: f32, cells: usize) -> usize {
    let mut c = 0usize;
    let mut stride = 1usize;
    for &v in point {
        // In f32 as the device does it (exact for the cells' range); NaN clamps to 0 there.
        let a = ((v * inv_cell).floor() + (cells / 2) as f32).clamp(0.0, (cells - 1) as f32);
        c += if a.is_nan() { 0 } else { a as usize } * stride;
        stride *= cells;
    }
    c
}

/// One step coordinate η·g in fixed point (the device's `boost_term`).
#[inline]
pub fn fixed(step: f64) -> i64 {
    (step.clamp(-MAX_STEP, MAX_STEP) / UNIT).round_ties_even() as i64
}

/// Points per task of the host's sums: each task sums its points into a small map of the
/// cells they fall in (a few hundred cells cover a map of millions), then the maps are
/// merged. (One thread summing 1.3M points took 74 ms an iteration, 122 s of a 1924-iteration
/// run on 16 threads.)
const CHUNK: usize = 16 * 1024;

/// The host's cells: per cell the fixed-point sums of its points' steps and their count
/// (`dims + 1` words a cell, as the device lays them out), the cells touched, so that
/// clearing them costs what filling them did, and each point's cell.
#[derive(Debug, Default)]
pub struct CoarseCells {
    records: Vec<i64>,
    /// Words a cell: the dimensions' sums, then the count.
    stride: usize,
    touched: Vec<u32>,
    /// Per cell its mean gradient, `dims` values, computed once per touched cell rather
    /// than with two divisions per point and coordinate (with the runs below, MNIST's
    /// update under `--iters auto` on 2 threads: 1.17–1.19 s against 1.25–1.27 s).
    means: Vec<f32>,
    cell_of_point: Vec<u32>,
}

impl CoarseCells {
    /// Empty cells; their memory comes with the first [`CoarseCells::add`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Sums the steps `eta`·`grad` of the points `y` (`dims` per point) per cell of side
    /// `cell`, replacing the last call's sums. The sums are integers, so the order in which
    /// the tasks' partial sums meet does not change them.
    pub fn add(&mut self, y: &[f32], grad: &[f32], dims: usize, eta: f32, cell: f32) {
        let cells = cells_per_axis(dims);
        let stride = dims + 1;
        if self.stride != stride {
            self.records = vec![0; cells.pow(dims as u32) * stride];
            self.means = vec![0.0; cells.pow(dims as u32) * dims];
            self.touched.clear();
            self.stride = stride;
        }
        for &c in &self.touched {
            let at = c as usize * stride;
            self.records[at..at + stride].fill(0);
        }
        self.touched.clear();
        let inv_cell = 1.0 / cell;
        self.cell_of_point.resize(y.len() / dims, 0);
        self.cell_of_point
            .par_chunks_mut(CHUNK)
            .zip(y.par_chunks(CHUNK * dims))
            .for_each(|(of, y)| {
                for (c, p) in of.iter_mut().zip(y.chunks_exact(dims)) {
                    *c = cell_of(p, inv_cell, cells) as u32;
                }
            });
        let partial: Vec<HashMap<u32, [i64; 4]>> = self
            .cell_of_point
            .par_chunks(CHUNK)
            .zip(grad.par_chunks(CHUNK * dims))
            .map(|(of, g)| {
                // Consecutive points (in the PCA tree's order) mostly share a cell: a run of
                // them is summed apart and meets the map once.
                let mut sums = HashMap::<u32, [i64; 4]>::new();
                let mut run = (0u32, [0i64; 4]);
                for (&c, g) in of.iter().zip(g.chunks_exact(dims)) {
                    if c != run.0 {
                        add_run(&mut sums, run);
                        run = (c, [0; 4]);
                    }
                    for (r, &g) in run.1.iter_mut().zip(g) {
                        *r = r.wrapping_add(fixed(eta as f64 * g as f64));
                    }
                    run.1[3] += 1;
                }
                add_run(&mut sums, run);
                sums
            })
            .collect();
        for (c, s) in partial.iter().flatten() {
            let rec = &mut self.records[*c as usize * stride..(*c as usize + 1) * stride];
            if rec[dims] == 0 {
                self.touched.push(*c);
            }
            for k in 0..dims {
                rec[k] = rec[k].wrapping_add(s[k]);
            }
            rec[dims] += s[3];
        }
        for &c in &self.touched {
            let (c, rec) = (c as usize, &self.records[c as usize * stride..]);
            for k in 0..dims {
                self.means[c * dims + k] = mean_of(rec[k], rec[dims], eta);
            }
        }
    }

    /// The mean gradient (the steps' mean over η) of point `i`'s cell, coordinate `k`, from
    /// the last [`CoarseCells::add`].
    #[inline]
    pub fn mean(&self, i: usize, k: usize) -> f32 {
        self.means[self.cell_of_point[i] as usize * (self.stride - 1) + k]
    }
}

/// Adds a run of points' sums (cell, sums with the count last) to a task's map of cells.
fn add_run(sums: &mut HashMap<u32, [i64; 4]>, (cell, run): (u32, [i64; 4])) {
    if run[3] > 0 {
        let s = sums.entry(cell).or_default();
        for (s, r) in s.iter_mut().zip(run) {
            *s = s.wrapping_add(r);
        }
    }
}

/// A cell's mean gradient from its fixed-point sum of steps and its count (the device's
/// formula, in the same order of operations).
#[inline]
pub fn mean_of(sum: i64, count: i64, eta: f32) -> f32 {
    (sum as f64 * UNIT / count as f64 / eta as f64) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_centred_and_clamped() {
        let cells = cells_per_axis(2);
        // The origin's cell is the middle one; one cell to the left is the one before.
        assert_eq!(
            cell_of(&[0.5, 0.5], 1.0, cells),
            cells / 2 + cells / 2 * cells
        );
        assert_eq!(
            cell_of(&[-0.5, 0.5], 1.0, cells),
            cells / 2 - 1 + cells / 2 * cells
        );
        // Far beyond the grid: the corner cells.
        assert_eq!(cell_of(&[-1e9, -1e9], 1.0, cells), 0);
        assert_eq!(cell_of(&[1e9, 1e9], 1.0, cells), cells * cells - 1);
    }

    #[test]
    fn the_means_are_each_cells_and_cleared_between_calls() {
        // Two points in one cell of side 10, one in another: each sees its cell's mean.
        let y = [1.0f32, 1.0, 2.0, 3.0, 15.0, 1.0];
        let g = [1.0f32, -2.0, 3.0, 4.0, 0.5, 0.25];
        let mut c = CoarseCells::new();
        c.add(&y, &g, 2, 100.0, 10.0);
        let close = |a: f32, b: f32| (a - b).abs() < 1e-6;
        assert!(close(c.mean(0, 0), 2.0));
        assert!(close(c.mean(1, 1), 1.0));
        assert!(close(c.mean(2, 0), 0.5));
        // A later call replaces the sums: the first cell now holds one point.
        c.add(&y[..2], &g[..2], 2, 100.0, 10.0);
        assert!(close(c.mean(0, 1), -2.0));
    }

    #[test]
    fn fixed_point_sums_do_not_depend_on_the_order() {
        let steps: Vec<f64> = (0..1000)
            .map(|i| ((i * 7919) % 1000) as f64 * 1e-3 - 0.5)
            .collect();
        let forward = steps.iter().fold(0i64, |s, &v| s.wrapping_add(fixed(v)));
        let backward = steps
            .iter()
            .rev()
            .fold(0i64, |s, &v| s.wrapping_add(fixed(v)));
        assert_eq!(forward, backward);
        assert_eq!(fixed(1e9), fixed(MAX_STEP));
    }
}
