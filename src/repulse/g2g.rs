//! G2G: the grid-to-grid convolution `Φ_m = Σ_n K(h·|m − n|) V_n` with the zero-padding-free
//! FFT method (Pitsianis et al. 2019, SG-t-SNE-Π §3.3; the reference thesis §2.3.5).
//!
//! The Toeplitz product is a circular convolution of size `(2p)^s` once the input is padded with
//! zeros and the kernel embedded as `c = [t_0 … t_{p−1}, 0, t_{p−1} … t_1]` per axis. Splitting
//! the `2p`-point DFT into its even and odd frequencies gives two `p`-point DFTs:
//!
//! - even: `DFT_p(T₁ + T₂) · DFT_p(v)`,
//! - odd: `DFT_p(μ ⊙ (T₁ − T₂)) · DFT_p(μ ⊙ v)`, with `μ_j = e^{−iπj/p}`, and the inverse
//!   transform's output multiplied by `μ̄_m = e^{+iπm/p}`,
//!
//! where `T₁ = t` and `T₂ = [0, t_{p−1}, …, t_1]`, and `Φ = ½(even + odd)`. In `s` dimensions
//! each axis is even or odd independently: `2^s` parity patterns, each a `p^s` FFT, averaged
//! with weight `1/2^s`. The kernel is a function of the full distance, so the pattern's kernel
//! array is the `(2p)^s` embedding folded onto `[0, p)^s` with sign `−1` for each odd axis on
//! which the image `p·b + n` was taken (`b_a = 1`), then modulated by `μ` on the odd axes.
//!
//! Two facts halve the work (both exact, and both checked against direct convolution below):
//! 1. the embedded kernel is real and even, so its `(2p)^s` DFT is **real**; each pattern's
//!    kernel spectrum is a set of those samples. Both kernels (`G₁`, `G₂`) of a pattern come from
//!    one complex FFT of `k₁ + i·k₂`, and are stored as real arrays.
//! 2. every pattern's contribution to `Φ` is itself real (its frequency set is closed under
//!    negation, where the spectrum is Hermitian). So two real channels travel in one complex
//!    FFT: `(a + i·b)` in gives `(K∗a) + i·(K∗b)` out, and one input convolved with two kernels
//!    gives `(K₁∗a) + i·(K₂∗a)` from the spectrum multiplied by `K̂₁ + i·K̂₂`.
//!
//! The channels of t-SNE's repulsion (DESIGN §2.2): inputs `1, y¹ … yˢ`; outputs `ψ = G₁∗1`,
//! `φ₀ = G₂∗1`, `φ_k = G₂∗y^k`. Per pattern that is `1 + ⌈s/2⌉` complex FFTs each way
//! (2-D: 2 forward + 2 inverse), with one `p^s` complex buffer, against the `(2p)^s` buffers of
//! zero padding. The even pattern takes the same complex path: with packing, an r2c/c2r pair per
//! channel would cost as much.

use rayon::prelude::*;
use rustfft::num_complex::Complex;
use rustfft::FftPlanner;

use super::fftnd::{FftNd, Real};

/// Number of input channels: the charges `1, y¹ … yˢ`.
pub fn in_channels(dims: usize) -> usize {
    1 + dims
}

/// Number of output channels: `ψ, φ₀, φ₁ … φ_s`, plus one spare (zero) channel when `s` is odd,
/// because outputs come in (real, imaginary) pairs.
pub fn out_channels(dims: usize) -> usize {
    2 + 2 * dims.div_ceil(2)
}

/// Kernel `G₁(d) = 1/(1 + d²)` as a function of `d²` (the t-SNE similarity `w`).
#[inline(always)]
fn g1(d2: f64) -> f64 {
    1.0 / (1.0 + d2)
}

