//! The cells each query block probes: the nearest by centroid, widened or narrowed by the
//! spread of distances ([`Probing`]), planned a block at a time ([`ProbePlanner`]).

use rayon::prelude::*;

use super::Cells;
use crate::knn::{by_dist_then_index, Key};
use crate::Points;

/// Of a block's `probes` nearest cells, the spread rule skips those whose mean squared
/// distance to the block is above this many times the least ([`Probing`]): another
/// cluster's. A neighbouring cell of equal width w can reach 1 + 12 / d times the least
/// (w² + r² against r² = d w² / 12 for a block at the own cell's centre): 13 on a line, so
/// the bound stays above that; the 10M mixture's other clusters sit at 20–45 times.
pub const FAR: f32 = 16.0;

/// How a query block chooses the cells it probes ([`Cells::block_probes`]).
///
/// The nearest cells by centroid find a block's neighbours where the points lie near a
/// low-dimensional manifold (images, cells, text), but not where they fill many dimensions:
/// in a 50-dimensional Gaussian cluster of a million points split into 160 cells, the
/// neighbours of a point lie in all of them, and 64 probes find 87 % of them. What tells
/// the two apart is the mean squared distance from the block's mean m to a cell's points,
/// |m − μ_c|² + r_c² (μ_c its centroid, r_c² its points' mean squared distance to it). In
/// many dimensions distances concentrate about their mean, so every cell whose mean is
/// within (1 + ε) of the least holds points about as near as the nearest cell's: the block
/// probes them all (up to `max_probes`), and skips cells beyond [`FAR`] times the least,
/// which hold none (another cluster's). Near a manifold the mean grows fast past the
/// nearest cells and the rule changes little. (The mean-distance bound is SPANN's
/// query-aware pruning of posting lists, Chen et al. 2021, with the cells' spread added.)
/// Measured on 10M points, 1581 cells, 64 probes (H100, `benches/RESULTS.md`): the 50-d
/// mixture's sweep recall 0.877 → 0.991 for 27 % more candidates and no refinement;
/// 10M deformed digits unchanged (0.953 → 0.954, 3 % more candidates).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Probing {
    /// The nearest cells by centroid (the block's own cells first, all of them).
    pub probes: usize,
    /// The most cells in all, the spread rule's included.
    pub max_probes: usize,
    /// ε of the spread rule; 0 (or a key other than the squared distance): off.
    pub spread: f64,
    /// Points the probed cells hold at least: nearest cells are added until they do.
    pub min_points: usize,
}

impl Probing {
    /// The nearest `probes` cells, nothing more: the plain IVF probe.
    pub fn nearest(probes: usize, min_points: usize) -> Probing {
        Probing {
            probes,
            max_probes: probes,
            spread: 0.0,
            min_points,
        }
    }
}

/// The cells a block probes as [`Cells::block_probes`] takes them, and the points they hold.
struct Probed<'a> {
    cells: Vec<u32>,
    taken: Vec<bool>,
    points: usize,
    offsets: &'a [usize],
}

impl Probed<'_> {
    fn take(&mut self, m: u32) {
        let m = m as usize;
        self.points += self.offsets[m + 1] - self.offsets[m];
        self.taken[m] = true;
        self.cells.push(m as u32);
    }
}

impl Cells {
    /// For each block of `block` consecutive positions of the points sorted by cell
    /// (`sorted`), the cells it probes ([`ProbePlanner::probes`]).
    pub fn block_probes(
        &self,
        sorted: &Points,
        centroids: &[f32],
        key: Key,
        probing: &Probing,
        block: usize,
    ) -> Vec<Vec<u32>> {
        let planner = ProbePlanner::new(self, sorted, centroids, key, *probing, block);
        (0..planner.blocks())
            .into_par_iter()
            .map(|b| planner.probes(b))
            .collect()
    }
}

