//! The host side of the approximate all-points kNN (`--knn approx`): an inverted file
//! (IVF-Flat, Jégou et al. 2011; FAISS' `IndexIVFFlat`) whose cells are the k-means cells of
//! the points, searched all at once rather than one query at a time.
//!
//! The points are sorted by cell, so that every cell is a contiguous range of rows, and the
//! cells are numbered in a locality order of their centroids ([`super::pca_tree_order`]):
//! neighbouring cells sit close in memory too; within a cell the points follow a locality
//! order of their own. A block of consecutive queries is then a compact part of a cell, and
//! its candidates are the points of the `probes` cells whose centroids are nearest the
//! block's mean, widened or narrowed by the spread of distances ([`Probing`]): a few
//! contiguous ranges of rows, which the GPU sweeps with the tensor-core kernel of the exact
//! kNN (`crate::knn::gpu::ivf`). Probing per block rather than per query loses a little
//! recall for the block's outlying queries, and buys the dense product tiles that make the
//! sweep fast; the recall is measured on every run ([`sample_recall`]).
//!
//! This file holds what the host computes: the sample and the centroid updates of k-means
//! (the assignment runs on the device), the sort by cell, each query block's probe cells
//! and its runs of reference chunks.

use rand::{rngs::StdRng, seq::index::sample, Rng, SeedableRng};
use rayon::prelude::*;

use super::{
    order::{pca_tree_order, pca_tree_order_in_blocks},
    Key, Neighbors,
};
use crate::{Error, Points, Result};

/// Settings of the approximate kNN.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct IvfParams {
    /// k-means cells; 0 = [`IvfParams::lists_for`] n.
    pub lists: usize,
    /// Cells probed per query, its own included. More: higher recall, proportionally more
    /// work. Default 64.
    pub probes: usize,
    /// The spread rule's ε ([`Probing`]): a block also probes the cells whose mean squared
    /// distance to it is within (1 + ε) of the least, up to [`IvfParams::max_probes`], and
    /// skips those of its `probes` nearest beyond [`FAR`] times the least; 0: the nearest
    /// `probes` cells alone. Default 0.5.
    pub spread: f64,
    /// The most cells the spread rule lets a block probe; 0: 3 · `probes`.
    pub max_probes: usize,
    /// Lloyd iterations of the k-means. Default 10.
    pub kmeans_iters: usize,
    /// Points of the k-means sample per cell (FAISS uses 39 to 256). Default 64.
    pub sample_per_list: usize,
    /// Rounds of refinement by neighbours of neighbours after the sweep
    /// (`crate::knn::gpu::refine`). Default 2.
    pub refine: usize,
    /// The refinement runs only when the recall sample's recall after the sweep is below
    /// this ([`IvfParams::rounds_after`]); 0: never, above 1: always. Default 0.98: past it the
    /// rounds add little (the 1.3M mixture on the CPU: 0.9853 → 0.9886 for 6.7 s of its
    /// 29 s search on 16 cores).
    pub refine_below: f64,
    /// Neighbours of a row, and of each of them, that a refinement round looks at (fan²
    /// candidates per row; at most k). Default 16.
    pub fan: usize,
    /// Seed of the k-means sample and start.
    pub seed: u64,
    /// GPUs the sweep's query blocks are split over (devices 0 .. gpus; the refinement's
    /// rows over two of them at most; the GPU method only). Default 1.
    pub gpus: usize,
}

impl Default for IvfParams {
    fn default() -> Self {
        IvfParams {
            lists: 0,
            probes: 64,
            spread: 0.5,
            max_probes: 0,
            kmeans_iters: 10,
            sample_per_list: 64,
            refine: 2,
            refine_below: 0.98,
            fan: 16,
            seed: 0,
            gpus: 1,
        }
    }
}

