//! The key every kNN engine ranks pairs by, ascending: the one definition of what "nearest"
//! means for each metric that reaches the engines.
//!
//! Every engine computes its keys from one GEMM and a vector of per-row terms,
//! $\mathrm{key}(x, y) = t_x + t_y - 2\, x \cdot y$:
//!
//! - squared Euclidean: $t_x = \lVert x \rVert^2$, giving $\lVert x - y \rVert^2$; the points
//!   may be centred first (translation leaves distances alone, and smaller norms cancel
//!   less).
//! - inner product (maximum inner product search, as FAISS' `METRIC_INNER_PRODUCT` and
//!   cuML's `inner_product`): $t_x = c$ for every row, $c = \max_x \lVert x \rVert^2$, giving
//!   $2(c - x \cdot y)$, which ranks y by decreasing $x \cdot y$. It is never negative
//!   (Cauchy–Schwarz: $x \cdot y \le \lVert x\rVert \lVert y\rVert \le c$), so it keeps every
//!   engine's assumptions about distances, and it is the squared Euclidean distance between
//!   the asymmetric lifts $[x, \sqrt{c - \lVert x\rVert^2}, 0]$ and
//!   $[y, 0, \sqrt{c - \lVert y\rVert^2}]$ (Neyshabur & Srebro 2015, "On symmetric and
//!   asymmetric LSHs for inner product search"). The points must not be centred: translation
//!   changes inner products. No single row transform gives this key for an all-points
//!   search (a symmetric lift cannot cancel the $\lVert y\rVert^2$ term), which is why the
//!   metric reaches the engines instead of transforming the rows as cosine does.
//!
//! Under inner product a point is not necessarily its own best match (a longer point in
//! the same direction beats it), so every engine excludes the point itself by index.

use crate::prep::Metric;
use crate::Points;

/// What the neighbours are ranked by (ascending) and reported as.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Key {
    /// $\lVert x - y\rVert^2$: Euclidean, and cosine and correlation after their row
    /// transform.
    #[default]
    SqEuclidean,
    /// $2(c - x \cdot y)$ with `c` at least every row's squared norm.
    InnerProduct {
        /// The largest squared norm of the rows searched, rounded up to f32.
        c: f32,
    },
}

impl Key {
    /// The key `metric` ranks `points` by (after its row transform, for cosine and
    /// correlation).
    pub fn new(metric: Metric, points: &Points) -> Key {
        match metric {
            Metric::InnerProduct => Key::InnerProduct {
                c: max_sq_norm(points),
            },
            _ => Key::SqEuclidean,
        }
    }

    /// This key with `c` raised to cover the rows of `other` too (queries searched among
    /// the points `self` was made for), so that it stays non-negative.
    pub fn covering(self, other: &Points) -> Key {
        match self {
            Key::SqEuclidean => self,
            Key::InnerProduct { c } => Key::InnerProduct {
                c: c.max(max_sq_norm(other)),
            },
        }
    }

    /// Whether the engines may centre the points before their GEMM (translation leaves
    /// the key unchanged).
    pub fn translation_invariant(self) -> bool {
        self == Key::SqEuclidean
    }

    /// The per-row term $t_x$ of a row with squared norm `sq_norm` (see the module doc).
    pub fn row_term(self, sq_norm: f64) -> f32 {
        match self {
            Key::SqEuclidean => sq_norm as f32,
            Key::InnerProduct { c } => c,
        }
    }

    /// The key of (a, b) in f32, accumulated in 8 independent lanes (vectorises; rounding
    /// error about √(d/8)·ε relative to the terms' magnitude).
    #[inline]
    pub fn eval(self, a: &[f32], b: &[f32]) -> f32 {
        match self {
            Key::SqEuclidean => lanes(a, b, |x, y| (x - y) * (x - y)),
            Key::InnerProduct { c } => 2.0 * (c - lanes(a, b, |x, y| x * y)),
        }
    }

