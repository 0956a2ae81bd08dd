//! Attraction over P in CSB, parallel over block rows (each writes only its own rows).

use rayon::prelude::*;

use super::{check_shapes, pair, Attract};
use crate::kernel::{EdgeF32, Kernel};
use crate::sparse::Csb;
use crate::Result;

impl Attract for Csb {
    fn attract_with(
        &self,
        kernel: Kernel,
        y: &[f32],
        dims: usize,
        force: &mut [f32],
        with_kl: bool,
    ) -> Result<Option<f64>> {
        check_shapes(self.n(), y, dims, force)?;
        let k = kernel.edge_f32();
        let kl = match (dims, with_kl) {
            (1, false) => run::<1, false>(self, y, force, k),
            (1, true) => run::<1, true>(self, y, force, k),
            (2, false) => run::<2, false>(self, y, force, k),
            (2, true) => run::<2, true>(self, y, force, k),
            (3, false) => run::<3, false>(self, y, force, k),
            _ => run::<3, true>(self, y, force, k),
        };
        Ok(with_kl.then_some(kl))
    }
}

/// Independent partial sums per row: consecutive entries of a row add into different ones,
/// so each waits on no other's add.
const LANES: usize = 4;

/// Monomorphised over the dimension D and whether Σ p ln w is accumulated.
fn run<const D: usize, const KL: bool>(csb: &Csb, y: &[f32], force: &mut [f32], k: EdgeF32) -> f64 {
    let beta = csb.beta();
    let kl = force.par_chunks_mut(beta * D).enumerate().map(|(b, out)| {
        let rows = csb.block_rows(b);
        let y_rows = &y[rows.start * D..rows.end * D];
        out.fill(0.0);
        let mut kl = 0f64;
        for blk in csb.blocks(b) {
            let c0 = blk.col * beta;
            let y_cols = &y[c0 * D..(c0 + beta).min(csb.n()) * D];
            kl += block::<D, KL>(blk.coords, blk.values, y_rows, y_cols, out, k) as f64;
        }
        kl
    });
    crate::ordered::sum_in_order(kl)
}

/// One block's entries (sorted by local row), taken in runs of one row: the row's force is
/// summed in registers, in [`LANES`] partial sums, and added to `out` once per run. (Adding
/// every entry to `out` directly chains each entry's load and add on the previous one's store:
/// about twice as slow.) Returns the block's Σ p ln w when `KL`.
#[inline(always)]
fn block<const D: usize, const KL: bool>(
    coords: &[u32],
    values: &[f32],
    y_rows: &[f32],
    y_cols: &[f32],
    out: &mut [f32],
    k: EdgeF32,
) -> f32 {
    let mut kl = 0f32;
    let mut start = 0;
    while start < coords.len() {
        let r = (coords[start] >> 16) as usize;
        let len = coords[start..]
            .iter()
            .position(|&c| (c >> 16) as usize != r)
            .unwrap_or(coords.len() - start);
        let (cs, vs) = (&coords[start..start + len], &values[start..start + len]);
        let yi: &[f32; D] = y_rows[r * D..r * D + D].try_into().unwrap();
        let mut acc = [[0f32; D]; LANES];
        let mut entry = |lane: usize, c: u32, p: f32, acc: &mut [[f32; D]; LANES]| {
            let col = (c & 0xffff) as usize;
            let lw = pair::<D, KL>(p, yi, &y_cols[col * D..col * D + D], &mut acc[lane], k);
            if KL {
                kl += p * lw;
            }
        };
        let (c_chunks, v_chunks) = (cs.chunks_exact(LANES), vs.chunks_exact(LANES));
        let (c_tail, v_tail) = (c_chunks.remainder(), v_chunks.remainder());
        for (c4, v4) in c_chunks.zip(v_chunks) {
            for lane in 0..LANES {
                entry(lane, c4[lane], v4[lane], &mut acc);
            }
        }
        for (lane, (&c, &p)) in c_tail.iter().zip(v_tail).enumerate() {
            entry(lane, c, p, &mut acc);
        }
        for k in 0..D {
            out[r * D + k] += acc.iter().map(|a| a[k]).sum::<f32>();
        }
        start += len;
    }
    kl
}
