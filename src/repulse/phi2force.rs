//! Phi2Force: combine the interpolated potentials into the normalisation and the forces
//! (DESIGN §2.2; SG-t-SNE-Π's `zetaAndForce`):
//!
//! $$Z = \sum_i \psi_i - n, \qquad F^k_{rep,i} = \frac{(y^k_i - c^k)\,\varphi_{0,i} - \varphi_{k,i}}{Z}$$
//!
//! where `ψ_i = Σ_j w_ij` includes the self term `w_ii = 1` (hence `− n`), and `c` is the grid
//! centre the charges were taken relative to (forces do not depend on it).
//!
//! Self-interaction: the interpolated `ψ_i` holds the *interpolated* self term
//! `w̃_ii = Σ_{a,b} L_a(y_i) L_b(y_i) G₁(h·|a − b|)` over the stencil nodes `a, b`, which misses 1
//! by up to a few percent on coarse grids. Subtracting `n` leaves that error in every term of
//! `Z`, and it dominates when the points are spread out (most `w_ij` small). So `Z` subtracts
//! each point's own `w̃_ii` instead, computed exactly from its stencil weights (with `δ = a − b`
//! folded per axis: `4^s` terms per point). The forces need no such correction: the self terms
//! of `y_i φ₀` and `φ_k` are both `w̃²_ii y_i` and cancel exactly.

use rayon::prelude::*;

use super::fftnd::Real;
use super::grid::{stencil, Grid};
use crate::{Error, Result};

/// Points per parallel task.
const CHUNK: usize = 4096;

/// Returns `Z` and writes `force` (row-major `n × D`) from `values` (`n × (D+2)`: ψ, φ₀, φ_k).
/// Fails if the interpolated `Z` is not positive (a grid far too coarse for the data).
pub fn phi2force<T: Real, const D: usize>(
    y: &[f32],
    grid: &Grid,
    values: &[T],
    force: &mut [f32],
) -> Result<f64> {
    let kernel = self_kernel::<D>(grid.h);
    let inv_h = 1.0 / grid.h;
    let z: f64 = values
        .par_chunks(CHUNK * (D + 2))
        .zip(y.par_chunks(CHUNK * D))
        .map(|(vs, ys)| {
            vs.chunks_exact(D + 2)
                .zip(ys.chunks_exact(D))
                .map(|(v, yi)| v[0].as_f64() - self_weight::<D>(yi, grid, inv_h, &kernel))
                .sum::<f64>()
        })
        .sum();
    if !(z > 0.0 && z.is_finite()) {
        return Err(Error::Data(format!(
            "repulsion: interpolated normalisation Z = {z} is not positive; use a finer grid"
        )));
    }
    let inv_z = 1.0 / z;
    force
        .par_chunks_mut(CHUNK * D)
        .zip(
            y.par_chunks(CHUNK * D)
                .zip(values.par_chunks(CHUNK * (D + 2))),
        )
        .for_each(|(f, (ys, vs))| {
            for ((fi, yi), vi) in f
                .chunks_exact_mut(D)
                .zip(ys.chunks_exact(D))
                .zip(vs.chunks_exact(D + 2))
            {
                let phi0 = vi[1].as_f64();
                for a in 0..D {
                    let q = yi[a] as f64 - grid.centre[a];
                    fi[a] = ((q * phi0 - vi[2 + a].as_f64()) * inv_z) as f32;
                }
            }
        });
    Ok(z)
}

/// `G₁(h·|δ|)` for the `4^D` offsets `δ ∈ {0..3}^D` (base-4 digit `a` is `|δ_a|`).
fn self_kernel<const D: usize>(h: f64) -> Vec<f64> {
    (0..1usize << (2 * D))
        .map(|k| {
            let d2: f64 = (0..D).map(|a| ((k >> (2 * a)) & 3).pow(2) as f64).sum();
            1.0 / (1.0 + h * h * d2)
        })
        .collect()
}

/// The interpolated self-interaction `w̃_ii` of the point `yi`: with per-axis coefficients
/// `c_0 = Σ_a L_a²` and `c_d = 2 Σ_a L_a L_{a+d}` (`d = 1, 2, 3`), it is
/// `Σ_δ Π_a c_{δ_a} G₁(h·|δ|)`.
#[inline(always)]
fn self_weight<const D: usize>(yi: &[f32], grid: &Grid, inv_h: f64, kernel: &[f64]) -> f64 {
    let mut c = [[0.0f64; 4]; D];
    for a in 0..D {
        let (_, l) = stencil((yi[a] as f64 - grid.origin[a]) * inv_h, grid.p);
        for d in 0..4 {
            let s: f64 = (0..4 - d).map(|j| l[j] * l[j + d]).sum();
            c[a][d] = if d == 0 { s } else { 2.0 * s };
        }
    }
    kernel
        .iter()
        .enumerate()
        .map(|(k, &g)| g * (0..D).map(|a| c[a][(k >> (2 * a)) & 3]).product::<f64>())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repulse::GridSpec;

    #[test]
    fn combines_channels() {
        let y = [1.0f32, 2.0, 3.0, 5.0];
        let grid = Grid::fit(&y, 2, GridSpec::Auto { h: 1.0 }).unwrap();
        // centre = (2, 3.5); ψ sums to 6, less the interpolated self terms.
        let vals = [1.5f64, 2.0, 0.5, -1.0, 4.5, 1.0, 0.0, 3.0];
        let kernel = self_kernel::<2>(grid.h);
        let selfs: f64 = y
            .chunks(2)
            .map(|r| self_weight::<2>(r, &grid, 1.0 / grid.h, &kernel))
            .sum();
        assert!((selfs - 2.0).abs() < 0.1, "self terms {selfs}");
        let mut f = [0.0f32; 4];
        let z = phi2force::<f64, 2>(&y, &grid, &vals, &mut f).unwrap();
        assert!((z - (6.0 - selfs)).abs() < 1e-12);
        let z = 6.0 - selfs;
        let want = [(-2.0 - 0.5) / z, (-3.0 + 1.0) / z, 1.0 / z, (1.5 - 3.0) / z];
        for (g, w) in f.iter().zip(want) {
            assert!((*g as f64 - w).abs() < 1e-7, "{f:?}");
        }
        let bad = [0.9f64, 0.0, 0.0, 0.0, 0.9, 0.0, 0.0, 0.0];
        assert!(phi2force::<f64, 2>(&y, &grid, &bad, &mut f).is_err());
    }

    /// The self weight is the kernel interpolated from the stencil: exact on a fine grid.
    #[test]
    fn self_weight_tends_to_one() {
        for (h, tol) in [(0.5, 0.2), (0.05, 1e-4)] {
            let y = [0.37f32, -1.21, 0.8, 2.0, 0.1, 0.3];
            let mut grid = Grid::fit(&y, 3, GridSpec::Auto { h: 1.0 }).unwrap();
            grid.h = h;
            let kernel = self_kernel::<3>(h);
            let w = self_weight::<3>(&y[..3], &grid, 1.0 / h, &kernel);
            assert!((w - 1.0).abs() < tol && w != 1.0, "h={h}: {w}");
        }
    }
}
