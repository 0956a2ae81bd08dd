//! The k nearest other points of every point of a 1–3-D embedding, exactly, on all cores:
//! the points bucketed in a uniform grid of about [`PER_CELL`] points a cell (a parallel
//! sort by cell), then each point's neighbours found among the cells around its own, ring
//! after ring, until no unvisited cell can hold a nearer point. (With a k-d tree, whose
//! build runs on one thread, the quality stage took 1.8–2.3 s at 10M points on 64 cores;
//! with the grid 0.95–1.24 s, `benches/RESULTS.md`.)

use rayon::prelude::*;

/// Points per grid cell on average.
const PER_CELL: f64 = 4.0;

/// Most cells of a grid (their offsets are kept: 4 bytes each).
const MAX_CELLS: f64 = (1u64 << 28) as f64;

/// The `k` nearest other points of each of the points `y` (row-major n × D), nearest
/// first, ties by index; row-major n × k' indices with k' = min(k, n − 1).
pub(crate) fn neighbors<const D: usize>(y: &[f32], k: usize) -> Vec<u32> {
    let n = y.len() / D;
    let k = k.min(n.saturating_sub(1));
    if k == 0 {
        return Vec::new();
    }
    let grid = Grid::<D>::new(y, n);
    let (order, starts) = grid.bucket(y, n);
    let sorted: Vec<[f32; D]> = order
        .par_iter()
        .map(|&i| point::<D>(y, i as usize))
        .collect();
    // Queries in cell order (neighbouring queries read the same cells), then the rows put
    // back in the points' order.
    let mut by_position = vec![0u32; n * k];
    by_position.par_chunks_mut(k).enumerate().for_each_init(
        || Vec::with_capacity(k + 1),
        |best: &mut Vec<(f32, u32)>, (s, row)| {
            grid.nearest(&sorted, &order, &starts, sorted[s], order[s], k, best);
            for (slot, &(_, j)) in row.iter_mut().zip(best.iter()) {
                *slot = j;
            }
        },
    );
    let mut position = vec![0u32; n];
    for (s, &i) in order.iter().enumerate() {
        position[i as usize] = s as u32;
    }
    let mut out = vec![0u32; n * k];
    out.par_chunks_mut(k).zip(&position).for_each(|(row, &s)| {
        let s = s as usize;
        row.copy_from_slice(&by_position[s * k..(s + 1) * k]);
    });
    out
}

fn point<const D: usize>(y: &[f32], i: usize) -> [f32; D] {
    std::array::from_fn(|a| y[i * D + a])
}

/// The grid: its corner, cell widths and cells per axis.
struct Grid<const D: usize> {
    lo: [f32; D],
    width: [f32; D],
    cells: usize,
    /// Distances this close to a cell's edge may lie on either side of it.
    slack: f32,
}

impl<const D: usize> Grid<D> {
    fn new(y: &[f32], n: usize) -> Self {
        let (lo, hi) = y
            .par_chunks_exact(D)
            .fold(
                || ([f32::INFINITY; D], [f32::NEG_INFINITY; D]),
                |(mut lo, mut hi), p| {
                    for a in 0..D {
                        lo[a] = lo[a].min(p[a]);
                        hi[a] = hi[a].max(p[a]);
                    }
                    (lo, hi)
                },
            )
            .reduce(
                || ([f32::INFINITY; D], [f32::NEG_INFINITY; D]),
                |(l1, h1), (l2, h2)| {
                    (
                        std::array::from_fn(|a| l1[a].min(l2[a])),
                        std::array::from_fn(|a| h1[a].max(h2[a])),
                    )
                },
            );
        let total = (n as f64 / PER_CELL).clamp(1.0, MAX_CELLS);
        let cells = total.powf(1.0 / D as f64).floor().max(1.0) as usize;
        let width = std::array::from_fn(|a| {
            let w = (hi[a] - lo[a]) / cells as f32;
            if w > 0.0 && w.is_finite() {
                w
            } else {
                1.0
            }
        });
        let extent = (0..D).map(|a| width[a] * cells as f32).fold(0f32, f32::max);
        let slack = 1e-5 * extent.max(lo.iter().fold(0f32, |m, &l| m.max(l.abs())));
        Grid {
            lo,
            width,
            cells,
            slack,
        }
    }

    /// The cell of `p` on each axis.
    fn cell(&self, p: [f32; D]) -> [usize; D] {
        std::array::from_fn(|a| {
            let c = ((p[a] - self.lo[a]) / self.width[a]).floor();
            (c.max(0.0) as usize).min(self.cells - 1)
        })
    }

    fn id(&self, c: [usize; D]) -> usize {
        c.iter().rev().fold(0, |id, &ca| id * self.cells + ca)
    }

    /// The points by cell (`order`) and each cell's first position in it (`starts`, one
    /// more than the cells).
    fn bucket(&self, y: &[f32], n: usize) -> (Vec<u32>, Vec<u32>) {
        let mut keyed: Vec<(u32, u32)> = (0..n)
            .into_par_iter()
            .map(|i| (self.id(self.cell(point::<D>(y, i))) as u32, i as u32))
            .collect();
        keyed.par_sort_unstable();
        let total = self.cells.pow(D as u32);
        let mut starts = vec![0u32; total + 1];
        for &(c, _) in &keyed {
            starts[c as usize + 1] += 1;
        }
        for c in 0..total {
            starts[c + 1] += starts[c];
        }
        (keyed.into_iter().map(|(_, i)| i).collect(), starts)
    }

