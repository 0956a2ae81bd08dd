//! EM on the device ([`GmmBackend::Gpu`](super::GmmBackend)); the scheme is in the
//! module docs of [`crate::gmm`] ("The GPU").

use cudarc::cublas::sys::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
use cudarc::cublas::GemmConfig;
use cudarc::driver::{CudaSlice, LaunchConfig};

use super::engine::{not_finite, Engine};
use super::gaussian::{floor_step, inverse_deviations, Floors, FLOOR_STEPS};
use super::mstep::{assemble, diag_from_sums, full_from_lower, means_from_sums};
use super::{CovarianceType, GmmParams, Model, Real, Samples};
use crate::gpu::context::BLOCK;
use crate::gpu::kernels::gmm::{
    GmmDeviations, GmmDiagLogProb, GmmDiagSums, GmmFullLogProb, GmmLogDet, GmmNormalise,
};
use crate::gpu::linalg::{gram_parts, solver_present, Linalg};
use crate::gpu::memory::ensure_fits;
use crate::gpu::Gpu;
use crate::{Error, Result};

/// Bytes of one chunk of deviations (d × chunk values): the E-step solves and the M-step's
/// Gram matrices take the samples in chunks of this size.
pub const CHUNK_BYTES: usize = 256 << 20;

/// Row groups of the diagonal covariances' partial sums (a fixed number, so that the sums
/// do not depend on the device).
const GROUPS: usize = 256;

/// EM's state on the device: the samples, responsibilities and log-likelihoods for the
/// whole fit; the model's means, factors and normalising constants of the latest
/// factorisation; the routines' handles and scratch.
pub(crate) struct DeviceEm<T: Real> {
    gpu: &'static Gpu,
    n: usize,
    d: usize,
    k: usize,
    kind: CovarianceType,
    /// Samples per chunk of deviations.
    chunk: usize,
    x: CudaSlice<T>,
    resp: CudaSlice<T>,
    ll: CudaSlice<T>,
    ones: CudaSlice<T>,
    /// Σ_i r_ik (K), then Σ_i r_ik x_i (d × K, column-major = K × d row-major).
    weight: CudaSlice<T>,
    weighted: CudaSlice<T>,
    /// One chunk of deviations, d × chunk column-major.
    deviations: CudaSlice<T>,
    /// Full: K d × d blocks, the M-step's weighted sums and then the factors.
    squares: CudaSlice<T>,
    /// Full: the partial Gram matrices of one chunk ([`Linalg::gram`]).
    partial_products: CudaSlice<T>,
    /// Diag and spherical: the groups' partial sums, GROUPS × K × d.
    partial_squares: CudaSlice<T>,
    means: CudaSlice<T>,
    /// Diag and spherical: 1/σ per component and axis (K × d).
    scales: CudaSlice<T>,
    log_norm: CudaSlice<f64>,
    /// log π_k + log det Σ_k^(−1/2) − (d/2) log 2π of the latest factorisation.
    host_log_norm: Vec<f64>,
    log_det: CudaSlice<f64>,
    partial_ll: CudaSlice<f64>,
    linalg: Linalg<T>,
}

/// (d/2) log 2π, the Gaussian's normalising constant in d dimensions.
fn half_log_2pi(d: usize) -> f64 {
    0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln()
}

