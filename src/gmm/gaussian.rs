//! The components in the form the E-step evaluates: each covariance factored once per
//! iteration, then log π_k + log N(x | μ_k, Σ_k) for a block of samples.
//!
//! For a full Σ = L Lᵀ (Cholesky), the Mahalanobis term is ‖L⁻¹x − L⁻¹μ‖², so a block of
//! samples costs one d × d by d × b product per component (scikit-learn's
//! `precisions_cholesky_` is (L⁻¹)ᵀ, the same numbers); log det Σ^(−1/2) = −Σ log Lᵢᵢ.

use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::linalg::triangular_solve::solve_lower_triangular_in_place;
use faer::{Accum, Mat, MatMut, MatRef, Par, Side};

use super::{CovarianceType, Model, Real};

/// One component ready for the E-step.
struct Component<T> {
    mean: Vec<T>,
    shape: Shape<T>,
    /// log π_k + log det Σ_k^(−1/2) − (d/2) log 2π.
    log_norm: T,
}

enum Shape<T> {
    /// L⁻¹ (lower triangular) and L⁻¹μ.
    Full { inverse: Mat<T>, shift: Vec<T> },
    /// 1/σ_j per axis.
    Diag { scale: Vec<T> },
    /// 1/σ.
    Spherical { scale: T },
}

/// Every component of a model, factored.
pub(crate) struct Components<T> {
    d: usize,
    list: Vec<Component<T>>,
}

/// Times a covariance's floor is raised tenfold before the fit gives up on it.
pub(crate) const FLOOR_STEPS: usize = 30;

impl<T: Real> Components<T> {
    /// Factors each covariance of `model`. One that is not positive definite (its Cholesky
    /// factorisation fails: linearly dependent features and no `reg`, or values so large
    /// that `reg` is lost in rounding) gets its diagonal raised until it is, in `model`
    /// too, and `floors` counts it; `None` if even that fails (non-finite values).
    pub(crate) fn factor(model: &mut Model<T>, floors: &mut Floors) -> Option<Self> {
        floors.count_factorisation();
        let d = model.d;
        let len = model.covariance.len(d);
        let half_log_2pi = T::of(0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln());
        let mut list = Vec::with_capacity(model.k());
        for c in 0..model.k() {
            let mean = model.mean(c).to_vec();
            let cov = &mut model.covariances[c * len..(c + 1) * len];
            let (shape, log_det_half) = factor_one(model.covariance, d, cov, c, floors)?;
            let shape = match shape {
                Shape::Full { inverse, .. } => {
                    let mut shift = vec![T::zero(); d];
                    for (i, s) in shift.iter_mut().enumerate() {
                        for (j, &m) in mean.iter().enumerate().take(i + 1) {
                            *s += inverse[(i, j)] * m;
                        }
                    }
                    Shape::Full { inverse, shift }
                }
                other => other,
            };
            list.push(Component {
                log_norm: num_traits::Float::ln(model.weights[c]) + log_det_half - half_log_2pi,
                mean,
                shape,
            });
        }
        Some(Components { d, list })
    }

    /// Components (K).
    pub(crate) fn k(&self) -> usize {
        self.list.len()
    }

