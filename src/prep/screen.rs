//! Checks of the values themselves, before any stage uses them: exact duplicate rows, and
//! magnitudes whose squared distances leave f32's range.
//!
//! Duplicates: t-SNE sees copies of a point at distance 0 from each other. A few do no
//! harm; when most points are copies, each set of copies collapses onto one spot and the
//! picture says nothing, and when all points are one there is nothing to embed at all.
//!
//! Range: the kNN and the affinities work on squared distances in f32, which overflow
//! (to ∞, then NaN affinities) once values pass about 1e19 / √d, and underflow to 0 (every
//! point a duplicate of every other) below about 1e-19. Multiplying every value by one
//! power of two is exact in binary floating point and changes no distance ratio, so the
//! embedding (which depends on distances only through their ratios, the perplexity fixing
//! each point's scale) is the embedding of the data as given.

use std::hash::{DefaultHasher, Hash, Hasher};

use rayon::prelude::*;

use crate::Points;

/// Values whose largest magnitude lies in [1 / RANGE, RANGE] are left as they are: their
/// squared distances over up to 2^20 features stay within 2^102, far inside f32's 2^128,
/// and above 2^-80 (normal f32 reaches 2^-126).
const RANGE: f32 = (1u64 << 40) as f32;

/// Rows of `points` that repeat an earlier row exactly (n minus the number of distinct
/// rows; −0 and +0 count as equal). Rows are hashed in parallel and sorted by hash; rows of
/// equal hash are compared value by value, so a collision never counts as a copy. The
/// same count on any number of threads; O(n d) time, 16 n bytes.
pub fn duplicate_rows(points: &Points) -> usize {
    let n = points.n;
    if points.d == 0 {
        return n.saturating_sub(1);
    }
    let row = |i: usize| Values(points.row(i));
    let mut keyed: Vec<(u64, usize)> = (0..n)
        .into_par_iter()
        .map(|i| {
            let mut h = DefaultHasher::new();
            row(i).hash(&mut h);
            (h.finish(), i)
        })
        .collect();
    keyed.par_sort_unstable();
    let mut distinct = 0;
    for run in keyed.chunk_by(|a, b| a.0 == b.0) {
        if let [_] = run {
            distinct += 1;
            continue;
        }
        // Equal hashes: almost always copies of one row.
        let mut seen: Vec<Values> = Vec::new();
        for &(_, i) in run {
            if !seen.contains(&row(i)) {
                seen.push(row(i));
            }
        }
        distinct += seen.len();
    }
    n - distinct
}

/// A row compared and hashed by value (finite values, so equality is an equivalence).
#[derive(PartialEq)]
struct Values<'a>(&'a [f32]);

impl Hash for Values<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // −0 + 0 = +0: the two zeros, equal as values, hash alike.
        for &x in self.0 {
            state.write_u32((x + 0.0).to_bits());
        }
    }
}

/// Brings `values` into the range where squared distances fit f32 (see the module doc):
/// when their largest magnitude is above 2^40 or below 2^-40, multiplies them all by the
/// power of two 2^e that brings it into [1, 2), and returns e; otherwise (all zeros
/// included) leaves them and returns 0. Exact: a value only changes when it is so small
/// beside the largest (by 2^126) that it underflows, where it adds nothing to any distance.
pub fn fit_f32_range(values: &mut [f32]) -> i32 {
    let max = values.par_iter().map(|x| x.abs()).reduce(|| 0.0, f32::max);
    if max == 0.0 || (1.0 / RANGE..=RANGE).contains(&max) {
        return 0;
    }
    // The binary exponent of max, read from its f64 bits (exact: every f32, subnormals
    // included, is a normal f64).
    let e = 1023 - ((f64::from(max).to_bits() >> 52) & 0x7ff) as i32;
    // In f64: 2^e may lie outside f32's range (e up to 149) while the product does not.
    let factor = 2f64.powi(e);
    values
        .par_iter_mut()
        .for_each(|x| *x = (*x as f64 * factor) as f32);
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_counted_exactly() {
        let rows = [
            [1.0, 2.0],
            [0.0, 1.0],
            [1.0, 2.0],
            [-0.0, 1.0],
            [3.0, 3.0],
            [1.0, 2.0],
        ];
        let p = Points::new(6, 2, rows.concat());
        assert_eq!(duplicate_rows(&p), 3);
        let same = Points::new(4, 3, vec![7.5; 12]);
        assert_eq!(duplicate_rows(&same), 3);
        let distinct = Points::new(1000, 2, (0..2000).map(|v| v as f32).collect());
        assert_eq!(duplicate_rows(&distinct), 0);
        assert_eq!(duplicate_rows(&Points::new(0, 2, vec![])), 0);
    }

    #[test]
    fn only_values_out_of_range_are_rescaled_and_exactly() {
        let mut ok = vec![1e-9, 3.0, -1e11];
        assert_eq!(fit_f32_range(&mut ok), 0);
        assert_eq!(ok, [1e-9, 3.0, -1e11]);
        let mut zeros = vec![0.0; 4];
        assert_eq!(fit_f32_range(&mut zeros), 0);
        for (values, max) in [
            (vec![1e30f32, -3e30, 7.0, 0.0], 3e30f32),
            (vec![f32::MAX, -f32::MAX], f32::MAX),
            (vec![1e-30, -2e-35, 0.0], 1e-30),
            (vec![f32::from_bits(1), 0.0], f32::from_bits(1)),
        ] {
            let mut v = values.clone();
            let e = fit_f32_range(&mut v);
            let m = v.iter().fold(0f32, |m, x| m.max(x.abs()));
            assert!((1.0..2.0).contains(&m), "{max}: largest {m} after 2^{e}");
            for (x, y) in values.iter().zip(&v) {
                assert_eq!(*y as f64, *x as f64 * 2f64.powi(e), "{x} by 2^{e}");
            }
        }
    }
}
