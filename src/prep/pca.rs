//! PCA by eigen-decomposition of the covariance matrix.
//!
//! Step 1: mean μ (f64). Step 2: covariance $C = X_c^\top X_c / (n-1)$ by GEMM over blocks of
//! rows centred into f64 (f64 products and accumulation: no loss with large n or offsets).
//! Step 3: symmetric eigen-decomposition of the d × d matrix C (faer), top m axes by
//! eigenvalue, signs fixed. Step 4: scores $X_c V_m$ block by block, stored as f32.
//!
//! Cost: O(n d²) for C plus O(d³) for the eigen-decomposition; memory O(G d² + T B d) for
//! G groups of blocks of B rows on T threads, never a second n × d copy.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatMut, MatRef, Par, Side};
use rayon::prelude::*;

use super::wide_pca::{wide_pca, EXACT_MAX_D};
use crate::{Error, Points, Result};

/// Rows per block in the covariance and projection passes (B · d · 8 bytes ≈ 12 MiB at d = 784).
const BLOCK: usize = 2048;
/// At most this many groups of blocks sum the covariance in parallel.
const MAX_GROUPS: usize = 32;
/// Memory for the groups' d × d sums: fewer groups for wide data.
const GROUP_BYTES: usize = 256 << 20;

/// Groups of row blocks for the covariance pass: one sum of d × d f64 each. Each block's
/// product is small (d × B × d), so blocks run one per thread rather than each split over
/// all threads: 1.3M × 50 on 2 cores took 0.47 s that way, 0.17 s this way.
fn covariance_groups(nblocks: usize, d: usize) -> usize {
    let by_memory = GROUP_BYTES / (8 * d * d).max(1);
    MAX_GROUPS.min(by_memory).min(nblocks).max(1)
}

/// A fitted PCA: mean and the top principal axes.
///
/// # Invariants
/// - `mean.len() == d`, `axes.len() == m * d`, `variances.len() == m`, 1 ≤ m ≤ d
/// - axes are orthonormal; `variances` are non-increasing
/// - the largest-magnitude entry of every axis is positive (first one on ties)
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Pca {
    /// Input dimension.
    pub d: usize,
    /// Number of axes kept.
    pub m: usize,
    /// Feature means of the fitted data.
    pub mean: Vec<f64>,
    /// Principal axes, row-major m × d (axis a is `axes[a * d..(a + 1) * d]`).
    pub axes: Vec<f64>,
    /// Variance along each axis (the covariance eigenvalues, clamped at 0), decreasing.
    pub variances: Vec<f64>,
    /// Total variance, the trace of the covariance (so `variances / total_variance` is the
    /// explained fraction).
    pub total_variance: f64,
}

/// Centres `points` and projects them on their top `m` principal axes: n × m scores, columns
/// by decreasing variance, signs deterministic (see [`Pca`]). Above 2,048 features by the
/// randomised method (`prep/wide_pca.rs`), whose memory grows with n·d rather than d².
///
/// Errors: `m == 0` or `m > d` ([`Error::Param`]); no points, or non-finite values
/// ([`Error::Data`]).
pub fn pca(points: &Points, m: usize) -> Result<Points> {
    if points.d > EXACT_MAX_D {
        return wide_pca(points, m);
    }
    Pca::fit(points, m)?.transform(points)
}

/// The checks every PCA path makes before touching the data: shapes, `1 ≤ m ≤ d`, at least
/// one point, finite values.
pub(crate) fn validate(points: &Points, m: usize) -> Result<()> {
    let (n, d) = (points.n, points.d);
    if points.data.len() != n * d {
        return Err(Error::Data(format!(
            "points hold {} values, expected n·d = {n}·{d}",
            points.data.len()
        )));
    }
    if m == 0 {
        return Err(Error::param("m", "must be at least 1"));
    }
    if m > d {
        return Err(Error::param(
            "m",
            format!("cannot keep {m} axes of {d}-dimensional data"),
        ));
    }
    if n == 0 {
        return Err(Error::Data("PCA of zero points".into()));
    }
    if points.data.par_iter().any(|x| !x.is_finite()) {
        return Err(Error::Data("PCA input holds non-finite values".into()));
    }
    Ok(())
}

