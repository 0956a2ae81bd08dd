//! The k nearest other points of every point of a 1–3-D embedding, exactly, on all cores:
//! the points bucketed in a uniform grid of about [`PER_CELL`] points a cell (a parallel
//! sort by cell), then each point's neighbours found among the cells around its own, ring
//! after ring, until no unvisited cell can hold a nearer point. (With a k-d tree, whose
//! build runs on one thread, the quality stage took 1.8–2.3 s at 10M points on 64 cores;
//! with the grid 0.95–1.24 s, `benches/RESULTS.md`.)
//!
//! A grid spans the bulk of its points, not their bounding box: a few far points (which a
//! final t-SNE layout may have) would stretch the cells until the clusters share a few of
//! them, and the search slows with the points per cell; and a far query's rings, bounded
//! only along one axis, would sweep the whole grid (20 far points among 5M took the
//! search from about 4 s to 13 s on 2 cores). The points beyond the bulk go to a grid of
//! their own, built the same way
//! (so a level's cells hold only points inside them), and every query searches each level
//! whose box is near enough: its own first, where its nearest usually are, which then
//! rules the others out. The stopping distance is the true distance from the query to the
//! cells not yet visited, so a far query stops as soon as its neighbours are found.
//!
//! [`sum_over_rows`] hands each point's row to a scoring function as it is found, so that
//! the quality measures need no n × k table (400 MB at 10M points and k = 10).

use rand::{rngs::StdRng, seq::index::sample, SeedableRng};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};

/// Points per grid cell on average.
const PER_CELL: f64 = 4.0;

/// Most cells of a grid (their offsets are kept: 4 bytes each).
const MAX_CELLS: f64 = (1u64 << 28) as f64;

/// Points drawn to find the bulk's extent on each axis.
const BULK_SAMPLE: usize = 1 << 16;

/// The fraction of the sample left out on each side of each axis's extent.
const BULK_TAIL: f64 = 1e-3;

/// Most levels; the last takes every point left, in its bounding box.
const MAX_LEVELS: usize = 6;

/// Most points of a level bucketed on one thread ([`Grid::bucket`]).
const SERIAL_BUCKET: usize = 1 << 17;

/// A level of at most this many points takes every point left.
const LAST_LEVEL: usize = 256;

/// The `k` nearest other points of each of the points `y` (row-major n × D), nearest
/// first, ties by index; row-major n × k' indices with k' = min(k, n − 1).
pub(crate) fn neighbors<const D: usize>(y: &[f32], k: usize) -> Vec<u32> {
    let n = y.len() / D;
    let k = k.min(n.saturating_sub(1));
    if k == 0 {
        return Vec::new();
    }
    let search = Search::<D>::new(y, n);
    // Queries in cell order (neighbouring queries read the same cells), then the rows put
    // back in the points' order.
    let mut by_position = vec![0u32; n * k];
    by_position.par_chunks_mut(k).enumerate().for_each_init(
        || Vec::with_capacity(k + 1),
        |best, (s, row)| search.row_at(s, best, row),
    );
    let mut out = vec![0u32; n * k];
    out.par_chunks_mut(k)
        .zip(&crate::points::inverse_permutation(&search.order))
        .for_each(|(row, &s)| {
            let s = s as usize;
            row.copy_from_slice(&by_position[s * k..(s + 1) * k]);
        });
    out
}

/// The `k` nearest other points of the points `rows` of `y` (row-major n × D), as
/// [`neighbors`] finds them: row-major rows.len() × k' indices, k' = min(k, n − 1). The
/// grid is built over every point; only the rows asked for are searched.
pub(crate) fn neighbors_of<const D: usize>(y: &[f32], rows: &[u32], k: usize) -> Vec<u32> {
    let n = y.len() / D;
    let k = k.min(n.saturating_sub(1));
    if k == 0 || rows.is_empty() {
        return Vec::new();
    }
    let search = Search::<D>::new(y, n);
    let position = crate::points::inverse_permutation(&search.order);
    let mut out = vec![0u32; rows.len() * k];
    out.par_chunks_mut(k).zip(rows).for_each_init(
        || Vec::with_capacity(k + 1),
        |best, (row, &i)| search.row_at(position[i as usize] as usize, best, row),
    );
    out
}