/// Convolution of the charge channels with `G₁` and `G₂ = G₁²` on a `p^s` grid of spacing `h`.
/// Holds the plans, the `2^s` pattern spectra and one work buffer; build once per grid.
pub struct Convolver<T: Real> {
    p: usize,
    dims: usize,
    h: f64,
    fft: FftNd<T>,
    /// Per parity pattern, the real spectra `K̂₁`, `K̂₂` (rotated layout), each scaled by
    /// `1/(2^s p^s)` (the inverse FFT's and the average's normalisations).
    g1_hat: Vec<Vec<T>>,
    g2_hat: Vec<Vec<T>>,
    /// `μ_m = e^{−iπm/p}` for `m < s·p`; a pattern's modulation at node `n` is `μ` at the sum of
    /// `n`'s odd-axis coordinates.
    twiddle: Vec<Complex<T>>,
    buf: Vec<Complex<T>>,
}

impl<T: Real> Convolver<T> {
    /// Plans the FFTs and computes the `2^s` kernel spectra for a `p^dims` grid of spacing `h`.
    pub fn new(planner: &mut FftPlanner<T>, p: usize, dims: usize, h: f64) -> Self {
        let mut fft = FftNd::new(planner, p, dims);
        let len = fft.len();
        let twiddle = (0..dims * p)
            .map(|m| {
                let a = -std::f64::consts::PI * m as f64 / p as f64;
                Complex::new(T::of(a.cos()), T::of(a.sin()))
            })
            .collect();
        let scale = 1.0 / ((1usize << dims) * len) as f64;
        let mut buf = vec![Complex::default(); len];
        let mut g1_hat = Vec::with_capacity(1 << dims);
        let mut g2_hat = Vec::with_capacity(1 << dims);
        for sigma in 0..1usize << dims {
            fill_kernel(&mut buf, p, dims, h, sigma);
            fft.forward(&mut buf);
            g1_hat.push(
                buf.par_iter()
                    .map(|z| T::of(z.re.as_f64() * scale))
                    .collect(),
            );
            g2_hat.push(
                buf.par_iter()
                    .map(|z| T::of(z.im.as_f64() * scale))
                    .collect(),
            );
        }
        Convolver {
            p,
            dims,
            h,
            fft,
            g1_hat,
            g2_hat,
            twiddle,
            buf,
        }
    }

    /// Whether this convolver was built for exactly this grid.
    pub fn fits(&self, p: usize, dims: usize, h: f64) -> bool {
        self.p == p && self.dims == dims && self.h.to_bits() == h.to_bits()
    }

    /// `charges`: `p^s` nodes (natural layout) of [`in_channels`] interleaved values each.
    /// `out`: `p^s` nodes of [`out_channels`] values, overwritten with `ψ, φ₀, φ₁ … φ_s` (and a
    /// spare). Interleaving the channels of a node keeps S2G's and G2S's stencils on few cache
    /// lines; the strided reads and writes here are streaming.
    pub fn convolve(&mut self, charges: &[T], out: &mut [T]) {
        let (p, dims, len) = (self.p, self.dims, self.fft.len());
        assert_eq!(charges.len(), in_channels(dims) * len, "charge grid size");
        assert_eq!(out.len(), out_channels(dims) * len, "potential grid size");
        out.par_iter_mut().for_each(|v| *v = T::zero());
        for sigma in 0..1usize << dims {
            for k in 0..=dims.div_ceil(2) {
                // Channel pair k: (1) alone for k = 0, else (y^{2k−1}, y^{2k}).
                let (re, im) = if k == 0 {
                    (0, None)
                } else {
                    (2 * k - 1, (2 * k <= dims).then_some(2 * k))
                };
                let pair = (charges, in_channels(dims), re, im);
                modulate(&mut self.buf, pair, &self.twiddle, p, sigma);
                self.fft.forward(&mut self.buf);
                let g2 = &self.g2_hat[sigma];
                if k == 0 {
                    let g1 = &self.g1_hat[sigma];
                    self.buf
                        .par_iter_mut()
                        .zip(g1.par_iter().zip(g2.par_iter()))
                        .for_each(|(z, (&a, &b))| *z = *z * Complex::new(a, b));
                } else {
                    self.buf
                        .par_iter_mut()
                        .zip(g2.par_iter())
                        .for_each(|(z, &b)| *z = z.scale(b));
                }
                self.fft.inverse(&mut self.buf);
                let pair = (&mut *out, out_channels(dims), 2 * k);
                demodulate_add(&self.buf, pair, &self.twiddle, p, sigma);
            }
        }
    }
}

