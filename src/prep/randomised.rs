//! Randomised PCA: range finding with power iterations and a small SVD (Halko, Martinsson
//! & Tropp 2011, Alg. 4.4 and 5.1), around products with the centred n × d data A_c that
//! the caller computes as its storage allows: the sparse PCA with the centring kept
//! implicit ([`super::sparse_pca`], on the host or the device), the PCA of wide dense data
//! block by block ([`super::wide_pca`]). Nothing of size d × d is formed.
//!
//! 1. Ω: d × l Gaussian (l = m + 10), Y = A_c Ω, Q = qr(Y).
//! 2. q times: Z = qr(A_cᵀ Q), Q = qr(A_c Z) (power iterations sharpen the decay of the
//!    spectrum; re-orthonormalising each step keeps the small directions in f64's reach).
//! 3. B = Qᵀ A_c (l × d, small), thin SVD B = Û Σ Vᵀ. The axes are V's first m columns,
//!    variances σ²/(n − 1), scores A_c V_m = Q Û_m Σ_m.
//!
//! Memory besides the data: O((n + d)·l) doubles. Time: 2q + 2 products of A_c with l
//! columns. With q = 4 the scores agree with the exact eigen-decomposition's
//! ([`super::pca::Pca`]) to f32 rounding on a spectrum that decays as real data's does
//! (the tests of both callers).

use std::ops::Range;

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

use super::pca::fix_sign;
use crate::{Error, Points, Result};

/// Extra directions searched beyond the m kept (Halko et al. §4.2: 5–10 suffice).
const OVERSAMPLE: usize = 10;
/// Power iterations.
const POWER_ITERS: usize = 4;

/// Which product a step needs: A_c X (n × l, X is d × l) or A_cᵀ Y (d × l, Y is n × l).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    A,
    At,
}

/// The top `m` principal-component scores of the n × d data whose centred products
/// `centred(side, x)` computes (see [`Side`]): n × m, columns by decreasing variance, each
/// axis signed so that its largest-magnitude loading is positive. `seed` fixes Ω, so equal
/// products give equal scores.
pub(crate) fn randomised_pca(
    n: usize,
    d: usize,
    m: usize,
    seed: u64,
    mut centred: impl FnMut(Side, &Mat<f64>) -> Result<Mat<f64>>,
) -> Result<Points> {
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
        .map_err(|e| Error::Data(format!("randomised PCA: SVD failed: {e:?}")))?;
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

/// The thin Q of `y`'s QR decomposition: an orthonormal basis of its columns.
fn orthonormal(y: Mat<f64>) -> Mat<f64> {
    y.qr().compute_thin_Q()
}

/// Groups of rows of a transposed product: a fixed number, so that the sums do not depend
/// on the thread count; each holds a d × l partial sum (230 MB at d = 30,000, l = 60).
const TRANSPOSE_GROUPS: usize = 16;

/// Aᵀ Y (d × l) for an n-row A, summed as `TRANSPOSE_GROUPS` groups of consecutive rows:
/// `add(rows, acc)` adds rows `rows` of A's contribution into `acc`, row-major d × l. The
/// groups run in parallel, each in cache while Y streams once, and are added in order: the
/// same result on any number of threads.
pub(crate) fn transpose_product(
    n: usize,
    d: usize,
    l: usize,
    add: impl Fn(Range<usize>, &mut [f64]) + Sync,
) -> Mat<f64> {
    let per_group = n.div_ceil(TRANSPOSE_GROUPS).max(1);
    let partial: Vec<Vec<f64>> = (0..TRANSPOSE_GROUPS)
        .into_par_iter()
        .map(|g| {
            let mut acc = vec![0f64; d * l];
            let rows = (g * per_group).min(n)..((g + 1) * per_group).min(n);
            if !rows.is_empty() {
                add(rows, &mut acc);
            }
            acc
        })
        .collect();
    let mut total = vec![0f64; d * l];
    for p in &partial {
        total.iter_mut().zip(p).for_each(|(t, v)| *t += v);
    }
    Mat::from_fn(d, l, |j, c| total[j * l + c])
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