impl<T: Real> DeviceEm<T> {
    /// An engine for `params` over `x`, the samples copied to `gpu` now. Errors when cuSOLVER
    /// is missing or the fit does not fit the device's memory (naming what it needs).
    pub(crate) fn new(gpu: &'static Gpu, x: &Samples<T>, params: &GmmParams) -> Result<Self> {
        if !solver_present() {
            return Err(Error::GpuUnavailable {
                reason: "library not found: cuSOLVER (libcusolver), which the GPU mixture \
                         needs (or fit with --backend cpu)"
                    .into(),
            });
        }
        let (n, d, k, kind) = (x.n, x.d, params.k, params.covariance);
        let size = std::mem::size_of::<T>();
        let chunk = (CHUNK_BYTES / (d * size)).clamp(1, n);
        let full = kind == CovarianceType::Full;
        let elements = n * d
            + n * k
            + 2 * n
            + k * (d + 1)
            + if full {
                chunk * d + k * d * d + gram_parts(chunk) * d * d
            } else {
                GROUPS * k * d + 2 * k * d
            };
        ensure_fits(
            gpu,
            &format!(
                "a Gaussian mixture of {n} × {d} samples, K = {k} ({})",
                T::NAME
            ),
            elements * size,
        )?;
        let s = &gpu.stream;
        let blocks = gpu.config(n).grid_dim.0 as usize;
        Ok(DeviceEm {
            gpu,
            n,
            d,
            k,
            kind,
            chunk,
            x: s.clone_htod(&x.data)?,
            resp: s.alloc_zeros(n * k)?,
            ll: s.alloc_zeros(n)?,
            ones: s.clone_htod(&vec![T::one(); n])?,
            weight: s.alloc_zeros(k)?,
            weighted: s.alloc_zeros(d * k)?,
            deviations: s.alloc_zeros(if full { chunk * d } else { 1 })?,
            squares: s.alloc_zeros(if full { k * d * d } else { 1 })?,
            partial_products: s.alloc_zeros(if full { gram_parts(chunk) * d * d } else { 1 })?,
            partial_squares: s.alloc_zeros(if full { 1 } else { GROUPS * k * d })?,
            means: s.alloc_zeros(k * d)?,
            scales: s.alloc_zeros(if full { 1 } else { k * d })?,
            log_norm: s.alloc_zeros(k)?,
            host_log_norm: vec![0.0; k],
            log_det: s.alloc_zeros(1)?,
            partial_ll: s.alloc_zeros(blocks)?,
            linalg: Linalg::new(s, d)?,
        })
    }

    /// Takes the samples `rows` at a time (tests: several chunks without gigabytes).
    #[cfg(test)]
    fn with_chunk(mut self, rows: usize) -> Result<Self> {
        self.chunk = rows.clamp(1, self.n);
        if self.kind == CovarianceType::Full {
            self.deviations = self.gpu.stream.alloc_zeros(self.chunk * self.d)?;
            let parts = gram_parts(self.chunk) * self.d * self.d;
            self.partial_products = self.gpu.stream.alloc_zeros(parts)?;
        }
        Ok(self)
    }

    /// The chunks of samples, as (first row, rows).
    fn chunks(&self) -> impl Iterator<Item = (usize, usize)> {
        let (n, chunk) = (self.n, self.chunk);
        (0..n).step_by(chunk).map(move |r| (r, chunk.min(n - r)))
    }

    /// The `b` samples from `row0` less component `c`'s mean into `deviations` (d × b), each
    /// times √r_ic when `weighted` (the M-step's), else as they are (the E-step's).
    fn deviations(&mut self, c: usize, row0: usize, b: usize, weighted: bool) -> Result<()> {
        let (n, d, k) = (self.n, self.d, self.k);
        GmmDeviations::<T> {
            n,
            x: &self.x,
            row0,
            b,
            d,
            mean: &self.means.slice(c * d..(c + 1) * d),
            resp: &self.resp,
            k,
            c,
            weighted: weighted as i32,
            out: &mut self.deviations,
        }
        .launch(self.gpu, &self.gpu.stream, self.gpu.config(b * d))?;
        Ok(())
    }

    /// Σ_i r_ik (x_i − μ_k)(x_i − μ_k)ᵀ into each d × d block of `squares`, one Gram matrix
    /// of the weighted deviations per chunk of b samples ([`Linalg::gram`]).
    fn full_sums(&mut self) -> Result<()> {
        let (d, k) = (self.d, self.k);
        let chunks: Vec<(usize, usize)> = self.chunks().collect();
        for c in 0..k {
            for (i, &(row0, b)) in chunks.iter().enumerate() {
                self.deviations(c, row0, b, true)?;
                let beta = if i == 0 { T::ZERO } else { T::ONE };
                let mut block = self.squares.slice_mut(c * d * d..(c + 1) * d * d);
                self.linalg.gram(
                    &self.deviations,
                    b,
                    &mut self.partial_products,
                    &self.ones,
                    beta,
                    &mut block,
                )?;
            }
        }
        Ok(())
    }

