//! A dense point set: n rows of d features, row-major, `f32`.

mod data;

pub use data::{PointData, SharedValues};

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
    /// Row-major values, `n * d` of them: owned, or a caller's buffer read in place
    /// ([`Points::shared`]).
    pub data: PointData,
}

impl Points {
    /// Wraps row-major data; `data.len()` must equal `n * d`.
    pub fn new(n: usize, d: usize, data: Vec<f32>) -> Self {
        assert_eq!(data.len(), n * d, "Points::new: data length is not n * d");
        Points {
            n,
            d,
            data: data.into(),
        }
    }

    /// Wraps a caller's row-major buffer of `n * d` values, read in place and copied only
    /// if a stage writes to it ([`PointData`]).
    pub fn shared(n: usize, d: usize, values: SharedValues) -> Self {
        assert_eq!(
            (*values).as_ref().len(),
            n * d,
            "Points::shared: data length is not n * d"
        );
        Points {
            n,
            d,
            data: PointData::shared(values),
        }
    }

    /// Refuses a non-finite value, naming `source`, its (1-based) row and column, as the
    /// file readers do: points given in memory (the Python package's arrays) have not been
    /// through a reader. Checked in parallel.
    pub fn check_finite(&self, source: &str) -> crate::Result<()> {
        use rayon::prelude::*;
        let d = self.d.max(1);
        let bad = self.data.par_iter().position_first(|x| !x.is_finite());
        match bad {
            None => Ok(()),
            Some(at) => Err(crate::Error::Data(format!(
                "{source}: row {}, column {}: {} (values must be finite numbers)",
                at / d + 1,
                at % d + 1,
                self.data[at]
            ))),
        }
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
/// position of each point, [`order_by_key`] of `order`.
pub fn inverse_permutation(order: &[u32]) -> Vec<u32> {
    order_by_key(order)
}

/// The indices `0..keys.len()` ordered by their key, ties by index: the stable sort's
/// permutation. Large inputs sort (key, index) pairs in parallel, where a counting sort's
/// (or a permutation's inverse's) scatter is one random write per index on one core.
pub fn order_by_key(keys: &[u32]) -> Vec<u32> {
    use rayon::prelude::*;
    if keys.len() < PARALLEL_MIN {
        let mut order: Vec<u32> = (0..keys.len() as u32).collect();
        order.sort_by_key(|&i| keys[i as usize]);
        return order;
    }
    let mut pairs: Vec<u64> = keys
        .par_iter()
        .enumerate()
        .map(|(i, &key)| (u64::from(key) << 32) | i as u64)
        .collect();
    pairs.par_sort_unstable();
    pairs.into_par_iter().map(|pair| pair as u32).collect()
}

/// Inputs shorter than this are ordered by [`order_by_key`] on one core.
const PARALLEL_MIN: usize = 1 << 16;

/// Rows (`width` values each) numbered by a permutation back in the original numbering: row
/// `r` of `rows` goes to row `order[r]` (the inverse of [`Points::permuted`]): the rows
/// gathered ([`gather_rows`]) by the inverse permutation ([`inverse_permutation`]).
pub fn unpermute_rows<T: Copy + Default + Send + Sync>(
    rows: &[T],
    order: &[u32],
    width: usize,
) -> Vec<T> {
    gather_rows(rows, &inverse_permutation(order), width)
}

/// Row `at[i]` of `rows` (`width` values each) as row i of the result, in parallel.
pub fn gather_rows<T: Copy + Default + Send + Sync>(
    rows: &[T],
    at: &[u32],
    width: usize,
) -> Vec<T> {
    use rayon::prelude::*;
    let mut out = vec![T::default(); at.len() * width];
    if width == 0 {
        return out;
    }
    out.par_chunks_mut(width)
        .zip(at.par_iter())
        .for_each(|(dst, &p)| {
            let p = p as usize;
            dst.copy_from_slice(&rows[p * width..(p + 1) * width]);
        });
    out
}

/// Frees `value` on a thread of its own, so that the stage after its last use need not
/// wait: the gigabytes of a 10M-point run's input go back to the system at 0.03–0.05 s
/// a gigabyte on the GPU machines' hosts (`benches/RESULTS.md`). Where no thread
/// can be started, `value` is freed here (the refused closure is dropped).
pub(crate) fn drop_beside<T: Send + 'static>(value: T) {
    let free = std::thread::Builder::new().name("sgtsne-free".into());
    let _ = free.spawn(move || drop(value));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_finite_value_is_refused_with_its_row_and_column() {
        let p = Points::new(2, 3, vec![0.0, 1.0, 2.0, 3.0, f32::NAN, 5.0]);
        let e = p.check_finite("X").unwrap_err().to_string();
        assert_eq!(e, "X: row 2, column 2: NaN (values must be finite numbers)");
        assert!(Points::new(1, 2, vec![1.0, 2.0]).check_finite("X").is_ok());
    }

    #[test]
    fn permutation_round_trip() {
        let p = Points::new(3, 2, vec![0.0, 0.5, 1.0, 1.5, 2.0, 2.5]);
        let order = [2, 0, 1];
        let q = p.permuted(&order);
        assert_eq!(q.data, vec![2.0, 2.5, 0.0, 0.5, 1.0, 1.5]);
        assert_eq!(unpermute_rows(&q.data, &order, 2), p.data);
    }

    /// The parallel inverse (from [`PARALLEL_MIN`] points) inverts, and rows come back by
    /// it.
    #[test]
    fn large_permutations_invert_and_rows_come_back() {
        use rand::{rngs::StdRng, seq::SliceRandom, SeedableRng};
        let n = PARALLEL_MIN + 1234;
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.shuffle(&mut StdRng::seed_from_u64(3));
        let inv = inverse_permutation(&order);
        assert!(order
            .iter()
            .enumerate()
            .all(|(p, &i)| inv[i as usize] == p as u32));
        let data: Vec<f32> = (0..3 * n).map(|v| v as f32).collect();
        let p = Points::new(n, 3, data);
        assert_eq!(unpermute_rows(&p.permuted(&order).data, &order, 3), p.data);
    }
}
