//! Attraction over P in CSR: the plain reference the CSB path is tested against.

use rayon::prelude::*;

use super::{check_shapes, pair, Attract};
use crate::affinity::Affinities;
use crate::kernel::{EdgeF32, Kernel};
use crate::Result;

impl Attract for Affinities {
    fn attract_with(
        &self,
        kernel: Kernel,
        y: &[f32],
        dims: usize,
        force: &mut [f32],
        with_kl: bool,
    ) -> Result<Option<f64>> {
        check_shapes(self.rows(), y, dims, force)?;
        let k = kernel.edge_f32();
        let kl = match dims {
            1 => run::<1>(self, y, force, k),
            2 => run::<2>(self, y, force, k),
            _ => run::<3>(self, y, force, k),
        };
        Ok(with_kl.then_some(kl))
    }
}

fn run<const D: usize>(p: &Affinities, y: &[f32], force: &mut [f32], k: EdgeF32) -> f64 {
    let kl = force.par_chunks_mut(D).enumerate().map(|(i, out)| {
        let yi: &[f32; D] = y[i * D..i * D + D].try_into().unwrap();
        let mut acc = [0f32; D];
        let mut kl = 0f64;
        if let Some(row) = p.outer_view(i) {
            for (j, &pij) in row.iter() {
                let lw = pair::<D, true>(pij, yi, &y[j * D..j * D + D], &mut acc, k);
                kl += (pij * lw) as f64;
            }
        }
        out.copy_from_slice(&acc);
        kl
    });
    crate::ordered::sum_in_order(kl)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparse::Csb;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    fn random_p(n: usize, per_row: usize, seed: u64) -> Affinities {
        let mut rng = StdRng::seed_from_u64(seed);
        crate::sparse::random_symmetric_p(n, &mut rng, |_, _| per_row)
    }

    #[test]
    fn csb_equals_csr_and_dense() {
        for (n, dims, beta) in [(37, 1, 8), (500, 2, 64), (3000, 3, 256), (3000, 2, 1 << 14)] {
            let p = random_p(n, 6, n as u64 + dims as u64);
            let mut rng = StdRng::seed_from_u64(9);
            let y: Vec<f32> = (0..n * dims).map(|_| rng.random_range(-5.0..5.0)).collect();
            let mut f_csr = vec![f32::NAN; n * dims];
            let mut f_csb = vec![f32::NAN; n * dims];
            let kl_csr = p.attract(&y, dims, &mut f_csr, true).unwrap().unwrap();
            let csb = Csb::from_csr(&p, beta).unwrap();
            let kl_csb = csb.attract(&y, dims, &mut f_csb, true).unwrap().unwrap();
            // Dense f64 reference.
            let mut kl_ref = 0f64;
            for i in 0..n {
                let mut want = vec![0f64; dims];
                for (j, &pij) in p.outer_view(i).unwrap().iter() {
                    let d: Vec<f64> = (0..dims)
                        .map(|k| (y[i * dims + k] - y[j * dims + k]) as f64)
                        .collect();
                    let w = 1.0 / (1.0 + d.iter().map(|v| v * v).sum::<f64>());
                    kl_ref += pij as f64 * w.ln();
                    for k in 0..dims {
                        want[k] += pij as f64 * w * d[k];
                    }
                }
                for k in 0..dims {
                    let (a, b) = (f_csr[i * dims + k] as f64, f_csb[i * dims + k] as f64);
                    let tol = 1e-4 * (1.0 + want[k].abs());
                    assert!(
                        (a - want[k]).abs() < tol,
                        "CSR n={n} i={i}: {a} vs {}",
                        want[k]
                    );
                    assert!(
                        (b - want[k]).abs() < tol,
                        "CSB n={n} i={i}: {b} vs {}",
                        want[k]
                    );
                }
            }
            assert!((kl_csr - kl_ref).abs() < 1e-4 * kl_ref.abs().max(1.0));
            assert!((kl_csb - kl_ref).abs() < 1e-4 * kl_ref.abs().max(1.0));
        }
    }

    #[test]
    fn shape_mismatch_is_an_error() {
        let p = random_p(10, 2, 1);
        let mut f = vec![0f32; 20];
        assert!(p.attract(&[0.0; 19], 2, &mut f, false).is_err());
        assert!(p.attract(&[0.0; 40], 4, &mut [0.0; 40], false).is_err());
    }
}
