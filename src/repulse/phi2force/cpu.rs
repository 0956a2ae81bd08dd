//! Phi2Force: combine the interpolated potentials into the normalisation and the forces
//! (DESIGN §2.2; SG-t-SNE-Π's `zetaAndForce`):
//!
//! $$Z = \sum_i \psi_i - n, \qquad F^k_{rep,i} = \frac{(y^k_i - c^k)\,\varphi_{0,i} - \varphi_{k,i}}{Z}$$
//!
//! where `ψ_i = Σ_j w_ij` includes the self term `w_ii = 1` (hence `− n`), and `c` is the grid
//! centre the charges were taken relative to (forces do not depend on it). The forces need no
//! self correction: the self terms of `y_i φ₀` and `φ_k` are both `w̃²_ii y_i` and cancel.
//!
//! `Σ_i ψ_i` comes from G2G (one number, from the spectrum) and the interpolated self terms
//! `Σ_i w̃_ii` from G2S (see [`crate::repulse::g2s`]); `Z` is their difference.

use rayon::prelude::*;

use crate::repulse::fftnd::Real;
use crate::repulse::grid::Grid;
use crate::{Error, Result};

/// Points per parallel task.
const CHUNK: usize = 4096;

/// Returns `Z = Σ_i ψ_i − Σ_i w̃_ii` (`psi_sum`, `self_sum`) and writes `force` (row-major
/// `n × D`) from `values` (`n × (D+1)`: φ₀, φ_k).
/// Fails if the interpolated `Z` is not positive (a grid far too coarse for the data).
pub fn phi2force<T: Real, const D: usize>(
    y: &[f32],
    grid: &Grid,
    values: &[T],
    (psi_sum, self_sum): (f64, f64),
    force: &mut [f32],
) -> Result<f64> {
    let z = psi_sum - self_sum;
    if !(z > 0.0 && z.is_finite()) {
        return Err(Error::Data(format!(
            "repulsion: interpolated normalisation Z = {z} is not positive; use a finer grid"
        )));
    }
    let inv_z = 1.0 / z;
    let nch = D + 1;
    force
        .par_chunks_mut(CHUNK * D)
        .zip(y.par_chunks(CHUNK * D).zip(values.par_chunks(CHUNK * nch)))
        .for_each(|(f, (ys, vs))| {
            for ((fi, yi), vi) in f
                .chunks_exact_mut(D)
                .zip(ys.chunks_exact(D))
                .zip(vs.chunks_exact(nch))
            {
                let phi0 = vi[0].as_f64();
                for a in 0..D {
                    let q = yi[a] as f64 - grid.centre[a];
                    fi[a] = ((q * phi0 - vi[1 + a].as_f64()) * inv_z) as f32;
                }
            }
        });
    Ok(z)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repulse::GridSpec;

    #[test]
    fn combines_channels() {
        let y = [1.0f32, 2.0, 3.0, 5.0];
        let grid = Grid::fit(&y, 2, GridSpec::Auto { h: 1.0 }).unwrap();
        // centre = (2, 3.5); Z = Σ ψ − Σ w̃ = 6.5 − 2.5 = 4.
        let vals = [2.0f64, 0.5, -1.0, 1.0, 0.0, 3.0];
        let mut f = [0.0f32; 4];
        let z = phi2force::<f64, 2>(&y, &grid, &vals, (6.5, 2.5), &mut f).unwrap();
        assert_eq!(z, 4.0);
        let want = [(-2.0 - 0.5) / z, (-3.0 + 1.0) / z, 1.0 / z, (1.5 - 3.0) / z];
        for (g, w) in f.iter().zip(want) {
            assert!((*g as f64 - w).abs() < 1e-7, "{f:?}");
        }
        assert!(phi2force::<f64, 2>(&y, &grid, &vals, (2.0, 2.05), &mut f).is_err());
    }
}
