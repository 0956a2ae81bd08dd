//! S2G: spread every point's charges `(1, y¹ − c¹ … yˢ − cˢ)` onto the `4^s` surrounding grid
//! nodes with cubic Lagrange weights (Linderman et al. 2019, step 1; SG-t-SNE-Π's `s2g`).
//!
//! No atomics, and no private copy of the whole grid per task: the points are bucketed by
//! the row of their stencil's corner along the slowest axis, the rows cut into bands of about
//! equal point counts, and the bands spread in two rounds, even then odd. A point writes its
//! corner row and the 3 after it, so two bands of one parity, at least 4 rows each, never
//! write the same node: each round's bands write disjoint slices of the one grid, and each
//! band's writes stay within a few rows, which the cache holds. A band of many more points
//! than the others (an early, compact embedding puts most points in a few rows) is spread in
//! parts onto private copies of its own rows, summed after. (One private grid per task and a
//! reduction, the layout before, zeroed and summed 8 grids of 50 MB per call at 2048² nodes:
//! 27–28 ms of a 1M-point S2G on 16 cores, against 9.5–10.6 ms in bands, and 7.3 ms with the
//! stencil a row at a time.) The band cut and
//! the parts follow the points and the grid alone, so the sums run in one order on any
//! number of threads.

use rayon::prelude::*;

use crate::repulse::fftnd::Real;
use crate::repulse::grid::{stencil, Grid};

/// Fewest stencil-corner rows per band: a point writes 4 rows from its corner, so bands of
/// one parity at least this wide never touch.
const MIN_BAND_ROWS: usize = 4;

/// Bands wanted (fewer on grids of fewer rows): enough for rayon to balance bands of uneven
/// cost on many cores, and fixed, so that the sums' order and the result do not depend on
/// the thread count.
const BANDS: usize = 128;

/// Fewest points worth spreading in parallel.
const MIN_PARALLEL_POINTS: usize = 8192;

/// Points per task of the bucketing passes: small enough that a 70k-point map gives every
/// thread of a 16-core host a share (chunks of 2¹⁶ left two tasks to three passes over the
/// points, serial work in each of MNIST's thousand S2G calls). A band's points are its
/// buckets of every chunk in order, so the sums do not depend on it.
const BUCKET_CHUNK: usize = 1 << 13;

/// Reusable buffers for [`Scatter::run`]: each point's corner row, and per chunk of points
/// their indices bucketed by band.
pub struct Scatter<T> {
    rows: Vec<u32>,
    buckets: Vec<Vec<Vec<u32>>>,
    _grid: std::marker::PhantomData<T>,
}

impl<T> Default for Scatter<T> {
    fn default() -> Self {
        Scatter {
            rows: Vec::new(),
            buckets: Vec::new(),
            _grid: std::marker::PhantomData,
        }
    }
}

