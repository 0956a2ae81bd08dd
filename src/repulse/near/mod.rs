//! The near field of a split kernel: the grid carries a smooth long-range part of the
//! kernel, and the sharp short-range rest is summed directly over the neighbours within a
//! cutoff (the particle–particle / particle–mesh split of P3M, with Ewald's splitting of the
//! kernel into integrals over Gaussians).
//!
//! Why: cubic interpolation on a grid of spacing `h` errs as about `h⁴` times the kernel's
//! fourth derivative, and t-SNE's kernel `1/(1 + d²)` varies on a scale of 1. In 3-D a grid
//! fine enough for that is unaffordable at scale: 1.3M deformed digits span about 210
//! units, the node cap (160³) gives `h ≈ 1.35` and a relative force error of 0.20
//! (`benches/RESULTS.md`, "3-D grid"), and 1e-2 would take about 330³ nodes.
//!
//! The split: with `u = 1 + d²`, `G₁ = 1/u = ∫₀^∞ e^{−tu} dt` and
//! `G₂ = 1/u² = ∫₀^∞ t e^{−tu} dt`. Cutting the integrals at `t₀ = 1/s²` gives the short
//! parts (the narrow Gaussians, `t > t₀`)
//!
//! $$G_1^s = e^{-t_0 u}/u, \qquad G_2^s = e^{-t_0 u}(1 + t_0 u)/u^2,$$
//!
//! which fall off as Gaussians of width `s`, and the long parts `G − Gˢ`, integrals over
//! Gaussians no narrower than `s` only: entire functions of `d`, whose interpolation error
//! falls as `(h/s)⁴` rather than `h⁴`. The grid convolves the long parts
//! ([`NearField::long_g1`], [`NearField::long_g2`]); this module adds the short parts of
//! every pair closer than the cutoff `R`, where `t₀(1 + R²)` = [`CUTOFF_EXPONENT`], and
//! takes the long kernel's interpolated self term out of Z in place of the whole kernel's.
//!
//! The width follows the grid, `s` = [`WIDTH_PER_SPACING`]` · h`, so the grid's error stays
//! put whatever the spacing, while the near field's work grows as `s³` per point. Measured
//! on MNIST 70k embedded in 3-D (`scripts/bench/near_split.py`, 1000 targets against exact
//! sums): on a grid of `h = 1.35` the force error is 0.24 without the split; with it,
//! `s = 1.1 h` gives 2.0e-2, `s = 1.5 h` 4.8e-3 and `s = 1.85 h` 1.6e-3 (`h = 1`: 7.6e-3 at
//! `s = 1.5 h`; `h = 2`: 3.4e-3), once `t₀(1 + R²)` reaches about 4 (below, the cutoff
//! dominates: 2.0e-2 at 2.7); the defaults here take 141 neighbours a point there. On 1.3M
//! deformed digits in 3-D (`scripts/bench/grid3d.sh`, the grid capped at 160³, h = 1.36)
//! the error falls from 0.21 to 4.7e-3 for 3.9 ms of direct sums per evaluation (H100). On
//! 10M points the 3-D embedding is hardly wider (218 units), so the sums meet about 7 times
//! the neighbours: 3.8e-3 for 183 ms (before the candidate loop was unrolled, which took 15 %
//! off). The KL of either picture is that of the coarse grid alone (`benches/RESULTS.md`,
//! "the near field").
//!
//! Only for the Cauchy kernel (α = 1), whose integral forms these are. [`cpu`] sorts the
//! points by grid cell and sums a row of cells at a time; [`gpu`] does the same from S2G's
//! sort.

pub mod cpu;
pub mod gpu;

pub use cpu::add_near;

use crate::kernel::Kernel;
use crate::repulse::GridSpec;

/// The short kernel's width `s` in grid spacings.
pub const WIDTH_PER_SPACING: f64 = 1.5;

/// `t₀(1 + R²)` at the cutoff `R`: the short kernel there is `e^{−4.5} = 0.011` of the whole
/// one in G₁ (`5.5 e^{−4.5} = 0.06` in G₂).
pub const CUTOFF_EXPONENT: f64 = 4.5;

/// The split of the Cauchy kernel for a grid of spacing `h`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NearField {
    /// `t₀ = 1/s²`, where the integrals are cut.
    pub t0: f64,
    /// The cutoff `R` of the direct sums, embedding units.
    pub cutoff: f64,
}

impl NearField {
    /// The split for grid spacing `h` (> 0): `s = WIDTH_PER_SPACING · h`, and the cutoff
    /// where `t₀(1 + R²) = CUTOFF_EXPONENT`.
    pub fn for_spacing(h: f64) -> NearField {
        let s = WIDTH_PER_SPACING * h;
        let t0 = 1.0 / (s * s);
        NearField {
            t0,
            cutoff: (CUTOFF_EXPONENT / t0 - 1.0).max(0.0).sqrt(),
        }
    }