impl Pca {
    /// Fits the mean and top `m` axes of `points` (same errors as [`pca`]).
    pub fn fit(points: &Points, m: usize) -> Result<Pca> {
        validate(points, m)?;
        // Step 1: mean.
        Pca::fit_about(points, m, column_means(points))
    }

    /// The top `m` axes of the uncentred second moment $X^\top X$ (a truncated SVD of X; the
    /// fitted mean is zero, so [`Pca::transform`] projects without centring). Of all rank-m
    /// projections it keeps the inner products $x \cdot y$ best (Eckart–Young on the Gram
    /// matrix $X X^\top$), which centring would change: the PCA for `--metric
    /// inner-product`. `variances` are then second moments along the axes.
    pub fn fit_uncentred(points: &Points, m: usize) -> Result<Pca> {
        validate(points, m)?;
        Pca::fit_about(points, m, vec![0.0; points.d])
    }

    /// The axes of the scatter of `points` about `mean`.
    fn fit_about(points: &Points, m: usize, mean: Vec<f64>) -> Result<Pca> {
        let (n, d) = (points.n, points.d);

        // Step 2: covariance, accumulated block by block in f64: groups of consecutive blocks
        // in parallel, each summed on one thread, then the groups' sums in order (the same
        // result on any number of threads).
        let nblocks = n.div_ceil(BLOCK);
        let groups = covariance_groups(nblocks, d);
        let per_group = nblocks.div_ceil(groups);
        let par = if groups == 1 { Par::rayon(0) } else { Par::Seq };
        let partial: Vec<Mat<f64>> = (0..groups)
            .into_par_iter()
            .map(|g| {
                let mut cov = Mat::<f64>::zeros(d, d);
                let mut buf = vec![0f64; BLOCK.min(n) * d];
                for b in g * per_group..((g + 1) * per_group).min(nblocks) {
                    let r0 = b * BLOCK;
                    let rows = BLOCK.min(n - r0);
                    let xc = centre_block(points, &mean, r0, rows, &mut buf);
                    matmul(cov.as_mut(), Accum::Add, xc.transpose(), xc, 1.0, par);
                }
                cov
            })
            .collect();
        let mut cov = Mat::<f64>::zeros(d, d);
        for p in &partial {
            cov += p;
        }
        Pca::from_covariance(cov, mean, n, m)
    }

    /// The top `m` axes of the scatter matrix `cov` = Σ (x − μ)(x − μ)ᵀ of n points with mean
    /// `mean` (d × d, f64): eigen-decomposition (faer, eigenvalues ascending), signs fixed.
    /// Shared by [`Pca::fit`] and the GPU's PCA, which forms `cov` with cuBLAS.
    pub fn from_covariance(cov: Mat<f64>, mean: Vec<f64>, n: usize, m: usize) -> Result<Pca> {
        let d = cov.nrows();
        let denom = (n.max(2) - 1) as f64;
        let total_variance = (0..d).map(|l| cov[(l, l)]).sum::<f64>() / denom;
        let evd = cov
            .self_adjoint_eigen(Side::Lower)
            .map_err(|e| Error::Data(format!("PCA eigen-decomposition failed: {e:?}")))?;
        let u = evd.U();
        let s = evd.S().column_vector();
        let mut axes = vec![0f64; m * d];
        let mut variances = vec![0f64; m];
        for a in 0..m {
            let c = d - 1 - a;
            variances[a] = (s[c] / denom).max(0.0);
            let axis = &mut axes[a * d..(a + 1) * d];
            for (l, v) in axis.iter_mut().enumerate() {
                *v = u[(l, c)];
            }
            fix_sign(axis);
        }
        Ok(Pca {
            d,
            m,
            mean,
            axes,
            variances,
            total_variance,
        })
    }