    /// The key of (a, b) accumulated in f64 and rounded once.
    pub fn eval_f64(self, a: &[f32], b: &[f32]) -> f32 {
        let pairs = a.iter().zip(b).map(|(&x, &y)| (x as f64, y as f64));
        match self {
            Key::SqEuclidean => pairs.map(|(x, y)| (x - y) * (x - y)).sum::<f64>() as f32,
            Key::InnerProduct { c } => {
                (2.0 * (c as f64 - pairs.map(|(x, y)| x * y).sum::<f64>())) as f32
            }
        }
    }
}

/// $\max_x \lVert x\rVert^2$ over the rows of `points`, in f64 and rounded up to f32, so that
/// the inner-product key is never negative.
pub(crate) fn max_sq_norm(points: &Points) -> f32 {
    use rayon::prelude::*;
    let max = points
        .data
        .par_chunks(points.d.max(1))
        .map(|row| row.iter().map(|&x| x as f64 * x as f64).sum::<f64>())
        .reduce(|| 0.0, f64::max);
    let c = max as f32;
    if (c as f64) < max {
        c.next_up()
    } else {
        c
    }
}

/// Σ_l f(a_l, b_l) in 8 independent f32 lanes, summed pairwise.
#[inline(always)]
fn lanes(a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = [0.0f32; 8];
    let (ca, ra) = a.split_at(a.len() - a.len() % 8);
    let (cb, rb) = b.split_at(ca.len());
    for (x, y) in ca.chunks_exact(8).zip(cb.chunks_exact(8)) {
        for l in 0..8 {
            acc[l] += f(x[l], y[l]);
        }
    }
    let mut tail = 0.0f32;
    for (&x, &y) in ra.iter().zip(rb) {
        tail += f(x, y);
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key's two evaluations agree with the definitions, the inner product's is
    /// 2(c − x · y) and never negative, and only the squared distance allows centring.
    #[test]
    fn keys_follow_their_definitions() {
        let p = Points::new(
            3,
            9,
            (0..27).map(|i| ((i * 7 % 11) as f32 - 4.0) * 0.3).collect(),
        );
        let ip = Key::new(Metric::InnerProduct, &p);
        let Key::InnerProduct { c } = ip else {
            panic!("{ip:?}")
        };
        let norms: Vec<f64> = (0..3)
            .map(|i| p.row(i).iter().map(|&x| (x as f64).powi(2)).sum())
            .collect();
        assert!(c as f64 >= norms.iter().copied().fold(0.0, f64::max));
        for i in 0..3 {
            for j in 0..3 {
                let (a, b) = (p.row(i), p.row(j));
                let dot: f64 = a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum();
                let sq: f64 = a
                    .iter()
                    .zip(b)
                    .map(|(&x, &y)| (x as f64 - y as f64).powi(2))
                    .sum();
                let want = 2.0 * (c as f64 - dot);
                assert!((ip.eval(a, b) as f64 - want).abs() < 1e-5 * c as f64);
                assert!((ip.eval_f64(a, b) as f64 - want).abs() < 1e-6 * c as f64);
                assert!(ip.eval_f64(a, b) >= 0.0);
                let e = Key::SqEuclidean;
                assert!((e.eval(a, b) as f64 - sq).abs() < 1e-5 * sq.max(1e-3));
                // The GEMM's form t_x + t_y − 2 x · y.
                for key in [ip, e] {
                    let gemm =
                        key.row_term(norms[i]) as f64 + key.row_term(norms[j]) as f64 - 2.0 * dot;
                    assert!((gemm - key.eval_f64(a, b) as f64).abs() < 1e-5 * c as f64);
                }
            }
        }
        assert!(Key::SqEuclidean.translation_invariant() && !ip.translation_invariant());
        for m in [Metric::Euclidean, Metric::Cosine, Metric::Correlation] {
            assert_eq!(Key::new(m, &p), Key::SqEuclidean);
        }
        let far = Points::new(1, 9, vec![3.0; 9]);
        assert_eq!(ip.covering(&far), Key::InnerProduct { c: 81.0 });
        assert_eq!(ip.covering(&Points::new(1, 9, vec![0.0; 9])), ip);
    }
}
