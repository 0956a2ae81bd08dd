//! G2G: the grid-to-grid convolutions `Φ_m = Σ_n K(h·|m − n|) V_n` of the charge channels,
//! as FFT products on the grid zero-padded to `(2p)^s` (Linderman et al. 2019, §2).
//!
//! Zero padding turns the Toeplitz product into a circular convolution of size `(2p)^s`, whose
//! kernel `c(d) = K(h·|min(d, 2p − d)|)` (per axis) is real and even: its DFT is real, and is
//! computed once per grid. The charges are real, so each channel takes a pruned real-to-complex
//! transform ([`PaddedFft`]), is multiplied by the kernel spectrum and comes back through the
//! pruned inverse, the last axis's transforms, the product and the energy below done line by
//! line while the line is in cache ([`PaddedFft::through_last_axis`]). With the transposes'
//! square tiles, on 2 threads: 340–345 ms a G2G at 2048² nodes against 376–381 before, and
//! 4.52–4.60 s against 4.68–5.05 s over MNIST's 1000 iterations (`benches/RESULTS.md`).
//!
//! Channels (DESIGN §2.2): inputs `1, y¹ … yˢ`; outputs `φ₀ = G₂∗1`, `φ_k = G₂∗y^k`. The
//! third output of the textbook method, `ψ = G₁∗1`, is only ever summed (into Z), and its sum
//! needs no inverse transform: with `c` the first charge channel,
//! `Σ_i ψ_i = Σ_m c_m (G₁∗c)_m = (2p)^{−s} Σ_k Ĝ₁(k) |ĉ(k)|²` (Parseval), a weighted sum over
//! the spectrum `ĉ` the forward transform made anyway. So a 2-D call is 3 forward and 3 inverse
//! pruned transforms, each about 1.5 times a `p²` complex FFT: about 9 `p²` FFTs, against 16
//! for the zero-padding-free scheme with the same output (2^s parity patterns of `p^s`
//! transforms, two real channels per complex one), at the same memory: two spectra of
//! `(p+1)(2p)^{s−1}` complex values plus the two real kernel spectra, against one `p^s` complex
//! buffer plus its transpose buffer plus `2·2^s` real `p^s` kernel spectra.

use rayon::prelude::*;
use rustfft::num_complex::Complex;

#[cfg(any(test, doc))]
use crate::kernel::Kernel;
use crate::repulse::fftnd::{PaddedFft, Planners, Real};
use crate::repulse::near::GridKernel;

/// Number of channels per node, in (the charges `1, y¹ … yˢ`) as out (`φ₀, φ₁ … φ_s`).
pub fn channels(dims: usize) -> usize {
    1 + dims
}

/// Convolution of the charge channels with `G₂ = G₁²` on a `p^s` grid of spacing `h`, and the
/// `G₁` energy of the first channel. Holds the plans, the kernel spectra and the work
/// spectrum; build once per grid.
pub struct Convolver<T: Real> {
    p: usize,
    dims: usize,
    h: f64,
    kernel: GridKernel,
    fft: PaddedFft<T>,
    /// `Ĝ₂ / (2p)^s` (the inverse transform's normalisation), rotated layout.
    g2_hat: Vec<T>,
    /// `Ĝ₁ / (2p)^s`, doubled where the frequency along axis 0 is in `1..p` (it stands for
    /// its conjugate too in the half spectrum), rotated layout.
    g1_weight: Vec<T>,
    spec: Vec<Complex<T>>,
}

impl<T: Real> Convolver<T> {
    /// Plans the FFTs and computes the spectra of `kernel`'s `G₁` and `G₂` ([`Kernel`], or
    /// their long parts: [`GridKernel`]) for a `p^dims` grid of spacing `h`.
    pub fn new(
        planners: &mut Planners<T>,
        p: usize,
        dims: usize,
        h: f64,
        kernel: impl Into<GridKernel>,
    ) -> Self {
        let kernel = kernel.into();
        let mut fft = PaddedFft::new(planners, p, dims);
        let kernels = embedded_kernels::<T>(p, dims, h, kernel);
        let scale = 1.0 / ((2 * p).pow(dims as u32)) as f64;
        let stride = fft.axis0_stride();
        let mut spec = Vec::new();
        fft.forward((&kernels, 2, 1), 2 * p, &mut spec);
        let g2_hat = spec
            .par_iter()
            .map(|z| T::of(z.re.as_f64() * scale))
            .collect();
        fft.forward((&kernels, 2, 0), 2 * p, &mut spec);
        let g1_weight = spec
            .par_iter()
            .enumerate()
            .map(|(e, z)| {
                let k0 = (e / stride) % (p + 1);
                let twice = if k0 == 0 || k0 == p { 1.0 } else { 2.0 };
                T::of(z.re.as_f64() * scale * twice)
            })
            .collect();
        Convolver {
            p,
            dims,
            h,
            kernel,
            fft,
            g2_hat,
            g1_weight,
            spec,
        }
    }

