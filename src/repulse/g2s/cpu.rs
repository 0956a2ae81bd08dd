//! G2S: interpolate the grid potentials back to the points with the same `4^s` cubic Lagrange
//! stencil S2G used (Linderman et al. 2019, step 3; SG-t-SNE-Π's `g2s`). A gather: parallel over
//! points, every point reads its own nodes, no atomics.
//!
//! Self-interaction: the interpolated `ψ_i` holds the *interpolated* self term
//! `w̃_ii = Σ_{a,b} L_a(y_i) L_b(y_i) G₁(h·|a − b|)` over the stencil nodes `a, b`, which misses 1
//! by up to a few percent on coarse grids. The textbook `Z = Σ ψ_i − n` leaves that error in
//! every term of `Z`, and it dominates when the points are spread out (most `w_ij` small;
//! measured: relative Z error 3e-2 → 3e-5 on a sparse 2-D layout at `h = 0.5`). So G2S
//! sums each point's own `w̃_ii`, computed exactly from its stencil weights with `δ = a − b`
//! folded per axis (`4^s` terms per point), for Phi2Force to take out of `Σ ψ_i` (which G2G
//! gives as one number: no `ψ` channel is interpolated).

use rayon::prelude::*;

use crate::kernel::Kernel;
use crate::repulse::fftnd::Real;
use crate::repulse::grid::Grid;
use crate::repulse::s2g::{locate, stencil_row, stencil_rows, strides};

/// Points per parallel task.
const CHUNK: usize = 1024;

/// The most channels a potential grid may have (the optimiser's `1 + D`, the placement's
/// `2 + D`, in 3-D 4 and 5).
pub const MAX_CHANNELS: usize = 6;

/// For each point of `y` (row-major `n × D`), writes the values of every channel of
/// `potentials` to `values` (row-major `n × channels`), interpolated: the grid's nodes with
/// their channels interleaved (`D + 1` for the optimiser's `φ₀, φ₁ … φ_D`; up to
/// [`MAX_CHANNELS`] for other fields, as [`crate::transform`]'s). Returns `Σ_i w̃_ii`, the
/// interpolated self terms to take out of `Z`, of the grid's kernel `G₁` (`kernel`'s, which
/// G2G convolved with: another kernel's would leave in `Z` each point's difference of the
/// two).
pub fn gather<T: Real, const D: usize>(
    y: &[f32],
    grid: &Grid,
    kernel: Kernel,
    potentials: &[T],
    values: &mut [T],
) -> f64 {
    let nch = potentials.len() / grid.len();
    assert_eq!(potentials.len(), grid.len() * nch, "potential grid size");
    assert_eq!(values.len(), y.len() / D * nch, "values size");
    match nch {
        1 => gather_c::<T, D, 1>(y, grid, kernel, potentials, values),
        2 => gather_c::<T, D, 2>(y, grid, kernel, potentials, values),
        3 => gather_c::<T, D, 3>(y, grid, kernel, potentials, values),
        4 => gather_c::<T, D, 4>(y, grid, kernel, potentials, values),
        5 => gather_c::<T, D, 5>(y, grid, kernel, potentials, values),
        6 => gather_c::<T, D, 6>(y, grid, kernel, potentials, values),
        _ => panic!("a potential grid of {nch} channels: at most {MAX_CHANNELS}"),
    }
}

/// [`gather`] with its `C` channels a constant, and the stencil taken a row of 4 nodes
/// along the fastest axis at a time: the row's `4 · C` values are contiguous, summed with
/// the first axis' weights, then scaled by the row's weight on the other axes. (Node by
/// node, with the channel count read at run time, the gather took 10.7–11.0 ms for 1M points
/// on 16 cores, about 500 cycles a point; this way 4.3 ms.)
fn gather_c<T: Real, const D: usize, const C: usize>(
    y: &[f32],
    grid: &Grid,
    kernel: Kernel,
    potentials: &[T],
    values: &mut [T],
) -> f64 {
    let strides = strides::<D>(grid.p);
    let inv_h = 1.0 / grid.h;
    let kernel = self_kernel::<D>(grid.h, kernel);
    let own = values
        .par_chunks_mut(CHUNK * C)
        .zip(y.par_chunks(CHUNK * D))
        .map(|(vals, ys)| {
            let mut own = 0.0;
            for (v, row) in vals.chunks_exact_mut(C).zip(ys.chunks_exact(D)) {
                let (corner, w) = locate::<T, D>(row, grid, inv_h, &strides);
                let mut sum = [T::zero(); C];
                for r in 0..stencil_rows::<D>() {
                    let (base, wr) = stencil_row::<T, D>(r, corner, &w, &strides);
                    let nodes = &potentials[base * C..(base + 4) * C];
                    let mut along = [T::zero(); C];
                    for (node, &wx) in nodes.chunks_exact(C).zip(&w[0]) {
                        for (acc, &pot) in along.iter_mut().zip(node) {
                            *acc = *acc + wx * pot;
                        }
                    }
                    for (acc, a) in sum.iter_mut().zip(along) {
                        *acc = *acc + wr * a;
                    }
                }
                v.copy_from_slice(&sum);
                own += self_weight::<T, D>(&w, &kernel);
            }
            own
        });
    crate::ordered::sum_in_order(own)
}