impl IvfParams {
    /// Cells for n points: about √n / 2 (cells of 2√n points, 6300 at 10M), at least 1 and at
    /// most n / 64, so that a cell holds a few query blocks and the candidates of a query
    /// (`probes` cells, ≈ 128 √n points at 64 probes) grow as √n: the sweep costs
    /// O(n^1.5 d) against the exact O(n² d).
    pub fn lists_for(&self, n: usize) -> usize {
        if self.lists > 0 {
            return self.lists.min(n).max(1);
        }
        let auto = ((n as f64).sqrt() / 2.0).round() as usize;
        auto.min(n / 64).max(1)
    }

    /// How each query block chooses its cells ([`Cells::block_probes`]), for lists of k.
    pub fn probing(&self, k: usize) -> Probing {
        Probing {
            probes: self.probes,
            max_probes: match self.max_probes {
                0 => 3 * self.probes,
                m => m.max(self.probes),
            },
            spread: self.spread,
            min_points: 2 * (k + 1),
        }
    }

    /// The refinement rounds to run after a sweep whose sample recall is `recall_sweep`
    /// (NaN without a sample: the rounds asked for).
    pub fn rounds_after(&self, recall_sweep: f64) -> usize {
        if recall_sweep >= self.refine_below {
            0
        } else {
            self.refine
        }
    }

    /// Checks the settings against n and k.
    pub fn check(&self, n: usize, k: usize) -> Result<()> {
        if self.probes == 0 {
            return Err(Error::param("knn-probes", "must be at least 1"));
        }
        if self.max_probes > 0 && self.max_probes < self.probes {
            return Err(Error::param(
                "knn-max-probes",
                format!(
                    "must be at least --knn-probes ({}), got {}",
                    self.probes, self.max_probes
                ),
            ));
        }
        if !(self.spread >= 0.0 && self.spread.is_finite()) {
            return Err(Error::param(
                "knn-spread",
                format!(
                    "must be 0 or more (0: the nearest cells alone), got {}",
                    self.spread
                ),
            ));
        }
        if !(self.refine_below >= 0.0 && self.refine_below.is_finite()) {
            return Err(Error::param(
                "knn-refine-below",
                format!(
                    "must be a recall of 0 or more (0: never refine, above 1: always), got {}",
                    self.refine_below
                ),
            ));
        }
        if self.kmeans_iters == 0 {
            return Err(Error::param("kmeans iterations", "must be at least 1"));
        }
        if self.sample_per_list == 0 {
            return Err(Error::param(
                "kmeans sample",
                "must be at least 1 point per cell",
            ));
        }
        if self.fan == 0 && self.refine > 0 {
            return Err(Error::param("knn-fan", "must be at least 1"));
        }
        if k >= n {
            return Err(Error::param(
                "k",
                format!("{k} neighbours need at least {} points, got {n}", k + 1),
            ));
        }
        Ok(())
    }
}

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

/// The k-means sample: `min(n, lists · per_list)` distinct rows, seeded, ascending.
pub fn kmeans_sample(n: usize, lists: usize, per_list: usize, seed: u64) -> Vec<u32> {
    let m = (lists.saturating_mul(per_list)).min(n);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut rows: Vec<u32> = sample(&mut rng, n, m)
        .into_iter()
        .map(|i| i as u32)
        .collect();
    rows.sort_unstable();
    rows
}

/// The first centroids: `lists` distinct rows of the sample `x` (m × d), seeded.
pub fn initial_centroids(x: &[f32], d: usize, lists: usize, seed: u64) -> Vec<f32> {
    let m = x.len() / d.max(1);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut c = Vec::with_capacity(lists * d);
    for i in sample(&mut rng, m, lists.min(m)) {
        c.extend_from_slice(&x[i * d..(i + 1) * d]);
    }
    c
}

