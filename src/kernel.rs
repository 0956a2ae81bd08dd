//! The embedding's similarity kernel: Student's t with α degrees of freedom (`--dof`),
//! $w(d) = (1 + d^2/α)^{-α}$ (Kobak, Linderman et al. 2019, "Heavy-tailed kernels reveal a
//! finer cluster structure in t-SNE visualisations"); α = 1 is t-SNE's Cauchy kernel
//! $1/(1 + d^2)$.
//!
//! Since $\partial \ln w / \partial d^2 = -w^{1/α}$, the gradient of KL(P‖Q) with
//! $Q = w / Z$ is $4 \sum_j (p_{ij} - q_{ij})\, w_{ij}^{1/α} (y_i - y_j)$: the attraction
//! weighs each edge by $w^{1/α} = 1/(1 + d^2/α)$ ([`Kernel::edge`]), the repulsion sums
//! $G_2 = w^{1 + 1/α}$ ([`Kernel::g2`]) and Z sums $G_1 = w$ ([`Kernel::g1`]). α < 1 gives
//! heavier tails: clusters are pushed further apart and split into finer ones; large α
//! approaches SNE's Gaussian kernel.

use serde::Serialize;

use crate::{Error, Result};

/// Student's t kernel of the embedding.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Kernel {
    /// Degrees of freedom α > 0 (1: the Cauchy kernel of t-SNE).
    pub dof: f64,
}

impl Default for Kernel {
    fn default() -> Self {
        Kernel::CAUCHY
    }
}

impl Kernel {
    /// t-SNE's kernel, α = 1.
    pub const CAUCHY: Kernel = Kernel { dof: 1.0 };

    /// The kernel of α degrees of freedom; α must be positive and finite.
    pub fn new(dof: f64) -> Result<Kernel> {
        if dof > 0.0 && dof.is_finite() {
            Ok(Kernel { dof })
        } else {
            Err(Error::param(
                "dof",
                format!("degrees of freedom must be positive and finite, got {dof}"),
            ))
        }
    }

    /// Whether this is the Cauchy kernel (α = 1), for which every expression reduces to the
    /// classic one bit for bit.
    pub fn is_cauchy(self) -> bool {
        self.dof == 1.0
    }

    /// The attraction's edge weight $w^{1/α} = 1/(1 + d^2/α)$ at squared distance `d2`.
    #[inline(always)]
    pub fn edge(self, d2: f64) -> f64 {
        1.0 / (1.0 + d2 / self.dof)
    }

    /// $G_1 = w = (1 + d^2/α)^{-α}$, the similarity Z sums.
    #[inline(always)]
    pub fn g1(self, d2: f64) -> f64 {
        let e = self.edge(d2);
        if self.is_cauchy() {
            e
        } else {
            e.powf(self.dof)
        }
    }

    /// $G_2 = w^{1 + 1/α}$, the repulsion's kernel (α = 1: $w^2$).
    #[inline(always)]
    pub fn g2(self, d2: f64) -> f64 {
        self.g1(d2) * self.edge(d2)
    }

    /// The f32 constants of the attraction's inner loop.
    pub(crate) fn edge_f32(self) -> EdgeF32 {
        EdgeF32 {
            inv_dof: (1.0 / self.dof) as f32,
            dof: self.dof as f32,
        }
    }
}

/// [`Kernel::edge`] in f32 for the attraction: $1/(1 + d^2 · (1/α))$, and $\ln w = α \ln$ of
/// it. With α = 1 both multiplications are by 1: the Cauchy results are unchanged bit for bit.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EdgeF32 {
    pub(crate) inv_dof: f32,
    pub(crate) dof: f32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_follow_their_definitions() {
        for dof in [0.5, 1.0, 2.0, 7.5] {
            let k = Kernel::new(dof).unwrap();
            for d2 in [0.0, 0.3, 4.0, 100.0] {
                let w = (1.0 + d2 / dof).powf(-dof);
                assert!((k.g1(d2) - w).abs() <= 1e-14 * w);
                assert!((k.g2(d2) - w.powf(1.0 + 1.0 / dof)).abs() <= 1e-13 * w);
                assert!((k.edge(d2) - w.powf(1.0 / dof)).abs() <= 1e-14);
            }
        }
        let c = Kernel::CAUCHY;
        assert_eq!(c.g1(3.0), 1.0 / (1.0 + 3.0));
        assert_eq!(c.g2(3.0), 1.0 / (1.0 + 3.0) * (1.0 / (1.0 + 3.0)));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = Kernel::new(bad).unwrap_err().to_string();
            assert!(e.contains("dof"), "{e}");
        }
    }
}