    /// Σ_i r_ik (x_ij − μ_kj)² (K × d), the groups' partial sums added in order.
    fn diag_sums(&mut self) -> Result<Vec<T>> {
        let (n, d, k) = (self.n, self.d, self.k);
        let per = n.div_ceil(GROUPS);
        let groups = n.div_ceil(per);
        GmmDiagSums::<T> {
            groups,
            x: &self.x,
            n,
            d,
            k,
            resp: &self.resp,
            means: &self.means,
            per,
            partial: &mut self.partial_squares,
        }
        .launch(
            self.gpu,
            &self.gpu.stream,
            LaunchConfig {
                grid_dim: (groups as u32, 1, 1),
                block_dim: (BLOCK, 1, 1),
                shared_mem_bytes: 0,
            },
        )?;
        let partial = self.gpu.stream.clone_dtoh(&self.partial_squares)?;
        let mut sums = vec![T::zero(); k * d];
        for group in partial.chunks_exact(k * d).take(groups) {
            for (s, &v) in sums.iter_mut().zip(group) {
                *s += v;
            }
        }
        Ok(sums)
    }

    /// Factors each full covariance with cuSOLVER into its block of `squares`, raising the
    /// floor of one that is not positive definite (as [`super::gaussian`] does on the host),
    /// and computes each component's log π + log det Σ^(−1/2) − (d/2) log 2π.
    fn factor_full(&mut self, model: &mut Model<T>, floors: &mut Floors) -> Result<()> {
        let d = self.d;
        let half_log_2pi = half_log_2pi(d);
        for c in 0..self.k {
            let cov = &mut model.covariances[c * d * d..(c + 1) * d * d];
            let mut raised = 0.0;
            let mut step = 0;
            loop {
                let mut block = self.squares.slice_mut(c * d * d..(c + 1) * d * d);
                self.gpu.stream.memcpy_htod(cov, &mut block)?;
                if self.linalg.cholesky(&mut block)? {
                    break;
                }
                if step == FLOOR_STEPS {
                    return Err(not_finite::<T>());
                }
                let delta = floor_step(cov, d, step).ok_or_else(not_finite::<T>)?;
                for i in 0..d {
                    cov[i * d + i] += delta;
                }
                raised += delta.f64();
                step += 1;
            }
            if step > 0 {
                floors.record(c, raised);
            }
            GmmLogDet::<T> {
                factor: &self.squares.slice(c * d * d..(c + 1) * d * d),
                d,
                out: &mut self.log_det,
            }
            .launch(self.gpu, &self.gpu.stream, self.gpu.config(1))?;
            let log_det_half = -self.gpu.stream.clone_dtoh(&self.log_det)?[0];
            if !log_det_half.is_finite() {
                return Err(not_finite::<T>());
            }
            self.host_log_norm[c] = model.weights[c].f64().ln() + log_det_half - half_log_2pi;
        }
        Ok(())
    }

    /// Each diagonal or spherical covariance's inverse deviations and normalising constant,
    /// to the device.
    fn factor_diag(&mut self, model: &mut Model<T>, floors: &mut Floors) -> Result<()> {
        let (d, kind) = (self.d, self.kind);
        let half_log_2pi = half_log_2pi(d);
        let len = kind.len(d);
        let mut scales = Vec::with_capacity(self.k * d);
        for c in 0..self.k {
            let cov = &mut model.covariances[c * len..(c + 1) * len];
            let (scale, log_det_half) =
                inverse_deviations(kind, d, cov, c, floors).ok_or_else(not_finite::<T>)?;
            match kind {
                CovarianceType::Spherical => scales.extend(std::iter::repeat_n(scale[0], d)),
                _ => scales.extend(scale),
            }
            self.host_log_norm[c] = model.weights[c].f64().ln() + log_det_half.f64() - half_log_2pi;
        }
        let s = &self.gpu.stream;
        s.memcpy_htod(&scales, &mut self.scales)?;
        s.memcpy_htod(&self.host_log_norm, &mut self.log_norm)?;
        Ok(())
    }
}