/// Lloyd's update: each centroid becomes the mean of the sample points `x` (m × d) assigned
/// to it (`labels`). An emptied cell takes a point of the largest cell, drawn with `rng`,
/// so that no cell is wasted. Returns the number of emptied cells.
pub fn update_centroids(
    x: &[f32],
    d: usize,
    labels: &[u32],
    centroids: &mut [f32],
    rng: &mut StdRng,
) -> usize {
    let lists = centroids.len() / d;
    let mut sums = vec![0f64; lists * d];
    let mut counts = vec![0usize; lists];
    for (row, &l) in x.chunks_exact(d).zip(labels) {
        let l = l as usize;
        counts[l] += 1;
        for (s, &v) in sums[l * d..(l + 1) * d].iter_mut().zip(row) {
            *s += v as f64;
        }
    }
    let largest = (0..lists).max_by_key(|&l| counts[l]).unwrap_or(0);
    let members: Vec<usize> = (0..labels.len())
        .filter(|&i| labels[i] as usize == largest)
        .collect();
    let mut emptied = 0;
    for l in 0..lists {
        let c = &mut centroids[l * d..(l + 1) * d];
        if counts[l] > 0 {
            for (c, &s) in c.iter_mut().zip(&sums[l * d..(l + 1) * d]) {
                *c = (s / counts[l] as f64) as f32;
            }
        } else if !members.is_empty() {
            let i = members[rng.random_range(0..members.len())];
            c.copy_from_slice(&x[i * d..(i + 1) * d]);
            emptied += 1;
        }
    }
    emptied
}

/// The centroids (`lists` × d) renumbered in a locality order ([`pca_tree_order`]), so that
/// near cells get near numbers and the points sorted by cell keep neighbours close.
pub fn order_cells(centroids: &[f32], d: usize) -> Vec<f32> {
    let lists = centroids.len() / d;
    pca_tree_order(centroids, lists, d)
        .iter()
        .flat_map(|&c| {
            centroids[c as usize * d..(c as usize + 1) * d]
                .iter()
                .copied()
        })
        .collect()
}

/// The points sorted by cell: `order[p]` is the input row at position p (cells in label
/// order, input order within a cell), `offsets[l] .. offsets[l + 1]` the positions of
/// cell l.
#[derive(Clone, Debug)]
pub struct Cells {
    pub order: Vec<u32>,
    pub offsets: Vec<usize>,
}

impl Cells {
    /// The points sorted by `labels` (each below `lists`), each cell's in input order
    /// ([`crate::points::order_by_key`], in parallel).
    pub fn sort(labels: &[u32], lists: usize) -> Cells {
        let order = crate::points::order_by_key(labels);
        let offsets = (0..=lists as u32)
            .map(|l| order.partition_point(|&i| labels[i as usize] < l))
            .collect();
        Cells { order, offsets }
    }