/// What each block of consecutive positions of the points sorted by cell probes, one
/// block at a time ([`ProbePlanner::probes`]), from what all blocks share (the cells'
/// mean squared radii, for the spread rule), made once. The approximate kNN on the GPU
/// plans a share of the blocks at a time while the device sweeps the shares before.
pub struct ProbePlanner<'a> {
    cells: &'a Cells,
    sorted: &'a Points,
    centroids: &'a [f32],
    key: Key,
    probing: Probing,
    block: usize,
    /// Whether the spread rule applies (the squared distance, ε > 0).
    spread: bool,
    /// Each cell's mean squared radius ([`Cells::mean_sq_radius`]; empty without the
    /// spread rule).
    radius2: Vec<f32>,
}

impl<'a> ProbePlanner<'a> {
    /// The planner of blocks of `block` positions of `sorted` (the points in `cells`'
    /// order) among the cells of `centroids`, probing by `key` as `probing` says.
    pub fn new(
        cells: &'a Cells,
        sorted: &'a Points,
        centroids: &'a [f32],
        key: Key,
        probing: Probing,
        block: usize,
    ) -> Self {
        let spread = matches!(key, Key::SqEuclidean) && probing.spread > 0.0;
        let radius2 = if spread {
            cells.mean_sq_radius(sorted, centroids)
        } else {
            Vec::new()
        };
        ProbePlanner {
            cells,
            sorted,
            centroids,
            key,
            probing,
            block,
            spread,
            radius2,
        }
    }

    /// Blocks of the points.
    pub fn blocks(&self) -> usize {
        self.sorted.n.div_ceil(self.block)
    }

