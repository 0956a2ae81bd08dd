//! Attraction over P in CSB, parallel over block rows (each writes only its own rows).

use rayon::prelude::*;

use super::{check_shapes, pair, Attract};
use crate::sparse::Csb;
use crate::Result;

impl Attract for Csb {
    fn attract(
        &self,
        y: &[f32],
        dims: usize,
        force: &mut [f32],
        with_kl: bool,
    ) -> Result<Option<f64>> {
        check_shapes(self.n(), y, dims, force)?;
        let kl = match (dims, with_kl) {
            (1, false) => run::<1, false>(self, y, force),
            (1, true) => run::<1, true>(self, y, force),
            (2, false) => run::<2, false>(self, y, force),
            (2, true) => run::<2, true>(self, y, force),
            (3, false) => run::<3, false>(self, y, force),
            _ => run::<3, true>(self, y, force),
        };
        Ok(with_kl.then_some(kl))
    }
}

/// Monomorphised over the dimension D and whether Σ p ln w is accumulated.
fn run<const D: usize, const KL: bool>(csb: &Csb, y: &[f32], force: &mut [f32]) -> f64 {
    let beta = csb.beta();
    force
        .par_chunks_mut(beta * D)
        .enumerate()
        .map(|(b, out)| {
            let rows = csb.block_rows(b);
            let y_rows = &y[rows.start * D..rows.end * D];
            out.fill(0.0);
            let mut kl = 0f64;
            for blk in csb.blocks(b) {
                let c0 = blk.col * beta;
                let y_cols = &y[c0 * D..(c0 + beta).min(csb.n()) * D];
                let mut block_kl = 0f32;
                for (&c, &p) in blk.coords.iter().zip(blk.values) {
                    let r = (c >> 16) as usize;
                    let col = (c & 0xffff) as usize;
                    let yi: &[f32; D] = y_rows[r * D..r * D + D].try_into().unwrap();
                    let acc: &mut [f32; D] = (&mut out[r * D..r * D + D]).try_into().unwrap();
                    let lw = pair::<D, KL>(p, yi, &y_cols[col * D..col * D + D], acc);
                    if KL {
                        block_kl += p * lw;
                    }
                }
                kl += block_kl as f64;
            }
            kl
        })
        .sum()
}