    /// Scores of `points` on the fitted axes: $(x - μ) V_m$, n × m.
    pub fn transform(&self, points: &Points) -> Result<Points> {
        let (n, d, m) = (points.n, points.d, self.m);
        if d != self.d {
            return Err(Error::Data(format!(
                "PCA fitted on {} features, given {d}",
                self.d
            )));
        }
        // V as a d × m matrix (column a = axis a).
        let v = MatRef::from_column_major_slice(&self.axes, d, m);
        let mut out = vec![0f32; n * m];
        out.par_chunks_mut(BLOCK * m.max(1))
            .enumerate()
            .for_each_init(
                || (vec![0f64; BLOCK.min(n) * d], vec![0f64; BLOCK.min(n) * m]),
                |(buf, scores), (b, out)| {
                    let (r0, rows) = (b * BLOCK, out.len() / m.max(1));
                    let xc = centre_block(points, &self.mean, r0, rows, buf);
                    let sc = &mut scores[..rows * m];
                    // scores row-major rows × m = column-major m × rows = (Xc V)ᵀ = Vᵀ Xcᵀ
                    matmul(
                        MatMut::from_column_major_slice_mut(sc, m, rows),
                        Accum::Replace,
                        v.transpose(),
                        xc.transpose(),
                        1.0,
                        Par::Seq,
                    );
                    for (o, s) in out.iter_mut().zip(sc.iter()) {
                        *o = *s as f32;
                    }
                },
            );
        Ok(Points::new(n, m, out))
    }
}

/// Feature means in f64 (parallel over blocks of rows, fixed reduction order).
pub(super) fn column_means(points: &Points) -> Vec<f64> {
    let (n, d) = (points.n, points.d);
    let partial: Vec<Vec<f64>> = points
        .data
        .par_chunks(BLOCK * d.max(1))
        .map(|blk| {
            let mut s = vec![0f64; d];
            for row in blk.chunks_exact(d.max(1)) {
                for (a, &x) in s.iter_mut().zip(row) {
                    *a += x as f64;
                }
            }
            s
        })
        .collect();
    let mut mean = vec![0f64; d];
    for p in &partial {
        for (a, s) in mean.iter_mut().zip(p) {
            *a += s;
        }
    }
    for a in &mut mean {
        *a /= n as f64;
    }
    mean
}

/// Rows `r0..r0 + rows`, centred, into `buf` (on the calling thread: the passes run blocks
/// in parallel) as a row-major f64 matrix (rows × d).
pub(super) fn centre_block<'a>(
    points: &Points,
    mean: &[f64],
    r0: usize,
    rows: usize,
    buf: &'a mut [f64],
) -> MatRef<'a, f64> {
    let d = points.d;
    let dst = &mut buf[..rows * d];
    let src = &points.data[r0 * d..(r0 + rows) * d];
    for (o, x) in dst
        .chunks_exact_mut(d.max(1))
        .zip(src.chunks_exact(d.max(1)))
    {
        for ((o, &x), &mu) in o.iter_mut().zip(x).zip(mean) {
            *o = x as f64 - mu;
        }
    }
    MatRef::from_row_major_slice(&buf[..rows * d], rows, d)
}

