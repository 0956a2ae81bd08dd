//! Multi-dimensional complex FFTs of `p^s` points on the grid, in parallel with rayon.
//!
//! An s-dimensional FFT is 1-D FFTs along each axis in turn. Rows along the contiguous axis are
//! transformed in parallel; between axes a transpose of the `(p^{s−1}, p)` matrix view rotates
//! the axes so the next one becomes contiguous. The forward transform therefore leaves its
//! spectrum in a *rotated* layout; that is harmless because the convolution only multiplies
//! spectra element-wise, and kernel spectra go through the same forward transform. The inverse
//! undoes the rotations and returns data in the natural layout (axis 0 fastest).

use std::sync::Arc;

use rayon::prelude::*;
use rustfft::num_complex::Complex;
use rustfft::num_traits::Float;
use rustfft::{Fft, FftNum, FftPlanner};

/// Floating-point type of the grid computations: `f32` (the default, twice the FFT throughput)
/// or `f64`.
pub trait Real: FftNum + Float + Default {
    /// Conversion from `f64` (rounds for `f32`).
    fn of(x: f64) -> Self;
    /// Conversion to `f64` (exact).
    fn as_f64(self) -> f64;
}

impl Real for f32 {
    #[inline(always)]
    fn of(x: f64) -> Self {
        x as f32
    }
    #[inline(always)]
    fn as_f64(self) -> f64 {
        self as f64
    }
}

impl Real for f64 {
    #[inline(always)]
    fn of(x: f64) -> Self {
        x
    }
    #[inline(always)]
    fn as_f64(self) -> f64 {
        self
    }
}

/// Plans and scratch for forward and inverse unnormalised complex FFTs of `p^dims` points.
pub struct FftNd<T: FftNum> {
    p: usize,
    dims: usize,
    fwd: Arc<dyn Fft<T>>,
    inv: Arc<dyn Fft<T>>,
    /// Second buffer for the out-of-place transposes (swapped with the data).
    tmp: Vec<Complex<T>>,
    /// One FFT scratch buffer per parallel task.
    scratch: Vec<Vec<Complex<T>>>,
}

impl<T: Real> FftNd<T> {
    /// Plans the transforms (the planner caches plans across sizes).
    pub fn new(planner: &mut FftPlanner<T>, p: usize, dims: usize) -> Self {
        let fwd = planner.plan_fft_forward(p);
        let inv = planner.plan_fft_inverse(p);
        let scratch_len = fwd
            .get_inplace_scratch_len()
            .max(inv.get_inplace_scratch_len());
        let tasks = rayon::current_num_threads().max(1);
        let len = p.pow(dims as u32);
        FftNd {
            p,
            dims,
            fwd,
            inv,
            tmp: vec![Complex::default(); if dims > 1 { len } else { 0 }],
            scratch: vec![vec![Complex::default(); scratch_len]; tasks],
        }
    }

    /// Number of points, `p^dims`.
    pub fn len(&self) -> usize {
        self.p.pow(self.dims as u32)
    }

    /// Whether there are no points (never, for a planned transform).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forward transform in place; the result is in the rotated layout.
    pub fn forward(&mut self, data: &mut Vec<Complex<T>>) {
        debug_assert_eq!(data.len(), self.len());
        let (p, len) = (self.p, self.len());
        rows(&*self.fwd, data, &mut self.scratch);
        for _ in 1..self.dims {
            transpose(data, &mut self.tmp, len / p, p);
            std::mem::swap(data, &mut self.tmp);
            rows(&*self.fwd, data, &mut self.scratch);
        }
    }

    /// Inverse of [`FftNd::forward`] without the `1/p^s` normalisation; takes the rotated
    /// layout and returns the natural one.
    pub fn inverse(&mut self, data: &mut Vec<Complex<T>>) {
        debug_assert_eq!(data.len(), self.len());
        let (p, len) = (self.p, self.len());
        for _ in 1..self.dims {
            rows(&*self.inv, data, &mut self.scratch);
            transpose(data, &mut self.tmp, p, len / p);
            std::mem::swap(data, &mut self.tmp);
        }
        rows(&*self.inv, data, &mut self.scratch);
    }
}