    /// The cells the blocks probe.
    pub fn cells(&self) -> &'a Cells {
        self.cells
    }

    /// The cells block b probes: the cells its positions fall in, then the cells whose
    /// centroids are nearest the block's mean, until there are `probing.probes` of them
    /// (or the own cells, if more) and they hold at least `probing.min_points` points, so
    /// that every query has enough candidates; with the spread rule ([`Probing`]; the
    /// squared distance only), those of the nearest that are too far skipped, then the
    /// cells within the spread added, nearest mean first. Probing from the block rather
    /// than from its cell follows the queries: a block at a cell's edge probes the cells
    /// across that edge. "Nearest" is by the key: for the inner product, the cells whose
    /// centroids have the largest inner product with the block's mean (as FAISS' IVF
    /// probes for `METRIC_INNER_PRODUCT`); the cells themselves are Euclidean k-means
    /// cells, which only group nearby points.
    pub fn probes(&self, b: usize) -> Vec<u32> {
        let (cells, sorted, centroids) = (self.cells, self.sorted, self.centroids);
        let (key, probing, block, spread) = (self.key, &self.probing, self.block, self.spread);
        let radius2 = &self.radius2;
        let (n, d) = (sorted.n, sorted.d);
        let lists = cells.lists();
        let (p0, p1) = (b * block, ((b + 1) * block).min(n));
        let mut mean = vec![0f64; d];
        for p in p0..p1 {
            for (m, &x) in mean.iter_mut().zip(sorted.row(p)) {
                *m += x as f64;
            }
        }
        let mean: Vec<f32> = mean
            .iter()
            .map(|&m| (m / (p1 - p0) as f64) as f32)
            .collect();
        let own = cells.cell_of(p0)..=cells.cell_of(p1 - 1);
        let dist: Vec<f32> = (0..lists)
            .map(|m| key.eval(&mean, &centroids[m * d..(m + 1) * d]))
            .collect();
        // Each cell's mean squared distance to the block, and the least of them.
        let spread_of = |m: usize| dist[m] + radius2[m];
        let least = if spread {
            (0..lists).map(spread_of).fold(f32::INFINITY, f32::min)
        } else {
            0.0
        };
        let far = |m: usize| spread && !own.contains(&m) && spread_of(m) > FAR * least;
        let mut by_distance: Vec<(f32, u32)> = (0..lists)
            .map(|m| (if own.contains(&m) { -1.0 } else { dist[m] }, m as u32))
            .collect();
        let wanted = probing.probes.max(own.end() - own.start() + 1);
        // The nearest `wanted` in order; the rest sorted only if they are needed
        // (a full sort of every cell's distance per block took most of this step).
        let head = wanted.min(lists);
        if head < lists {
            by_distance.select_nth_unstable_by(head, by_dist_then_index);
        }
        by_distance[..head].sort_unstable_by(by_dist_then_index);
        let mut probed = Probed {
            cells: Vec::with_capacity(wanted),
            taken: vec![false; lists],
            points: 0,
            offsets: &cells.offsets,
        };
        // The nearest, the far ones kept back; then, while the points are too few,
        // those and the next nearest in order.
        let (far_ones, near): (Vec<u32>, Vec<u32>) = by_distance[..head]
            .iter()
            .map(|&(_, m)| m)
            .partition(|&m| far(m as usize));
        near.into_iter().for_each(|m| probed.take(m));
        for m in far_ones {
            if probed.points >= probing.min_points {
                break;
            }
            probed.take(m);
        }
        if probed.points < probing.min_points && head < lists {
            by_distance[head..].sort_unstable_by(by_dist_then_index);
            for &(_, m) in &by_distance[head..] {
                if probed.points >= probing.min_points {
                    break;
                }
                probed.take(m);
            }
        }
        if spread {
            let bound = (1.0 + probing.spread) as f32 * least;
            let mut within: Vec<(f32, u32)> = (0..lists)
                .filter(|&m| !probed.taken[m] && spread_of(m) <= bound)
                .map(|m| (spread_of(m), m as u32))
                .collect();
            within.sort_unstable_by(by_dist_then_index);
            let room = probing.max_probes.saturating_sub(probed.cells.len());
            within.iter().take(room).for_each(|&(_, m)| probed.take(m));
        }
        probed.cells
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    #[test]
    fn block_probes_take_the_own_cells_first_then_the_nearest_and_enough_points() {
        // Cells at 0, 1, 2, 10 on a line, of 1, 1, 1 and 5 points; blocks of 2 positions.
        let cells = Cells::sort(&[0, 1, 2, 3, 3, 3, 3, 3], 4);
        let sorted = Points::new(8, 1, vec![0.0, 1.0, 2.0, 10.0, 10.0, 10.0, 10.0, 10.0]);
        let centroids = [0.0, 1.0, 2.0, 10.0];
        let nearest = |probes, min_points| Probing::nearest(probes, min_points);
        let probes = cells.block_probes(&sorted, &centroids, Key::SqEuclidean, &nearest(3, 0), 2);
        // Block 0 (positions 0, 1: cells 0 and 1, mean 0.5) takes both, then cell 2.
        assert_eq!(probes[0], vec![0, 1, 2]);
        // Block 1 (cells 2 and 3, mean 6): its own, then the nearest of the rest (1).
        assert_eq!(probes[1], vec![2, 3, 1]);
        assert_eq!(probes[3], vec![3, 2, 1]);
        // At least 8 points: everything.
        let probes = cells.block_probes(&sorted, &centroids, Key::SqEuclidean, &nearest(1, 8), 2);
        assert_eq!(probes[0], vec![0, 1, 2, 3]);
    }

    /// The spread rule: cells of 2 points on a line, block 0 = cell 0 (points −1 and 1,
    /// mean 0, mean squared distance to it 1, the least). Cell 2 (centroid 1, points −0.5
    /// and 2.5: 1 + 2.25) and cell 1 (at 2: 4) are within 16 times the least, cell 3 (at
    /// 30: 900) is not; cell 4 (at −1.2: 1.44) is within (1 + 0.5) of it.
    #[test]
    fn block_probes_add_the_cells_within_the_spread_and_skip_far_ones() {
        let cells = Cells::sort(&[0, 0, 1, 1, 2, 2, 3, 3, 4, 4], 5);
        let x = [-1.0, 1.0, 2.0, 2.0, -0.5, 2.5, 30.0, 30.0, -1.2, -1.2];
        let sorted = Points::new(10, 1, x.to_vec());
        let centroids = [0.0, 2.0, 1.0, 30.0, -1.2];
        assert_eq!(
            cells.mean_sq_radius(&sorted, &centroids),
            [1.0, 0.0, 2.25, 0.0, 0.0]
        );
        let probes = |probes, max_probes, min_points| {
            let probing = Probing {
                probes,
                max_probes,
                spread: 0.5,
                min_points,
            };
            cells.block_probes(&sorted, &centroids, Key::SqEuclidean, &probing, 2)[0].clone()
        };
        // The two nearest by centroid (0, then 2 at distance 1), then 4 by the spread.
        assert_eq!(probes(2, 3, 0), [0, 2, 4]);
        // The cap holds: the own cell and one more.
        assert_eq!(probes(1, 2, 0), [0, 4]);
        assert_eq!(probes(1, 1, 0), [0]);
        // All five nearest asked for: cell 3 is too far.
        assert_eq!(probes(5, 5, 0), [0, 2, 4, 1]);
        // ... unless its points are needed.
        assert_eq!(probes(5, 5, 10), [0, 2, 4, 1, 3]);
        // Off, as the plain rule: the nearest by centroid alone.
        let plain = Probing::nearest(3, 0);
        let got = cells.block_probes(&sorted, &centroids, Key::SqEuclidean, &plain, 2);
        assert_eq!(got[0], [0, 2, 4]);
        let got = cells.block_probes(
            &sorted,
            &centroids,
            Key::SqEuclidean,
            &Probing::nearest(5, 0),
            2,
        );
        assert_eq!(got[0], [0, 2, 4, 1, 3]);
    }

    /// On random cells the probes are each block's own cells, then the others nearest its
    /// mean first (ties by number), every nearer cell taken before a farther one, and they
    /// stop at the first cell that makes both enough cells and enough points (the partial
    /// sort gives what a full sort of the distances gives).
    #[test]
    fn block_probes_are_the_nearest_cells_in_order() {
        let mut rng = StdRng::seed_from_u64(9);
        let (n, d, lists, block) = (3000, 3, 200, 16);
        let labels: Vec<u32> = (0..n).map(|_| rng.random_range(0..lists as u32)).collect();
        let cells = Cells::sort(&labels, lists);
        let data: Vec<f32> = (0..n * d).map(|_| rng.random_range(-1.0..1.0)).collect();
        let sorted = Points::new(n, d, data);
        let centroids: Vec<f32> = (0..lists * d)
            .map(|_| rng.random_range(-1.0..1.0))
            .collect();
        let size = |m: u32| cells.offsets[m as usize + 1] - cells.offsets[m as usize];
        for (probes, min_points) in [(5, 0), (5, 400), (1, 2000), (lists, 0)] {
            let probing = Probing::nearest(probes, min_points);
            let all = cells.block_probes(&sorted, &centroids, Key::SqEuclidean, &probing, block);
            for (b, got) in all.iter().enumerate() {
                let (p0, p1) = (b * block, ((b + 1) * block).min(n));
                let own: Vec<u32> = (cells.cell_of(p0)..=cells.cell_of(p1 - 1))
                    .map(|m| m as u32)
                    .collect();
                assert_eq!(got[..own.len()], own[..], "block {b}: own cells first");
                let mean: Vec<f32> = (0..d)
                    .map(|a| {
                        let s: f64 = (p0..p1).map(|p| sorted.row(p)[a] as f64).sum();
                        (s / (p1 - p0) as f64) as f32
                    })
                    .collect();
                let dist = |m: u32| Key::SqEuclidean.eval(&mean, &centroids[m as usize * d..][..d]);
                let rest: Vec<(f32, u32)> =
                    got[own.len()..].iter().map(|&m| (dist(m), m)).collect();
                assert!(rest
                    .windows(2)
                    .all(|w| by_dist_then_index(&w[0], &w[1]).is_lt()));
                if let Some(last) = rest.last() {
                    for m in (0..lists as u32).filter(|m| !got.contains(m)) {
                        assert!(by_dist_then_index(last, &(dist(m), m)).is_lt());
                    }
                }
                let wanted = probes.max(own.len());
                let points: Vec<usize> = got
                    .iter()
                    .scan(0, |s, &m| {
                        *s += size(m);
                        Some(*s)
                    })
                    .collect();
                let enough = |i: usize| i + 1 >= wanted && points[i] >= min_points;
                let stop = (0..got.len()).find(|&i| enough(i)).map_or(lists, |i| i + 1);
                assert_eq!(
                    got.len(),
                    stop,
                    "block {b}: stops at the first cell that is enough"
                );
            }
        }
    }
}