/// Flips `axis` so that its largest-magnitude entry (the first on ties) is positive;
/// returns whether it flipped.
pub(crate) fn fix_sign(axis: &mut [f64]) -> bool {
    let mut best = 0;
    for (l, v) in axis.iter().enumerate() {
        if v.abs() > axis[best].abs() {
            best = l;
        }
    }
    let flip = axis.get(best).is_some_and(|&v| v < 0.0);
    if flip {
        for v in axis.iter_mut() {
            *v = -*v;
        }
    }
    flip
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};
    use rand_distr::{Distribution, Normal};

    /// Column variances of n × m scores, in f64.
    fn variances(s: &Points) -> Vec<f64> {
        (0..s.d)
            .map(|a| {
                let mu: f64 = (0..s.n).map(|i| s.row(i)[a] as f64).sum::<f64>() / s.n as f64;
                (0..s.n)
                    .map(|i| (s.row(i)[a] as f64 - mu).powi(2))
                    .sum::<f64>()
                    / (s.n - 1) as f64
            })
            .collect()
    }

    /// Points with anisotropic Gaussian spread: std 10, 5, 2, 1, 0.5 … along a random rotation.
    fn anisotropic(n: usize, d: usize, seed: u64) -> (Points, Vec<f64>) {
        let mut rng = StdRng::seed_from_u64(seed);
        let g = Normal::new(0.0f64, 1.0).unwrap();
        let stds: Vec<f64> = (0..d).map(|l| 10.0 / (1.0 + l as f64 * 1.5)).collect();
        // random orthonormal basis by Gram-Schmidt
        let mut q: Vec<Vec<f64>> = Vec::new();
        while q.len() < d {
            let mut v: Vec<f64> = (0..d).map(|_| g.sample(&mut rng)).collect();
            for u in &q {
                let p: f64 = v.iter().zip(u).map(|(a, b)| a * b).sum();
                v.iter_mut().zip(u).for_each(|(a, b)| *a -= p * b);
            }
            let nr = v.iter().map(|a| a * a).sum::<f64>().sqrt();
            v.iter_mut().for_each(|a| *a /= nr);
            q.push(v);
        }
        let mut data = Vec::with_capacity(n * d);
        for _ in 0..n {
            let z: Vec<f64> = stds.iter().map(|s| s * g.sample(&mut rng)).collect();
            for l in 0..d {
                data.push((3.0 + z.iter().zip(&q).map(|(za, qa)| za * qa[l]).sum::<f64>()) as f32);
            }
        }
        (Points::new(n, d, data), stds)
    }

    #[test]
    fn recovers_the_axis_of_a_noisy_line() {
        let mut rng = StdRng::seed_from_u64(3);
        let dir = [3.0f64, -4.0, 0.0, 12.0]; // norm 13
        let (n, d) = (2000usize, 4usize);
        let mut data = Vec::new();
        for _ in 0..n {
            let t: f64 = rng.random_range(-10.0..10.0);
            for &u in &dir {
                data.push((5.0 + t * u / 13.0 + rng.random_range(-0.05..0.05)) as f32);
            }
        }
        let p = Points::new(n, d, data);
        let f = Pca::fit(&p, 1).unwrap();
        // sign rule: the largest loading (12/13) is positive
        for (l, &u) in dir.iter().enumerate() {
            assert!((f.axes[l] - u / 13.0).abs() < 1e-3, "{:?}", f.axes);
        }
        let s = pca(&p, 1).unwrap();
        assert_eq!((s.n, s.d), (n, 1));
        // scores are the positions t along the line, centred
        let v = variances(&s)[0];
        assert!((v - 100.0 / 3.0).abs() < 3.0, "variance {v}");
    }

    #[test]
    fn scores_decrease_in_variance_and_axes_are_orthonormal() {
        for (n, d, m) in [(500usize, 6usize, 6usize), (3000, 12, 5), (40, 9, 3)] {
            let (p, stds) = anisotropic(n, d, n as u64);
            let f = Pca::fit(&p, m).unwrap();
            for a in 0..m {
                for b in 0..m {
                    let dot: f64 = (0..d).map(|l| f.axes[a * d + l] * f.axes[b * d + l]).sum();
                    let want = if a == b { 1.0 } else { 0.0 };
                    assert!((dot - want).abs() < 1e-10, "axes {a},{b}: {dot}");
                }
            }
            let s = pca(&p, m).unwrap();
            let v = variances(&s);
            assert!(v.windows(2).all(|w| w[0] >= w[1]), "{v:?}");
            for (a, (&va, &fa)) in v.iter().zip(&f.variances).enumerate() {
                assert!(
                    (va - fa).abs() <= 1e-4 * fa.max(1.0),
                    "axis {a}: {va} vs {fa}"
                );
            }
            if n >= 500 {
                // large samples: variances near the generating ones
                assert!((v[0].sqrt() - stds[0]).abs() < 0.1 * stds[0], "{v:?}");
            }
            // scores are uncorrelated
            for a in 0..m {
                for b in a + 1..m {
                    let c: f64 = (0..n)
                        .map(|i| s.row(i)[a] as f64 * s.row(i)[b] as f64)
                        .sum::<f64>()
                        / (n - 1) as f64;
                    assert!(c.abs() < 1e-4 * (v[a] * v[b]).sqrt() + 1e-9, "{a},{b}: {c}");
                }
            }
        }
    }

    #[test]
    fn signs_are_deterministic() {
        let (p, _) = anisotropic(800, 7, 9);
        let f = Pca::fit(&p, 7).unwrap();
        for a in 0..7 {
            let axis = &f.axes[a * 7..(a + 1) * 7];
            let big = axis
                .iter()
                .cloned()
                .fold(0.0f64, |m, v| if v.abs() > m.abs() { v } else { m });
            assert!(big > 0.0, "axis {a}: {axis:?}");
        }
        // negating the data flips nothing in the output's sign convention: the axes are the
        // same, and the scores are negated
        let neg = Points::new(p.n, p.d, p.data.iter().map(|x| -x).collect());
        let g = Pca::fit(&neg, 7).unwrap();
        for (x, y) in f.axes.iter().zip(&g.axes) {
            assert!((x - y).abs() < 1e-8);
        }
        let s1 = pca(&p, 3).unwrap();
        let s2 = pca(&p, 3).unwrap();
        assert_eq!(s1, s2);
    }

    #[test]
    fn degenerate_shapes() {
        // n < d, a constant column, m == d
        let mut rng = StdRng::seed_from_u64(1);
        let (n, d) = (5usize, 8usize);
        let mut data: Vec<f32> = (0..n * d).map(|_| rng.random_range(-1.0..1.0)).collect();
        for i in 0..n {
            data[i * d + 2] = 7.0;
        }
        let p = Points::new(n, d, data);
        let s = pca(&p, d).unwrap();
        assert_eq!((s.n, s.d), (n, d));
        assert!(s.data.iter().all(|x| x.is_finite()));
        let v = variances(&s);
        // rank ≤ n − 1 = 4: the last axes carry no variance
        assert!(v[4..].iter().all(|&x| x < 1e-10), "{v:?}");
        // a single point
        let one = Points::new(1, 3, vec![1.0, 2.0, 3.0]);
        assert_eq!(pca(&one, 2).unwrap().data, vec![0.0; 2]);
    }

    /// The uncentred PCA keeps inner products: on rank-3 data off the origin, three axes
    /// give back every x · y (to f32 rounding), where the centred PCA's scores change them;
    /// its mean is zero and its axes orthonormal.
    #[test]
    fn uncentred_pca_keeps_inner_products() {
        let mut rng = StdRng::seed_from_u64(12);
        let (n, d, m) = (200usize, 8usize, 3usize);
        let basis: Vec<f64> = (0..m * d).map(|_| rng.random_range(-1.0..1.0)).collect();
        let data: Vec<f32> = (0..n)
            .flat_map(|_| {
                let z: Vec<f64> = (0..m)
                    .map(|a| rng.random_range(0.5..2.0) + a as f64)
                    .collect();
                let basis = &basis;
                (0..d).map(move |l| (0..m).map(|a| z[a] * basis[a * d + l]).sum::<f64>() as f32)
            })
            .collect();
        let p = Points::new(n, d, data);
        let fit = Pca::fit_uncentred(&p, m).unwrap();
        assert!(fit.mean.iter().all(|&v| v == 0.0));
        let scores = fit.transform(&p).unwrap();
        let centred = Pca::fit(&p, m).unwrap().transform(&p).unwrap();
        let dot = |a: &[f32], b: &[f32]| -> f64 {
            a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum()
        };
        let mut centred_gap = 0f64;
        for i in 0..n {
            for j in (0..n).step_by(7) {
                let want = dot(p.row(i), p.row(j));
                let got = dot(scores.row(i), scores.row(j));
                assert!(
                    (got - want).abs() < 1e-4 * want.abs().max(1.0),
                    "({i}, {j}): {got} vs {want}"
                );
                centred_gap = centred_gap.max((dot(centred.row(i), centred.row(j)) - want).abs());
            }
        }
        assert!(
            centred_gap > 1.0,
            "centring should change inner products, by {centred_gap}"
        );
        for a in 0..m {
            for b in 0..m {
                let v: f64 = (0..d)
                    .map(|l| fit.axes[a * d + l] * fit.axes[b * d + l])
                    .sum();
                assert!((v - if a == b { 1.0 } else { 0.0 }).abs() < 1e-10);
            }
        }
    }

    #[test]
    fn bad_m_is_an_error() {
        let p = Points::new(4, 2, vec![0.0; 8]);
        assert!(matches!(pca(&p, 3), Err(Error::Param { name: "m", .. })));
        assert!(matches!(pca(&p, 0), Err(Error::Param { name: "m", .. })));
        assert!(pca(&p, 2).is_ok());
        let e = Points::new(0, 2, vec![]);
        assert!(matches!(pca(&e, 1), Err(Error::Data(_))));
    }
}
