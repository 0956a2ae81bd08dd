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
//! Sub-stages, one module each, with the CPU code in `cpu.rs` and its GPU twin in `gpu.rs`:
//! - [`grid`]: bounding box, spacing, FFT-friendly node count, the cubic Lagrange stencil;
//! - [`s2g`]: points → grid (charges spread to `4^s` nodes);
//! - [`g2g`]: grid → grid convolution with the kernels (on the CPU over [`fftnd`],
//!   multi-dimensional FFTs; on the GPU with cuFFT, zero-padding-free);
//! - [`g2s`]: grid → points (interpolation back);
//! - [`near`]: with a split kernel (`--near-field`), the short-range part summed directly
//!   over the pairs within a cutoff, the grid carrying the smooth long-range part (P3M);
//! - [`phi2force`]: potentials → Z and forces;
//! - [`fft`]: the orchestration and timings ([`FftRepulsion`], [`FftRepulsionGpu`]);
//! - [`exact`]: the O(n²) reference ([`ExactRepulsion`], [`ExactRepulsionGpu`], sums for
//!   target subsets, exact Z);
//! - [`method`]: which of them a run uses, and where ([`RepulsionSpec`]): the one place that
//!   chooses.
//!
//! Two interfaces: [`Repulse`] on host data, [`RepulseGpu`] on device data (which an
//! optimiser can keep busy across iterations); every [`RepulseGpu`] is also a [`Repulse`]
//! (uploading and downloading), which the tests use to compare the two sides.
//!
//! Accuracy is set by the grid spacing `h` (in embedding units; the kernel varies on a scale
//! of 1): the relative force error falls about as `h⁴` (cubic interpolation), the 2-D cost of
//! G2G as `h⁻²` (3-D: `h⁻³`), while S2G and G2S cost O(n) whatever `h`. See
//! [`GridSpec::default_auto`] for measured numbers.

pub mod exact;
pub mod fft;
pub mod fftnd;
pub mod g2g;
pub mod g2s;
pub mod grid;
pub mod method;
pub mod near;
pub mod phi2force;
pub mod s2g;

#[cfg(test)]
mod measure;

pub use exact::{
    exact_for_targets, exact_for_targets_gpu, exact_for_targets_with, exact_z, exact_z_gpu,
    exact_z_with, relative_error, ExactRepulsion, ExactRepulsionGpu, ExactTargets,
};
pub use fft::{FftRepulsion, FftRepulsionGpu};
pub use fftnd::Real;
pub use grid::{fft_friendly, Grid};
pub use method::{Precision, RepulsionMethod, RepulsionSpec};

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use crate::{Error, Result};

/// Seconds spent in each sub-stage of one repulsion evaluation.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct RepulseTimes {
    pub s2g: f64,
    pub g2g: f64,
    pub g2s: f64,
    /// The near field's direct sums (zero without one, [`near`]).
    pub near: f64,
    pub phi2force: f64,
}

impl RepulseTimes {
    /// The evaluation's seconds: the sum of its sub-stages.
    pub fn total(&self) -> f64 {
        self.s2g + self.g2g + self.g2s + self.near + self.phi2force
    }
}

/// What one repulsion evaluation returns besides the forces.
#[derive(Clone, Copy, Debug, Default)]
pub struct Repulsion {
    /// The normalisation `Z = Σ_{i≠j} w_ij`.
    pub z: f64,
    /// Grid nodes per axis (`None` for the exact method).
    pub grid: Option<usize>,
    pub times: RepulseTimes,
    /// Host seconds this call spent preparing a grid size it had not used just before
    /// (FFT plans, buffers, kernel spectra), outside `times`: the GPU path, whose device
    /// waits meanwhile. (The CPU path counts its plans in `times.g2g`.)
    pub replan_seconds: f64,
}