/// `kernel`'s `G₁(h·|δ|)` for the `4^D` offsets `δ ∈ {0..3}^D` (base-4 digit `a` is
/// `|δ_a|`).
fn self_kernel<const D: usize>(h: f64, kernel: Kernel) -> Vec<f64> {
    self_kernel_of::<D>(h, |d2| kernel.g1(d2))
}

/// `g(h²·|δ|²)` for the `4^D` offsets `δ ∈ {0..3}^D`, the table [`self_weight`] takes.
pub(crate) fn self_kernel_of<const D: usize>(h: f64, g: impl Fn(f64) -> f64) -> Vec<f64> {
    (0..1usize << (2 * D))
        .map(|k| {
            let d2: f64 = (0..D).map(|a| ((k >> (2 * a)) & 3).pow(2) as f64).sum();
            g(h * h * d2)
        })
        .collect()
}

/// The interpolated self-interaction `w̃_ii` of a point with per-axis stencil weights `l`: with
/// `c_0 = Σ_j l_j²` and `c_d = 2 Σ_j l_j l_{j+d}` (`d = 1, 2, 3`), it is
/// `Σ_δ Π_a c_{δ_a} G₁(h·|δ|)`, summed a row of 4 offsets along the first axis at a time.
/// (With the sums as iterator chains it was a third of the gather's time.)
#[inline(always)]
pub(crate) fn self_weight<T: Real, const D: usize>(l: &[[T; 4]; D], kernel: &[f64]) -> f64 {
    let c: [[f64; 4]; D] = std::array::from_fn(|a| {
        let [l0, l1, l2, l3] = l[a].map(|v| v.as_f64());
        [
            l0 * l0 + l1 * l1 + l2 * l2 + l3 * l3,
            2.0 * (l0 * l1 + l1 * l2 + l2 * l3),
            2.0 * (l0 * l2 + l1 * l3),
            2.0 * l0 * l3,
        ]
    });
    let mut total = 0.0;
    for (r, g) in kernel.chunks_exact(4).enumerate() {
        let mut wr = 1.0;
        for (a, ca) in c.iter().enumerate().skip(1) {
            wr *= ca[(r >> (2 * (a - 1))) & 3];
        }
        let [c0, c1, c2, c3] = c[0];
        total += wr * (c0 * g[0] + c1 * g[1] + c2 * g[2] + c3 * g[3]);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repulse::grid::lagrange4;
    use crate::repulse::GridSpec;

    /// A potential that is a cubic polynomial of the node position is interpolated exactly,
    /// and the self terms sum to those of the stencil weights.
    #[test]
    fn reproduces_cubic_potentials() {
        let y: Vec<f32> = vec![0.1, -2.3, 3.7, 1.25, -0.6, 0.0];
        let grid = Grid::fit(&y, 2, GridSpec::Auto { h: 0.4 }).unwrap();
        let (p, nch) = (grid.p, 3);
        let f = |x: f64, z: f64, c: usize| 1.0 + c as f64 * x - 0.2 * x * x * z + 0.05 * z * z * z;
        let mut pot = vec![0.0f64; nch * grid.len()];
        for (j, node) in pot.chunks_mut(nch).enumerate() {
            let x = grid.origin[0] + (j % p) as f64 * grid.h;
            let z = grid.origin[1] + (j / p) as f64 * grid.h;
            for (c, v) in node.iter_mut().enumerate() {
                *v = f(x, z, c);
            }
        }
        let mut vals = vec![0.0f64; 3 * nch];
        let own_sum = gather::<f64, 2>(&y, &grid, Kernel::CAUCHY, &pot, &mut vals);
        let kernel = self_kernel::<2>(grid.h, Kernel::CAUCHY);
        let mut want_own = 0.0;
        for (i, row) in y.chunks(2).enumerate() {
            let w = std::array::from_fn(|a| {
                let x = (row[a] as f64 - grid.origin[a]) / grid.h;
                lagrange4(x - x.floor())
            });
            want_own += self_weight::<f64, 2>(&w, &kernel);
            for c in 0..nch {
                let want = f(row[0] as f64, row[1] as f64, c);
                assert!((vals[i * nch + c] - want).abs() < 1e-10, "{i} {c}");
            }
        }
        assert!(
            (own_sum - want_own).abs() < 1e-12,
            "{own_sum} vs {want_own}"
        );
    }

    /// The self weight is the kernel interpolated from the stencil: exact on a fine grid.
    #[test]
    fn self_weight_tends_to_one() {
        for (h, tol) in [(0.5, 0.2), (0.05, 1e-4)] {
            let w = [lagrange4(0.37), lagrange4(0.8), lagrange4(0.05)];
            let own = self_weight::<f64, 3>(&w, &self_kernel::<3>(h, Kernel::CAUCHY));
            assert!((own - 1.0).abs() < tol && own != 1.0, "h={h}: {own}");
        }
    }
}