    /// The k nearest points to `q` (point `me`, left out) into `best`, nearest first, ties
    /// by index: the cells at Chebyshev distance 0, 1, 2, … from q's, until the k-th
    /// distance found is no more than the distance from q to the cells not yet visited.
    #[allow(clippy::too_many_arguments)]
    fn nearest(
        &self,
        sorted: &[[f32; D]],
        order: &[u32],
        starts: &[u32],
        q: [f32; D],
        me: u32,
        k: usize,
        best: &mut Vec<(f32, u32)>,
    ) {
        best.clear();
        let c = self.cell(q);
        let g = self.cells as isize;
        for r in 0..=g {
            self.ring(c, r, |id| {
                for s in starts[id] as usize..starts[id + 1] as usize {
                    let j = order[s];
                    if j == me {
                        continue;
                    }
                    let p = sorted[s];
                    let d: f32 = (0..D).map(|a| (p[a] - q[a]) * (p[a] - q[a])).sum();
                    if best.len() < k || (d, j) < best[k - 1] {
                        let at = best.partition_point(|&e| e < (d, j));
                        best.insert(at, (d, j));
                        best.truncate(k);
                    }
                }
            });
            if best.len() == k {
                // Distance from q to the nearest cell beyond the rings visited.
                let mut gap = f32::INFINITY;
                for a in 0..D {
                    let (ca, r) = (c[a] as isize, r);
                    if ca - r > 0 {
                        gap = gap.min(q[a] - (self.lo[a] + (ca - r) as f32 * self.width[a]));
                    }
                    if ca + r < g - 1 {
                        gap = gap.min(self.lo[a] + (ca + r + 1) as f32 * self.width[a] - q[a]);
                    }
                }
                // Less a margin for the rounding of the cells' edges and of the points'
                // cells.
                let gap = (gap - self.slack).max(0.0);
                if gap == f32::INFINITY || best[k - 1].0 <= gap * gap {
                    return;
                }
            }
        }
    }

    /// Calls `visit` with the id of every cell at Chebyshev distance `r` from `c`, inside
    /// the grid.
    fn ring(&self, c: [usize; D], r: isize, mut visit: impl FnMut(usize)) {
        let g = self.cells as isize;
        let lo: [isize; D] = std::array::from_fn(|a| (c[a] as isize - r).max(0));
        let hi: [isize; D] = std::array::from_fn(|a| (c[a] as isize + r).min(g - 1));
        let mut at = lo;
        loop {
            let on_ring = (0..D).any(|a| (at[a] - c[a] as isize).abs() == r);
            if on_ring {
                visit(self.id(std::array::from_fn(|a| at[a] as usize)));
            }
            // Next cell of the box, first axis fastest; along axis 0 inside the ring jump
            // from the lower face to the upper one.
            let mut a = 0;
            loop {
                if a == D {
                    return;
                }
                let interior = (1..D).all(|b| (at[b] - c[b] as isize).abs() < r);
                if a == 0
                    && r > 0
                    && interior
                    && at[0] == c[0] as isize - r
                    && c[0] as isize + r <= hi[0]
                {
                    at[0] = c[0] as isize + r;
                    break;
                }
                if at[a] < hi[a] {
                    at[a] += 1;
                    break;
                }
                at[a] = lo[a];
                a += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// Brute force: the k nearest other points of each point, nearest first, ties by index.
    fn brute<const D: usize>(y: &[f32], k: usize) -> Vec<u32> {
        let n = y.len() / D;
        let k = k.min(n - 1);
        let mut out = Vec::with_capacity(n * k);
        for i in 0..n {
            let q = point::<D>(y, i);
            let mut all: Vec<(f32, u32)> = (0..n)
                .filter(|&j| j != i)
                .map(|j| {
                    let p = point::<D>(y, j);
                    (
                        (0..D).map(|a| (p[a] - q[a]) * (p[a] - q[a])).sum(),
                        j as u32,
                    )
                })
                .collect();
            all.sort_by(|a, b| a.partial_cmp(b).unwrap());
            out.extend(all[..k].iter().map(|&(_, j)| j));
        }
        out
    }

    /// Clusters of very different densities, exact copies and a far outlier.
    fn awkward<const D: usize>(n: usize, seed: u64) -> Vec<f32> {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut y = Vec::with_capacity(n * D);
        for i in 0..n {
            let (centre, spread) = match i % 3 {
                0 => (0.0, 0.01),
                1 => (5.0, 1.0),
                _ => (-30.0, 8.0),
            };
            for _ in 0..D {
                y.push(centre + spread * rng.random_range(-1.0f32..1.0));
            }
        }
        if n >= 3 {
            let copy: Vec<f32> = y[..D].to_vec();
            y[D..2 * D].copy_from_slice(&copy);
            y[2 * D..3 * D].fill(1e4);
        }
        y
    }

    fn agree<const D: usize>() {
        for (n, k, seed) in [
            (2000, 10, 1),
            (301, 10, 2),
            (40, 39, 3),
            (12, 50, 4),
            (2, 10, 5),
        ] {
            let y = awkward::<D>(n, seed);
            assert_eq!(
                neighbors::<D>(&y, k),
                brute::<D>(&y, k),
                "D {D}, n {n}, k {k}"
            );
        }
        // All points equal: every other point is a neighbour, by index.
        let same = vec![2.5f32; 7 * D];
        assert_eq!(neighbors::<D>(&same, 3), brute::<D>(&same, 3));
        assert!(neighbors::<D>(&same[..D], 3).is_empty());
    }

    /// The grid's neighbours are brute force's, order and ties included, in 1, 2 and 3
    /// dimensions, for clusters of unequal density, copies, an outlier, k near n and k
    /// beyond it.
    #[test]
    fn grid_neighbours_are_the_exact_ones() {
        agree::<1>();
        agree::<2>();
        agree::<3>();
    }
}
