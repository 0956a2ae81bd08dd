//! Repulsive forces (DESIGN §2.2): Y → F_rep, Z.
//!
//! With $w_{ij} = 1/(1 + \lVert y_i - y_j \rVert^2)$ and $Z = \sum_{i \ne j} w_{ij}$,
//!
//! $$F_{rep,i} = \frac{1}{Z} \sum_j w_{ij}^2 (y_i - y_j).$$
//!
//! The interpolated method ([`FftRepulsion`]; Linderman et al. 2019, FIt-SNE; Pitsianis et al.
//! 2019, SG-t-SNE-Π) writes everything as sums $u_i = \sum_j G(y_i, y_j)\, v_j$ with
//! $G_1 = w$, $G_2 = w^2$: $\psi = G_1 * 1$, $\varphi_0 = G_2 * 1$ and
//! $\varphi_k = G_2 * y^k$, so that
//!
//! $$Z = \sum_i \psi_i - n, \qquad F^k_{rep,i} = (y^k_i \varphi_{0,i} - \varphi_{k,i}) / Z.$$
//!
//! Sub-stages, one file each:
//! - [`grid`]: bounding box, spacing, FFT-friendly node count, the cubic Lagrange stencil;
//! - [`s2g`]: points → grid (charges spread to `4^s` nodes);
//! - [`g2g`]: grid → grid convolution with the kernels, zero-padding-free FFTs
//!   (on [`fftnd`], multi-dimensional FFTs);
//! - [`g2s`]: grid → points (interpolation back);
//! - [`phi2force`]: potentials → Z and forces;
//! - [`fft`]: the [`FftRepulsion`] orchestration and timings;
//! - [`exact`]: the O(n²) reference ([`ExactRepulsion`], sums for target subsets, exact Z).
//!
//! Accuracy is set by the grid spacing `h` (in embedding units; the kernel varies on a scale
//! of 1): the relative force error falls about as `h⁴` (cubic interpolation), the 2-D cost of
//! G2G as `h⁻²` (3-D: `h⁻³`), while S2G and G2S cost O(n) whatever `h`. See
//! [`GridSpec::default_auto`] for measured numbers.

pub mod exact;
pub mod exact_gpu;
pub mod fft;
pub mod fftnd;
pub mod g2g;
pub mod g2s;
pub mod gpu;
pub mod grid;
pub mod phi2force;
pub mod s2g;
mod s2g_gpu;

#[cfg(test)]
mod measure;

pub use exact::{exact_for_targets, exact_z, relative_error, ExactRepulsion, ExactTargets};
pub use fft::FftRepulsion;
pub use fftnd::Real;
pub use grid::{fft_friendly, Grid};

use crate::{Error, Result};

/// Seconds spent in each sub-stage of one repulsion evaluation.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct RepulseTimes {
    pub s2g: f64,
    pub g2g: f64,
    pub g2s: f64,
    pub phi2force: f64,
}

/// What one repulsion evaluation returns besides the forces.
#[derive(Clone, Copy, Debug, Default)]
pub struct Repulsion {
    /// The normalisation `Z = Σ_{i≠j} w_ij`.
    pub z: f64,
    /// Grid nodes per axis (`None` for the exact method).
    pub grid: Option<usize>,
    pub times: RepulseTimes,
}

/// How the interpolation grid is sized.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GridSpec {
    /// Exactly this many nodes per axis (5 ..= the size cap), the spacing following the
    /// embedding's extent. The reference thesis used about 150 (1-D), 90 (2-D), 50 (3-D).
    Fixed(usize),
    /// Spacing `h` (embedding units, > 0); nodes per axis `ceil(extent/h) + 4` rounded up to
    /// a [`grid::size_class`] (2^a3^b5^c7^d, about 12 % apart), at least [`grid::MIN_NODES`],
    /// capped at [`grid::MAX_TOTAL_NODES`] in all.
    Auto { h: f64 },
}

impl GridSpec {
    /// `Auto { h: 0.35 }`.
    ///
    /// Measured on a 70k-point, 10-cluster layout spanning ±40 (like a converged MNIST
    /// embedding), 2 threads, f32 grids, relative force error against the exact sums on 1000
    /// targets: 2-D `h` = 1.0 / 0.7 / 0.5 / 0.35 / 0.25 gives 3.0e-2 / 1.3e-2 / 5.0e-3 /
    /// 1.5e-3 / 4.2e-4 (1-D at 0.35: 1.2e-3), with `p` = 84 / 120 / 160 / 240 / 315 nodes per
    /// axis. At 70k points S2G and G2S dominate the time up to `h ≈ 0.35`, so 0.35 costs about
    /// 15% more than 0.5 for a 3.4× smaller error. In 3-D a grid this fine is expensive
    /// (`2^s = 8` FFT patterns on `p³` nodes): `Auto { h: 0.7 }` (error ≈ 1e-2) or
    /// `Fixed(50)` are the affordable choices there.
    pub fn default_auto() -> Self {
        GridSpec::Auto { h: 0.35 }
    }

    /// The default grid for a `dims`-dimensional embedding: [`GridSpec::default_auto`] in 1-D
    /// and 2-D; in 3-D a fixed 50 nodes per axis, the reference thesis's choice, because an
    /// adaptive grid at h = 0.35 reaches 160³ nodes × 8 parity patterns on a MNIST-sized
    /// embedding (seconds per iteration on a CPU).
    pub fn default_for(dims: usize) -> Self {
        if dims == 3 {
            GridSpec::Fixed(50)
        } else {
            GridSpec::default_auto()
        }
    }
}

/// A repulsion method: writes `F_rep` for the points `y` (row-major `n × dims`, `dims ∈ {1,2,3}`)
/// into `force` (same shape) and returns `Z`.
pub trait Repulse: Send {
    fn repulse(&mut self, y: &[f32], dims: usize, force: &mut [f32]) -> Result<Repulsion>;
}

/// Checks `dims ∈ {1, 2, 3}`, that `y` holds whole rows, at least two of them, and that the
/// output has `y`'s length; returns the number of points.
pub(crate) fn check_shapes(y: &[f32], dims: usize, force_len: usize) -> Result<usize> {
    if !(1..=3).contains(&dims) {
        return Err(Error::param("dims", format!("{dims}; need 1, 2 or 3")));
    }
    if y.len() % dims != 0 {
        return Err(Error::param(
            "y",
            format!("length {} is not a multiple of dims = {dims}", y.len()),
        ));
    }
    if force_len != y.len() {
        return Err(Error::param(
            "force",
            format!("length {force_len} differs from y's {}", y.len()),
        ));
    }
    let n = y.len() / dims;
    if n < 2 {
        return Err(Error::param("y", format!("{n} points; need at least 2")));
    }
    Ok(n)
}
