//! Exact O(n²) repulsion: direct sums in f64, the reference for the interpolated method and the
//! method of choice for small n (sgtsnepi keeps `computeFrepulsive_exact` next to its
//! interpolation for the same reason).
//!
//! The sums are split so that a grid-error sweep can afford them at large n: per-target sums
//! over all sources ([`exact_for_targets`], O(|targets|·n)) and the normalisation alone
//! ([`exact_z`], O(n²/2) with symmetry, no forces).

use rayon::prelude::*;

use crate::kernel::Kernel;
use crate::repulse::{check_shapes, Repulse, RepulseTimes, Repulsion};
use crate::{Error, Result};

/// Targets per parallel task.
const CHUNK: usize = 16;

/// Exact unnormalised repulsion sums for a set of targets `i`, each over all sources `j ≠ i`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExactTargets {
    /// Embedding dimension `s`.
    pub dims: usize,
    /// `Σ_{j≠i} w_ij` per target (its share of `Z`).
    pub z_row: Vec<f64>,
    /// `Σ_j w_ij² (y_i − y_j)` per target, row-major `targets × s` (the force times `Z`).
    pub force_z: Vec<f64>,
}

impl ExactTargets {
    /// The targets' forces `F_rep,i = force_z / Z` for a given normalisation `Z`.
    pub fn forces(&self, z: f64) -> Vec<f64> {
        self.force_z.iter().map(|f| f / z).collect()
    }
}

/// Exact sums for the `targets` (indices into the `n` points of `y`, row-major `n × dims`).
pub fn exact_for_targets(y: &[f32], dims: usize, targets: &[usize]) -> Result<ExactTargets> {
    exact_for_targets_with(Kernel::CAUCHY, y, dims, targets)
}

/// [`exact_for_targets`] with the `kernel`'s $G_1$ (Z) and $G_2$ (forces).
pub fn exact_for_targets_with(
    kernel: Kernel,
    y: &[f32],
    dims: usize,
    targets: &[usize],
) -> Result<ExactTargets> {
    let n = check_shapes(y, dims, y.len())?;
    if let Some(&bad) = targets.iter().find(|&&t| t >= n) {
        return Err(Error::param(
            "targets",
            format!("index {bad} out of range for {n} points"),
        ));
    }
    Ok(match dims {
        1 => sums::<1>(kernel, y, targets),
        2 => sums::<2>(kernel, y, targets),
        _ => sums::<3>(kernel, y, targets),
    })
}

fn sums<const D: usize>(kernel: Kernel, y: &[f32], targets: &[usize]) -> ExactTargets {
    let mut z_row = vec![0.0; targets.len()];
    let mut force_z = vec![0.0; targets.len() * D];
    z_row
        .par_chunks_mut(CHUNK)
        .zip(force_z.par_chunks_mut(CHUNK * D))
        .zip(targets.par_chunks(CHUNK))
        .for_each(|((zs, fs), ts)| {
            for ((z, f), &t) in zs.iter_mut().zip(fs.chunks_exact_mut(D)).zip(ts) {
                let yi = &y[t * D..(t + 1) * D];
                let mut acc = [0.0f64; D];
                let mut zi = 0.0f64;
                for (j, yj) in y.chunks_exact(D).enumerate() {
                    if j == t {
                        continue;
                    }
                    let mut diff = [0.0f64; D];
                    let mut d2 = 0.0;
                    for a in 0..D {
                        diff[a] = yi[a] as f64 - yj[a] as f64;
                        d2 += diff[a] * diff[a];
                    }
                    let (w, g2) = (kernel.g1(d2), kernel.g2(d2));
                    zi += w;
                    for a in 0..D {
                        acc[a] += g2 * diff[a];
                    }
                }
                *z = zi;
                f.copy_from_slice(&acc);
            }
        });
    ExactTargets {
        dims: D,
        z_row,
        force_z,
    }
}

/// Exact `Z = Σ_{i≠j} w_ij` (each pair visited once), in f64.
pub fn exact_z(y: &[f32], dims: usize) -> Result<f64> {
    exact_z_with(Kernel::CAUCHY, y, dims)
}

/// [`exact_z`] with the `kernel`'s similarity $G_1 = w$.
pub fn exact_z_with(kernel: Kernel, y: &[f32], dims: usize) -> Result<f64> {
    let n = check_shapes(y, dims, y.len())?;
    Ok(match dims {
        1 => z_pairs::<1>(kernel, y, n),
        2 => z_pairs::<2>(kernel, y, n),
        _ => z_pairs::<3>(kernel, y, n),
    })
}

