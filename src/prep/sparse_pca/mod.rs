//! PCA of a sparse matrix without densifying it: randomised range finding with power
//! iterations (Halko, Martinsson & Tropp 2011, Alg. 4.4 and 5.1), the centring kept implicit.
//!
//! A single-cell matrix of 100k cells × 30,000 genes is 12 GB dense and its covariance
//! 7.2 GB; as CSR it is a few hundred MB. Only products with the sparse A are needed:
//! with μ the column means and 1 the all-ones vector,
//!
//! $A_c X = A X - \mathbf{1}(\mu^\top X)$, $\quad A_c^\top Y = A^\top Y - \mu(\mathbf{1}^\top Y)$.
//!
//! The randomised method ([`super::randomised`]) needs only products with the centred
//! matrix, and each is a sparse product plus a rank-one correction.
//!
//! The products are the only steps that touch A: [`sparse_pca`] runs them on the host,
//! [`gpu::sparse_pca_gpu`] on the device (the rest is shared); both sum in an order that
//! does not depend on the thread count.
//!
//! Memory: O((n + 16 d)·l) doubles besides the matrix (the device keeps Aᵀ in CSR too);
//! time O(nnz · l · (2q + 2)). The scores agree with the dense eigen-decomposition's
//! ([`super::pca`]) to f32 rounding on a spectrum that decays as expression data's does
//! (the test below).

pub mod gpu;

use faer::Mat;
use rayon::prelude::*;

use super::randomised::{randomised_pca, transpose_product};
pub(crate) use super::randomised::{row_major, Side};
use crate::{CsrPoints, Points, Result};

/// The top `m` principal-component scores of the rows of `a` (n × m, columns by decreasing
/// variance, each axis signed so that its largest-magnitude loading is positive), computed
/// from the sparse matrix on the host; `seed` fixes the random start, so equal inputs give
/// equal outputs on any number of threads.
pub fn sparse_pca(a: &CsrPoints, m: usize, seed: u64) -> Result<Points> {
    randomised(a, m, seed, |side, x| {
        Ok(match side {
            Side::A => csr_times(a, x),
            Side::At => csr_transpose_times(a, x),
        })
    })
}

/// The method of the module doc around `product(side, x)`, the uncentred sparse product
/// on the host or the device; the centring's rank-one corrections are applied here.
pub(crate) fn randomised(
    a: &CsrPoints,
    m: usize,
    seed: u64,
    mut product: impl FnMut(Side, &Mat<f64>) -> Result<Mat<f64>>,
) -> Result<Points> {
    let d = a.d;
    let mean = column_means(a);
    let centred = |side, x: &Mat<f64>| -> Result<Mat<f64>> {
        let mut out = product(side, x)?;
        for c in 0..x.ncols() {
            match side {
                // A_c X = A X − 1 (μᵀ X)
                Side::A => {
                    let shift: f64 = (0..d).map(|r| mean[r] * x[(r, c)]).sum();
                    out.col_mut(c).iter_mut().for_each(|v| *v -= shift);
                }
                // A_cᵀ Y = Aᵀ Y − μ (1ᵀ Y)
                Side::At => {
                    let sum: f64 = x.col(c).iter().sum();
                    for (v, mu) in out.col_mut(c).iter_mut().zip(&mean) {
                        *v -= mu * sum;
                    }
                }
            }
        }
        Ok(out)
    };
    randomised_pca(a.n, d, m, seed, centred)
}

/// Column means of `a` in f64.
fn column_means(a: &CsrPoints) -> Vec<f64> {
    let mut sums = vec![0f64; a.d];
    for (&j, &v) in a.indices.iter().zip(&a.data) {
        sums[j as usize] += v as f64;
    }
    sums.iter_mut().for_each(|s| *s /= a.n as f64);
    sums
}

