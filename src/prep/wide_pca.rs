//! PCA of wide dense data (many features) by the randomised method
//! ([`super::randomised`]), in memory that grows with n·d and the number of components.
//!
//! The exact PCA ([`super::pca::Pca`]) forms the d × d covariance and decomposes it: 8 d²
//! bytes two or three times over and O(d³) time, which at d = 5,000 took 1.0 GB and 29 s
//! for 200 points, and at 30,000 features (genes) would be 7.2 GB per copy before any
//! work. Here the data is only multiplied by thin matrices (l = m + 10 columns), block by
//! block: rows centred into f64 a block at a time (as the exact path's passes do, so a
//! large common offset costs no precision), then one GEMM per block.

use faer::linalg::matmul::matmul;
use faer::reborrow::ReborrowMut;
use faer::{Accum, Mat, MatMut, Par};
use rayon::prelude::*;

use super::pca::{centre_block, column_means, validate};
use super::randomised::{randomised_pca, transpose_product, Side};
use crate::{Points, Result};

/// Above this many features [`super::pca`] takes this path: the covariance would pass
/// 32 MB and its eigen-decomposition a second, while the exact path is the faster and the
/// more accurate one below (at MNIST's 784 features, 5 MB).
pub(crate) const EXACT_MAX_D: usize = 2048;

/// Bytes of one block of centred rows in f64 (one per busy thread).
const BLOCK_BYTES: usize = 16 << 20;

/// The seed of Ω: fixed, so that the PCA of given data is one result, as the exact one is.
pub(crate) const SEED: u64 = 0x5eed;

/// The top `m` principal-component scores of `points` (n × m, columns by decreasing
/// variance, axes signed as [`super::pca::Pca`]'s), by the randomised method. The same
/// result on any number of threads. Errors as [`super::pca`].
pub(crate) fn wide_pca(points: &Points, m: usize) -> Result<Points> {
    validate(points, m)?;
    let (n, d) = (points.n, points.d);
    let mean = column_means(points);
    let block = (BLOCK_BYTES / (8 * d)).max(1);
    randomised_pca(n, d, m, SEED, |side, x| {
        let l = x.ncols();
        Ok(match side {
            // A_c X: each block of rows on one thread, into its rows of the result.
            Side::A => {
                let mut rows = vec![0f64; n * l];
                rows.par_chunks_mut(block * l).enumerate().for_each_init(
                    || vec![0f64; block * d],
                    |buf, (b, out)| {
                        let count = out.len() / l;
                        let xc = centre_block(points, &mean, b * block, count, buf);
                        matmul(
                            MatMut::from_row_major_slice_mut(out, count, l),
                            Accum::Replace,
                            xc,
                            x.as_ref(),
                            1.0,
                            Par::Seq,
                        );
                    },
                );
                Mat::from_fn(n, l, |i, c| rows[i * l + c])
            }
            // A_cᵀ Y: the blocks of each group in order into its partial sum.
            Side::At => transpose_product(n, d, l, |range, acc| {
                let mut buf = vec![0f64; block.min(range.len()) * d];
                let mut acc = MatMut::from_row_major_slice_mut(acc, d, l);
                for r0 in range.clone().step_by(block) {
                    let count = block.min(range.end - r0);
                    let xc = centre_block(points, &mean, r0, count, &mut buf);
                    matmul(
                        acc.rb_mut(),
                        Accum::Add,
                        xc.transpose(),
                        x.as_ref().subrows(r0, count),
                        1.0,
                        Par::Seq,
                    );
                }
            }),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_distr::{Distribution, StandardNormal};

    /// n × d points with a decaying spectrum on a large offset: factor f has scale
    /// 10 / 1.5^f along a random direction, plus noise of std 0.1, all around 1000.
    fn decaying(n: usize, d: usize, seed: u64) -> Points {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let factors = 12.min(d);
        let dirs: Vec<Vec<f64>> = (0..factors)
            .map(|_| (0..d).map(|_| StandardNormal.sample(&mut rng)).collect())
            .collect();
        let mut data = Vec::with_capacity(n * d);
        for _ in 0..n {
            let w: Vec<f64> = (0..factors)
                .map(|f| {
                    let z: f64 = StandardNormal.sample(&mut rng);
                    z * 10.0 / 1.5f64.powi(f as i32)
                })
                .collect();
            let mut row = vec![1000.0f64; d];
            for (wf, dir) in w.iter().zip(&dirs) {
                row.iter_mut().zip(dir).for_each(|(r, v)| *r += wf * v);
            }
            for r in row {
                data.push((r + 0.1 * rng.random_range(-1.0..1.0)) as f32);
            }
        }
        Points::new(n, d, data)
    }

    #[test]
    fn agrees_with_the_exact_pca() {
        // Wider than the points, and narrower: blocks of one row and of many.
        for (n, d) in [(150usize, 400usize), (900, 60)] {
            let p = decaying(n, d, n as u64);
            let m = 6;
            let want = super::super::pca::Pca::fit(&p, m)
                .unwrap()
                .transform(&p)
                .unwrap();
            let got = wide_pca(&p, m).unwrap();
            assert_eq!((got.n, got.d), (n, m));
            for c in 0..m {
                let (mut num, mut den) = (0f64, 0f64);
                for i in 0..n {
                    let (g, w) = (got.data[i * m + c] as f64, want.data[i * m + c] as f64);
                    num += (g - w) * (g - w);
                    den += w * w;
                }
                let err = (num / den).sqrt();
                assert!(err < 1e-4, "{n} × {d}, component {c}: relative error {err}");
            }
        }
    }

    #[test]
    fn same_scores_on_any_thread_count() {
        let p = decaying(300, 80, 5);
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert_eq!(
            one.install(|| wide_pca(&p, 5).unwrap()),
            wide_pca(&p, 5).unwrap()
        );
    }
}
