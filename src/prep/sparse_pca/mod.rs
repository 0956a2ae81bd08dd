//! PCA of a sparse matrix without densifying it: randomised range finding with power
//! iterations (Halko, Martinsson & Tropp 2011, Alg. 4.4 and 5.1), the centring kept implicit.
//!
//! A single-cell matrix of 100k cells × 30,000 genes is 12 GB dense and its covariance
//! 7.2 GB; as CSR it is a few hundred MB. Only products with the sparse A are needed:
//! with μ the column means and 1 the all-ones vector,
//!
//! $A_c X = A X - \mathbf{1}(\mu^\top X)$, $\quad A_c^\top Y = A^\top Y - \mu(\mathbf{1}^\top Y)$.
//!
//! 1. Ω: d × l Gaussian (l = m + 10), Y = A_c Ω, Q = qr(Y).
//! 2. q times: Z = qr(A_cᵀ Q), Q = qr(A_c Z) (power iterations sharpen the decay of the
//!    spectrum; re-orthonormalising each step keeps the small directions in f64's reach).
//! 3. B = Qᵀ A_c (l × d, small), thin SVD B = Û Σ Vᵀ. The axes are V's first m columns,
//!    variances σ²/(n − 1), scores A_c V_m = Q Û_m Σ_m.
//!
//! The products are the only steps that touch A: [`sparse_pca`] runs them on the host,
//! [`gpu::sparse_pca_gpu`] on the device (the rest is shared); both sum in an order that
//! does not depend on the thread count.
//!
//! Memory: O((n + 16 d)·l) doubles besides the matrix (the device keeps Aᵀ in CSR too);
//! time O(nnz · l · (2q + 2)). With q = 4
//! the scores agree with the dense eigen-decomposition's ([`super::pca`]) to f32 rounding on
//! a spectrum that decays as expression data's does (the test below).

pub mod gpu;

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

use super::pca::fix_sign;
use crate::{CsrPoints, Error, Points, Result};

/// Extra directions searched beyond the m kept (Halko et al. §4.2: 5–10 suffice).
const OVERSAMPLE: usize = 10;
/// Power iterations.
const POWER_ITERS: usize = 4;

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

/// Which product a step needs: A X (n × l, X is d × l) or Aᵀ Y (d × l, Y is n × l).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    A,
    At,
}

/// The method of the module doc around `product(side, x)`, the uncentred sparse product
/// on the host or the device; the centring's rank-one corrections are applied here.
pub(crate) fn randomised(
    a: &CsrPoints,
    m: usize,
    seed: u64,
    mut product: impl FnMut(Side, &Mat<f64>) -> Result<Mat<f64>>,
) -> Result<Points> {
    let (n, d) = (a.n, a.d);
    if m == 0 || m > d {
        return Err(Error::param(
            "pca",
            format!("cannot keep {m} axes of {d}-dimensional data"),
        ));
    }
    if n < 2 {
        return Err(Error::Data(format!("PCA of {n} points")));
    }
    let l = (m + OVERSAMPLE).min(d).min(n);
    let mean = column_means(a);
    let mut centred = |side, x: &Mat<f64>| -> Result<Mat<f64>> {
        let mut out = product(side, x)?;
        for c in 0..l {
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
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let omega = Mat::<f64>::from_fn(d, l, |_, _| StandardNormal.sample(&mut rng));
    let mut q = orthonormal(centred(Side::A, &omega)?);
    for _ in 0..POWER_ITERS {
        let z = orthonormal(centred(Side::At, &q)?);
        q = orthonormal(centred(Side::A, &z)?);
    }
    // Bᵀ = A_cᵀ Q (d × l); B = Û Σ Vᵀ ⇔ Bᵀ = V Σ Ûᵀ.
    let bt = centred(Side::At, &q)?;
    let svd = bt
        .thin_svd()
        .map_err(|e| Error::Data(format!("sparse PCA: SVD failed: {e:?}")))?;
    let (v, s, u_hat) = (svd.U(), svd.S().column_vector(), svd.V());
    // Scores = Q Û_m Σ_m, with each axis's sign fixed (a flipped axis flips its scores).
    let mut coef = Mat::<f64>::zeros(l, m);
    for c in 0..m {
        let mut axis: Vec<f64> = (0..d).map(|r| v[(r, c)]).collect();
        let flip = if fix_sign(&mut axis) { -1.0 } else { 1.0 };
        for r in 0..l {
            coef[(r, c)] = u_hat[(r, c)] * s[c] * flip;
        }
    }
    let mut scores = Mat::<f64>::zeros(n, m);
    matmul(
        scores.as_mut(),
        Accum::Replace,
        q.as_ref(),
        coef.as_ref(),
        1.0,
        Par::rayon(0),
    );
    let mut out = vec![0f32; n * m];
    out.par_chunks_mut(m).enumerate().for_each(|(i, row)| {
        for (c, o) in row.iter_mut().enumerate() {
            *o = scores[(i, c)] as f32;
        }
    });
    Ok(Points::new(n, m, out))
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

/// The thin Q of `y`'s QR decomposition: an orthonormal basis of its columns.
fn orthonormal(y: Mat<f64>) -> Mat<f64> {
    y.qr().compute_thin_Q()
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

/// Row blocks of the transposed product: a fixed number, so that the sums do not depend on
/// the thread count; each holds a d × l partial sum (230 MB at d = 30,000, l = 60).
const TRANSPOSE_BLOCKS: usize = 16;

/// Aᵀ Y for A in CSR (rows × cols) and Y (rows × l): cols × l. Each block of rows scatters
/// `v · Y[i]` into a partial Aᵀ Y of its own, which stays in cache (d × l), while Y streams
/// once; the partials are added in block order. (A gather over the CSR of Aᵀ would read Y,
/// n × l, at random: memory-bound, several times slower on the host.)
fn csr_transpose_times(a: &CsrPoints, y: &Mat<f64>) -> Mat<f64> {
    let l = y.ncols();
    let y_rows = row_major(y);
    let per_block = a.n.div_ceil(TRANSPOSE_BLOCKS).max(1);
    let partial: Vec<Vec<f64>> = (0..TRANSPOSE_BLOCKS)
        .into_par_iter()
        .map(|b| {
            let mut acc = vec![0f64; a.d * l];
            for i in b * per_block..((b + 1) * per_block).min(a.n) {
                let yi = &y_rows[i * l..(i + 1) * l];
                for (j, v) in a.row(i) {
                    let v = v as f64;
                    for (o, yv) in acc[j * l..(j + 1) * l].iter_mut().zip(yi) {
                        *o += v * yv;
                    }
                }
            }
            acc
        })
        .collect();
    let mut total = vec![0f64; a.d * l];
    for p in &partial {
        total.iter_mut().zip(p).for_each(|(t, v)| *t += v);
    }
    Mat::from_fn(a.d, l, |j, c| total[j * l + c])
}

/// The values of `x` row by row.
pub(crate) fn row_major(x: &Mat<f64>) -> Vec<f64> {
    let l = x.ncols();
    let mut out = vec![0f64; x.nrows() * l];
    for c in 0..l {
        for (r, &v) in x.col(c).iter().enumerate() {
            out[r * l + c] = v;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

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
