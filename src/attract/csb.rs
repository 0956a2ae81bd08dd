//! Attraction over P in CSB, parallel over block rows (each writes only its own rows).

use rayon::prelude::*;

use super::{check_shapes, pair, Attract};
use crate::kernel::{EdgeF32, Kernel};
use crate::sparse::csb::Block;
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
        let kl = attract_csb(self, k, y, dims, force, with_kl, wide_available());
        Ok(with_kl.then_some(kl))
    }
}

/// The pass of [`Csb::attract_with`], its rows' entries taken 8 at a time by AVX2 when `wide`
/// (which the CPU must support: [`wide_available`]).
fn attract_csb(
    csb: &Csb,
    k: EdgeF32,
    y: &[f32],
    dims: usize,
    force: &mut [f32],
    with_kl: bool,
    wide: bool,
) -> f64 {
    match (dims, with_kl) {
        (1, false) => run::<1, false>(csb, y, force, k, wide),
        (1, true) => run::<1, true>(csb, y, force, k, wide),
        (2, false) => run::<2, false>(csb, y, force, k, wide),
        (2, true) => run::<2, true>(csb, y, force, k, wide),
        (3, false) => run::<3, false>(csb, y, force, k, wide),
        _ => run::<3, true>(csb, y, force, k, wide),
    }
}

/// Whether this CPU runs the AVX2 loop ([`super::avx2`]).
fn wide_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        super::avx2::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The row's entries (at least [`WIDTH`]) by the AVX2 loop, their sum. `wide` was checked by
/// the caller ([`wide_available`]).
#[inline(always)]
fn wide_row<const D: usize>(
    cs: &[u16],
    vs: &[f32],
    yi: &[f32; D],
    y_cols: &[f32],
    inv_dof: f32,
) -> [f32; D] {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the caller runs this only where `wide_available` holds (AVX2 and FMA) and
        // on rows of at least `WIDTH` entries; the CSB invariant maps every local column of
        // the block to one of its block column's points, which `run` sliced into `y_cols`.
        unsafe { super::avx2::row::<D>(cs, vs, yi, y_cols, inv_dof) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (cs, vs, yi, y_cols, inv_dof);
        unreachable!("the AVX2 loop runs on x86-64 only")
    }
}

/// Entries per step of the AVX2 loop.
#[cfg(target_arch = "x86_64")]
const WIDTH: usize = super::avx2::WIDTH;
#[cfg(not(target_arch = "x86_64"))]
const WIDTH: usize = 8;

/// Independent partial sums per row: consecutive entries of a row add into different ones,
/// so each waits on no other's add.
const LANES: usize = 4;

/// Monomorphised over the dimension D and whether Σ p ln w is accumulated.
fn run<const D: usize, const KL: bool>(
    csb: &Csb,
    y: &[f32],
    force: &mut [f32],
    k: EdgeF32,
    wide: bool,
) -> f64 {
    let beta = csb.beta();
    let kl = force.par_chunks_mut(beta * D).enumerate().map(|(b, out)| {
        let rows = csb.block_rows(b);
        let y_rows = &y[rows.start * D..rows.end * D];
        out.fill(0.0);
        let mut kl = 0f64;
        for blk in csb.blocks(b) {
            let c0 = blk.col * beta;
            let y_cols = &y[c0 * D..(c0 + beta).min(csb.n()) * D];
            kl += block::<D, KL>(&blk, y_rows, y_cols, out, k, wide) as f64;
        }
        kl
    });
    crate::ordered::sum_in_order(kl)
}

/// One block's entries, taken in its runs of one row: the row's force is summed in
/// registers, in [`LANES`] partial sums, and added to `out` once per run. (Adding every entry
/// to `out` directly chains each entry's load and add on the previous one's store: about
/// twice as slow.) Returns the block's Σ p ln w when `KL`.
#[inline(always)]
fn block<const D: usize, const KL: bool>(
    blk: &Block<'_>,
    y_rows: &[f32],
    y_cols: &[f32],
    out: &mut [f32],
    k: EdgeF32,
    wide: bool,
) -> f32 {
    let mut kl = 0f32;
    let mut start = 0;
    for run in blk.runs {
        let (r, len) = (run.row as usize, run.len as usize);
        let (cs, vs) = (
            &blk.cols[start..start + len],
            &blk.values[start..start + len],
        );
        start += len;
        let yi: &[f32; D] = y_rows[r * D..r * D + D].try_into().unwrap();
        // The AVX2 loop takes the row's entries 8 at a time, the last few in one masked step
        // (not the KL pass: the logarithms stay scalar, every 50 iterations); the portable
        // loop takes the rest. Runs shorter than 8 stay portable: on P in a poor order most
        // runs are 1 or 2 entries, and a call per run made the pass half as slow again (1M
        // points in input order, 16 threads: 68 → 103–112 ms).
        if wide && !KL && cs.len() >= WIDTH {
            let sum = wide_row::<D>(cs, vs, yi, y_cols, k.inv_dof);
            for (o, s) in out[r * D..r * D + D].iter_mut().zip(sum) {
                *o += s;
            }
            continue;
        }
        let mut entry = |lane: usize, c: u16, p: f32, acc: &mut [[f32; D]; LANES]| {
            let col = c as usize;
            let lw = pair::<D, KL>(p, yi, &y_cols[col * D..col * D + D], &mut acc[lane], k);
            if KL {
                kl += p * lw;
            }
        };
        let mut acc = [[0f32; D]; LANES];
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
    }
    kl
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// The AVX2 loop (where this CPU has it) gives the portable loop's forces to rounding, on
    /// rows long enough for it (up to 80 entries per block), their last 1–7 entries in its
    /// masked step, in 1, 2 and 3 dimensions and with a heavy-tailed kernel.
    #[test]
    fn wide_loop_equals_portable_loop() {
        if !wide_available() {
            eprintln!("no AVX2 + FMA on this CPU: only the portable loop runs");
            return;
        }
        let mut rng = StdRng::seed_from_u64(3);
        let p = crate::sparse::random_symmetric_p(3000, &mut rng, |i, _| 1 + i % 40);
        for (dims, beta, dof) in [
            (1, 1 << 12, 1.0),
            (2, 1 << 12, 1.0),
            (2, 256, 0.5),
            (3, 1024, 2.0),
        ] {
            let csb = Csb::from_csr(&p, beta).unwrap();
            let y: Vec<f32> = (0..3000 * dims)
                .map(|_| rng.random_range(-30.0..30.0))
                .collect();
            let k = Kernel::new(dof).unwrap().edge_f32();
            let mut portable = vec![0f32; y.len()];
            let mut wide = vec![0f32; y.len()];
            attract_csb(&csb, k, &y, dims, &mut portable, false, false);
            attract_csb(&csb, k, &y, dims, &mut wide, false, true);
            let scale = portable.iter().fold(0f32, |m, v| m.max(v.abs()));
            for (i, (a, b)) in portable.iter().zip(&wide).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-5 * scale,
                    "dims {dims} β {beta}: force {i}: {a} vs {b}"
                );
            }
        }
    }
}