impl<T: Real> Scatter<T> {
    /// An empty scatter workspace; its buffers grow on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Spreads the charges of the points `y` (row-major `n × D`) onto `out`, `grid.len()` nodes
    /// of `1 + D` interleaved channels, which is overwritten.
    pub fn run<const D: usize>(&mut self, y: &[f32], grid: &Grid, out: &mut [T]) {
        let len = grid.len();
        assert_eq!(out.len(), (1 + D) * len, "charge grid size");
        let n = y.len() / D;
        let max_bands = grid.p.saturating_sub(3) / MIN_BAND_ROWS;
        if n < MIN_PARALLEL_POINTS || max_bands < 2 {
            out.fill(T::zero());
            spread::<T, D>(y, 0..n, grid, out, 0);
            return;
        }
        out.par_chunks_mut(1 << 16).for_each(|o| o.fill(T::zero()));

        // Each point's corner row along the slowest axis (axis D − 1), and the points per row.
        let inv_h = 1.0 / grid.h;
        let last = D - 1;
        self.rows.resize(n, 0);
        self.rows
            .par_chunks_mut(BUCKET_CHUNK)
            .zip(y.par_chunks(BUCKET_CHUNK * D))
            .for_each(|(rows, ys)| {
                for (r, row) in rows.iter_mut().zip(ys.chunks_exact(D)) {
                    let x = (row[last] as f64 - grid.origin[last]) * inv_h;
                    *r = (stencil(x, grid.p).0 - 1) as u32;
                }
            });
        let per_row = self
            .rows
            .par_chunks(BUCKET_CHUNK)
            .fold(
                || vec![0usize; grid.p],
                |mut c, rows| {
                    for &r in rows {
                        c[r as usize] += 1;
                    }
                    c
                },
            )
            .reduce(
                || vec![0usize; grid.p],
                |mut a, b| {
                    a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                    a
                },
            );
        let bands = cut_bands(&per_row, BANDS.min(max_bands));
        let target = n.div_ceil(BANDS);

        // The points bucketed by band: each chunk of points into its own buckets, so a band's
        // points are its buckets of every chunk, in input order.
        let mut band_of_row = vec![0u32; grid.p];
        for (b, rows) in bands.iter().enumerate() {
            band_of_row[rows.clone()].fill(b as u32);
        }
        let chunks = n.div_ceil(BUCKET_CHUNK);
        self.buckets.resize_with(chunks, Vec::new);
        self.buckets
            .par_iter_mut()
            .zip(self.rows.par_chunks(BUCKET_CHUNK))
            .enumerate()
            .for_each(|(c, (buckets, rows))| {
                buckets.resize_with(bands.len(), Vec::new);
                buckets.iter_mut().for_each(Vec::clear);
                for (j, &r) in rows.iter().enumerate() {
                    buckets[band_of_row[r as usize] as usize].push((c * BUCKET_CHUNK + j) as u32);
                }
            });
        let buckets = &self.buckets[..chunks];

        // Two rounds: the even bands, then the odd, each on disjoint rows of `out`.
        let row_len = (1 + D) * len / grid.p;
        for parity in 0..2 {
            let mut tasks = Vec::new();
            let mut rest: &mut [T] = out;
            let mut rest_row = 0;
            for b in (parity..bands.len()).step_by(2) {
                let rows = &bands[b];
                let end = (rows.end + 3).min(grid.p);
                let (_, tail) = rest.split_at_mut((rows.start - rest_row) * row_len);
                let (mine, tail) = tail.split_at_mut((end - rows.start) * row_len);
                rest = tail;
                rest_row = end;
                tasks.push((mine, rows.start, b));
            }
            tasks.into_par_iter().for_each(|(mine, first_row, b)| {
                let first = first_row * (row_len / (1 + D));
                let count: usize = buckets.iter().map(|c| c[b].len()).sum();
                let points = buckets.iter().flat_map(|c| &c[b]).map(|&i| i as usize);
                if count <= 2 * target {
                    spread::<T, D>(y, points, grid, mine, first);
                    return;
                }
                // A band of many more points than most (bands are at least 4 rows, and an
                // early, compact embedding puts a large share of the points in a few rows):
                // its points in parts, each spread onto a private copy of the band's rows,
                // then summed into them, so that it does not hold up the round.
                let points: Vec<usize> = points.collect();
                let parts: Vec<Vec<T>> = points
                    .par_chunks(target)
                    .map(|part| {
                        let mut own = vec![T::zero(); mine.len()];
                        spread::<T, D>(y, part.iter().copied(), grid, &mut own, first);
                        own
                    })
                    .collect();
                // Added in the parts' order: the same sums on any number of threads.
                for part in parts {
                    mine.iter_mut().zip(part).for_each(|(x, v)| *x = *x + v);
                }
            });
        }
    }
}

/// Cuts the rows `0..per_row.len()` (points per stencil-corner row) into at most `want`
/// bands of about equal point counts, each at least [`MIN_BAND_ROWS`] rows; the bands cover
/// every row, in order.
fn cut_bands(per_row: &[usize], want: usize) -> Vec<std::ops::Range<usize>> {
    let p = per_row.len();
    let total: usize = per_row.iter().sum();
    let target = total.div_ceil(want.max(1)).max(1);
    let mut bands = Vec::with_capacity(want);
    let (mut start, mut count) = (0, 0);
    for (r, &k) in per_row.iter().enumerate() {
        count += k;
        let wide = r + 1 - start >= MIN_BAND_ROWS;
        let room = p - (r + 1) >= MIN_BAND_ROWS;
        if wide && room && count >= target && bands.len() + 1 < want {
            bands.push(start..r + 1);
            (start, count) = (r + 1, 0);
        }
    }
    bands.push(start..p);
    bands
}