/// A X for A in CSR (rows × cols) and X (cols × l): rows × l, each row summed in stored
/// order on one thread (the same result on any number of threads). X is copied to
/// row-major first, so that each stored entry reads one contiguous row of it.
fn csr_times(a: &CsrPoints, x: &Mat<f64>) -> Mat<f64> {
    let l = x.ncols();
    let x_rows = row_major(x);
    let mut rows = vec![0f64; a.n * l];
    rows.par_chunks_mut(l.max(1))
        .enumerate()
        .for_each(|(i, out)| {
            for (j, v) in a.row(i) {
                let v = v as f64;
                for (o, xv) in out.iter_mut().zip(&x_rows[j * l..(j + 1) * l]) {
                    *o += v * xv;
                }
            }
        });
    Mat::from_fn(a.n, l, |i, c| rows[i * l + c])
}

/// Aᵀ Y for A in CSR (rows × cols) and Y (rows × l): cols × l. Each group of rows
/// scatters `v · Y[i]` into a partial Aᵀ Y of its own ([`transpose_product`]). (A gather
/// over the CSR of Aᵀ would read Y, n × l, at random: memory-bound, several times slower on
/// the host.)
fn csr_transpose_times(a: &CsrPoints, y: &Mat<f64>) -> Mat<f64> {
    let l = y.ncols();
    let y_rows = row_major(y);
    transpose_product(a.n, a.d, l, |rows, acc| {
        for i in rows {
            let yi = &y_rows[i * l..(i + 1) * l];
            for (j, v) in a.row(i) {
                let v = v as f64;
                for (o, yv) in acc[j * l..(j + 1) * l].iter_mut().zip(yi) {
                    *o += v * yv;
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_distr::{Distribution, StandardNormal};

    fn sample(rng: &mut rand::rngs::StdRng) -> f64 {
        StandardNormal.sample(rng)
    }

    /// A sparse matrix with a clearly decaying spectrum, as expression data has: factor f
    /// lives on its own block of 10 columns with scale 10 / 1.6^f, each row carries a
    /// factor with probability 0.4, plus sparse noise; about 15 % of the entries stored.
    pub(super) fn low_rank_sparse(n: usize, d: usize, seed: u64) -> CsrPoints {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let factors = (d / 10).min(10);
        let mut indptr = vec![0u64];
        let (mut indices, mut data) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let mut row = vec![0f64; d];
            for f in 0..factors {
                if rng.random::<f64>() < 0.4 {
                    let w = sample(&mut rng) * 10.0 / 1.6f64.powi(f as i32);
                    for (c, v) in row[f * 10..(f + 1) * 10].iter_mut().enumerate() {
                        *v += w * (1.0 + c as f64 / 10.0);
                    }
                }
            }
            for v in row.iter_mut() {
                if rng.random::<f64>() < 0.05 {
                    *v += 0.1 * sample(&mut rng);
                }
            }
            for (j, &v) in row.iter().enumerate() {
                if v != 0.0 {
                    indices.push(j as u32);
                    data.push(v as f32);
                }
            }
            indptr.push(indices.len() as u64);
        }
        CsrPoints {
            n,
            d,
            indptr,
            indices,
            data,
        }
    }

    #[test]
    fn agrees_with_the_dense_pca() {
        let a = low_rank_sparse(600, 120, 1);
        let m = 6;
        let sparse = sparse_pca(&a, m, 7).unwrap();
        let dense = super::super::pca(&a.to_dense(), m).unwrap();
        assert_eq!((sparse.n, sparse.d), (600, m));
        for c in 0..m {
            let (mut num, mut den) = (0f64, 0f64);
            for i in 0..a.n {
                let (s, e) = (sparse.data[i * m + c] as f64, dense.data[i * m + c] as f64);
                num += (s - e) * (s - e);
                den += e * e;
            }
            assert!(
                (num / den).sqrt() < 1e-5,
                "component {c}: relative error {}",
                (num / den).sqrt()
            );
        }
    }

    #[test]
    fn same_seed_same_scores_on_any_thread_count() {
        let a = low_rank_sparse(300, 40, 2);
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let a1 = one.install(|| sparse_pca(&a, 5, 3).unwrap());
        let a2 = sparse_pca(&a, 5, 3).unwrap();
        assert_eq!(a1, a2);
    }

    #[test]
    fn bad_sizes_are_errors() {
        let a = low_rank_sparse(10, 4, 3);
        assert!(sparse_pca(&a, 0, 0).is_err());
        assert!(sparse_pca(&a, 5, 0).is_err());
    }
}