/// 1-D FFTs of every contiguous row of `data`, the rows split evenly over the scratch buffers.
fn rows<T: FftNum>(fft: &dyn Fft<T>, data: &mut [Complex<T>], scratch: &mut [Vec<Complex<T>>]) {
    let p = fft.len();
    let per_task = (data.len() / p).div_ceil(scratch.len()).max(1) * p;
    data.par_chunks_mut(per_task)
        .zip(scratch.par_iter_mut())
        .for_each(|(chunk, s)| fft.process_with_scratch(chunk, s));
}

/// Tile edge of the blocked transpose.
const TILE: usize = 16;

/// Out-of-place transpose of the `r × c` row-major matrix `inp` into the `c × r` matrix `out`,
/// parallel over tiles of output rows.
fn transpose<E: Copy + Send + Sync>(inp: &[E], out: &mut [E], r: usize, c: usize) {
    debug_assert_eq!(inp.len(), r * c);
    debug_assert_eq!(out.len(), r * c);
    out.par_chunks_mut(TILE * r)
        .enumerate()
        .for_each(|(t, block)| {
            let c0 = t * TILE;
            let cn = block.len() / r;
            for r0 in (0..r).step_by(TILE) {
                let r1 = (r0 + TILE).min(r);
                for j in 0..cn {
                    let dst = &mut block[j * r + r0..j * r + r1];
                    for (k, d) in dst.iter_mut().enumerate() {
                        *d = inp[(r0 + k) * c + c0 + j];
                    }
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// Direct s-D DFT of a natural-layout array, for reference.
    fn dft(x: &[Complex<f64>], p: usize, dims: usize, sign: f64) -> Vec<Complex<f64>> {
        let len = p.pow(dims as u32);
        let idx = |mut f: usize| -> Vec<usize> {
            (0..dims)
                .map(|_| {
                    let k = f % p;
                    f /= p;
                    k
                })
                .collect()
        };
        (0..len)
            .map(|k| {
                let kk = idx(k);
                (0..len)
                    .map(|j| {
                        let jj = idx(j);
                        let ph: usize = kk.iter().zip(&jj).map(|(a, b)| a * b).sum();
                        let ang = sign * 2.0 * std::f64::consts::PI * (ph % p) as f64 / p as f64;
                        x[j] * Complex::new(ang.cos(), ang.sin())
                    })
                    .sum()
            })
            .collect()
    }

    #[test]
    fn transpose_is_exact() {
        let (r, c) = (37, 20);
        let inp: Vec<usize> = (0..r * c).collect();
        let mut out = vec![0; r * c];
        transpose(&inp, &mut out, r, c);
        for i in 0..r {
            for j in 0..c {
                assert_eq!(out[j * r + i], inp[i * c + j]);
            }
        }
    }

    #[test]
    fn round_trip_and_parseval_match_direct_dft() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut planner = FftPlanner::new();
        for (p, dims) in [(12usize, 1usize), (7, 2), (5, 3)] {
            let len = p.pow(dims as u32);
            let x: Vec<Complex<f64>> = (0..len)
                .map(|_| Complex::new(rng.random::<f64>() - 0.5, rng.random::<f64>() - 0.5))
                .collect();
            let mut f = FftNd::new(&mut planner, p, dims);
            let mut y = x.clone();
            f.forward(&mut y);
            // The rotated layout is a permutation: same multiset of values as the direct DFT.
            let direct = dft(&x, p, dims, -1.0);
            let mut a: Vec<(f64, f64)> = y.iter().map(|z| (z.re, z.im)).collect();
            let mut b: Vec<(f64, f64)> = direct.iter().map(|z| (z.re, z.im)).collect();
            a.sort_by(|u, v| u.partial_cmp(v).unwrap());
            b.sort_by(|u, v| u.partial_cmp(v).unwrap());
            for (u, v) in a.iter().zip(&b) {
                assert!((u.0 - v.0).abs() < 1e-9 && (u.1 - v.1).abs() < 1e-9);
            }
            f.inverse(&mut y);
            for (u, v) in y.iter().zip(&x) {
                assert!((u / len as f64 - v).norm() < 1e-12);
            }
        }
    }
}
