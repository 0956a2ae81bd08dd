//! Multi-dimensional real FFTs of a `p^s` grid zero-padded to `(2p)^s`, in parallel with rayon.
//!
//! The padded transform is pruned: only the `p^s` corner holds data, so along each axis only
//! the lines that can be non-zero are transformed. Axis 0 (contiguous) takes a real-to-complex
//! transform of length `2p` (realfft), which keeps the `p + 1` non-negative frequencies (the
//! others are their conjugates); every further axis takes complex transforms of length `2p`.
//! Per channel that is `p^{s−1}` real rows and `(p+1)·(2p)^{a−1}·p^{s−1−a}` complex lines on
//! axis `a`: in 2-D `p` real plus `p + 1` complex transforms of length `2p`, about 1.5 times a
//! `p²` complex FFT, against 4 for the unpruned `(2p)²` complex FFT. The inverse prunes the
//! same way on the way back: only the first `p` outputs along each axis are kept.
//!
//! Between axes a transpose rotates the next axis to the contiguous position and pads (or, on
//! the way back, crops) it. The spectrum therefore sits in a *rotated* layout; that is harmless
//! because the convolution only multiplies spectra element-wise, and kernel spectra go through
//! the same forward transform. [`PaddedFft::axis0_stride`] says where axis 0 (the half axis)
//! ended up, for sums over the full spectrum.

use std::sync::Arc;

use rayon::prelude::*;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
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

/// FFT plans of both kinds for one precision, shared by every grid size.
pub struct Planners<T: FftNum> {
    complex: FftPlanner<T>,
    real: RealFftPlanner<T>,
}

impl<T: FftNum> Default for Planners<T> {
    fn default() -> Self {
        Planners {
            complex: FftPlanner::new(),
            real: RealFftPlanner::new(),
        }
    }
}

/// Per-task scratch of the row transforms.
struct RowScratch<T> {
    real: Vec<T>,
    fft: Vec<Complex<T>>,
}

/// Plans and buffers for the pruned padded transforms of a `p^dims` grid.
pub struct PaddedFft<T: FftNum> {
    p: usize,
    dims: usize,
    r2c: Arc<dyn RealToComplex<T>>,
    c2r: Arc<dyn ComplexToReal<T>>,
    fwd: Arc<dyn Fft<T>>,
    inv: Arc<dyn Fft<T>>,
    /// Second buffer for the out-of-place transposes (swapped with the data).
    tmp: Vec<Complex<T>>,
    /// Per parallel task.
    scratch: Vec<RowScratch<T>>,
}