/// How the interpolation grid is sized.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GridSpec {
    /// Exactly this many nodes per axis (6 ..= the size cap), the spacing following the
    /// embedding's extent. The reference thesis used about 150 (1-D), 90 (2-D), 50 (3-D).
    Fixed(usize),
    /// Spacing `h` (embedding units, > 0); nodes per axis about `extent/h + 5` rounded up to
    /// a class of a [`grid::Ladder`] (2^a3^b5^c7^d, on the host with at most one factor 5
    /// or 7; 12.5 % apart on the host, 40 % on the GPU in 1-D and 2-D), at least
    /// [`grid::MIN_NODES`],
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
    ///
    /// On real optimisations the grid-size sweep (`benches/sweeps/`, H100, mean of iterations
    /// 400–1000) measured more: at h = 0.35, 3.1e-3 … 3.5e-3 on the 1.3M-point mixture at
    /// every n from 50k, and 6.7e-3 on MNIST 70k; h = 0.25 gives 8.5e-4 and 1.9e-3 for 12 %
    /// more repulsion time on the GPU at 1.3M, but about twice the G2G time on 2 CPU cores,
    /// which keeps 0.35 the default for both.
    pub fn default_auto() -> Self {
        GridSpec::Auto { h: 0.35 }
    }

    /// The default grid for a `dims`-dimensional embedding whose repulsion runs `on_device`
    /// (the gpu and hybrid backends): [`GridSpec::default_auto`] in 1-D and 2-D; in 3-D
    /// `Auto { h: 0.6 }` on the device (up to the node cap, 160³, beyond which the near
    /// field takes over: [`crate::repulse::near`]) and a fixed 50 nodes per axis, the
    /// reference thesis's choice, on the host.
    ///
    /// The 3-D grid decides the picture's quality: on 1.3M deformed MNIST digits
    /// (`scripts/bench/grid3d.sh`, H100) the 50-node grid's relative force error was 15 and
    /// the 3-D KL 5.563, above the 2-D run's 5.508, though more room should fit better; the
    /// adaptive grid capped at 160 nodes (spacing 1.36 over an extent of 210) erred by 0.21
    /// (KL 5.105), and with the near field by 4.7e-3 (`benches/RESULTS.md`, "3-D grid").
    /// Uncapped, `h = 0.6` errs by about 0.06·h⁴ ≈ 8e-3 on the whole kernel. A CPU cannot
    /// afford such grids: MNIST 70k in 3-D at h = 0.7 did not finish in 24 minutes on 2
    /// cores, against 78 s with 50 nodes. `--grid fixed` or `--grid-error` choose other
    /// grids, `--near-field` the split.
    pub fn default_for(dims: usize, on_device: bool) -> Self {
        match dims {
            3 if on_device => GridSpec::Auto { h: 0.6 },
            3 => GridSpec::Fixed(50),
            _ => GridSpec::default_auto(),
        }
    }

    /// This grid for the `kernel`: below α = 1 the kernel varies on a scale of √α rather
    /// than 1, so an adaptive grid's spacing shrinks by √α to keep the interpolation error of
    /// α = 1 (measured: α = 0.5 on the unscaled 2-D grid of h = 0.25 gave a force error of
    /// 1.05e-3 against 1e-3 or less for α = 1); a fixed grid is kept as asked.
    pub fn for_kernel(self, kernel: crate::kernel::Kernel) -> Self {
        match self {
            GridSpec::Auto { h } if kernel.dof < 1.0 => GridSpec::Auto {
                h: h * kernel.dof.sqrt(),
            },
            spec => spec,
        }
    }

    /// The fixed grid for a `dims`-dimensional embedding (`--grid fixed`):
    /// [`DEFAULT_FIXED_NODES`] per axis.
    pub fn default_fixed(dims: usize) -> Self {
        GridSpec::Fixed(DEFAULT_FIXED_NODES[dims.clamp(1, 3) - 1])
    }

    /// An adaptive grid whose spacing holds the relative repulsive-force error under `error`
    /// (`--grid-error E`): cubic interpolation errs as `C·h⁴`, so `h = (E / C)^{1/4}` with
    /// `C` = [`ERROR_CONSTANT`] for the dimension. The node count then follows the
    /// embedding's extent, as for any [`GridSpec::Auto`] grid, up to the size cap
    /// ([`grid::MAX_TOTAL_NODES`]) beyond which the spacing grows and the error is no longer
    /// held (in 3-D from about 160 nodes per axis).
    pub fn for_error(error: f64, dims: usize) -> Result<Self> {
        if !(1..=3).contains(&dims) {
            return Err(Error::param("dims", format!("{dims}; need 1, 2 or 3")));
        }
        if !(error > 0.0 && error < 1.0) {
            return Err(Error::param(
                "grid-error",
                format!("{error}; need a relative error in (0, 1)"),
            ));
        }
        Ok(GridSpec::Auto {
            h: (error / ERROR_CONSTANT[dims - 1]).powf(0.25),
        })
    }
}