/// The sums over the points of `score(i, row)`, where row holds point i's
/// k' = min(k, n − 1) nearest other points as [`neighbors`] finds them; the rows are never
/// kept.
pub(crate) fn sum_over_rows<const D: usize, S>(y: &[f32], k: usize, score: S) -> [u64; 2]
where
    S: Fn(usize, &[u32]) -> [u64; 2] + Sync,
{
    let n = y.len() / D;
    let k = k.min(n.saturating_sub(1));
    if k == 0 {
        return (0..n).map(|i| score(i, &[])).fold([0, 0], add);
    }
    let search = Search::<D>::new(y, n);
    (0..n)
        .into_par_iter()
        .map_init(
            || (Vec::with_capacity(k + 1), Vec::with_capacity(k)),
            |(best, row): &mut (Vec<(f32, u32)>, Vec<u32>), s| {
                search.nearest_at(s, k, best);
                row.clear();
                row.extend(best.iter().map(|&(_, j)| j));
                score(search.order[s] as usize, row)
            },
        )
        .reduce(|| [0, 0], add)
}

/// The sums of two scores.
pub(super) fn add(a: [u64; 2], b: [u64; 2]) -> [u64; 2] {
    [a[0] + b[0], a[1] + b[1]]
}

fn point<const D: usize>(y: &[f32], i: usize) -> [f32; D] {
    std::array::from_fn(|a| y[i * D + a])
}

/// The points in levels: position s (levels one after the other, each in cell order) holds
/// point `order[s]`.
pub(super) struct Search<const D: usize> {
    levels: Vec<Level<D>>,
    /// Each level's first position.
    first: Vec<usize>,
    pub(super) order: Vec<u32>,
}

/// A [`Search`]'s arrays as its device twin reads them (`kernels/quality.cu`'s contract).
pub(super) struct Layout {
    /// The points' coordinates by position (n × D).
    pub(super) sorted: Vec<f32>,
    /// Every level's cell starts, one level after another.
    pub(super) starts: Vec<u32>,
    /// Each level's first entry in `starts`.
    pub(super) start_at: Vec<i64>,
    /// Each level's first position, and n.
    pub(super) first: Vec<i64>,
    /// Each level's corner (3 floats) and cell widths (3), and 2 unused: 8 floats a level.
    pub(super) geom: Vec<f32>,
    /// Each level's cells per axis.
    pub(super) cells: Vec<i32>,
}

impl<const D: usize> Search<D> {
    /// The arrays the device's search reads.
    pub(super) fn layout(&self) -> Layout {
        let mut layout = Layout {
            sorted: Vec::with_capacity(self.order.len() * D),
            starts: Vec::new(),
            start_at: Vec::new(),
            first: self.first.iter().map(|&f| f as i64).collect(),
            geom: Vec::new(),
            cells: Vec::new(),
        };
        layout.first.push(self.order.len() as i64);
        for level in &self.levels {
            layout.sorted.extend_from_slice(level.sorted.as_flattened());
            layout.start_at.push(layout.starts.len() as i64);
            layout.starts.extend_from_slice(&level.starts);
            let mut geom = [0f32; 8];
            geom[..D].copy_from_slice(&level.grid.lo);
            geom[3..3 + D].copy_from_slice(&level.grid.width);
            layout.geom.extend_from_slice(&geom);
            layout.cells.push(level.grid.cells as i32);
        }
        layout
    }

    pub(super) fn new(y: &[f32], n: usize) -> Self {
        let mut levels = Vec::new();
        let mut rest: Vec<u32> = (0..n as u32).collect();
        while !rest.is_empty() {
            let last = levels.len() + 1 == MAX_LEVELS || rest.len() <= LAST_LEVEL;
            let (lo, hi) = if last {
                bounds::<D>(y, &rest)
            } else {
                bulk::<D>(y, &rest)
            };
            let (inside, outside): (Vec<u32>, Vec<u32>) = if last {
                (std::mem::take(&mut rest), Vec::new())
            } else {
                rest.par_iter().partition(|&&i| {
                    let p = point::<D>(y, i as usize);
                    (0..D).all(|a| lo[a] <= p[a] && p[a] <= hi[a])
                })
            };
            levels.push(Level::new(y, &inside, lo, hi));
            rest = outside;
        }
        let order = levels
            .iter()
            .flat_map(|l| l.order.iter().copied())
            .collect();
        let first = levels
            .iter()
            .scan(0, |at, l| {
                let f = *at;
                *at += l.order.len();
                Some(f)
            })
            .collect();
        Search {
            levels,
            first,
            order,
        }
    }

