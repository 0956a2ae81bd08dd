//! The M-step: weights, means and covariances from the responsibilities, as scikit-learn's
//! `_estimate_gaussian_parameters` computes them.
//!
//! Sums over samples are split into [`groups`] contiguous row ranges whose count depends
//! only on the data's shape, summed each on its own and then in order: the same result on
//! any number of threads.

use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;

use super::estep::BLOCK;
use super::{CovarianceType, Model, Real, Samples};

/// Bytes of partial covariance sums held at once across the groups.
pub(crate) const PARTIAL_BUDGET: usize = 256 << 20;
/// Row groups at most.
const MAX_GROUPS: usize = 64;

/// The row ranges sums are split into: at most [`MAX_GROUPS`], fewer when one component's
/// partial covariance per group would exceed [`PARTIAL_BUDGET`] in all.
fn groups(n: usize, partial_len: usize, bytes: usize) -> Vec<std::ops::Range<usize>> {
    let by_memory = PARTIAL_BUDGET / (partial_len * bytes).max(1);
    let g = by_memory.clamp(1, MAX_GROUPS).min(n.div_ceil(BLOCK)).max(1);
    let per = n.div_ceil(g);
    (0..g)
        .map(|i| (i * per).min(n)..((i + 1) * per).min(n))
        .filter(|r| !r.is_empty())
        .collect()
}

/// `rows` in consecutive blocks of at most [`BLOCK`] samples.
fn blocks(rows: std::ops::Range<usize>) -> impl Iterator<Item = std::ops::Range<usize>> {
    let end = rows.end;
    rows.step_by(BLOCK).map(move |s| s..(s + BLOCK).min(end))
}

/// Sums `f(range, partial)` over the groups of `n` rows into a vector of `len` values:
/// each group fills its own partial in parallel, then the partials are added in order.
fn sum_groups<T: Real>(
    n: usize,
    len: usize,
    f: impl Fn(std::ops::Range<usize>, &mut [T]) + Sync,
) -> Vec<T> {
    let partials: Vec<Vec<T>> = groups(n, len, std::mem::size_of::<T>())
        .into_par_iter()
        .map(|rows| {
            let mut p = vec![T::zero(); len];
            f(rows, &mut p);
            p
        })
        .collect();
    let mut total = vec![T::zero(); len];
    for p in &partials {
        for (t, v) in total.iter_mut().zip(p) {
            *t += *v;
        }
    }
    total
}

/// The M-step: the model that maximises the expected log-likelihood under the
/// responsibilities `resp` (n × K, row-major, rows summing to 1), with `reg` on every
/// covariance's diagonal.
pub fn estimate<T: Real>(
    x: &Samples<T>,
    resp: &[T],
    k: usize,
    kind: CovarianceType,
    reg: f64,
) -> Model<T> {
    assert_eq!(resp.len(), x.n * k, "estimate: resp must be n × k");
    m_step(x, resp, k, kind, reg).0
}

/// [`estimate`], also returning the components' total weights n_k (with 10 ε each).
pub(crate) fn m_step<T: Real>(
    x: &Samples<T>,
    resp: &[T],
    k: usize,
    kind: CovarianceType,
    reg: f64,
) -> (Model<T>, Vec<T>) {
    let (n, d) = (x.n, x.d);
    // Σ_i r_ik (first K values) and Σ_i r_ik x_i (K × d, row-major), the latter one
    // d × b by b × K product per block of samples.
    let sums = sum_groups::<T>(n, k + k * d, |rows, p| {
        let (nk, mx) = p.split_at_mut(k);
        for i in rows.clone() {
            for (s, &r) in nk.iter_mut().zip(&resp[i * k..(i + 1) * k]) {
                *s += r;
            }
        }
        for std::ops::Range { start, end } in blocks(rows) {
            let b = end - start;
            // Row-major b × d samples and b × K responsibilities, seen column-major.
            let xb = MatRef::from_column_major_slice(&x.data[start * d..end * d], d, b);
            let rb = MatRef::from_column_major_slice(&resp[start * k..end * k], k, b);
            let dst = MatMut::from_column_major_slice_mut(mx, d, k);
            matmul(dst, Accum::Add, xb, rb.transpose(), T::one(), Par::Seq);
        }
    });
    let (nk, means) = means_from_sums(&sums[..k], sums[k..].to_vec(), d);
    let covariances = match kind {
        CovarianceType::Full => full_covariances(x, resp, k, &means, &nk, reg),
        CovarianceType::Diag | CovarianceType::Spherical => {
            let sums = diag_sums(x, resp, k, &means);
            diag_from_sums(sums, &nk, d, reg)
        }
    };
    assemble(kind, d, nk, means, covariances)
}