/// Sequential spread of the points `points` (indices into `y`) onto `out`, the grid's nodes
/// from flat node `first` on (added to). `D` is a const so the stencil loops unroll; the
/// stencil is taken a row of 4 nodes along the fastest axis at a time (their `4 · (1 + D)`
/// channels contiguous), each node's weight the row's weight on the other axes times the
/// first axis' own.
fn spread<T: Real, const D: usize>(
    y: &[f32],
    points: impl Iterator<Item = usize>,
    grid: &Grid,
    out: &mut [T],
    first: usize,
) {
    let strides = strides::<D>(grid.p);
    let inv_h = 1.0 / grid.h;
    let nch = 1 + D;
    for i in points {
        let row = &y[i * D..(i + 1) * D];
        let (corner, w) = locate::<T, D>(row, grid, inv_h, &strides);
        let q: [T; D] = std::array::from_fn(|a| T::of(row[a] as f64 - grid.centre[a]));
        for r in 0..stencil_rows::<D>() {
            let (base, wr) = stencil_row::<T, D>(r, corner - first, &w, &strides);
            let nodes = &mut out[base * nch..(base + 4) * nch];
            for (node, &wx) in nodes.chunks_exact_mut(nch).zip(&w[0]) {
                let wt = wr * wx;
                node[0] = node[0] + wt;
                for (o, &qa) in node[1..].iter_mut().zip(&q) {
                    *o = *o + wt * qa;
                }
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

/// Rows of 4 nodes along the fastest axis in the `4^D` stencil.
pub(crate) const fn stencil_rows<const D: usize>() -> usize {
    1 << (2 * (D - 1))
}

/// Row `r` of the stencil (base-4 digit `a − 1` of r is the offset along axis `a ≥ 1`): the
/// flat index of its first node, from `corner`, and its weight on the axes other than the
/// first (whose 4 weights the caller applies node by node: the row's nodes are contiguous).
#[inline(always)]
pub(crate) fn stencil_row<T: Real, const D: usize>(
    r: usize,
    corner: usize,
    w: &[[T; 4]; D],
    strides: &[usize; D],
) -> (usize, T) {
    let (mut base, mut wr) = (corner, T::one());
    for a in 1..D {
        let o = (r >> (2 * (a - 1))) & 3;
        base += o * strides[a];
        wr = wr * w[a][o];
    }
    (base, wr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repulse::GridSpec;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// Spreading conserves each channel's total (Lagrange weights sum to 1), and the banded
    /// parallel path (8 threads) equals the sequential one. `clumped` puts most points in a
    /// narrow strip of the slowest axis, so the bands are uneven in rows.
    fn check<const D: usize>(n: usize, clumped: bool) {
        let mut rng = StdRng::seed_from_u64(n as u64 + D as u64);
        let y: Vec<f32> = (0..n * D)
            .map(|k| {
                let v = rng.random::<f32>();
                if clumped && k % D == D - 1 && k % 7 != 0 {
                    3.0 + v
                } else {
                    v * 20.0 - 7.0
                }
            })
            .collect();
        let grid = Grid::fit(&y, D, GridSpec::Auto { h: 0.35 }).unwrap();
        let len = grid.len();
        let mut out = vec![f64::NAN; (1 + D) * len];
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(8)
            .build()
            .unwrap();
        pool.install(|| Scatter::new().run::<D>(&y, &grid, &mut out));
        let mut seq = vec![0.0f64; (1 + D) * len];
        spread::<f64, D>(&y, 0..n, &grid, &mut seq, 0);
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
        check::<1>(50_000, false);
        check::<2>(90_000, false);
        check::<2>(90_000, true);
        check::<3>(30_000, true);
        check::<2>(9000, false);
        check::<2>(3, false);
    }

    /// The banded spread gives the same bits on 1, 3 and 8 threads, a heavy band split in
    /// parts included (most points in a strip of a few rows).
    #[test]
    fn spread_is_the_same_on_any_number_of_threads() {
        let n = 60_000;
        let mut rng = StdRng::seed_from_u64(11);
        let y: Vec<f32> = (0..2 * n)
            .map(|k| {
                let v = rng.random::<f32>();
                if k % 2 == 1 && k % 5 != 0 {
                    1.0 + v
                } else {
                    v * 30.0
                }
            })
            .collect();
        let grid = Grid::fit(&y, 2, GridSpec::Auto { h: 0.35 }).unwrap();
        let runs: Vec<Vec<f32>> = [1, 3, 8]
            .iter()
            .map(|&t| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .build()
                    .unwrap();
                let mut out = vec![0f32; 3 * grid.len()];
                pool.install(|| Scatter::new().run::<2>(&y, &grid, &mut out));
                out
            })
            .collect();
        assert!(runs[0] == runs[1] && runs[0] == runs[2]);
    }

    #[test]
    fn bands_cover_the_rows_each_wide_enough() {
        for (per_row, want) in [
            (vec![1usize; 100], 8),
            (vec![0; 40], 5),
            (
                (0..64).map(|r| if r == 30 { 1000 } else { 1 }).collect(),
                16,
            ),
            (vec![5; 9], 2),
        ] {
            let bands = cut_bands(&per_row, want);
            assert!(bands.len() <= want && !bands.is_empty());
            assert_eq!(bands[0].start, 0);
            assert_eq!(bands.last().unwrap().end, per_row.len());
            for w in bands.windows(2) {
                assert_eq!(w[0].end, w[1].start);
            }
            assert!(bands.iter().all(|b| b.len() >= MIN_BAND_ROWS), "{bands:?}");
        }
        // Even rows: the points split evenly.
        assert_eq!(cut_bands(&[1; 100], 4).len(), 4);
    }
}