    /// log π_k + log N(x_i | μ_k, Σ_k) for the rows of `block` (b × d, row-major) into `out`
    /// (b × K, row-major); `scratch` is reused between calls.
    pub(crate) fn log_prob(&self, block: &[T], out: &mut [T], scratch: &mut Vec<T>) {
        let d = self.d;
        let b = block.len() / d;
        let k = self.k();
        let half = T::of(0.5);
        for (c, comp) in self.list.iter().enumerate() {
            match &comp.shape {
                Shape::Full { inverse, shift } => {
                    // Rows of the block are columns of a d × b column-major view.
                    let x = MatRef::from_column_major_slice(block, d, b);
                    scratch.resize(d * b, T::zero());
                    let y = MatMut::from_column_major_slice_mut(scratch, d, b);
                    // L⁻¹ is lower triangular: half the flops of a full product.
                    triangular::matmul(
                        y,
                        BlockStructure::Rectangular,
                        Accum::Replace,
                        inverse.as_ref(),
                        BlockStructure::TriangularLower,
                        x,
                        BlockStructure::Rectangular,
                        T::one(),
                        Par::Seq,
                    );
                    for (i, col) in scratch.chunks_exact(d).enumerate() {
                        out[i * k + c] = comp.log_norm - half * squared_distance(col, shift);
                    }
                }
                Shape::Diag { scale } => {
                    for (i, row) in block.chunks_exact(d).enumerate() {
                        let q = scaled_squared_distance(row, &comp.mean, scale);
                        out[i * k + c] = comp.log_norm - half * q;
                    }
                }
                Shape::Spherical { scale } => {
                    let s2 = *scale * *scale;
                    for (i, row) in block.chunks_exact(d).enumerate() {
                        let q = squared_distance(row, &comp.mean);
                        out[i * k + c] = comp.log_norm - half * q * s2;
                    }
                }
            }
        }
    }
}

/// Partial sums a distance is split into: independent chains the compiler can keep in SIMD
/// lanes (one running sum is a chain of dependent adds that must stay in order).
const LANES: usize = 8;

/// Σ_j (a_j − b_j)².
pub(crate) fn squared_distance<T: Real>(a: &[T], b: &[T]) -> T {
    let mut acc = [T::zero(); LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..LANES {
            acc[l] += (x[l] - y[l]) * (x[l] - y[l]);
        }
    }
    let tail = ra
        .iter()
        .zip(rb)
        .fold(T::zero(), |s, (&x, &y)| s + (x - y) * (x - y));
    acc.iter().fold(tail, |s, &v| s + v)
}

/// Σ_j ((a_j − b_j) s_j)².
fn scaled_squared_distance<T: Real>(a: &[T], b: &[T], s: &[T]) -> T {
    let mut acc = [T::zero(); LANES];
    let (ca, cb, cs) = (
        a.chunks_exact(LANES),
        b.chunks_exact(LANES),
        s.chunks_exact(LANES),
    );
    let (ra, rb, rs) = (ca.remainder(), cb.remainder(), cs.remainder());
    for ((x, y), z) in ca.zip(cb).zip(cs) {
        for l in 0..LANES {
            let v = (x[l] - y[l]) * z[l];
            acc[l] += v * v;
        }
    }
    let tail = (0..ra.len()).fold(T::zero(), |t, j| {
        let v = (ra[j] - rb[j]) * rs[j];
        t + v * v
    });
    acc.iter().fold(tail, |t, &v| t + v)
}

/// Factors component `c`'s covariance `cov` (raising its floor where needed, with a note):
/// its E-step shape and log det Σ^(−1/2).
fn factor_one<T: Real>(
    kind: CovarianceType,
    d: usize,
    cov: &mut [T],
    c: usize,
    floors: &mut Floors,
) -> Option<(Shape<T>, T)> {
    let ln = num_traits::Float::ln;
    match kind {
        CovarianceType::Full => {
            let mut raised = T::zero();
            for step in 0..=FLOOR_STEPS {
                let a = Mat::from_fn(d, d, |i, j| cov[i * d + j]);
                if let Ok(llt) = a.llt(Side::Lower) {
                    let l = llt.L();
                    let mut inverse = Mat::<T>::identity(d, d);
                    solve_lower_triangular_in_place(l, inverse.as_mut(), Par::Seq);
                    let log_det_half = -(0..d).fold(T::zero(), |s, i| s + ln(l[(i, i)]));
                    if !num_traits::Float::is_finite(log_det_half) {
                        return None;
                    }
                    if step > 0 {
                        floors.record(c, raised.f64());
                    }
                    let shape = Shape::Full {
                        inverse,
                        shift: Vec::new(),
                    };
                    return Some((shape, log_det_half));
                }
                let delta = floor_step(cov, d, step)?;
                for i in 0..d {
                    cov[i * d + i] += delta;
                }
                raised += delta;
            }
            None
        }
        CovarianceType::Diag => {
            let (scale, log_det_half) = inverse_deviations(kind, d, cov, c, floors)?;
            Some((Shape::Diag { scale }, log_det_half))
        }
        CovarianceType::Spherical => {
            let (scale, log_det_half) = inverse_deviations(kind, d, cov, c, floors)?;
            Some((Shape::Spherical { scale: scale[0] }, log_det_half))
        }
    }
}