    /// The short part of `G₁` at squared distance `d2`.
    #[inline(always)]
    pub fn short_g1(&self, d2: f64) -> f64 {
        self.short_pair(d2).0
    }

    /// The short part of `G₂` at squared distance `d2`.
    #[inline(always)]
    pub fn short_g2(&self, d2: f64) -> f64 {
        self.short_pair(d2).1
    }

    /// The short parts of `G₁` and `G₂` at squared distance `d2`, from one exponential:
    /// the direct sums' cost is mostly theirs (the values are [`NearField::short_g1`]'s and
    /// [`NearField::short_g2`]'s bit for bit).
    #[inline(always)]
    pub fn short_pair(&self, d2: f64) -> (f64, f64) {
        let u = 1.0 + d2;
        let x = self.t0 * u;
        let e = (-x).exp();
        (e / u, e * (1.0 + x) / (u * u))
    }

    /// The long part of `G₁`, `(1 − e^{−t₀u})/u`, what the grid convolves.
    pub fn long_g1(&self, d2: f64) -> f64 {
        let u = 1.0 + d2;
        -(-self.t0 * u).exp_m1() / u
    }

    /// The long part of `G₂`, `(1 − e^{−t₀u}(1 + t₀u))/u²`.
    pub fn long_g2(&self, d2: f64) -> f64 {
        1.0 / ((1.0 + d2) * (1.0 + d2)) - self.short_g2(d2)
    }
}

/// The kernel a grid convolves: the embedding's whole kernel, or with a near field the long
/// part of its split for the grid's spacing (Cauchy kernel only).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridKernel {
    pub kernel: Kernel,
    pub near_field: bool,
    /// The near field serves grids coarser than this spacing only: an adaptive grid's own
    /// spacing, so that it steps in where the node cap made the grid coarser than asked
    /// (finer grids are accurate as they are, and their embeddings are dense, where the
    /// direct sums cost most); 0 for a fixed grid, whose spacing follows the box.
    pub near_above: f64,
}

impl From<Kernel> for GridKernel {
    fn from(kernel: Kernel) -> Self {
        GridKernel {
            kernel,
            near_field: false,
            near_above: 0.0,
        }
    }
}

impl GridKernel {
    /// This kernel with the near field on or off for grids of `spec`.
    pub fn with_near_field(self, near_field: bool, spec: GridSpec) -> Self {
        GridKernel {
            near_field,
            near_above: match spec {
                GridSpec::Auto { h } => h,
                GridSpec::Fixed(_) => 0.0,
            },
            ..self
        }
    }

    /// The split for a grid of spacing `h`, if this kernel has a near field there (the
    /// split is the Cauchy kernel's: other kernels keep the whole one on the grid).
    pub fn near(&self, h: f64) -> Option<NearField> {
        (self.near_field && self.kernel.is_cauchy() && h > self.near_above)
            .then(|| NearField::for_spacing(h))
    }

    /// `(G₁, G₂)` as the grid of spacing `h` carries them, at squared distance `d2`.
    pub fn on_grid(&self, h: f64, d2: f64) -> (f64, f64) {
        match self.near(h) {
            Some(near) => (near.long_g1(d2), near.long_g2(d2)),
            None => (self.kernel.g1(d2), self.kernel.g2(d2)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_add_up_and_the_long_one_is_smooth() {
        let near = NearField::for_spacing(1.35);
        for d2 in [0.0, 0.3, 1.0, 4.0, 30.0, 400.0] {
            let u = 1.0 + d2;
            assert!((near.long_g1(d2) + near.short_g1(d2) - 1.0 / u).abs() < 1e-15);
            assert!((near.long_g2(d2) + near.short_g2(d2) - 1.0 / (u * u)).abs() < 1e-15);
        }
        // The long part is flat at the origin where the whole kernel peaks: its curvature
        // there is a small fraction of the kernel's (−2 in d for G₁).
        let e = 1e-3;
        let curv = |f: &dyn Fn(f64) -> f64| (f(e * e) - f(0.0)) * 2.0 / (e * e);
        let whole = curv(&|d2| 1.0 / (1.0 + d2));
        let long = curv(&|d2| near.long_g1(d2));
        assert!(long.abs() < 0.25 * whole.abs(), "{long} against {whole}");
        // At the cutoff the short part is e^{-5} of G₁.
        let r2 = near.cutoff * near.cutoff;
        let ratio = near.short_g1(r2) * (1.0 + r2);
        assert!((ratio - (-CUTOFF_EXPONENT).exp()).abs() < 1e-12);
    }
}