impl<T: Real> Engine<T> for DeviceEm<T> {
    fn set_responsibilities(&mut self, resp: &[T]) -> Result<()> {
        self.gpu.stream.memcpy_htod(resp, &mut self.resp)?;
        Ok(())
    }

    fn m_step(&mut self, k: usize, kind: CovarianceType, reg: f64) -> Result<(Model<T>, Vec<T>)> {
        let (n, d) = (self.n, self.d);
        let (ni, di, ki) = (n as i32, d as i32, k as i32);
        let plain = |m, cols, inner, transb, lda, ldb, ldc| GemmConfig {
            transa: CUBLAS_OP_N,
            transb,
            m,
            n: cols,
            k: inner,
            alpha: T::ONE,
            lda,
            ldb,
            beta: T::ZERO,
            ldc,
        };
        // n_k = Rᵀ 1: R is n × K row-major, K × n column-major.
        let cfg = plain(ki, 1, ni, CUBLAS_OP_N, ki, ni, ki);
        self.linalg
            .gemm(cfg, &self.resp, &self.ones, &mut self.weight)?;
        // Σ_i r_ik x_i = X Rᵀ: X is d × n column-major; the product d × K column-major.
        let cfg = plain(di, ki, ni, CUBLAS_OP_T, di, ki, di);
        self.linalg
            .gemm(cfg, &self.x, &self.resp, &mut self.weighted)?;
        let s = &self.gpu.stream;
        let weight = s.clone_dtoh(&self.weight)?;
        let (nk, means) = means_from_sums(&weight, s.clone_dtoh(&self.weighted)?, d);
        s.memcpy_htod(&means, &mut self.means)?;
        let covariances = match kind {
            CovarianceType::Full => {
                self.full_sums()?;
                let sums = self.gpu.stream.clone_dtoh(&self.squares)?;
                full_from_lower(sums, &nk, d, reg)
            }
            CovarianceType::Diag | CovarianceType::Spherical => {
                diag_from_sums(self.diag_sums()?, &nk, d, reg)
            }
        };
        Ok(assemble(kind, d, nk, means, covariances))
    }

    fn factor(&mut self, model: &mut Model<T>, floors: &mut Floors) -> Result<()> {
        floors.count_factorisation();
        // The means may have moved on the host since the M-step (a re-seeded component).
        self.gpu.stream.memcpy_htod(&model.means, &mut self.means)?;
        match self.kind {
            CovarianceType::Full => self.factor_full(model, floors),
            CovarianceType::Diag | CovarianceType::Spherical => self.factor_diag(model, floors),
        }
    }

    fn e_step(&mut self) -> Result<f64> {
        let (n, d, k) = (self.n, self.d, self.k);
        let (gpu, s) = (self.gpu, &self.gpu.stream);
        match self.kind {
            CovarianceType::Full => {
                let chunks: Vec<(usize, usize)> = self.chunks().collect();
                for c in 0..k {
                    for &(row0, b) in &chunks {
                        self.deviations(c, row0, b, false)?;
                        let factor = self.squares.slice(c * d * d..(c + 1) * d * d);
                        self.linalg.solve_lower(&factor, &mut self.deviations, b)?;
                        GmmFullLogProb::<T> {
                            n,
                            y: &self.deviations,
                            row0,
                            b,
                            d,
                            k,
                            c,
                            log_norm: self.host_log_norm[c],
                            out: &mut self.resp,
                        }
                        .launch(gpu, s, gpu.config(b * 32))?;
                    }
                }
            }
            CovarianceType::Diag | CovarianceType::Spherical => {
                GmmDiagLogProb::<T> {
                    x: &self.x,
                    n,
                    d,
                    k,
                    means: &self.means,
                    scales: &self.scales,
                    log_norm: &self.log_norm,
                    out: &mut self.resp,
                }
                .launch(gpu, s, gpu.config(n * k * 32))?;
            }
        }
        let config = gpu.config(n);
        GmmNormalise::<T> {
            blocks: config.grid_dim.0 as usize,
            resp: &mut self.resp,
            n,
            k,
            ll: &mut self.ll,
            partial: &mut self.partial_ll,
        }
        .launch(gpu, s, config)?;
        let partial = s.clone_dtoh(&self.partial_ll)?;
        Ok(partial.iter().sum::<f64>() / n as f64)
    }