/// Nodes per axis of [`GridSpec::default_fixed`] in 1-D, 2-D and 3-D: the smallest fixed
/// grid whose mean force error is ≤ 1e-3 at n = 1.3M (`benches/sweeps/`, H100, the mean of
/// iterations 400, 550, …, 1000).
///
/// - 1-D: 1024 (8.0e-4; 512 gives 9.0e-3).
/// - 2-D: 1152. The mean at 1.3M is set by the sample at iteration 400, just after early
///   exaggeration, when a few outlying points stretch the bounding box to 320–365 (110–146
///   later); so it varies between runs: 1024 gave 1.4e-3 in one and 6.8e-4 in another,
///   1152 gave 4.4e-4 (and, scaled as h⁴, 8.5e-4 in the first). An adaptive grid reaches
///   the same error for less: `Auto { h: 0.25 }` 8.5e-4 at 1.79 ms per evaluation, 1152
///   nodes 2.08 ms.
/// - 3-D: no grid under the node cap gets there; 160 nodes (the cap) give 5.2e-2 at 1.3M
///   (1.4e-2 … 3e-2 at 50k–800k), and 1e-3 would need h ≈ 0.2 over an extent of 130, some
///   650³ nodes. `--grid fixed` takes the cap.
///
/// Fixed grids suffer from those outliers because their spacing follows the box: on the
/// mixture at 400k a 256-node 2-D grid errs 23 times more than at 200k. The adaptive
/// default ([`GridSpec::default_auto`]) holds its error whatever n and the box.
pub const DEFAULT_FIXED_NODES: [usize; 3] = [1024, 1152, 160];