    /// Bytes of the spectra it holds (the kernels' and the work spectrum).
    pub fn spectra_bytes(&self) -> usize {
        let t = std::mem::size_of::<T>();
        (self.g2_hat.len() + self.g1_weight.len()) * t + self.spec.len() * 2 * t
    }

    /// Whether this convolver was built for exactly this grid.
    pub fn fits(&self, p: usize, dims: usize, h: f64) -> bool {
        self.p == p && self.dims == dims && self.h.to_bits() == h.to_bits()
    }

    /// `charges`: `p^s` nodes (natural layout) of [`channels`] interleaved values each.
    /// `out`: `p^s` nodes of [`channels`] values, overwritten with `φ₀, φ₁ … φ_s`.
    /// Returns `Σ_m c_m (G₁∗c)_m` of the first charge channel `c` (`Σ_i ψ_i`, self terms
    /// included). Interleaving the channels of a node keeps S2G's and G2S's stencils on few
    /// cache lines; the strided reads and writes here are streaming.
    pub fn convolve(&mut self, charges: &[T], out: &mut [T]) -> f64 {
        let (p, dims) = (self.p, self.dims);
        let len = p.pow(dims as u32);
        let (nin, nout) = (channels(dims), channels(dims));
        assert_eq!(charges.len(), nin * len, "charge grid size");
        assert_eq!(out.len(), nout * len, "potential grid size");
        let mut energy = 0.0;
        let (g1_weight, g2_hat) = (&self.g1_weight, &self.g2_hat);
        for c in 0..nin {
            let e = self.fft.through_last_axis(
                (charges, nin, c),
                &mut self.spec,
                (&mut *out, nout, c),
                |at, line| {
                    let mut e = 0.0;
                    if c == 0 {
                        for (z, &g) in line.iter().zip(&g1_weight[at..]) {
                            e += g.as_f64() * z.norm_sqr().as_f64();
                        }
                    }
                    for (z, &g) in line.iter_mut().zip(&g2_hat[at..]) {
                        *z = z.scale(g);
                    }
                    e
                },
            );
            if c == 0 {
                energy = e;
            }
        }
        energy
    }

    /// `out` (`p^s` values) = `G₁ ∗ c` for the first charge channel `c` of `charges`: the
    /// potential ψ whose value at a point is Σ_j w(y, y_j) over the charged points. The
    /// optimiser never needs it (Z comes from [`Convolver::convolve`]'s energy), but a map
    /// with fixed reference points does: each new point's own normalisation ψ(y_i)
    /// ([`crate::transform`]). Computes `Ĝ₁` on the spot, as it is asked for once per map.
    pub fn convolve_g1(&mut self, charges: &[T], out: &mut [T]) {
        let (p, dims) = (self.p, self.dims);
        let nin = channels(dims);
        assert_eq!(charges.len(), nin * p.pow(dims as u32), "charge grid size");
        assert_eq!(out.len(), p.pow(dims as u32), "potential grid size");
        let kernels = embedded_kernels::<T>(p, dims, self.h, self.kernel);
        let scale = 1.0 / ((2 * p).pow(dims as u32)) as f64;
        let mut g1_hat = Vec::new();
        self.fft.forward((&kernels, 2, 0), 2 * p, &mut g1_hat);
        self.fft.forward((charges, nin, 0), p, &mut self.spec);
        self.spec
            .par_iter_mut()
            .zip(g1_hat.par_iter())
            .for_each(|(z, g)| *z = z.scale(T::of(g.re.as_f64() * scale)));
        self.fft.inverse(&mut self.spec, (out, 1, 0));
    }
}

