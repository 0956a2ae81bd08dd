//! G2S: interpolate the grid potentials back to the points with the same `4^s` cubic Lagrange
//! stencil S2G used (Linderman et al. 2019, step 3; SG-t-SNE-Π's `g2s`). A gather: parallel over
//! points, every point reads its own nodes, no atomics.

use rayon::prelude::*;

use super::fftnd::Real;
use super::grid::Grid;
use super::s2g::{locate, node, strides};

/// Points per parallel task.
const CHUNK: usize = 1024;

/// For each point of `y` (row-major `n × D`), writes `D + 2` values `ψ, φ₀, φ₁ … φ_D` to
/// `values` (row-major `n × (D+2)`), interpolated from the first `D + 2` channel-major grids of
/// `potentials`.
pub fn gather<T: Real, const D: usize>(y: &[f32], grid: &Grid, potentials: &[T], values: &mut [T]) {
    let len = grid.len();
    let n = y.len() / D;
    assert!(potentials.len() >= (D + 2) * len, "potential grid size");
    assert_eq!(values.len(), n * (D + 2), "values size");
    let strides = strides::<D>(grid.p);
    let inv_h = 1.0 / grid.h;
    values
        .par_chunks_mut(CHUNK * (D + 2))
        .zip(y.par_chunks(CHUNK * D))
        .for_each(|(vals, ys)| {
            for (v, row) in vals.chunks_exact_mut(D + 2).zip(ys.chunks_exact(D)) {
                let (corner, w) = locate::<T, D>(row, grid, inv_h, &strides);
                let mut acc = [T::zero(); 4];
                let mut acc_rest = [T::zero(); D];
                for k in 0..1usize << (2 * D) {
                    let (idx, wt) = node::<T, D>(k, corner, &w, &strides);
                    acc[0] = acc[0] + wt * potentials[idx];
                    acc[1] = acc[1] + wt * potentials[len + idx];
                    for a in 0..D {
                        acc_rest[a] = acc_rest[a] + wt * potentials[(2 + a) * len + idx];
                    }
                }
                v[0] = acc[0];
                v[1] = acc[1];
                v[2..].copy_from_slice(&acc_rest);
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repulse::GridSpec;

    /// A potential that is a cubic polynomial of the node position is interpolated exactly.
    #[test]
    fn reproduces_cubic_potentials() {
        let y: Vec<f32> = vec![0.1, -2.3, 3.7, 1.25, -0.6, 0.0];
        let grid = Grid::fit(&y, 2, GridSpec::Auto { h: 0.4 }).unwrap();
        let (p, len) = (grid.p, grid.len());
        let f = |x: f64, z: f64, c: usize| 1.0 + c as f64 * x - 0.2 * x * x * z + 0.05 * z * z * z;
        let mut pot = vec![0.0f64; 4 * len];
        for c in 0..4 {
            for j in 0..len {
                let x = grid.origin[0] + (j % p) as f64 * grid.h;
                let z = grid.origin[1] + (j / p) as f64 * grid.h;
                pot[c * len + j] = f(x, z, c);
            }
        }
        let mut vals = vec![0.0f64; 3 * 4];
        gather::<f64, 2>(&y, &grid, &pot, &mut vals);
        for (i, row) in y.chunks(2).enumerate() {
            for c in 0..4 {
                let want = f(row[0] as f64, row[1] as f64, c);
                assert!((vals[i * 4 + c] - want).abs() < 1e-10, "{i} {c}");
            }
        }
    }
}