    /// Number of cells.
    pub fn lists(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The cell of position p.
    fn cell_of(&self, p: usize) -> usize {
        self.offsets.partition_point(|&o| o <= p) - 1
    }

    /// Orders the points within each cell in a locality order (the leaf order of a PCA
    /// tree of the cell's points cut at the boundaries of the query blocks of `block`
    /// positions, [`pca_tree_order_in_blocks`]), so that each block is a compact part of
    /// its cell, and returns the points in the new order.
    /// Each cell's rows are gathered once into a buffer its thread keeps, ordered there and
    /// written to the cell's part of the result (a gather per cell into a fresh buffer,
    /// then a gather of all rows by the new order, copied every row twice from the input
    /// and faulted in a fresh buffer per cell).
    pub fn order_within(&mut self, points: &Points, block: usize) -> Points {
        let d = points.d;
        let mut data = vec![0f32; points.n * d];
        let lists = self.lists();
        let mut parts = Vec::with_capacity(lists);
        let (mut rest, mut out) = (self.order.as_mut_slice(), data.as_mut_slice());
        for l in 0..lists {
            let (first, len) = (self.offsets[l], self.offsets[l + 1] - self.offsets[l]);
            let (cell, tail) = rest.split_at_mut(len);
            let (rows, out_tail) = out.split_at_mut(len * d);
            parts.push((cell, rows, first));
            (rest, out) = (tail, out_tail);
        }
        parts
            .into_par_iter()
            .for_each_init(Vec::new, |x: &mut Vec<f32>, (cell, rows, first)| {
                x.clear();
                for &i in cell.iter() {
                    x.extend_from_slice(points.row(i as usize));
                }
                let local = pca_tree_order_in_blocks(x, cell.len(), d, first, block);
                let ids: Vec<u32> = local.iter().map(|&c| cell[c as usize]).collect();
                cell.copy_from_slice(&ids);
                for (p, &c) in local.iter().enumerate() {
                    let c = c as usize;
                    rows[p * d..(p + 1) * d].copy_from_slice(&x[c * d..(c + 1) * d]);
                }
            });
        Points::new(points.n, d, data)
    }

    /// Each cell's mean squared distance from its points (`sorted`, in cell order) to its
    /// centroid; 0 for an empty cell.
    pub fn mean_sq_radius(&self, sorted: &Points, centroids: &[f32]) -> Vec<f32> {
        let d = sorted.d;
        (0..self.lists())
            .into_par_iter()
            .map(|m| {
                let (a, e) = (self.offsets[m], self.offsets[m + 1]);
                let c = &centroids[m * d..(m + 1) * d];
                let sum: f64 = (a..e)
                    .map(|p| Key::SqEuclidean.eval(sorted.row(p), c) as f64)
                    .sum();
                (sum / (e - a).max(1) as f64) as f32
            })
            .collect()
    }

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

    /// The references of each block of `block` consecutive positions, as runs of `chunk`
    /// rows ([`Cells::runs_of`]): (first chunk, count) pairs, flattened, and `run_off`
    /// (blocks + 1 entries, in runs).
    pub fn block_runs(
        &self,
        probes: &[Vec<u32>],
        block: usize,
        chunk: usize,
    ) -> (Vec<i32>, Vec<i32>) {
        let per_block: Vec<Vec<(usize, usize)>> = probes
            .par_iter()
            .enumerate()
            .map(|(b, cells)| self.runs_of(b * block, cells, chunk))
            .collect();
        flatten_runs(&per_block)
    }

    /// The runs of `chunk` rows of the block whose first position is `p0` and whose probe
    /// cells are `probes` (its own among them): (first chunk, count) pairs covering the
    /// cells, each chunk once, starting at the chunk of its own first position and wrapping
    /// around, so that its lists fill with near points first.
    pub fn runs_of(&self, p0: usize, probes: &[u32], chunk: usize) -> Vec<(usize, usize)> {
        let mut ranges: Vec<(usize, usize)> = probes
            .iter()
            .map(|&m| {
                let (a, e) = (self.offsets[m as usize], self.offsets[m as usize + 1]);
                (a / chunk, e.div_ceil(chunk))
            })
            .filter(|(a, e)| a < e)
            .collect();
        ranges.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
        for (a, e) in ranges {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((a, e)),
            }
        }
        // Start at the run holding the block's own first chunk.
        // (The own cell is always probed, so some run holds that chunk.)
        let own = p0 / chunk;
        let Some(start) = merged.iter().position(|&(a, e)| a <= own && own < e) else {
            return merged.iter().map(|&(a, e)| (a, e - a)).collect();
        };
        let (a, e) = merged[start];
        let mut runs = vec![(own, e - own)];
        runs.extend(merged[start + 1..].iter().map(|&(a, e)| (a, e - a)));
        runs.extend(merged[..start].iter().map(|&(a, e)| (a, e - a)));
        if own > a {
            runs.push((a, own - a));
        }
        runs
    }
}