/// Sum of the odd-axis coordinates of the row `r` (axes 1 and up) of a natural-layout grid.
#[inline(always)]
fn row_phase(r: usize, p: usize, sigma: usize) -> usize {
    let (n1, n2) = (r % p, r / p);
    (sigma >> 1 & 1) * n1 + (sigma >> 2 & 1) * n2
}

/// `buf_n = (x_{n,re} + i·x_{n,im})·μ(n)` for pattern `sigma`, from the interleaved grid
/// `(x, channels per node, re channel, im channel or none)`.
fn modulate<T: Real>(
    buf: &mut [Complex<T>],
    (x, nch, re, im): (&[T], usize, usize, Option<usize>),
    twiddle: &[Complex<T>],
    p: usize,
    sigma: usize,
) {
    buf.par_chunks_mut(p).enumerate().for_each(|(r, row)| {
        let phase = row_phase(r, p, sigma);
        let odd0 = sigma & 1;
        let xs = x[r * p * nch..(r + 1) * p * nch].chunks_exact(nch);
        for (j, (z, node)) in row.iter_mut().zip(xs).enumerate() {
            let v = Complex::new(node[re], im.map_or(T::zero(), |c| node[c]));
            *z = v * twiddle[phase + odd0 * j];
        }
    });
}

/// `out_{n,c} += Re(buf_n·μ̄(n))`, `out_{n,c+1} += Im(buf_n·μ̄(n))` for pattern `sigma`, on the
/// interleaved grid `(out, channels per node, c)`.
fn demodulate_add<T: Real>(
    buf: &[Complex<T>],
    (out, nch, c): (&mut [T], usize, usize),
    twiddle: &[Complex<T>],
    p: usize,
    sigma: usize,
) {
    buf.par_chunks(p)
        .zip(out.par_chunks_mut(p * nch))
        .enumerate()
        .for_each(|(r, (row, o))| {
            let phase = row_phase(r, p, sigma);
            let odd0 = sigma & 1;
            for (j, (z, node)) in row.iter().zip(o.chunks_exact_mut(nch)).enumerate() {
                let v = z * twiddle[phase + odd0 * j].conj();
                node[c] = node[c] + v.re;
                node[c + 1] = node[c + 1] + v.im;
            }
        });
}

