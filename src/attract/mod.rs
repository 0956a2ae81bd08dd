//! Attractive forces (DESIGN §2, §2.1):
//! $F_{attr,i} = \sum_j p_{ij} w_{ij} (y_i - y_j)$, $w_{ij} = 1/(1 + |y_i - y_j|^2)$,
//! over the non-zeros of P only; with a heavy-tailed kernel of α degrees of freedom the edge
//! weight is $w^{1/α} = 1/(1 + |y_i - y_j|^2/α)$ ([`Kernel`]).
//!
//! The same pass can return $\sum_{ij} p_{ij} \ln w_{ij}$, the only P-dependent term of
//! KL(P‖Q) that changes with Y (DESIGN §2), so the cost is a few logarithms per non-zero
//! every 50 iterations and nothing otherwise.

#[cfg(target_arch = "x86_64")]
mod avx2;
pub mod csb;
pub mod csr;
pub mod gpu;

use crate::kernel::{EdgeF32, Kernel};
use crate::Result;

/// Computes attractive forces for a fixed P.
pub trait Attract: Send + Sync {
    /// Writes $F_{attr}$ (row-major n × dims) with the `kernel`'s edge weights into `force`;
    /// with `with_kl` also returns $\sum_{ij} p_{ij} \ln w_{ij}$.
    fn attract_with(
        &self,
        kernel: Kernel,
        y: &[f32],
        dims: usize,
        force: &mut [f32],
        with_kl: bool,
    ) -> Result<Option<f64>>;

    /// [`Attract::attract_with`] the Cauchy kernel of t-SNE.
    fn attract(
        &self,
        y: &[f32],
        dims: usize,
        force: &mut [f32],
        with_kl: bool,
    ) -> Result<Option<f64>> {
        self.attract_with(Kernel::CAUCHY, y, dims, force, with_kl)
    }
}

/// Checks the shapes shared by every attraction path.
pub(crate) fn check_shapes(n: usize, y: &[f32], dims: usize, force: &[f32]) -> Result<()> {
    if !(1..=3).contains(&dims) {
        return Err(crate::Error::param(
            "dims",
            format!("must be 1, 2 or 3, got {dims}"),
        ));
    }
    if y.len() != n * dims || force.len() != n * dims {
        return Err(crate::Error::param(
            "y",
            format!(
                "expected {} coordinates (n = {n}, dims = {dims}), got y: {}, force: {}",
                n * dims,
                y.len(),
                force.len()
            ),
        ));
    }
    Ok(())
}

/// One non-zero's contribution: adds $p\,w^{1/α}(y_i - y_j)$ to `acc` and returns $\ln w$
/// when `KL` is set (0 otherwise).
#[inline(always)]
pub(crate) fn pair<const D: usize, const KL: bool>(
    p: f32,
    yi: &[f32; D],
    yj: &[f32],
    acc: &mut [f32; D],
    k: EdgeF32,
) -> f32 {
    let mut diff = [0f32; D];
    let mut d2 = 0f32;
    for k in 0..D {
        diff[k] = yi[k] - yj[k];
        d2 += diff[k] * diff[k];
    }
    let w = 1.0 / (1.0 + d2 * k.inv_dof);
    let pw = p * w;
    for (a, d) in acc.iter_mut().zip(diff) {
        *a += pw * d;
    }
    if KL {
        k.dof * w.ln()
    } else {
        0.0
    }
}
