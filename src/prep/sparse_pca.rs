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
//! Memory: O((n + d)·l) doubles besides the matrix; time O(nnz · l · (2q + 2)). With q = 4
//! the scores agree with the dense eigen-decomposition's ([`super::pca`]) to f32 rounding on
//! a spectrum that decays as expression data's does (the test below).

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
/// Rows per parallel task in the sparse products.
const ROWS_PER_TASK: usize = 4096;

/// The top `m` principal-component scores of the rows of `a` (n × m, columns by decreasing
/// variance, each axis signed so that its largest-magnitude loading is positive), computed
/// from the sparse matrix; `seed` fixes the random start, so equal inputs give equal outputs
/// on any number of threads.
pub fn sparse_pca(a: &CsrPoints, m: usize, seed: u64) -> Result<Points> {
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
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let omega = Mat::<f64>::from_fn(d, l, |_, _| StandardNormal.sample(&mut rng));
    let mut q = orthonormal(times(a, &mean, &omega));
    for _ in 0..POWER_ITERS {
        let z = orthonormal(transpose_times(a, &mean, &q));
        q = orthonormal(times(a, &mean, &z));
    }
    // Bᵀ = A_cᵀ Q (d × l); B = Û Σ Vᵀ ⇔ Bᵀ = V Σ Ûᵀ.
    let bt = transpose_times(a, &mean, &q);
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

/// $A_c X = A X - \mathbf{1}(\mu^\top X)$ for X (d × l): n × l.
fn times(a: &CsrPoints, mean: &[f64], x: &Mat<f64>) -> Mat<f64> {
    let l = x.ncols();
    let shift: Vec<f64> = (0..l)
        .map(|c| (0..a.d).map(|r| mean[r] * x[(r, c)]).sum())
        .collect();
    // Row-major n × l, filled in parallel by rows, then copied into faer's column-major Mat.
    let mut rows = vec![0f64; a.n * l];
    rows.par_chunks_mut(ROWS_PER_TASK * l)
        .enumerate()
        .for_each(|(t, block)| {
            for (k, out) in block.chunks_mut(l).enumerate() {
                out.copy_from_slice(&shift);
                out.iter_mut().for_each(|o| *o = -*o);
                for (j, v) in a.row(t * ROWS_PER_TASK + k) {
                    let v = v as f64;
                    for (c, o) in out.iter_mut().enumerate() {
                        *o += v * x[(j, c)];
                    }
                }
            }
        });
    Mat::from_fn(a.n, l, |i, c| rows[i * l + c])
}

/// $A_c^\top Y = A^\top Y - \mu(\mathbf{1}^\top Y)$ for Y (n × l): d × l. Tasks of rows each
/// sum into a d × l block of their own; the blocks are added in task order (the same result
/// on any number of threads).
fn transpose_times(a: &CsrPoints, mean: &[f64], y: &Mat<f64>) -> Mat<f64> {
    let (d, l) = (a.d, y.ncols());
    let tasks = a.n.div_ceil(ROWS_PER_TASK);
    let partial: Vec<Vec<f64>> = (0..tasks)
        .into_par_iter()
        .map(|t| {
            let mut acc = vec![0f64; d * l];
            for i in t * ROWS_PER_TASK..((t + 1) * ROWS_PER_TASK).min(a.n) {
                for (j, v) in a.row(i) {
                    let v = v as f64;
                    let out = &mut acc[j * l..(j + 1) * l];
                    for (c, o) in out.iter_mut().enumerate() {
                        *o += v * y[(i, c)];
                    }
                }
            }
            acc
        })
        .collect();
    let col_sums: Vec<f64> = (0..l).map(|c| (0..a.n).map(|i| y[(i, c)]).sum()).collect();
    let mut total = vec![0f64; d * l];
    for p in &partial {
        total.iter_mut().zip(p).for_each(|(t, v)| *t += v);
    }
    Mat::from_fn(d, l, |j, c| total[j * l + c] - mean[j] * col_sums[c])
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