/// A diagonal or spherical covariance `cov` (d or 1 variances, each raised where it is not
/// positive): 1/σ per variance, and log det Σ^(−1/2); `None` when a variance is not finite.
pub(crate) fn inverse_deviations<T: Real>(
    kind: CovarianceType,
    d: usize,
    cov: &mut [T],
    c: usize,
    floors: &mut Floors,
) -> Option<(Vec<T>, T)> {
    let ln = num_traits::Float::ln;
    let sqrt = num_traits::Float::sqrt;
    let mut scale = Vec::with_capacity(cov.len());
    let mut log_det_half = T::zero();
    for v in cov.iter_mut() {
        raise_variance(v, c, floors)?;
        let s = T::one() / sqrt(*v);
        log_det_half += ln(s);
        scale.push(s);
    }
    if kind == CovarianceType::Spherical {
        log_det_half *= T::of(d as f64);
    }
    Some((scale, log_det_half))
}

/// The `step`-th raise of a full covariance's diagonal: 10^step · 1e-10 of its mean
/// diagonal (or of 1 where that is zero); `None` when the values are not finite.
pub(crate) fn floor_step<T: Real>(cov: &[T], d: usize, step: usize) -> Option<T> {
    let mean_diag = (0..d).map(|i| cov[i * d + i].f64()).sum::<f64>() / d as f64;
    if !mean_diag.is_finite() {
        return None;
    }
    let base = if mean_diag > 0.0 { mean_diag } else { 1.0 };
    Some(T::of(base * 1e-10 * 10f64.powi(step as i32)))
}

/// A variance that is not positive (a component on one value with `reg` 0) becomes the
/// smallest normal of `T` × 2⁵², counted in `floors`; `None` when it is not finite.
fn raise_variance<T: Real>(v: &mut T, c: usize, floors: &mut Floors) -> Option<()> {
    if !num_traits::Float::is_finite(*v) {
        return None;
    }
    if *v <= T::zero() {
        *v = T::min_positive_value() * T::of(2f64.powi(52));
        floors.record(c, v.f64());
    }
    Some(())
}

/// How often each component's covariance had to be raised to factor, and by how much at
/// most: one note per component at the end of a fit rather than one per iteration.
pub(crate) struct Floors {
    /// Per component: factorisations that raised it, and the largest raise.
    raised: Vec<(usize, f64)>,
    factorisations: usize,
}

impl Floors {
    pub(crate) fn new(k: usize) -> Self {
        Floors {
            raised: vec![(0, 0.0); k],
            factorisations: 0,
        }
    }

    /// Counts one factorisation of the whole model.
    pub(crate) fn count_factorisation(&mut self) {
        self.factorisations += 1;
    }

    /// Records a raise of component `c`'s floor by `amount`.
    pub(crate) fn record(&mut self, c: usize, amount: f64) {
        let (count, max) = &mut self.raised[c];
        *count += 1;
        *max = max.max(amount);
    }

    /// A sentence per component that was raised.
    pub(crate) fn notes(&self) -> Vec<String> {
        let total = self.factorisations;
        self.raised
            .iter()
            .enumerate()
            .filter(|(_, r)| r.0 > 0)
            .map(|(c, &(count, max))| {
                format!(
                    "component {c}: covariance not positive definite in {count} of {total} \
                     factorisations; its diagonal was raised by up to {max:.3e} (a larger \
                     --reg, or --precision f64, avoids it)"
                )
            })
            .collect()
    }
}
