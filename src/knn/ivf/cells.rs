//! The points sorted by cell ([`Cells`]): each cell a contiguous range of rows, its points
//! in a locality order of their own, and each cell's spread about its centroid.

use rayon::prelude::*;

use crate::knn::order::pca_tree_order_in_blocks;
use crate::knn::Key;
use crate::Points;

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
    pub(super) fn cell_of(&self, p: usize) -> usize {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    #[test]
    fn cells_sort_by_label_keeping_input_order() {
        let cells = Cells::sort(&[2, 0, 2, 1, 0], 3);
        assert_eq!(cells.order, vec![1, 4, 3, 0, 2]);
        assert_eq!(cells.offsets, vec![0, 2, 3, 5]);
        assert_eq!(cells.cell_of(2), 1);
        assert_eq!(cells.cell_of(4), 2);
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
}
