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

use rayon::prelude::*;

use crate::Points;

/// Values whose largest magnitude lies in [1 / RANGE, RANGE] are left as they are: their
/// squared distances over up to 2^20 features stay within 2^102, far inside f32's 2^128,
/// and above 2^-80 (normal f32 reaches 2^-126).
const RANGE: f32 = (1u64 << 40) as f32;

/// Rows of `points` that repeat an earlier row exactly (n minus the number of distinct
/// rows; −0 and +0 count as equal). Rows are hashed in parallel (a fast hash, not a
/// cryptographic one) and the hashes sorted; only the rows whose hash repeats (none, for
/// most inputs) are then sorted by hash and compared value by value, so a collision never
/// counts as a copy. The same count on any number of threads; O(n d) time, 16 n bytes.
/// (With SipHash and every row's (hash, index) pair sorted, the set-up of a 10M × 50 run
/// took 0.34–0.38 s on 32 cores against 0.24–0.30 now, `benches/RESULTS.md`.)
pub fn duplicate_rows(points: &Points) -> usize {
    screen_rows(points).0
}

/// [`duplicate_rows`] and the largest magnitude among the values (for
/// [`scale_to_f32_range`]; ∞ or NaN when a value is not finite), in one pass over them: a
/// second pass for the magnitudes read the 2 GB of a 10M × 50 input again.
pub fn screen_rows(points: &Points) -> (usize, f32) {
    let n = points.n;
    if points.d == 0 {
        return (n.saturating_sub(1), 0.0);
    }
    let mut hashes = vec![0u64; n];
    let largest = hashes
        .par_iter_mut()
        .enumerate()
        .map(|(i, hash)| {
            let row = points.row(i);
            *hash = row_hash(row);
            row.iter().fold(0f32, |m, x| larger(m, x.abs()))
        })
        .reduce(|| 0.0, larger);
    (copies_among(points, &hashes), largest)
}

/// The larger of two magnitudes, NaN when either is (`f32::max` drops a NaN), so that the
/// largest magnitude is finite only when every value is.
fn larger(m: f32, a: f32) -> f32 {
    if a > m || a.is_nan() {
        a
    } else {
        m
    }
}

/// The rows that repeat an earlier one among `points`, whose rows hash to `hashes`.
fn copies_among(points: &Points, hashes: &[u64]) -> usize {
    let mut sorted = hashes.to_vec();
    sorted.par_sort_unstable();
    let repeated: Vec<u64> = sorted
        .chunk_by(|a, b| a == b)
        .filter(|run| run.len() > 1)
        .map(|run| run[0])
        .collect();
    drop(sorted);
    if repeated.is_empty() {
        return 0;
    }
    let mut keyed: Vec<(u64, usize)> = hashes
        .par_iter()
        .enumerate()
        .filter(|(_, h)| repeated.binary_search(h).is_ok())
        .map(|(i, &h)| (h, i))
        .collect();
    keyed.par_sort_unstable();
    let row = |i: usize| Values(points.row(i));
    let mut copies = 0;
    for run in keyed.chunk_by(|a, b| a.0 == b.0) {
        // Equal hashes: almost always copies of one row.
        let mut seen: Vec<Values> = Vec::new();
        for &(_, i) in run {
            if !seen.contains(&row(i)) {
                seen.push(row(i));
            }
        }
        copies += run.len() - seen.len();
    }
    copies
}

