//! A dense point set: n rows of d features, row-major, `f32`.

/// n points in d dimensions, stored row-major (`data[i * d + j]` is feature j of point i).
///
/// # Invariants
/// - `data.len() == n * d`
/// - every value is finite (checked by the readers in [`crate::io`])
#[derive(Clone, Debug, PartialEq)]
pub struct Points {
    /// Number of points (rows).
    pub n: usize,
    /// Number of features (columns).
    pub d: usize,
    /// Row-major values, `n * d` of them.
    pub data: Vec<f32>,
}

impl Points {
    /// Wraps row-major data; `data.len()` must equal `n * d`.
    pub fn new(n: usize, d: usize, data: Vec<f32>) -> Self {
        assert_eq!(data.len(), n * d, "Points::new: data length is not n * d");
        Points { n, d, data }
    }

    /// The features of point `i`.
    #[inline]
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.d..(i + 1) * self.d]
    }

    /// The points renumbered: point `r` of the result is point `order[r]` of `self`.
    /// `order` must be a permutation of `0..n`.
    pub fn permuted(&self, order: &[u32]) -> Points {
        debug_assert_eq!(order.len(), self.n);
        self.gather(order)
    }

    /// The rows `rows` of these points, in that order (a row may come more than once).
    /// Rows are copied in parallel (2 GB at 10M × 50).
    pub fn gather(&self, rows: &[u32]) -> Points {
        use rayon::prelude::*;
        let mut data = vec![0f32; rows.len() * self.d];
        if self.d > 0 {
            data.par_chunks_mut(self.d)
                .zip(rows.par_iter())
                .for_each(|(row, &i)| row.copy_from_slice(self.row(i as usize)));
        }
        Points::new(rows.len(), self.d, data)
    }
}

/// The inverse of the permutation `order` (`order[p]` = the point at position p): the
/// position of each point.
pub fn inverse_permutation(order: &[u32]) -> Vec<u32> {
    let mut inv = vec![0u32; order.len()];
    for (p, &i) in order.iter().enumerate() {
        inv[i as usize] = p as u32;
    }
    inv
}

/// Rows (`width` values each) numbered by a permutation back in the original numbering: row
/// `r` of `rows` goes to row `order[r]` (the inverse of [`Points::permuted`]).
pub fn unpermute_rows<T: Copy + Default>(rows: &[T], order: &[u32], width: usize) -> Vec<T> {
    let mut out = vec![T::default(); rows.len()];
    for (row, &i) in rows.chunks_exact(width).zip(order) {
        let i = i as usize;
        out[i * width..(i + 1) * width].copy_from_slice(row);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_round_trip() {
        let p = Points::new(3, 2, vec![0.0, 0.5, 1.0, 1.5, 2.0, 2.5]);
        let order = [2, 0, 1];
        let q = p.permuted(&order);
        assert_eq!(q.data, vec![2.0, 2.5, 0.0, 0.5, 1.0, 1.5]);
        assert_eq!(unpermute_rows(&q.data, &order, 2), p.data);
    }
}
