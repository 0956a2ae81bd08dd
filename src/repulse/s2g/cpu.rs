//! S2G: spread every point's charges `(1, y¹ − c¹ … yˢ − cˢ)` onto the `4^s` surrounding grid
//! nodes with cubic Lagrange weights (Linderman et al. 2019, step 1; SG-t-SNE-Π's `s2g`).
//!
//! No atomics: the points are split into one contiguous chunk per task, each task spreads onto
//! its own private set of grids, and a parallel reduction sums them. The private grids live in
//! [`Scatter`] and are reused across calls. On large 3-D grids the private copies cost memory
//! (`tasks × (1+s) × p^s` values), so the task count is capped at [`MAX_TASKS`].

use rayon::prelude::*;

use crate::repulse::fftnd::Real;
use crate::repulse::grid::{stencil, Grid};

/// Most private grid sets. The reduction reads every one of them, so beyond a handful of
/// threads more copies cost more memory traffic than they save in scatter time.
pub const MAX_TASKS: usize = 8;

/// Fewest points worth a private grid set of their own.
const MIN_POINTS_PER_TASK: usize = 2048;

/// Grid nodes per reduction task.
const REDUCE_CHUNK: usize = 1 << 14;

/// Reusable per-task grids for [`Scatter::run`].
#[derive(Default)]
pub struct Scatter<T> {
    parts: Vec<Vec<T>>,
}

impl<T: Real> Scatter<T> {
    /// An empty scatter workspace; its grids are allocated on first use.
    pub fn new() -> Self {
        Scatter { parts: Vec::new() }
    }

    /// Spreads the charges of the points `y` (row-major `n × D`) onto `out`, `grid.len()` nodes
    /// of `1 + D` interleaved channels, which is overwritten.
    pub fn run<const D: usize>(&mut self, y: &[f32], grid: &Grid, out: &mut [T]) {
        let len = grid.len();
        let size = (1 + D) * len;
        assert_eq!(out.len(), size, "charge grid size");
        let n = y.len() / D;
        let want = rayon::current_num_threads()
            .min(MAX_TASKS)
            .min(n.div_ceil(MIN_POINTS_PER_TASK))
            .max(1);
        let per_task = n.div_ceil(want).max(1);
        let tasks = n.div_ceil(per_task).max(1);
        if tasks == 1 {
            out.fill(T::zero());
            spread::<T, D>(y, grid, out);
            return;
        }
        self.parts.resize_with(tasks, Vec::new);
        for part in &mut self.parts {
            part.resize(size, T::zero());
        }
        self.parts
            .par_iter_mut()
            .zip(y.par_chunks(per_task * D))
            .for_each(|(part, ys)| {
                part.fill(T::zero());
                spread::<T, D>(ys, grid, part);
            });
        let parts = &self.parts[..tasks];
        out.par_chunks_mut(REDUCE_CHUNK)
            .enumerate()
            .for_each(|(c, o)| {
                let range = c * REDUCE_CHUNK..c * REDUCE_CHUNK + o.len();
                o.copy_from_slice(&parts[0][range.clone()]);
                for part in &parts[1..] {
                    for (x, &v) in o.iter_mut().zip(&part[range.clone()]) {
                        *x = *x + v;
                    }
                }
            });
    }
}

/// Sequential spread of the points `ys` onto the interleaved grid `out` (added to).
/// `D` is a const so the `4^D` stencil loop unrolls with constant offsets.
fn spread<T: Real, const D: usize>(ys: &[f32], grid: &Grid, out: &mut [T]) {
    let strides = strides::<D>(grid.p);
    let inv_h = 1.0 / grid.h;
    for row in ys.chunks_exact(D) {
        let (corner, w) = locate::<T, D>(row, grid, inv_h, &strides);
        let q: [T; D] = std::array::from_fn(|a| T::of(row[a] as f64 - grid.centre[a]));
        for k in 0..1usize << (2 * D) {
            let (idx, wt) = node::<T, D>(k, corner, &w, &strides);
            let at = &mut out[idx * (1 + D)..(idx + 1) * (1 + D)];
            at[0] = at[0] + wt;
            for (o, &qa) in at[1..].iter_mut().zip(&q) {
                *o = *o + wt * qa;
            }
        }
    }
}

/// Flat-index strides `p^a` of the axes.
#[inline(always)]
pub(crate) fn strides<const D: usize>(p: usize) -> [usize; D] {
    let mut s = [1usize; D];
    for a in 1..D {
        s[a] = s[a - 1] * p;
    }
    s
}

/// Flat index of the stencil's first node (offset −1 on every axis) and the per-axis weights.
#[inline(always)]
pub(crate) fn locate<T: Real, const D: usize>(
    row: &[f32],
    grid: &Grid,
    inv_h: f64,
    strides: &[usize; D],
) -> (usize, [[T; 4]; D]) {
    let mut corner = 0;
    let mut w = [[T::zero(); 4]; D];
    for a in 0..D {
        let x = (row[a] as f64 - grid.origin[a]) * inv_h;
        let (base, wa) = stencil(x, grid.p);
        corner += (base - 1) * strides[a];
        w[a] = wa.map(T::of);
    }
    (corner, w)
}

/// Node `k` of the `4^D` stencil (base-4 digit `a` is the offset along axis `a`): its flat index
/// and its tensor-product weight.
#[inline(always)]
pub(crate) fn node<T: Real, const D: usize>(
    k: usize,
    corner: usize,
    w: &[[T; 4]; D],
    strides: &[usize; D],
) -> (usize, T) {
    let mut idx = corner;
    let mut wt = T::one();
    for a in 0..D {
        let o = (k >> (2 * a)) & 3;
        idx += o * strides[a];
        wt = wt * w[a][o];
    }
    (idx, wt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repulse::GridSpec;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// Spreading conserves each channel's total (Lagrange weights sum to 1), and the parallel
    /// path equals the sequential one.
    fn check<const D: usize>(n: usize) {
        let mut rng = StdRng::seed_from_u64(n as u64 + D as u64);
        let y: Vec<f32> = (0..n * D)
            .map(|_| rng.random::<f32>() * 20.0 - 7.0)
            .collect();
        let grid = Grid::fit(&y, D, GridSpec::Auto { h: 0.7 }).unwrap();
        let len = grid.len();
        let mut out = vec![0.0f64; (1 + D) * len];
        Scatter::new().run::<D>(&y, &grid, &mut out);
        let mut seq = vec![0.0f64; (1 + D) * len];
        spread::<f64, D>(&y, &grid, &mut seq);
        let diff = out
            .iter()
            .zip(&seq)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(diff < 1e-9, "parallel differs by {diff}");
        let total: f64 = out.chunks(1 + D).map(|node| node[0]).sum();
        assert!((total - n as f64).abs() < 1e-8 * n as f64);
        for a in 0..D {
            let want: f64 = y.chunks(D).map(|r| r[a] as f64 - grid.centre[a]).sum();
            let got: f64 = out.chunks(1 + D).map(|node| node[1 + a]).sum();
            assert!(
                (got - want).abs() < 1e-8 * n as f64,
                "axis {a}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn spread_conserves_charges() {
        check::<1>(5000);
        check::<2>(9000);
        check::<3>(3000);
        check::<2>(3);
    }
}