/// `C` of the error model `relative force error ≈ C·h⁴` in 1-D, 2-D and 3-D, used by
/// [`GridSpec::for_error`]: the largest error/h⁴ measured by the grid-size sweeps
/// (`benches/sweeps/`, rows with errors in 1e-3 … 2e-2, every n, iteration and grid),
/// rounded up. 1-D 1.05 (median 0.55, free exponent 3.5); 2-D 0.62 on MNIST (median 0.50)
/// and 0.37 on the 1.3M mixture (median 0.20, free exponent 3.4); 3-D 0.24 (median 0.09),
/// where the measured grids are coarse (h ≥ 0.5) and the error falls only as h^1.9, so
/// below E ≈ 1e-2 the 3-D rule is an extrapolation.
pub const ERROR_CONSTANT: [f64; 3] = [1.1, 0.65, 0.25];

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
    if !y.len().is_multiple_of(dims) {
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

/// A repulsion whose Y and forces live on the device: writes F_rep of `y` (n × dims) into
/// `force` and returns Z, on the stream it was made for.
///
/// Besides the blocking [`RepulseGpu::repulse_device`], an optimiser can keep the device
/// busy across iterations: [`RepulseGpu::prefetch`] before queueing other work on `y`
/// (the attraction), [`RepulseGpu::enqueue`] to queue the forces, and
/// [`RepulseGpu::collect`] the result later (after queueing the update), with at most
/// two calls outstanding.
pub trait RepulseGpu: Send {
    /// Queues F_rep of `y` into `force`; Z and the stage times come from
    /// [`RepulseGpu::collect`].
    fn enqueue(
        &mut self,
        y: &CudaSlice<f32>,
        n: usize,
        dims: usize,
        force: &mut CudaSlice<f32>,
    ) -> Result<Pending>;

    /// Z and the times of an [`RepulseGpu::enqueue`]d call, waiting for it to finish.
    fn collect(&mut self, pending: Pending) -> Result<Repulsion> {
        match pending {
            Pending::Done(rep) => Ok(rep),
            Pending::Slot(_) => Err(Error::param(
                "pending",
                "a queued repulsion was collected by a method that did not queue it",
            )),
        }
    }

    /// [`RepulseGpu::enqueue`] of one GPU's rows in a run over several
    /// ([`crate::backend::multi`]): F_rep of the `n_own` points `own` into `force`, the field
    /// of all `n_all` points `y_all` (every GPU holds them; the box comes from them, see
    /// [`RepulseGpu::prefetch`]), its sums shared through `ranks`. The FFT repulsion does
    /// this; the exact one, for small inputs, runs on one GPU only.
    fn enqueue_rows(
        &mut self,
        _all: (&CudaSlice<f32>, usize),
        _own: (&CudaSlice<f32>, usize),
        _dims: usize,
        _force: &mut CudaSlice<f32>,
        _ranks: &crate::gpu::comm::Ranks,
    ) -> Result<Pending> {
        Err(Error::param(
            "repulsion",
            "only the FFT repulsion runs over several GPUs (use --gpus 1 with --repulsion exact)",
        ))
    }

    /// Starts what [`RepulseGpu::enqueue`] of the same `y` will need on the host (the FFT
    /// repulsion's bounding box), so that it travels while the caller queues other work.
    fn prefetch(&mut self, _y: &CudaSlice<f32>, _n: usize, _dims: usize) -> Result<()> {
        Ok(())
    }

    /// F_rep of `y` into `force` and Z, once they are done.
    fn repulse_device(
        &mut self,
        y: &CudaSlice<f32>,
        n: usize,
        dims: usize,
        force: &mut CudaSlice<f32>,
    ) -> Result<Repulsion> {
        let pending = self.enqueue(y, n, dims, force)?;
        self.collect(pending)
    }

    /// The stream its work goes to.
    fn stream(&self) -> &Arc<CudaStream>;
}

/// A repulsion queued by [`RepulseGpu::enqueue`].
#[derive(Debug)]
pub enum Pending {
    /// Already finished (methods that wait anyway).
    Done(Repulsion),
    /// Running in the repulsion's timing slot.
    Slot(usize),
}

/// Shape checks shared by the device repulsions.
pub(crate) fn check_device_args(n: usize, dims: usize, y_len: usize, f_len: usize) -> Result<()> {
    if !(1..=3).contains(&dims) {
        return Err(Error::param(
            "dims",
            format!("must be 1, 2 or 3, got {dims}"),
        ));
    }
    if n < 2 || y_len < n * dims || f_len < n * dims {
        return Err(Error::param(
            "y",
            format!("need ≥ 2 points of {dims} coordinates"),
        ));
    }
    Ok(())
}

/// Host-to-host form of every device repulsion, for tests against the CPU paths: uploads Y
/// and the caller's force buffer as is (so poisoned entries the kernels miss show), runs the
/// repulsion on its stream, downloads the forces.
impl<R: RepulseGpu> Repulse for R {
    fn repulse(&mut self, y: &[f32], dims: usize, force: &mut [f32]) -> Result<Repulsion> {
        if dims == 0 || !y.len().is_multiple_of(dims) || force.len() != y.len() {
            return Err(Error::param(
                "y",
                "y and force must both hold n × dims values",
            ));
        }
        let s = self.stream().clone();
        let y_dev = s.clone_htod(y)?;
        let mut f_dev = s.clone_htod(force)?;
        let out = self.repulse_device(&y_dev, y.len() / dims, dims, &mut f_dev)?;
        s.memcpy_dtoh(&f_dev, force)?;
        Ok(out)
    }
}