    /// The `row.len()` nearest other points of the point at position `s` into `row`,
    /// nearest first (`best` the search's scratch).
    fn row_at(&self, s: usize, best: &mut Vec<(f32, u32)>, row: &mut [u32]) {
        self.nearest_at(s, row.len(), best);
        for (slot, &(_, j)) in row.iter_mut().zip(best.iter()) {
            *slot = j;
        }
    }

    /// The k nearest other points of the point at position `s` into `best`: its own
    /// level's first, then the others'.
    fn nearest_at(&self, s: usize, k: usize, best: &mut Vec<(f32, u32)>) {
        best.clear();
        let own = self.first.partition_point(|&f| f <= s) - 1;
        let level = &self.levels[own];
        let at = s - self.first[own];
        let (q, me) = (level.sorted[at], level.order[at]);
        level.nearest(q, me, k, best);
        for (l, other) in self.levels.iter().enumerate() {
            if l != own {
                other.nearest(q, me, k, best);
            }
        }
    }
}

/// One level: its grid, its points by cell (`order`), each cell's first position
/// (`starts`) and the points' coordinates in that order.
struct Level<const D: usize> {
    grid: Grid<D>,
    order: Vec<u32>,
    starts: Vec<u32>,
    sorted: Vec<[f32; D]>,
}

impl<const D: usize> Level<D> {
    /// The points `ids` of `y` (all inside the box `lo`..`hi`) in their grid.
    fn new(y: &[f32], ids: &[u32], lo: [f32; D], hi: [f32; D]) -> Self {
        let grid = Grid::<D>::over(lo, hi, ids.len());
        let (order, starts) = grid.bucket(y, ids);
        let sorted = order
            .par_iter()
            .map(|&i| point::<D>(y, i as usize))
            .collect();
        Level {
            grid,
            order,
            starts,
            sorted,
        }
    }

    /// Adds the level's points nearer `q` (point `me`, left out) than the k-th of `best`
    /// (nearest first, ties by index, at most k): the cells at Chebyshev distance 0, 1, 2,
    /// … from q's, until the k-th distance found is no more than the distance from q to the
    /// cells not yet visited, less a margin for the rounding of the cells' edges and of the
    /// points' cells (relative to the largest coordinate in play: the query's or the
    /// level's box's). Nothing when the whole level is that far.
    fn nearest(&self, q: [f32; D], me: u32, k: usize, best: &mut Vec<(f32, u32)>) {
        let grid = &self.grid;
        let slack = 1e-5 * grid.scale(q);
        let done = |best: &Vec<(f32, u32)>, gap: f32| {
            let gap = (gap - slack).max(0.0);
            best.len() == k && (gap == f32::INFINITY || best[k - 1].0 <= gap * gap)
        };
        if done(best, grid.box_distance(q)) {
            return;
        }
        let c = grid.cell(q);
        for r in 0..=grid.cells as isize {
            grid.ring(c, r, |id| {
                for s in self.starts[id] as usize..self.starts[id + 1] as usize {
                    let j = self.order[s];
                    if j == me {
                        continue;
                    }
                    let p = self.sorted[s];
                    let d: f32 = (0..D).map(|a| (p[a] - q[a]) * (p[a] - q[a])).sum();
                    if best.len() < k || (d, j) < best[k - 1] {
                        let at = best.partition_point(|&e| e < (d, j));
                        best.insert(at, (d, j));
                        best.truncate(k);
                    }
                }
            });
            if done(best, grid.unvisited_distance(q, c, r)) {
                return;
            }
        }
    }
}

/// A grid: its corner, cell widths and cells per axis.
struct Grid<const D: usize> {
    lo: [f32; D],
    width: [f32; D],
    cells: usize,
}