/// The kernels `G₁` (channel 0) and `G₂` (channel 1) embedded circulantly in `(2p)^s` nodes
/// (natural layout, interleaved): node `j` holds `K(h·|d|)` with `d_a = min(j_a, 2p − j_a)`.
fn embedded_kernels<T: Real>(p: usize, dims: usize, h: f64, kernel: GridKernel) -> Vec<T> {
    let n = 2 * p;
    let h2 = h * h;
    let mut k = vec![T::zero(); 2 * n.pow(dims as u32)];
    k.par_chunks_mut(2 * n).enumerate().for_each(|(r, row)| {
        let rest: f64 = (1..dims)
            .map(|a| {
                let j = r / n.pow(a as u32 - 1) % n;
                (j.min(n - j) as f64).powi(2)
            })
            .sum();
        for (j, node) in row.chunks_exact_mut(2).enumerate() {
            let d2 = (j.min(n - j) as f64).powi(2) + rest;
            let (g1, g2) = kernel.on_grid(h, h2 * d2);
            node[0] = T::of(g1);
            node[1] = T::of(g2);
        }
    });
    k
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
                        let w = Kernel::CAUCHY.g1(h * h * d2 as f64);
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

    /// Padded-FFT convolution of random charges against the direct sums, every channel, and
    /// the `G₁` energy against `Σ_m c_m (G₁∗c)_m`.
    fn check<T: Real>(p: usize, dims: usize, h: f64, tol: f64) {
        let mut rng = StdRng::seed_from_u64(p as u64 * 10 + dims as u64);
        let len = p.pow(dims as u32);
        let charges: Vec<f64> = (0..channels(dims) * len)
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
        let (nin, nout) = (channels(dims), channels(dims));
        let charges_t: Vec<T> = (0..nin * len)
            .map(|i| T::of(charges[(i % nin) * len + i / nin]))
            .collect();
        let mut out = vec![T::zero(); nout * len];
        let mut conv = Convolver::<T>::new(&mut Planners::default(), p, dims, h, Kernel::CAUCHY);
        let energy = conv.convolve(&charges_t, &mut out);
        let chan = |c: usize| &charges[c * len..(c + 1) * len];
        let got = |c: usize| -> Vec<f64> {
            out.chunks_exact(nout)
                .map(|node| node[c].as_f64())
                .collect()
        };
        for c in 0..=dims {
            let err = rel_err(&got(c), &direct(chan(c), p, dims, h, true));
            assert!(err < tol, "p={p} s={dims} channel {c}: rel err {err:e}");
        }
        let psi = direct(chan(0), p, dims, h, false);
        let want: f64 = chan(0).iter().zip(&psi).map(|(c, v)| c * v).sum();
        let err = (energy - want).abs() / want;
        assert!(err < tol, "p={p} s={dims} G1 energy: rel err {err:e}");
    }

    #[test]
    fn padded_fft_equals_direct_f64() {
        for (p, dims, h) in [(40, 1, 0.3), (33, 1, 1.7), (12, 2, 0.5), (9, 2, 2.0)] {
            check::<f64>(p, dims, h, 1e-12);
        }
        for (p, dims, h) in [(7, 3, 0.6), (6, 3, 1.1)] {
            check::<f64>(p, dims, h, 1e-12);
        }
    }

    #[test]
    fn padded_fft_equals_direct_f32() {
        for (p, dims, h) in [(40, 1, 0.3), (12, 2, 0.5), (9, 2, 2.0), (7, 3, 0.6)] {
            check::<f32>(p, dims, h, 1e-5);
        }
    }

    /// Benchmark, not a test: one 2-D G2G in f32 on the host at every 7-smooth side from 100
    /// to 1100, a line each: the median of 5 calls, and per node and log₂ of the nodes,
    /// marked where the side is one of [`host_fft_friendly`]'s — the table behind the host's
    /// ladder. `cargo test --release --lib g2g_time_by_side_bench -- --ignored --nocapture`.
    ///
    /// [`host_fft_friendly`]: crate::repulse::grid::host_fft_friendly
    #[test]
    #[ignore = "benchmark"]
    fn g2g_time_by_side_bench() {
        use crate::repulse::grid::{fft_friendly, host_fft_friendly};
        let mut planners = Planners::default();
        let mut rng = StdRng::seed_from_u64(3);
        for p in (100..=1100).filter(|&p| fft_friendly(p) == p) {
            let len = p * p;
            let charges: Vec<f32> = (0..channels(2) * len).map(|_| rng.random()).collect();
            let mut out = vec![0f32; channels(2) * len];
            let mut conv = Convolver::<f32>::new(&mut planners, p, 2, 0.5, Kernel::CAUCHY);
            conv.convolve(&charges, &mut out);
            let mut times: Vec<f64> = (0..5)
                .map(|_| {
                    let t = std::time::Instant::now();
                    conv.convolve(&charges, &mut out);
                    t.elapsed().as_secs_f64()
                })
                .collect();
            times.sort_by(f64::total_cmp);
            let ms = times[2] * 1e3;
            let per = ms * 1e6 / (len as f64 * (len as f64).log2());
            let host = if host_fft_friendly(p) == p {
                "host"
            } else {
                "    "
            };
            println!("p {p:5} {host} {ms:8.2} ms {per:6.2} ns a node and log2");
        }
    }

    #[test]
    fn refits_only_on_change() {
        let conv = Convolver::<f32>::new(&mut Planners::default(), 8, 2, 0.5, Kernel::CAUCHY);
        assert!(conv.fits(8, 2, 0.5));
        assert!(!conv.fits(8, 2, 0.5000001) && !conv.fits(9, 2, 0.5) && !conv.fits(8, 3, 0.5));
    }
}
