//! Sums of parallel parts in a fixed order, so that the host's results repeat bit for bit.
//!
//! rayon's `sum` and `reduce` combine the parts of a parallel iterator in a tree whose shape
//! follows the work stealing of the moment, so the last bits of a float sum changed from run
//! to run (the KL of two identical cpu runs differed in its 14th digit, and Z, which scales
//! every repulsive force, could too). Collecting the parts in their index order and adding
//! them in a loop costs one short vector and gives one result for one input, whatever the
//! thread count or timing.

use rayon::prelude::*;

/// The sum of `parts`, added in index order.
pub fn sum_in_order<I>(parts: I) -> f64
where
    I: IndexedParallelIterator<Item = f64>,
{
    parts.collect::<Vec<f64>>().into_iter().sum()
}

/// The element-wise sum of the arrays `parts`, added in index order.
pub fn sums_in_order<I, const K: usize>(parts: I) -> [f64; K]
where
    I: IndexedParallelIterator<Item = [f64; K]>,
{
    parts
        .collect::<Vec<[f64; K]>>()
        .into_iter()
        .fold([0.0; K], |mut acc, part| {
            acc.iter_mut().zip(part).for_each(|(a, p)| *a += p);
            acc
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sums whose order matters in floating point come out the same on every pool size, and
    /// equal to the serial sum of the parts in order.
    #[test]
    fn the_same_sum_on_any_pool() {
        let parts: Vec<f64> = (0..10_000)
            .map(|i| 1.0 / (1.0 + i as f64) * if i % 3 == 0 { -1e8 } else { 1.0 })
            .collect();
        let serial: f64 = parts.iter().sum();
        for threads in [1, 2, 3, 8] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let got = pool.install(|| sum_in_order(parts.par_iter().copied()));
            assert_eq!(got.to_bits(), serial.to_bits(), "{threads} threads");
            let arrays = pool.install(|| sums_in_order(parts.par_iter().map(|&p| [p, 2.0 * p])));
            assert_eq!(arrays[0].to_bits(), serial.to_bits());
        }
    }
}