/// Blocks' runs ((first chunk, count) each) flattened as the sweep reads them: the pairs
/// in one list and each block's first run (blocks + 1 offsets, in runs).
pub fn flatten_runs(per_block: &[Vec<(usize, usize)>]) -> (Vec<i32>, Vec<i32>) {
    let mut runs = Vec::with_capacity(2 * per_block.iter().map(Vec::len).sum::<usize>());
    let mut run_off = Vec::with_capacity(per_block.len() + 1);
    run_off.push(0i32);
    for block_runs in per_block {
        for &(first, count) in block_runs {
            runs.push(first as i32);
            runs.push(count as i32);
        }
        run_off.push((runs.len() / 2) as i32);
    }
    (runs, run_off)
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
            by_distance.select_nth_unstable_by(head, super::by_dist_then_index);
        }
        by_distance[..head].sort_unstable_by(super::by_dist_then_index);
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
            by_distance[head..].sort_unstable_by(super::by_dist_then_index);
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
            within.sort_unstable_by(super::by_dist_then_index);
            let room = probing.max_probes.saturating_sub(probed.cells.len());
            within.iter().take(room).for_each(|&(_, m)| probed.take(m));
        }
        probed.cells
    }
}

/// Rows of the recall sample: `min(n, size)` distinct rows, seeded, ascending.
pub fn recall_sample(n: usize, size: usize, seed: u64) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed_5a3f_1e00_0001);
    let mut rows: Vec<u32> = sample(&mut rng, n, size.min(n))
        .into_iter()
        .map(|i| i as u32)
        .collect();
    rows.sort_unstable();
    rows
}

/// The recall on the sample `rows`: `approx` holds their approximate neighbours (k per
/// row, in order), `candidates[s]` any superset of row s's exact k nearest by `key`, whose
/// keys are recomputed from `points` so that the k smallest are the exact neighbours. A
/// neighbour of the approximate row counts as found when its distance is at most the exact
/// k-th distance, so that ties (duplicate points) do not count as misses. Mean over the
/// sample; 1 for an empty one.
pub fn sample_recall(
    points: &Points,
    key: Key,
    k: usize,
    rows: &[u32],
    approx: &[u32],
    candidates: &[Vec<u32>],
) -> f64 {
    if rows.is_empty() || k == 0 {
        return 1.0;
    }
    let found: f64 = rows
        .par_iter()
        .zip(approx.par_chunks(k))
        .zip(candidates)
        .map(|((&i, found), cand)| {
            let q = points.row(i as usize);
            let mut dist: Vec<f32> = cand
                .iter()
                .filter(|&&j| j != i)
                .map(|&j| key.eval_f64(q, points.row(j as usize)))
                .collect();
            dist.sort_unstable_by(f32::total_cmp);
            let kth = dist.get(k - 1).copied().unwrap_or(f32::INFINITY);
            let hits = found
                .iter()
                .filter(|&&j| j != i && key.eval_f64(q, points.row(j as usize)) <= kth)
                .count();
            hits.min(k) as f64 / k as f64
        })
        .sum();
    found / rows.len() as f64
}

/// The recall of the neighbours `nb` of `points` by `key` on a seeded sample of `size`
/// rows, each row's exact neighbours found by a scan of all points (`scan_candidates`): the
/// CPU's recall estimate, O(n · size · d). Returns (recall, sample size).
pub fn recall_by_scan(
    points: &Points,
    key: Key,
    nb: &Neighbors,
    size: usize,
    seed: u64,
) -> (f64, usize) {
    let rows = recall_sample(points.n, size, seed);
    let candidates = scan_candidates(points, key, &rows, nb.k);
    let found: Vec<u32> = rows
        .iter()
        .flat_map(|&i| nb.row_indices(i as usize).iter().copied())
        .collect();
    let recall = sample_recall(points, key, nb.k, &rows, &found, &candidates);
    (recall, rows.len())
}