/// n_k (with 10 ε each, as scikit-learn adds) and the means μ_k = Σ_i r_ik x_i / n_k, from
/// the sums Σ_i r_ik (`weight`, K) and Σ_i r_ik x_i (`weighted`, K × d).
pub(crate) fn means_from_sums<T: Real>(
    weight: &[T],
    weighted: Vec<T>,
    d: usize,
) -> (Vec<T>, Vec<T>) {
    let tiny = T::of(10.0) * T::epsilon();
    let nk: Vec<T> = weight.iter().map(|&s| s + tiny).collect();
    let mut means = weighted;
    for (mean, &w) in means.chunks_exact_mut(d).zip(&nk) {
        for m in mean {
            *m /= w;
        }
    }
    (nk, means)
}

/// The model from n_k, the means and the covariances: a spherical model's variance is the
/// mean of its component's diagonal (`covariances` holds the diagonals then), the weights
/// n_k normalised by Σ n_k (= n + 10ε·K), as scikit-learn does.
pub(crate) fn assemble<T: Real>(
    kind: CovarianceType,
    d: usize,
    nk: Vec<T>,
    means: Vec<T>,
    covariances: Vec<T>,
) -> (Model<T>, Vec<T>) {
    let covariances = match kind {
        CovarianceType::Spherical => covariances
            .chunks_exact(d)
            .map(|v| v.iter().fold(T::zero(), |s, &x| s + x) / T::of(d as f64))
            .collect(),
        _ => covariances,
    };
    let total = nk.iter().fold(T::zero(), |s, &w| s + w);
    let weights = nk.iter().map(|&w| w / total).collect();
    let model = Model {
        covariance: kind,
        d,
        weights,
        means,
        covariances,
    };
    (model, nk)
}

/// Full covariances from the lower triangles (column-major) of Σ_i r_ik (x_i − μ_k)
/// (x_i − μ_k)ᵀ, K of them in `sums`: mirrored, divided by n_k, `reg` on the diagonal.
pub(crate) fn full_from_lower<T: Real>(mut sums: Vec<T>, nk: &[T], d: usize, reg: f64) -> Vec<T> {
    for (cov, &w) in sums.chunks_exact_mut(d * d).zip(nk) {
        // The lower half (column-major: row i ≥ column j at j·d + i) onto the upper.
        for j in 0..d {
            for i in j + 1..d {
                cov[i * d + j] = cov[j * d + i];
            }
        }
        for v in cov.iter_mut() {
            *v /= w;
        }
        for i in 0..d {
            cov[i * d + i] += T::of(reg);
        }
    }
    sums
}

/// Diagonal covariances σ²_kj = Σ_i r_ik (x_ij − μ_kj)² / n_k + reg from the sums (K × d).
pub(crate) fn diag_from_sums<T: Real>(mut sums: Vec<T>, nk: &[T], d: usize, reg: f64) -> Vec<T> {
    for (var, &w) in sums.chunks_exact_mut(d).zip(nk) {
        for v in var {
            *v = *v / w + T::of(reg);
        }
    }
    sums
}

/// Σ_k = Σ_i r_ik (x_i − μ_k)(x_i − μ_k)ᵀ / n_k + reg·I, each block of samples one
/// d × b by b × d product per component; components in batches that keep the groups'
/// partial sums within [`PARTIAL_BUDGET`].
fn full_covariances<T: Real>(
    x: &Samples<T>,
    resp: &[T],
    k: usize,
    means: &[T],
    nk: &[T],
    reg: f64,
) -> Vec<T> {
    let (n, d) = (x.n, x.d);
    let bytes = std::mem::size_of::<T>();
    let g = groups(n, d * d, bytes).len();
    let batch = (PARTIAL_BUDGET / (g * d * d * bytes).max(1)).clamp(1, k);
    let mut out = Vec::with_capacity(k * d * d);
    for first in (0..k).step_by(batch) {
        let comps = first..(first + batch).min(k);
        let m = comps.len();
        let sums = sum_groups::<T>(n, m * d * d, |rows, p| {
            let (mut diff, mut weighted) = (Vec::new(), Vec::new());
            for std::ops::Range { start, end } in blocks(rows.clone()) {
                let b = end - start;
                diff.resize(d * b, T::zero());
                weighted.resize(d * b, T::zero());
                for (slot, c) in comps.clone().enumerate() {
                    let mu = &means[c * d..(c + 1) * d];
                    // Sample i of the block is column i of the d × b column-major buffers.
                    let columns = diff.chunks_exact_mut(d).zip(weighted.chunks_exact_mut(d));
                    for ((dc, wc), i) in columns.zip(start..end) {
                        let r = resp[i * k + c];
                        for (((dv, wv), &xv), &m) in dc.iter_mut().zip(wc).zip(x.row(i)).zip(mu) {
                            *dv = xv - m;
                            *wv = *dv * r;
                        }
                    }
                    let dst = MatMut::from_column_major_slice_mut(
                        &mut p[slot * d * d..(slot + 1) * d * d],
                        d,
                        d,
                    );
                    // Symmetric: the lower half only (half the flops), mirrored below.
                    triangular::matmul(
                        dst,
                        BlockStructure::TriangularLower,
                        Accum::Add,
                        MatRef::from_column_major_slice(&weighted, d, b),
                        BlockStructure::Rectangular,
                        MatRef::from_column_major_slice(&diff, d, b).transpose(),
                        BlockStructure::Rectangular,
                        T::one(),
                        Par::Seq,
                    );
                }
            }
        });
        out.extend(full_from_lower(sums, &nk[comps], d, reg));
    }
    out
}