impl<const D: usize> Grid<D> {
    /// About [`PER_CELL`] of `count` points a cell over the box `lo`..`hi`.
    fn over(lo: [f32; D], hi: [f32; D], count: usize) -> Self {
        let total = (count as f64 / PER_CELL).clamp(1.0, MAX_CELLS);
        let cells = total.powf(1.0 / D as f64).floor().max(1.0) as usize;
        let width = std::array::from_fn(|a| {
            let w = (hi[a] - lo[a]) / cells as f32;
            if w > 0.0 && w.is_finite() {
                w
            } else {
                1.0
            }
        });
        Grid { lo, width, cells }
    }

    /// The distance from `q` to the slab of axis `a` between `from` and `to`, the other
    /// axes spanning the grid.
    fn slab_distance(&self, q: [f32; D], a: usize, from: f32, to: f32) -> f32 {
        let outside = |v: f32, lo: f32, hi: f32| (lo - v).max(v - hi).max(0.0);
        (0..D)
            .map(|b| {
                let t = if b == a {
                    outside(q[b], from, to)
                } else {
                    let lo = self.lo[b];
                    outside(q[b], lo, lo + self.cells as f32 * self.width[b])
                };
                t * t
            })
            .sum::<f32>()
            .sqrt()
    }

    /// The largest coordinate of `q` and of the grid's box, in magnitude.
    fn scale(&self, q: [f32; D]) -> f32 {
        (0..D)
            .map(|a| {
                let end = self.lo[a] + self.cells as f32 * self.width[a];
                q[a].abs().max(self.lo[a].abs()).max(end.abs())
            })
            .fold(0f32, f32::max)
    }

    /// The distance from `q` to the grid's box.
    fn box_distance(&self, q: [f32; D]) -> f32 {
        let (lo, end) = (self.lo[0], self.lo[0] + self.cells as f32 * self.width[0]);
        self.slab_distance(q, 0, lo, end)
    }