/// Exact k nearest of each sampled row by a scan of all points (the CPU's recall sample):
/// O(n · |rows| · d).
pub(crate) fn scan_candidates(points: &Points, key: Key, rows: &[u32], k: usize) -> Vec<Vec<u32>> {
    rows.par_iter()
        .map(|&i| {
            let q = points.row(i as usize);
            // A margin over k, so that f32 rounding of the scan's distances cannot push an
            // exact neighbour out: sample_recall ranks these again in f64.
            let keep = k + 8;
            let mut top = super::select::TopK::new(keep, 4 * keep);
            for j in 0..points.n {
                if j != i as usize {
                    top.offer(key.eval(q, points.row(j)), j as u32);
                }
            }
            top.sorted().iter().map(|&(_, j)| j).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rounds run below `refine_below` and without a sample (NaN), none at or above it;
    /// a bound that is not a recall is refused by its flag's name.
    #[test]
    fn refinement_runs_below_its_bound() {
        let params = IvfParams::default();
        assert_eq!(params.rounds_after(0.97), 2);
        assert_eq!(params.rounds_after(f64::NAN), 2);
        assert_eq!(params.rounds_after(0.98), 0);
        let never = IvfParams {
            refine_below: 0.0,
            ..IvfParams::default()
        };
        assert_eq!(never.rounds_after(0.1), 0);
        for bad in [-0.5, f64::NAN, f64::INFINITY] {
            let params = IvfParams {
                refine_below: bad,
                ..IvfParams::default()
            };
            let err = params.check(1000, 10).unwrap_err().to_string();
            assert!(err.contains("knn-refine-below"), "{err}");
        }
    }

    #[test]
    fn cells_sort_by_label_keeping_input_order() {
        let cells = Cells::sort(&[2, 0, 2, 1, 0], 3);
        assert_eq!(cells.order, vec![1, 4, 3, 0, 2]);
        assert_eq!(cells.offsets, vec![0, 2, 3, 5]);
        assert_eq!(cells.cell_of(2), 1);
        assert_eq!(cells.cell_of(4), 2);
    }

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
                    .all(|w| super::super::by_dist_then_index(&w[0], &w[1]).is_lt()));
                if let Some(last) = rest.last() {
                    for m in (0..lists as u32).filter(|m| !got.contains(m)) {
                        assert!(super::super::by_dist_then_index(last, &(dist(m), m)).is_lt());
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

    /// Within each cell the points follow a locality order; the cells keep their points.
    #[test]
    fn order_within_keeps_each_cell_and_sorts_its_points() {
        let mut rng = StdRng::seed_from_u64(3);
        let n = 400;
        let labels: Vec<u32> = (0..n as u32).map(|i| i % 3).collect();
        let data: Vec<f32> = (0..n).map(|_| rng.random::<f32>()).collect();
        let points = Points::new(n, 1, data);
        let mut cells = Cells::sort(&labels, 3);
        let before = cells.clone();
        // Blocks of 4: the trees split down to 4 points (of about 133 a cell).
        let sorted = cells.order_within(&points, 4);
        for l in 0..3 {
            let range = cells.offsets[l]..cells.offsets[l + 1];
            let mut a = before.order[range.clone()].to_vec();
            let mut b = cells.order[range.clone()].to_vec();
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "cell {l} changed its points");
            // Consecutive points are close: in 1-D the PCA tree's leaves follow the line.
            let gap = |order: &[u32]| {
                order
                    .windows(2)
                    .map(|w| (points.row(w[0] as usize)[0] - points.row(w[1] as usize)[0]).abs())
                    .sum::<f32>()
                    / (order.len() - 1) as f32
            };
            let range = cells.offsets[l]..cells.offsets[l + 1];
            let (was, now) = (
                gap(&before.order[range.clone()]),
                gap(&cells.order[range.clone()]),
            );
            assert!(
                now < 0.4 * was,
                "cell {l}: mean gap {now} against {was} before"
            );
            for p in range {
                assert_eq!(sorted.row(p), points.row(cells.order[p] as usize));
            }
        }
    }

    /// Every block's runs start at its own chunk, name no chunk twice, and cover every
    /// position of its cells' probe cells.
    #[test]
    fn block_runs_cover_the_probe_cells_once() {
        let labels: Vec<u32> = (0..1000u32).map(|i| (i * 7 + i / 13) % 9).collect();
        let cells = Cells::sort(&labels, 9);
        let (block, chunk) = (128, 32);
        // Each block probes its own cells and the cells 4 further on.
        let probes: Vec<Vec<u32>> = (0..1000usize.div_ceil(block))
            .map(|b| {
                let own = cells.cell_of(b * block)..=cells.cell_of(((b + 1) * block).min(1000) - 1);
                let mut p: Vec<u32> = own.flat_map(|l| [l as u32, (l as u32 + 4) % 9]).collect();
                p.sort_unstable();
                p.dedup();
                p
            })
            .collect();
        let (runs, run_off) = cells.block_runs(&probes, block, chunk);
        assert_eq!(run_off.len(), 1000usize.div_ceil(block) + 1);
        for b in 0..run_off.len() - 1 {
            let pairs = &runs[2 * run_off[b] as usize..2 * run_off[b + 1] as usize];
            assert_eq!(
                pairs[0] as usize,
                b * block / chunk,
                "block {b} starts elsewhere"
            );
            let mut chunks: Vec<i32> = pairs
                .chunks_exact(2)
                .flat_map(|r| r[0]..r[0] + r[1])
                .collect();
            let all = chunks.len();
            chunks.sort_unstable();
            chunks.dedup();
            assert_eq!(chunks.len(), all, "block {b} names a chunk twice");
            let (p0, p1) = (b * block, ((b + 1) * block).min(1000));
            for p in p0..p1 {
                assert!(probes[b].contains(&(cells.cell_of(p) as u32)));
            }
            {
                for &m in &probes[b] {
                    let (a, e) = (cells.offsets[m as usize], cells.offsets[m as usize + 1]);
                    for r in a..e {
                        assert!(
                            chunks.binary_search(&((r / chunk) as i32)).is_ok(),
                            "block {b}: row {r} of probe cell {m} missing"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn recall_counts_ties_as_found() {
        // Points 0, 1, 1, 5 on a line; the exact 1 nearest of row 0 is row 1 or 2 (a tie).
        let points = Points::new(4, 1, vec![0.0, 1.0, 1.0, 5.0]);
        let candidates = vec![vec![1, 2, 3]];
        assert_eq!(
            sample_recall(&points, Key::SqEuclidean, 1, &[0], &[2], &candidates),
            1.0
        );
        assert_eq!(
            sample_recall(&points, Key::SqEuclidean, 1, &[0], &[3], &candidates),
            0.0
        );
        let nb = Neighbors {
            n: 4,
            k: 1,
            indices: vec![2, 2, 1, 1],
            distances: vec![1.0, 0.0, 0.0, 16.0],
        };
        assert_eq!(
            recall_by_scan(&points, Key::SqEuclidean, &nb, 10, 1),
            (1.0, 4)
        );
    }

    #[test]
    fn kmeans_update_means_and_refills_empty_cells() {
        let x = [0.0, 1.0, 2.0, 12.0];
        let mut c = vec![1.5, 11.0, 100.0];
        let mut rng = StdRng::seed_from_u64(0);
        let emptied = update_centroids(&x, 1, &[0, 0, 0, 1], &mut c, &mut rng);
        assert_eq!(emptied, 1);
        assert_eq!(&c[..2], &[1.0, 12.0]);
        assert!(
            [0.0, 1.0, 2.0].contains(&c[2]),
            "refilled from the largest cell: {}",
            c[2]
        );
    }

    #[test]
    fn lists_grow_as_the_root_of_n() {
        let p = IvfParams::default();
        assert_eq!(p.lists_for(10), 1);
        assert_eq!(p.lists_for(10_000_000), 1581);
        assert!(p.lists_for(70_000) <= 70_000 / 64);
        assert_eq!(IvfParams { lists: 5, ..p }.lists_for(3), 3);
    }
}