    fn log_likelihoods(&mut self) -> Result<Vec<T>> {
        Ok(self.gpu.stream.clone_dtoh(&self.ll)?)
    }

    fn responsibilities(&mut self) -> Result<Vec<T>> {
        Ok(self.gpu.stream.clone_dtoh(&self.resp)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gmm::fit::restarts;
    use crate::gmm::{fit, Fit, GmmBackend};
    use crate::progress::Silent;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// `k` clusters of `n` points in `d` dimensions, unit spread, centres 6 apart on random
    /// axes, plus an offset of 50 on every axis (so that sums of squares meet cancellation).
    fn blobs<T: Real>(n: usize, d: usize, k: usize, seed: u64) -> Samples<T> {
        let mut rng = StdRng::seed_from_u64(seed);
        let centres: Vec<f64> = (0..k * d).map(|_| rng.random_range(-6.0..6.0)).collect();
        let mut data = Vec::with_capacity(n * d);
        for i in 0..n {
            let c = i % k;
            for j in 0..d {
                let u: f64 = (0..4).map(|_| rng.random::<f64>()).sum::<f64>() - 2.0;
                data.push(T::of(
                    50.0 + centres[c * d + j] + u * (1.0 + j as f64 / d as f64),
                ));
            }
        }
        Samples { n, d, data }
    }

    fn params(k: usize, covariance: CovarianceType, backend: GmmBackend) -> GmmParams {
        GmmParams {
            k,
            covariance,
            max_iter: 12,
            tol: 0.0,
            backend,
            ..GmmParams::default()
        }
    }

    /// Relative difference.
    fn rel(a: f64, b: f64) -> f64 {
        (a - b).abs() / b.abs().max(1e-300)
    }

    fn assert_same_fit<T: Real>(cpu: &Fit<T>, gpu: &Fit<T>, tol: f64, what: &str) {
        assert_eq!(cpu.history.len(), gpu.history.len(), "{what}");
        for (i, (a, b)) in cpu.history.iter().zip(&gpu.history).enumerate() {
            assert!(rel(*b, *a) < tol, "{what}: iteration {i}: cpu {a}, gpu {b}");
        }
        assert!(
            rel(gpu.mean_log_likelihood, cpu.mean_log_likelihood) < tol,
            "{what}"
        );
        assert_eq!(cpu.labels, gpu.labels, "{what}: labels");
        for (a, b) in cpu.model.covariances.iter().zip(&gpu.model.covariances) {
            let scale = cpu
                .model
                .covariances
                .iter()
                .fold(0.0f64, |m, v| m.max(v.f64().abs()));
            assert!(
                (a.f64() - b.f64()).abs() <= tol * 100.0 * scale,
                "{what}: covariances"
            );
        }
    }

    /// The GPU's EM follows the host's iteration by iteration — the mean log-likelihood of
    /// every iteration within 1e-10 in f64, 1e-4 in f32, the same labels — for every
    /// covariance form, with the samples in one chunk and in several (9,001 samples: whole
    /// blocks of the Gram matrices' batches and a rest; chunks of 5,000 and 4,001).
    #[test]
    fn gpu_em_follows_the_host() {
        let Some(gpu) = crate::gpu::for_test() else {
            return;
        };
        for kind in [
            CovarianceType::Full,
            CovarianceType::Diag,
            CovarianceType::Spherical,
        ] {
            let x = blobs::<f64>(9001, 7, 4, 3);
            let cpu = fit(&x, &params(4, kind, GmmBackend::Cpu), &Silent).unwrap();
            let gpu_fit = fit(&x, &params(4, kind, GmmBackend::Gpu), &Silent).unwrap();
            assert_same_fit(&cpu, &gpu_fit, 1e-10, &format!("{kind:?} f64"));
            let p = params(4, kind, GmmBackend::Gpu);
            let mut chunked = DeviceEm::new(gpu, &x, &p)
                .unwrap()
                .with_chunk(5000)
                .unwrap();
            let split = restarts(&x, &p, &Silent, &mut chunked).unwrap();
            assert_same_fit(&cpu, &split, 1e-10, &format!("{kind:?} chunks"));
            let x = blobs::<f32>(9001, 7, 4, 3);
            let cpu = fit(&x, &params(4, kind, GmmBackend::Cpu), &Silent).unwrap();
            let gpu_fit = fit(&x, &params(4, kind, GmmBackend::Gpu), &Silent).unwrap();
            assert_same_fit(&cpu, &gpu_fit, 1e-4, &format!("{kind:?} f32"));
        }
    }

    /// A covariance that is singular (a feature that is 0 in every sample, no `reg`: its mean,
    /// row and column are exactly zero on either side, so every Cholesky factorisation fails
    /// at the same pivot) is floored on the GPU as on the host: the fit runs, says so in a
    /// note, and scores as the host's does. (A constant other than 0 would not do: its mean,
    /// Σ r x / (Σ r + 10ε), misses the constant by rounding that differs between the sides,
    /// and a pivot of 1e-34 either factors or not.)
    #[test]
    fn a_singular_covariance_is_floored_on_the_gpu() {
        if crate::gpu::for_test().is_none() {
            return;
        }
        let mut x = blobs::<f64>(800, 3, 2, 8);
        x.data = x
            .data
            .chunks_exact(3)
            .flat_map(|r| [r[0], r[1], r[2], 0.0])
            .collect();
        x.d = 4;
        let mut p = params(2, CovarianceType::Full, GmmBackend::Gpu);
        p.reg = 0.0;
        let gpu_fit = fit(&x, &p, &Silent).unwrap();
        assert!(
            gpu_fit
                .notes
                .iter()
                .any(|n| n.contains("not positive definite")),
            "{:?}",
            gpu_fit.notes
        );
        p.backend = GmmBackend::Cpu;
        let cpu = fit(&x, &p, &Silent).unwrap();
        assert_eq!(cpu.labels, gpu_fit.labels);
        let (a, b) = (gpu_fit.mean_log_likelihood, cpu.mean_log_likelihood);
        assert!(rel(a, b) < 1e-6, "gpu {a}, cpu {b}");
    }

    crate::gpu::gpu_test! {
        /// Seed report 002's five stages at its sizes, in f64, as the GPU mixture computes
        /// them (run by hand: `--ignored bench_gmm_stages --nocapture`): weighted products
        /// (the means' GEMM, K = 10, 60,000 × 784), one covariance and one weighted
        /// covariance of 60,000 × 784 (the M-step with K = 1: the means, the batched GEMMs
        /// of the deviations' Gram matrix and the d × d result to the host), the Cholesky
        /// factorisation of a 4,096² matrix (cuSOLVER) and a triangular solve of dimension 784 with 60,000
        /// right-hand sides (cuBLAS). CUDA events time each: the first run and the median of
        /// five more, in milliseconds, beside the report's GPU figure.
        #[ignore]
        fn bench_gmm_stages(gpu) {
            use cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT;
            const N: usize = 60_000;
            const D: usize = 784;
            const K: usize = 10;
            const CHOLESKY: usize = 4096;
            let s = &gpu.stream;
            let time = |f: &mut dyn FnMut()| -> (f64, f64) {
                let ctx = s.context();
                let mut once = || {
                    let a = ctx.new_event(Some(CU_EVENT_DEFAULT)).unwrap();
                    let b = ctx.new_event(Some(CU_EVENT_DEFAULT)).unwrap();
                    a.record(s).unwrap();
                    f();
                    b.record(s).unwrap();
                    b.synchronize().unwrap();
                    a.elapsed_ms(&b).unwrap() as f64
                };
                let cold = once();
                let mut warm: Vec<f64> = (0..5).map(|_| once()).collect();
                warm.sort_by(f64::total_cmp);
                (cold, warm[2])
            };
            let report = |name: &str, (cold, warm): (f64, f64), paper: f64| {
                println!("{name:<42} {cold:>10.2} {warm:>10.2} {paper:>10.1}");
            };
            println!(
                "stage (report 002's sizes, f64), {}: cold ms, warm median ms, report's GPU ms",
                gpu.device.name
            );
            let mut rng = StdRng::seed_from_u64(2);
            let x = Samples {
                n: N,
                d: D,
                data: (0..N * D).map(|_| rng.random::<f64>()).collect(),
            };
            let mut p = params(K, CovarianceType::Full, GmmBackend::Gpu);
            let mut em = DeviceEm::new(gpu, &x, &p).unwrap();
            let resp: Vec<f64> = (0..N * K).map(|_| rng.random::<f64>()).collect();
            em.set_responsibilities(&resp).unwrap();
            let cfg = GemmConfig {
                transa: CUBLAS_OP_N,
                transb: CUBLAS_OP_T,
                m: D as i32,
                n: K as i32,
                k: N as i32,
                alpha: 1.0,
                lda: D as i32,
                ldb: K as i32,
                beta: 0.0,
                ldc: D as i32,
            };
            let t = time(&mut || {
                em.linalg
                    .gemm(cfg, &em.x, &em.resp, &mut em.weighted)
                    .unwrap()
            });
            report("weighted products (10×60000 · 60000×784)", t, 6.0);
            drop(em);
            p.k = 1;
            let mut em = DeviceEm::new(gpu, &x, &p).unwrap();
            em.set_responsibilities(&vec![1.0; N]).unwrap();
            let t = time(&mut || drop(em.m_step(1, CovarianceType::Full, 0.0).unwrap()));
            report("covariance (60000 × 784)", t, 47.0);
            let weights: Vec<f64> = (0..N).map(|_| rng.random::<f64>()).collect();
            em.set_responsibilities(&weights).unwrap();
            let t = time(&mut || drop(em.m_step(1, CovarianceType::Full, 0.0).unwrap()));
            report("weighted covariance (60000 × 784)", t, 68.0);

            // A well-conditioned SPD matrix: c·I plus a small symmetric perturbation.
            let c = CHOLESKY;
            let mut spd = vec![0.0f64; c * c];
            for i in 0..c {
                for j in 0..=i {
                    let v = rng.random::<f64>() - 0.5;
                    spd[i * c + j] = v;
                    spd[j * c + i] = v;
                }
                spd[i * c + i] += c as f64;
            }
            let source = s.clone_htod(&spd).unwrap();
            let mut a = s.alloc_zeros::<f64>(c * c).unwrap();
            let mut chol = Linalg::<f64>::new(s, c).unwrap();
            let t = time(&mut || {
                s.memcpy_dtod(&source, &mut a).unwrap();
                assert!(chol.cholesky(&mut a).unwrap());
            });
            report("Cholesky (4096², with the copy in)", t, 1060.0);

            let tri = Linalg::<f64>::new(s, D).unwrap();
            let mut l = vec![0.0f64; D * D];
            for i in 0..D {
                l[i * D + i] = (D as f64).sqrt();
            }
            let l = s.clone_htod(&l).unwrap();
            let rhs: Vec<f64> = (0..D * N).map(|_| rng.random::<f64>()).collect();
            let mut y = s.clone_htod(&rhs).unwrap();
            let t = time(&mut || tri.solve_lower(&l, &mut y, N).unwrap());
            report("triangular solve (784, 60000 right sides)", t, 830.0);
        }
    }
}