impl<T: Real> PaddedFft<T> {
    /// Plans the transforms of length `2p`.
    pub fn new(planners: &mut Planners<T>, p: usize, dims: usize) -> Self {
        let n = 2 * p;
        let r2c = planners.real.plan_fft_forward(n);
        let c2r = planners.real.plan_fft_inverse(n);
        let fwd = planners.complex.plan_fft_forward(n);
        let inv = planners.complex.plan_fft_inverse(n);
        let fft_len = [
            r2c.get_scratch_len(),
            c2r.get_scratch_len(),
            fwd.get_inplace_scratch_len(),
            inv.get_inplace_scratch_len(),
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        let tasks = rayon::current_num_threads().max(1);
        let scratch = (0..tasks)
            .map(|_| RowScratch {
                real: vec![T::zero(); n],
                fft: vec![Complex::default(); fft_len],
            })
            .collect();
        let mut f = PaddedFft {
            p,
            dims,
            r2c,
            c2r,
            fwd,
            inv,
            tmp: Vec::new(),
            scratch,
        };
        f.tmp = vec![Complex::default(); f.len()];
        f
    }

    /// Number of complex values of a spectrum, `(p+1)·(2p)^{s−1}`.
    pub fn len(&self) -> usize {
        (self.p + 1) * (2 * self.p).pow(self.dims as u32 - 1)
    }

    /// Whether the spectrum is empty (never, for a planned transform).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Distance between consecutive axis-0 frequencies in the rotated layout: spectrum entry
    /// `e` has axis-0 frequency `(e / axis0_stride) % (p + 1)`.
    pub fn axis0_stride(&self) -> usize {
        if self.dims == 1 {
            1
        } else {
            2 * self.p
        }
    }

    /// Forward transform of one real channel into `spec` (resized to [`PaddedFft::len`]),
    /// rotated layout. The input is `m^s` nodes in natural layout (axis 0 fastest), `m = p`
    /// (zero-padded to `2p`) or `m = 2p` (a full periodic array, e.g. an embedded kernel);
    /// node `j` holds its value at `x[j·nch + c]` of `(x, nch, c)`.
    pub fn forward(
        &mut self,
        (x, nch, c): (&[T], usize, usize),
        m: usize,
        spec: &mut Vec<Complex<T>>,
    ) {
        self.forward_open((x, nch, c), m, spec);
        if self.dims > 1 {
            lines(&*self.fwd, spec, &mut self.scratch);
        }
    }

    /// [`PaddedFft::forward`] but for the last axis's line transforms (none in 1-D): what
    /// [`PaddedFft::through_last_axis`] starts from.
    fn forward_open(
        &mut self,
        (x, nch, c): (&[T], usize, usize),
        m: usize,
        spec: &mut Vec<Complex<T>>,
    ) {
        let (p, n) = (self.p, 2 * self.p);
        debug_assert!(m == p || m == n);
        let rows = m.pow(self.dims as u32 - 1);
        debug_assert_eq!(x.len(), rows * m * nch);
        let len = self.len();
        spec.resize(len, Complex::default());
        let half = p + 1;
        let r2c = &*self.r2c;
        let per_task = rows.div_ceil(self.scratch.len()).max(1);
        spec[..rows * half]
            .par_chunks_mut(per_task * half)
            .zip(x.par_chunks(per_task * m * nch))
            .zip(self.scratch.par_iter_mut())
            .for_each(|((out, xs), s)| {
                for (o, row) in out.chunks_exact_mut(half).zip(xs.chunks_exact(m * nch)) {
                    for (r, node) in s.real.iter_mut().zip(row.chunks_exact(nch)) {
                        *r = node[c];
                    }
                    s.real[m..].fill(T::zero());
                    r2c.process_with_scratch(&mut s.real, o, &mut s.fft)
                        .expect("buffer lengths from the plan");
                }
            });
        // Axis a = 1 … s−1: rotate it to the contiguous position, padded from m to 2p, and
        // transform it. The matrix rotated has `half` columns (axis 0) at a = 1, 2p after.
        let mut r = rows * half;
        for a in 1..self.dims {
            let cols = if a == 1 { half } else { n };
            let groups = r / cols / m;
            let out_len = cols * groups * n;
            transpose_pad(&spec[..r], &mut self.tmp[..out_len], (r / cols, cols), m, n);
            std::mem::swap(spec, &mut self.tmp);
            if a + 1 < self.dims {
                lines(&*self.fwd, &mut spec[..out_len], &mut self.scratch);
            }
            r = out_len;
        }
        debug_assert_eq!(r, len);
    }

    /// Inverse of [`PaddedFft::forward`] (unnormalised: the result is `(2p)^s` times the
    /// circular convolution's), keeping the first `p` values along every axis: writes
    /// `out[j·nch + c]` for the `p^s` nodes `j` of `(out, nch, c)`. `spec` is destroyed.
    pub fn inverse(&mut self, spec: &mut Vec<Complex<T>>, (out, nch, c): (&mut [T], usize, usize)) {
        if self.dims > 1 {
            lines(&*self.inv, spec, &mut self.scratch);
        }
        self.inverse_closed(spec, (out, nch, c));
    }

    /// Forward transform of one real channel (as [`PaddedFft::forward`]), `each(at, line)`
    /// on every line of the spectrum's contiguous last axis (`at`: the line's offset in the
    /// spectrum; in 1-D the whole spectrum is one line), then the inverse transform (as
    /// [`PaddedFft::inverse`]) into `out`. The last axis is transformed, handed over and
    /// transformed back one line at a time, while the line is in cache: the spectrum
    /// streams through memory once there instead of four times (forward, a product with a
    /// kernel spectrum, a sum over it, inverse). Returns the `each` results summed over the
    /// lines in order, whatever the threads.
    pub fn through_last_axis(
        &mut self,
        (x, nch, c): (&[T], usize, usize),
        spec: &mut Vec<Complex<T>>,
        out: (&mut [T], usize, usize),
        each: impl Fn(usize, &mut [Complex<T>]) -> f64 + Sync,
    ) -> f64 {
        self.forward_open((x, nch, c), self.p, spec);
        let total = if self.dims == 1 {
            each(0, spec)
        } else {
            let n = 2 * self.p;
            let per_task = lines_per_task(spec.len() / n, self.scratch.len());
            let (fwd, inv) = (&*self.fwd, &*self.inv);
            let mut sums = vec![0.0; spec.len() / n];
            spec.par_chunks_mut(per_task * n)
                .zip(sums.par_chunks_mut(per_task))
                .zip(self.scratch.par_iter_mut())
                .enumerate()
                .for_each(|(t, ((chunk, sums), s))| {
                    for (l, (line, sum)) in chunk.chunks_exact_mut(n).zip(sums).enumerate() {
                        fwd.process_with_scratch(line, &mut s.fft);
                        *sum = each((t * per_task + l) * n, line);
                        inv.process_with_scratch(line, &mut s.fft);
                    }
                });
            sums.iter().sum()
        };
        self.inverse_closed(spec, out);
        total
    }

    /// [`PaddedFft::inverse`] after the last axis's line transforms.
    fn inverse_closed(
        &mut self,
        spec: &mut Vec<Complex<T>>,
        (out, nch, c): (&mut [T], usize, usize),
    ) {
        let (p, n, half) = (self.p, 2 * self.p, self.p + 1);
        debug_assert_eq!(spec.len(), self.len());
        debug_assert_eq!(out.len(), p.pow(self.dims as u32) * nch);
        // Undo the axes in reverse: transform the contiguous axis, crop it to p, rotate back.
        let mut r = self.len();
        for a in (1..self.dims).rev() {
            if a + 1 < self.dims {
                lines(&*self.inv, &mut spec[..r], &mut self.scratch);
            }
            // Before axis a's forward rotation the matrix had `cols` columns: half for a = 1,
            // 2p after.
            let cols = if a == 1 { half } else { n };
            let groups = r / n / cols;
            let out_len = groups * p * cols;
            crop_transpose(&spec[..r], &mut self.tmp[..out_len], (cols, groups), p, n);
            std::mem::swap(spec, &mut self.tmp);
            r = out_len;
        }
        let rows = r / half;
        let c2r = &*self.c2r;
        let per_task = rows.div_ceil(self.scratch.len()).max(1);
        spec[..r]
            .par_chunks_mut(per_task * half)
            .zip(out.par_chunks_mut(per_task * p * nch))
            .zip(self.scratch.par_iter_mut())
            .for_each(|((sp, o), s)| {
                for (row, orow) in sp.chunks_exact_mut(half).zip(o.chunks_exact_mut(p * nch)) {
                    // Frequencies 0 and p of a real row are real; rounding may leave an
                    // imaginary part the real inverse would reject.
                    row[0].im = T::zero();
                    row[p].im = T::zero();
                    c2r.process_with_scratch(row, &mut s.real, &mut s.fft)
                        .expect("buffer lengths from the plan");
                    for (node, &v) in orow.chunks_exact_mut(nch).zip(&s.real[..p]) {
                        node[c] = v;
                    }
                }
            });
    }
}

/// Lines per parallel task when `lines` are split evenly over `tasks` scratch buffers.
fn lines_per_task(lines: usize, tasks: usize) -> usize {
    lines.div_ceil(tasks).max(1)
}

/// 1-D complex FFTs of every contiguous line of `data`, split evenly over the scratch buffers.
fn lines<T: FftNum>(fft: &dyn Fft<T>, data: &mut [Complex<T>], scratch: &mut [RowScratch<T>]) {
    let n = fft.len();
    let per_task = lines_per_task(data.len() / n, scratch.len()) * n;
    data.par_chunks_mut(per_task)
        .zip(scratch.par_iter_mut())
        .for_each(|(chunk, s)| fft.process_with_scratch(chunk, &mut s.fft));
}

/// Tile edge of the blocked transposes.
const TILE: usize = 16;

/// Transpose of the `r × c` row-major matrix `inp` (`r = groups·m`) into `out`, `c` rows of
/// `groups` blocks of `n ≥ m`: `out[j][g·n + k] = inp[g·m + k][j]` for `k < m`, zeros for
/// `m ≤ k < n`. Parallel over tiles of output rows.
fn transpose_pad<E: Copy + Default + Send + Sync>(
    inp: &[E],
    out: &mut [E],
    (r, c): (usize, usize),
    m: usize,
    n: usize,
) {
    debug_assert_eq!(inp.len(), r * c);
    let groups = r / m;
    let width = groups * n;
    debug_assert_eq!(out.len(), c * width);
    out.par_chunks_mut(TILE * width)
        .enumerate()
        .for_each(|(t, block)| {
            let j0 = t * TILE;
            // Square tiles: TILE input rows at a time, so that a tile's reads touch TILE
            // rows (pages, at 2048 nodes per axis) rather than a whole column's m.
            for g in 0..groups {
                for k0 in (0..m).step_by(TILE) {
                    let k1 = (k0 + TILE).min(m);
                    for (dj, row) in block.chunks_exact_mut(width).enumerate() {
                        let j = j0 + dj;
                        for (k, d) in row[g * n + k0..g * n + k1].iter_mut().enumerate() {
                            *d = inp[(g * m + k0 + k) * c + j];
                        }
                    }
                }
                for row in block.chunks_exact_mut(width) {
                    row[g * n + m..(g + 1) * n].fill(E::default());
                }
            }
        });
}

/// Inverse of [`transpose_pad`] with `m = p`: `inp` is `c` rows of `groups` blocks of `n`;
/// `out` is the `(groups·p) × c` matrix `out[g·p + k][j] = inp[j][g·n + k]`, `k < p`.
fn crop_transpose<E: Copy + Send + Sync>(
    inp: &[E],
    out: &mut [E],
    (c, groups): (usize, usize),
    p: usize,
    n: usize,
) {
    debug_assert_eq!(inp.len(), c * groups * n);
    debug_assert_eq!(out.len(), groups * p * c);
    out.par_chunks_mut(TILE * c)
        .enumerate()
        .for_each(|(t, block)| {
            let i0 = t * TILE;
            for j0 in (0..c).step_by(TILE) {
                let j1 = (j0 + TILE).min(c);
                for (di, row) in block.chunks_exact_mut(c).enumerate() {
                    let i = i0 + di;
                    let (g, k) = (i / p, i % p);
                    for (j, d) in row[j0..j1].iter_mut().enumerate() {
                        *d = inp[(j0 + j) * groups * n + g * n + k];
                    }
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    #[test]
    fn crop_transpose_undoes_transpose_pad() {
        let (groups, p, c, n) = (3, 5, 4, 8);
        let inp: Vec<usize> = (1..=groups * p * c).collect();
        let mut padded = vec![0; c * groups * n];
        transpose_pad(&inp, &mut padded, (groups * p, c), p, n);
        for j in 0..c {
            for g in 0..groups {
                for k in 0..n {
                    let want = if k < p { inp[(g * p + k) * c + j] } else { 0 };
                    assert_eq!(padded[j * groups * n + g * n + k], want);
                }
            }
        }
        let mut back = vec![0; inp.len()];
        crop_transpose(&padded, &mut back, (c, groups), p, n);
        assert_eq!(back, inp);
    }

    /// Forward then inverse is `(2p)^s` times the identity on the kept corner, in 1-D to 3-D,
    /// from an interleaved channel.
    #[test]
    fn round_trip_keeps_the_corner() {
        let mut rng = StdRng::seed_from_u64(3);
        let mut planners = Planners::default();
        for (p, dims) in [(12usize, 1usize), (7, 2), (5, 3)] {
            let len = p.pow(dims as u32);
            let x: Vec<f64> = (0..2 * len).map(|_| rng.random::<f64>() - 0.5).collect();
            let mut f = PaddedFft::new(&mut planners, p, dims);
            let mut spec = Vec::new();
            f.forward((&x, 2, 1), p, &mut spec);
            assert_eq!(spec.len(), f.len());
            // Frequency 0 is the plain sum, wherever the layout put it: first.
            let sum: f64 = x.iter().skip(1).step_by(2).sum();
            assert!((spec[0].re - sum).abs() < 1e-12);
            let mut out = vec![0.0; 3 * len];
            f.inverse(&mut spec, (&mut out, 3, 2));
            let scale = (2 * p).pow(dims as u32) as f64;
            for j in 0..len {
                assert!(
                    (out[3 * j + 2] / scale - x[2 * j + 1]).abs() < 1e-12,
                    "p={p} s={dims}"
                );
                assert_eq!(out[3 * j], 0.0);
            }
        }
    }

    /// The fused pass gives what a forward transform, a product line by line and an inverse
    /// give, bit for bit, and sums the lines' results.
    #[test]
    fn through_last_axis_is_forward_product_inverse() {
        let mut rng = StdRng::seed_from_u64(4);
        let mut planners = Planners::default();
        for (p, dims) in [(12usize, 1usize), (7, 2), (5, 3)] {
            let len = p.pow(dims as u32);
            let x: Vec<f64> = (0..2 * len).map(|_| rng.random::<f64>() - 0.5).collect();
            let mut f = PaddedFft::new(&mut planners, p, dims);
            let weight: Vec<f64> = (0..f.len()).map(|_| rng.random::<f64>()).collect();
            let mut spec = Vec::new();
            f.forward((&x, 2, 0), p, &mut spec);
            let energy: f64 = spec
                .iter()
                .zip(&weight)
                .map(|(z, w)| w * z.norm_sqr())
                .sum();
            spec.iter_mut()
                .zip(&weight)
                .for_each(|(z, &w)| *z = z.scale(w));
            let mut want = vec![0.0; len];
            f.inverse(&mut spec, (&mut want, 1, 0));
            let mut got = vec![0.0; len];
            let e = f.through_last_axis((&x, 2, 0), &mut spec, (&mut got, 1, 0), |at, line| {
                let mut e = 0.0;
                for (z, &w) in line.iter_mut().zip(&weight[at..]) {
                    e += w * z.norm_sqr();
                    *z = z.scale(w);
                }
                e
            });
            assert_eq!(got, want, "p={p} s={dims}");
            assert!((e - energy).abs() <= 1e-12 * energy, "p={p} s={dims}");
        }
    }
}