fn z_pairs<const D: usize>(kernel: Kernel, y: &[f32], n: usize) -> f64 {
    // Pair rows i and n−1−i so every task sums about n pairs.
    let half = n.div_ceil(2);
    let row = |i: usize| -> f64 {
        let yi = &y[i * D..(i + 1) * D];
        y[(i + 1) * D..]
            .chunks_exact(D)
            .map(|yj| {
                let d2: f64 = (0..D).map(|a| (yi[a] as f64 - yj[a] as f64).powi(2)).sum();
                kernel.g1(d2)
            })
            .sum()
    };
    let upper = crate::ordered::sum_in_order(
        (0..half)
            .into_par_iter()
            .map(|i| row(i) + if n - 1 - i > i { row(n - 1 - i) } else { 0.0 }),
    );
    2.0 * upper
}

/// Relative error `‖exact − approx‖₂ / ‖exact‖₂` (the reference thesis' measure).
pub fn relative_error<T: Copy + Into<f64>>(exact: &[T], approx: &[T]) -> f64 {
    let wide = |v: T| -> f64 { v.into() };
    let num: f64 = exact
        .iter()
        .zip(approx)
        .map(|(&e, &a)| (wide(e) - wide(a)).powi(2))
        .sum();
    let den: f64 = exact.iter().map(|&e| wide(e).powi(2)).sum();
    (num / den).sqrt()
}

/// The O(n²) reference behind the [`Repulse`] interface (all times are booked as `g2g`).
#[derive(Default)]
pub struct ExactRepulsion {
    kernel: Kernel,
}

impl ExactRepulsion {
    /// With t-SNE's Cauchy kernel.
    pub fn new() -> Self {
        ExactRepulsion::default()
    }

    /// With the heavy-tailed `kernel` ([`Kernel`]).
    pub fn with_kernel(kernel: Kernel) -> Self {
        ExactRepulsion { kernel }
    }
}

impl Repulse for ExactRepulsion {
    fn repulse(&mut self, y: &[f32], dims: usize, force: &mut [f32]) -> Result<Repulsion> {
        let start = std::time::Instant::now();
        let n = check_shapes(y, dims, force.len())?;
        let all: Vec<usize> = (0..n).collect();
        let sums = exact_for_targets_with(self.kernel, y, dims, &all)?;
        let z: f64 = sums.z_row.iter().sum();
        for (f, s) in force.iter_mut().zip(&sums.force_z) {
            *f = (s / z) as f32;
        }
        Ok(Repulsion {
            z,
            grid: None,
            times: RepulseTimes {
                g2g: start.elapsed().as_secs_f64(),
                ..RepulseTimes::default()
            },
            replan_seconds: 0.0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    #[test]
    fn matches_pairwise_definition() {
        let y = [0.0f32, 0.0, 1.0, 0.0, 0.0, 2.0];
        let mut f = [0.0f32; 6];
        let r = ExactRepulsion::new().repulse(&y, 2, &mut f).unwrap();
        let (w01, w02, w12) = (0.5, 0.2, 1.0 / 6.0);
        let z = 2.0 * (w01 + w02 + w12);
        assert!((r.z - z).abs() < 1e-12);
        let f0 = [-(w01 * w01) / z, -2.0 * (w02 * w02) / z];
        assert!((f[0] as f64 - f0[0]).abs() < 1e-7 && (f[1] as f64 - f0[1]).abs() < 1e-7);
        assert!((exact_z(&y, 2).unwrap() - z).abs() < 1e-12);
    }

    #[test]
    fn subset_agrees_with_full_and_z_with_rows() {
        let mut rng = StdRng::seed_from_u64(3);
        for (n, dims) in [(101, 1), (300, 2), (77, 3)] {
            let y: Vec<f32> = (0..n * dims).map(|_| rng.random::<f32>() * 6.0).collect();
            let all: Vec<usize> = (0..n).collect();
            let full = exact_for_targets(&y, dims, &all).unwrap();
            let z = exact_z(&y, dims).unwrap();
            let zr: f64 = full.z_row.iter().sum();
            assert!((z - zr).abs() < 1e-10 * z);
            let sub = exact_for_targets(&y, dims, &[5, 0, 17]).unwrap();
            for (k, &t) in [5usize, 0, 17].iter().enumerate() {
                assert_eq!(sub.z_row[k], full.z_row[t]);
                assert_eq!(
                    sub.force_z[k * dims..(k + 1) * dims],
                    full.force_z[t * dims..(t + 1) * dims]
                );
            }
            // Newton's third law: the unnormalised forces sum to zero.
            let s: f64 = full.force_z.iter().sum();
            assert!(s.abs() < 1e-9 * n as f64);
        }
    }

    #[test]
    fn rejects_bad_input() {
        let y = [0.0f32; 6];
        assert!(exact_for_targets(&y, 2, &[3]).is_err());
        assert!(exact_for_targets(&y, 4, &[0]).is_err());
        assert!(exact_z(&y, 0).is_err());
        let mut f = [0.0f32; 5];
        assert!(ExactRepulsion::new().repulse(&y, 2, &mut f).is_err());
        let mut f = [0.0f32; 6];
        assert!(ExactRepulsion::new().repulse(&y, 4, &mut f).is_err());
        assert!(ExactRepulsion::new()
            .repulse(&y[..5], 2, &mut f[..5])
            .is_err());
    }
}