/// The folded, modulated kernel array of pattern `sigma` as `k₁ + i·k₂` (natural layout):
/// `k(n) = μ(n)·Σ_b (−1)^{|b ∧ σ|} c(n + p·b)` over the `2^s` images `b ∈ {0,1}^s`, where along
/// axis `a` the image has distance `n_a` (`b_a = 0`) or `p − n_a` (`b_a = 1`, and no term when
/// `n_a = 0`: that is the zero in `[…, t_{p−1}, 0, t_{p−1}, …]`).
fn fill_kernel<T: Real>(buf: &mut [Complex<T>], p: usize, dims: usize, h: f64, sigma: usize) {
    let h2 = h * h;
    buf.par_chunks_mut(p).enumerate().for_each(|(r, row)| {
        let mut n = [0usize, r % p, r / p];
        for (j, z) in row.iter_mut().enumerate() {
            n[0] = j;
            let (mut k1, mut k2) = (0.0f64, 0.0f64);
            'images: for b in 0..1usize << dims {
                let mut d2 = 0.0;
                let mut sign = 1.0;
                for (a, &na) in n.iter().enumerate().take(dims) {
                    let d = if b >> a & 1 == 1 {
                        if na == 0 {
                            continue 'images;
                        }
                        if sigma >> a & 1 == 1 {
                            sign = -sign;
                        }
                        p - na
                    } else {
                        na
                    };
                    d2 += (d * d) as f64;
                }
                let w = g1(h2 * d2);
                k1 += sign * w;
                k2 += sign * w * w;
            }
            let phase: usize = (0..dims)
                .filter(|a| sigma >> a & 1 == 1)
                .map(|a| n[a])
                .sum();
            let ang = -std::f64::consts::PI * phase as f64 / p as f64;
            let v = Complex::new(k1, k2) * Complex::new(ang.cos(), ang.sin());
            *z = Complex::new(T::of(v.re), T::of(v.im));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// Direct O(p^{2s}) convolution `Σ_n K(h|m−n|) v_n` in f64.
    fn direct(v: &[f64], p: usize, dims: usize, h: f64, square: bool) -> Vec<f64> {
        let len = p.pow(dims as u32);
        let coords = |mut f: usize| {
            let mut c = [0i64; 3];
            for x in c.iter_mut().take(dims) {
                *x = (f % p) as i64;
                f /= p;
            }
            c
        };
        (0..len)
            .map(|m| {
                let cm = coords(m);
                (0..len)
                    .map(|n| {
                        let cn = coords(n);
                        let d2: i64 = (0..3).map(|a| (cm[a] - cn[a]).pow(2)).sum();
                        let w = g1(h * h * d2 as f64);
                        v[n] * if square { w * w } else { w }
                    })
                    .sum()
            })
            .collect()
    }

    fn rel_err(a: &[f64], b: &[f64]) -> f64 {
        let num: f64 = a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum();
        let den: f64 = b.iter().map(|y| y * y).sum();
        (num / den).sqrt()
    }

    /// Zero-padding-free convolution of random charges against the direct sums, every channel.
    fn check<T: Real>(p: usize, dims: usize, h: f64, tol: f64) {
        let mut rng = StdRng::seed_from_u64(p as u64 * 10 + dims as u64);
        let len = p.pow(dims as u32);
        let charges: Vec<f64> = (0..in_channels(dims) * len)
            .map(|i| {
                // Channel 0 is a non-negative density, the others signed, as in t-SNE.
                let u: f64 = rng.random();
                if i < len {
                    u
                } else {
                    2.0 * u - 1.0
                }
            })
            .collect();
        // Channel-major here, interleaved for the convolver.
        let (nin, nout) = (in_channels(dims), out_channels(dims));
        let charges_t: Vec<T> = (0..nin * len)
            .map(|i| T::of(charges[(i % nin) * len + i / nin]))
            .collect();
        let mut out = vec![T::zero(); nout * len];
        let mut conv = Convolver::<T>::new(&mut FftPlanner::new(), p, dims, h);
        conv.convolve(&charges_t, &mut out);
        let chan = |c: usize| &charges[c * len..(c + 1) * len];
        let got = |c: usize| -> Vec<f64> {
            out.chunks_exact(nout)
                .map(|node| node[c].as_f64())
                .collect()
        };
        let mut expected = vec![direct(chan(0), p, dims, h, false)];
        for c in 0..=dims {
            expected.push(direct(chan(c), p, dims, h, true));
        }
        for (c, e) in expected.iter().enumerate() {
            let err = rel_err(&got(c), e);
            assert!(err < tol, "p={p} s={dims} channel {c}: rel err {err:e}");
        }
        if dims % 2 == 1 {
            let spare = got(dims + 2);
            assert!(
                spare.iter().all(|x| x.abs() < tol),
                "spare channel not zero"
            );
        }
    }

    #[test]
    fn zero_padding_free_equals_direct_f64() {
        for (p, dims, h) in [(40, 1, 0.3), (33, 1, 1.7), (12, 2, 0.5), (9, 2, 2.0)] {
            check::<f64>(p, dims, h, 1e-12);
        }
        for (p, dims, h) in [(7, 3, 0.6), (6, 3, 1.1)] {
            check::<f64>(p, dims, h, 1e-12);
        }
    }

    #[test]
    fn zero_padding_free_equals_direct_f32() {
        for (p, dims, h) in [(40, 1, 0.3), (12, 2, 0.5), (9, 2, 2.0), (7, 3, 0.6)] {
            check::<f32>(p, dims, h, 1e-5);
        }
    }

    #[test]
    fn refits_only_on_change() {
        let conv = Convolver::<f32>::new(&mut FftPlanner::new(), 8, 2, 0.5);
        assert!(conv.fits(8, 2, 0.5));
        assert!(!conv.fits(8, 2, 0.5000001) && !conv.fits(9, 2, 0.5) && !conv.fits(8, 3, 0.5));
    }
}