/// A row's 64-bit hash by value (−0 and +0 alike): each value's bits folded into one of
/// four lanes by a multiply and a rotation (independent chains, so that the row's words
/// go through in parallel), the lanes then mixed (SplitMix64's finaliser). Not a
/// cryptographic hash: a collision only costs [`duplicate_rows`] a comparison.
fn row_hash(row: &[f32]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut lanes = [1u64, 2, 3, 4];
    for (j, &x) in row.iter().enumerate() {
        let lane = &mut lanes[j % 4];
        *lane = ((*lane ^ u64::from((x + 0.0).to_bits())).wrapping_mul(K)).rotate_left(29);
    }
    let mut h = row.len() as u64;
    for lane in lanes {
        h = (h ^ lane).wrapping_mul(K).rotate_left(31);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// A row compared by value (finite values, so equality is an equivalence; −0 equals +0).
#[derive(PartialEq)]
struct Values<'a>(&'a [f32]);

/// Brings `values` into the range where squared distances fit f32 (see the module doc):
/// when their largest magnitude is above 2^40 or below 2^-40, multiplies them all by the
/// power of two 2^e that brings it into [1, 2), and returns e; otherwise (all zeros
/// included) leaves them and returns 0. Exact: a value only changes when it is so small
/// beside the largest (by 2^126) that it underflows, where it adds nothing to any distance.
pub fn fit_f32_range(values: &mut [f32]) -> i32 {
    let max = largest_magnitude(values);
    scale_to_f32_range(values, max)
}

/// [`fit_f32_range`] of the points' values, read first and written only when they need
/// scaling: a caller's buffer read in place ([`crate::points::PointData`]) is not copied
/// for nothing.
pub fn fit_points_f32_range(points: &mut Points) -> i32 {
    let max = largest_magnitude(&points.data);
    match in_f32_range(max) {
        true => 0,
        false => scale_to_f32_range(points.data.to_mut(), max),
    }
}

/// The largest |x| of `values` (0 for none).
fn largest_magnitude(values: &[f32]) -> f32 {
    values.par_iter().map(|x| x.abs()).reduce(|| 0.0, f32::max)
}

/// Whether values whose largest magnitude is `max` need no scaling ([`scale_to_f32_range`]
/// leaves them as they are): a caller may skip the call, and with it the write.
pub fn in_f32_range(max: f32) -> bool {
    max == 0.0 || (1.0 / RANGE..=RANGE).contains(&max)
}

/// [`fit_f32_range`] given the values' largest magnitude `max` (from [`screen_rows`]).
pub fn scale_to_f32_range(values: &mut [f32], max: f32) -> i32 {
    if in_f32_range(max) {
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

    /// Among many distinct rows, copies of a few (one of them −0 for +0) are found, and
    /// only they.
    #[test]
    fn a_few_copies_among_many_rows_are_counted() {
        let (n, d) = (50_000, 7);
        let mut data: Vec<f32> = (0..n * d).map(|v| (v as f32 * 0.37).sin()).collect();
        data[..d].fill(0.0);
        for (copy, of) in [(10, 20), (30, 20), (40, 41), (99, 0)] {
            let row = data[of * d..(of + 1) * d].to_vec();
            data[copy * d..(copy + 1) * d].copy_from_slice(&row);
        }
        data[99 * d] = -0.0;
        assert_eq!(duplicate_rows(&Points::new(n, d, data)), 4);
    }

    /// One pass gives the copies and the largest magnitude that two passes give.
    #[test]
    fn screening_in_one_pass_matches_two() {
        let (n, d) = (3000, 5);
        let mut data: Vec<f32> = (0..n * d).map(|v| (v as f32 * 0.11).cos()).collect();
        data[7 * d + 2] = -3.5e12;
        data.copy_within(9 * d..10 * d, 0);
        let p = Points::new(n, d, data.clone());
        let (copies, largest) = screen_rows(&p);
        assert_eq!(copies, duplicate_rows(&p));
        assert_eq!(copies, 1);
        assert_eq!(largest, 3.5e12);
        let (mut one, mut two) = (data.clone(), data);
        assert_eq!(
            scale_to_f32_range(&mut one, largest),
            fit_f32_range(&mut two)
        );
        assert_eq!(one, two);
    }

    /// A NaN or an infinity anywhere makes the largest magnitude not finite (the engine's
    /// screen then names the value), wherever it lies among finite ones.
    #[test]
    fn a_value_that_is_not_finite_shows_in_the_largest() {
        let (n, d) = (3000, 5);
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            for at in [0, 7 * d + 2, n * d - 1] {
                let mut data: Vec<f32> = (0..n * d).map(|v| (v as f32 * 0.11).cos()).collect();
                data[at] = bad;
                data[(at + d) % (n * d)] = 9.0;
                let (_, largest) = screen_rows(&Points::new(n, d, data));
                assert!(!largest.is_finite(), "{bad} at {at}: {largest}");
            }
        }
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