/// Σ_i r_ik (x_ij − μ_kj)², K × d.
fn diag_sums<T: Real>(x: &Samples<T>, resp: &[T], k: usize, means: &[T]) -> Vec<T> {
    let d = x.d;
    sum_groups::<T>(x.n, k * d, |rows, p| {
        for i in rows {
            let (xi, r) = (x.row(i), &resp[i * k..(i + 1) * k]);
            for ((acc, mu), &rc) in p.chunks_exact_mut(d).zip(means.chunks_exact(d)).zip(r) {
                for ((a, &xv), &m) in acc.iter_mut().zip(xi).zip(mu) {
                    *a += rc * (xv - m) * (xv - m);
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_cover_the_rows_once_and_do_not_depend_on_threads() {
        for n in [1, 511, 512, 513, 10_000, 1_000_003] {
            for len in [4, 784 * 784] {
                let g = groups(n, len, 8);
                assert!(g.len() <= MAX_GROUPS);
                assert_eq!(g[0].start, 0);
                assert_eq!(g.last().unwrap().end, n);
                assert!(g.windows(2).all(|w| w[0].end == w[1].start));
            }
        }
    }

    #[test]
    fn one_hot_responsibilities_give_cluster_statistics() {
        // Two clusters in 2-D: means and (biased) covariances of each, plus reg.
        let pts: [f64; 10] = [0.0, 0.0, 2.0, 0.0, 0.0, 2.0, 10.0, 10.0, 12.0, 10.0];
        let x = Samples {
            n: 5,
            d: 2,
            data: pts.to_vec(),
        };
        let resp: [f64; 10] = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0];
        for kind in [
            CovarianceType::Full,
            CovarianceType::Diag,
            CovarianceType::Spherical,
        ] {
            let (m, nk) = m_step(&x, &resp, 2, kind, 0.5);
            assert!((nk[0] - 3.0).abs() < 1e-12 && (nk[1] - 2.0).abs() < 1e-12);
            assert!((m.weights[0] - 0.6).abs() < 1e-12);
            let mu0: [f64; 2] = [2.0 / 3.0, 2.0 / 3.0];
            assert!((m.means[0] - mu0[0]).abs() < 1e-12 && (m.means[1] - mu0[1]).abs() < 1e-12);
            assert!((m.means[2] - 11.0).abs() < 1e-12 && (m.means[3] - 10.0).abs() < 1e-12);
            // Component 0: var_x = var_y = 8/9, cov_xy = −4/9; component 1: var_x = 1, var_y = 0.
            let expected: Vec<f64> = match kind {
                CovarianceType::Full => vec![
                    8.0 / 9.0 + 0.5,
                    -4.0 / 9.0,
                    -4.0 / 9.0,
                    8.0 / 9.0 + 0.5,
                    1.5,
                    0.0,
                    0.0,
                    0.5,
                ],
                CovarianceType::Diag => vec![8.0 / 9.0 + 0.5, 8.0 / 9.0 + 0.5, 1.5, 0.5],
                CovarianceType::Spherical => vec![8.0 / 9.0 + 0.5, 1.0],
            };
            for (a, b) in m.covariances.iter().zip(&expected) {
                assert!((a - b).abs() < 1e-12, "{kind:?}: {:?}", m.covariances);
            }
        }
    }
}
