//! `kernels/gmm.cu`: the Gaussian mixtures' own passes over the samples (`crate::gmm::gpu`),
//! in the precision `T` of the fit.

use crate::gpu::launch::kernels;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[];

kernels! {
    file: Gmm;

    /// `out` (b × d) = x_i − `mean` for the `b` rows from `row0`, each times √r_ic when
    /// `weighted` is 1.
    pub struct GmmDeviations<T> = "gmm_deviations" {
        n: host,
        x: in T [n * d],
        row0: usize as i64,
        b: usize as i64,
        d: usize as i32,
        mean: in T [d],
        resp: in T [n * k],
        k: usize as i32,
        c: usize as i32,
        weighted: i32,
        out: out T [b * d],
    }

    /// `out[(row0 + i)·k + c]` = `log_norm` − ‖y_i‖² / 2 for the `b` solved deviations `y`
    /// (one warp per row).
    pub struct GmmFullLogProb<T> = "gmm_full_log_prob" {
        n: host,
        y: in T [b * d],
        row0: usize as i64,
        b: usize as i64,
        d: usize as i32,
        k: usize as i32,
        c: usize as i32,
        log_norm: f64,
        out: out T [n * k],
    }

    /// `out[i·k + c]` = `log_norm[c]` − Σ_j ((x_ij − μ_cj) s_cj)² / 2 for every row and
    /// component (one warp per pair).
    pub struct GmmDiagLogProb<T> = "gmm_diag_log_prob" {
        x: in T [n * d],
        n: usize as i64,
        d: usize as i32,
        k: usize as i32,
        means: in T [k * d],
        scales: in T [k * d],
        log_norm: in f64 [k],
        out: out T [n * k],
    }

    /// Each row of `resp` from log π + log N into responsibilities (log-sum-exp), its
    /// log-sum-exp into `ll`, each block's sum of `ll` into `partial` (one per block of the
    /// launch's `blocks`).
    pub struct GmmNormalise<T> = "gmm_normalise" {
        blocks: host,
        resp: out T [n * k],
        n: usize as i64,
        k: usize as i32,
        ll: out T [n],
        partial: out f64 [blocks],
    }

    /// `out[0]` = Σ_i log L_ii of the d × d lower factor (one block).
    pub struct GmmLogDet<T> = "gmm_log_det" {
        factor: in T [d * d],
        d: usize as i32,
        out: out f64 [1],
    }

    /// Per group of `per` rows (one block each, `groups` of them), Σ r_ic (x_ij − μ_cj)²
    /// into `partial` (groups × k × d).
    pub struct GmmDiagSums<T> = "gmm_diag_sums" {
        groups: host,
        x: in T [n * d],
        n: usize as i64,
        d: usize as i32,
        k: usize as i32,
        resp: in T [n * k],
        means: in T [k * d],
        per: usize as i64,
        partial: out T [groups * k * d],
    }
}