    /// The distance from `q` to the cells beyond Chebyshev distance `r` of cell `c` (∞ when
    /// there are none).
    fn unvisited_distance(&self, q: [f32; D], c: [usize; D], r: isize) -> f32 {
        let g = self.cells as isize;
        let mut gap = f32::INFINITY;
        for (a, &ca) in c.iter().enumerate() {
            let (ca, lo, w) = (ca as isize, self.lo[a], self.width[a]);
            let end = lo + self.cells as f32 * w;
            if ca - r > 0 {
                let face = lo + (ca - r) as f32 * w;
                gap = gap.min(self.slab_distance(q, a, lo, face));
            }
            if ca + r < g - 1 {
                let face = lo + (ca + r + 1) as f32 * w;
                gap = gap.min(self.slab_distance(q, a, face, end));
            }
        }
        gap
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

    /// The points by cell (`order`, ascending within a cell) and each cell's first position
    /// in it (`starts`, one more than the cells): a counting sort, the cells' counts and
    /// the points' places taken with atomic increments on all cores, then each cell's few
    /// points sorted, where a parallel sort of (cell, point) pairs moved every pair
    /// through a general sort: the 10M grids 0.24–0.29 s against 0.25–0.33 on one H200's
    /// 16 cores, no gain on 64 (`benches/RESULTS.md`).
    fn bucket(&self, y: &[f32], ids: &[u32]) -> (Vec<u32>, Vec<u32>) {
        match ids.len() <= SERIAL_BUCKET {
            true => self.bucket_serial(y, ids),
            false => self.bucket_parallel(y, ids),
        }
    }

    /// [`Grid::bucket`] on all cores.
    fn bucket_parallel(&self, y: &[f32], ids: &[u32]) -> (Vec<u32>, Vec<u32>) {
        let cell: Vec<u32> = ids
            .par_iter()
            .map(|&i| self.id(self.cell(point::<D>(y, i as usize))) as u32)
            .collect();
        let total = self.cells.pow(D as u32);
        let counts: Vec<AtomicU32> = (0..total)
            .into_par_iter()
            .map(|_| AtomicU32::new(0))
            .collect();
        cell.par_iter()
            .for_each(|&c| _ = counts[c as usize].fetch_add(1, Ordering::Relaxed));
        let mut starts = Vec::with_capacity(total + 1);
        starts.push(0u32);
        let mut at = 0u32;
        for count in &counts {
            // Each count becomes its cell's next free place.
            at += count.swap(at, Ordering::Relaxed);
            starts.push(at);
        }
        let order: Vec<AtomicU32> = (0..ids.len())
            .into_par_iter()
            .map(|_| AtomicU32::new(0))
            .collect();
        cell.par_iter().zip(ids).for_each(|(&c, &i)| {
            let place = counts[c as usize].fetch_add(1, Ordering::Relaxed);
            order[place as usize].store(i, Ordering::Relaxed);
        });
        let mut order: Vec<u32> = order.into_iter().map(AtomicU32::into_inner).collect();
        sort_cells(&mut order, &starts);
        (order, starts)
    }

    /// [`Grid::bucket`] on one thread, for few points: a stable counting sort, which keeps
    /// `ids`' ascending order within each cell. (70k points: 0.3 ms against 1.8 on two
    /// threads, where the parallel form's atomics and small jobs cost more than the work.)
    fn bucket_serial(&self, y: &[f32], ids: &[u32]) -> (Vec<u32>, Vec<u32>) {
        debug_assert!(ids.is_sorted());
        let cell: Vec<u32> = ids
            .iter()
            .map(|&i| self.id(self.cell(point::<D>(y, i as usize))) as u32)
            .collect();
        let mut starts = vec![0u32; self.cells.pow(D as u32) + 1];
        for &c in &cell {
            starts[c as usize + 1] += 1;
        }
        for c in 1..starts.len() {
            starts[c] += starts[c - 1];
        }
        let mut next = starts.clone();
        let mut order = vec![0u32; ids.len()];
        for (&c, &i) in cell.iter().zip(ids) {
            order[next[c as usize] as usize] = i;
            next[c as usize] += 1;
        }
        (order, starts)
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

/// The smallest and largest coordinate of the points `ids` on each axis.
/// Sorts each cell's part of `order` (cell c: `starts[c]..starts[c + 1]`), halving the
/// cells on all cores.
fn sort_cells(order: &mut [u32], starts: &[u32]) {
    /// Cells sorted on one thread.
    const SERIAL: usize = 1 << 12;
    let cells = starts.len() - 1;
    if cells <= SERIAL {
        let first = starts[0] as usize;
        for w in starts.windows(2) {
            order[w[0] as usize - first..w[1] as usize - first].sort_unstable();
        }
        return;
    }
    let mid = cells / 2;
    let (lo, hi) = order.split_at_mut((starts[mid] - starts[0]) as usize);
    rayon::join(
        || sort_cells(lo, &starts[..=mid]),
        || sort_cells(hi, &starts[mid..]),
    );
}

fn bounds<const D: usize>(y: &[f32], ids: &[u32]) -> ([f32; D], [f32; D]) {
    ids.par_iter()
        .fold(
            || ([f32::INFINITY; D], [f32::NEG_INFINITY; D]),
            |(mut lo, mut hi), &i| {
                let p = point::<D>(y, i as usize);
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
        )
}

/// The extent of the bulk of the points `ids` on each axis: from the [`BULK_TAIL`] to the
/// 1 − [`BULK_TAIL`] quantile of up to [`BULK_SAMPLE`] of them, drawn at random (seeded:
/// evenly spaced ones could follow a pattern of the input's order).
fn bulk<const D: usize>(y: &[f32], ids: &[u32]) -> ([f32; D], [f32; D]) {
    let mut rng = StdRng::seed_from_u64(0xb01c);
    let drawn = sample(&mut rng, ids.len(), BULK_SAMPLE.min(ids.len())).into_vec();
    let tail = (drawn.len() as f64 * BULK_TAIL).ceil() as usize;
    let mut lo = [0f32; D];
    let mut hi = [0f32; D];
    let mut axis: Vec<f32> = Vec::with_capacity(drawn.len());
    for a in 0..D {
        axis.clear();
        axis.extend(drawn.iter().map(|&s| y[ids[s] as usize * D + a]));
        // Two selections, not a sort: 0.3 ms against 2.8 for 70k points.
        let top = axis.len() - 1 - tail;
        hi[a] = *axis.select_nth_unstable_by(top, f32::total_cmp).1;
        lo[a] = *axis[..top].select_nth_unstable_by(tail, f32::total_cmp).1;
    }
    (lo, hi)
}

#[cfg(test)]
mod tests;
