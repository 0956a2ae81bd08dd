//! [`FftRepulsion`]: the interpolated repulsion on the CPU, orchestrating
//! S2G → G2G → G2S → Phi2Force (FIt-SNE, Linderman et al. 2019; SG-t-SNE-Π, Pitsianis et al.
//! 2019) and timing each sub-stage.
//!
//! All buffers live in the struct and are reused: a call on a grid of the same size allocates
//! nothing large. The kernel spectra depend on the grid size and spacing; with
//! [`GridSpec::Auto`] the spacing is fixed, so they are recomputed only when the node count
//! changes to a size class none of the last few grids had (their convolvers are kept). With
//! [`GridSpec::Fixed`] the spacing follows the embedding's extent, so they are recomputed
//! whenever the spacing changes to such a class (two extra FFTs, booked in `g2g`).

use std::time::Instant;

use crate::kernel::Kernel;
use crate::repulse::fftnd::{Planners, Real};
use crate::repulse::g2g::{channels, Convolver};
use crate::repulse::g2s::gather;
use crate::repulse::grid::{Grid, MAX_TOTAL_NODES};
use crate::repulse::near::{add_near, GridKernel};
use crate::repulse::phi2force::phi2force;
use crate::repulse::s2g::Scatter;
use crate::repulse::{check_shapes, GridSpec, Repulse, RepulseTimes, Repulsion};
use crate::Result;

/// FFT-accelerated interpolated repulsion. `T` is the precision of the grid computations:
/// `f32` (the default; its rounding is far below the interpolation error at any useful grid)
/// or `f64`.
pub struct FftRepulsion<T: Real = f32> {
    spec: GridSpec,
    /// The adaptive grid's node budget ([`Grid::fit_box_within`]).
    max_nodes: usize,
    kernel: GridKernel,
    planners: Planners<T>,
    /// The convolvers of the last few grids, the latest first ([`CONVOLVERS`]).
    convs: Vec<Convolver<T>>,
    scatter: Scatter<T>,
    charges: Vec<T>,
    potentials: Vec<T>,
    values: Vec<T>,
}

impl FftRepulsion<f32> {
    /// Single-precision grids (the default).
    pub fn new(grid: GridSpec) -> Self {
        Self::with_precision(grid)
    }
}

impl<T: Real> FftRepulsion<T> {
    /// Grids in precision `T`, e.g. `FftRepulsion::<f64>::with_precision(spec)`.
    pub fn with_precision(grid: GridSpec) -> Self {
        FftRepulsion {
            spec: grid,
            max_nodes: MAX_TOTAL_NODES,
            kernel: Kernel::CAUCHY.into(),
            planners: Planners::default(),
            convs: Vec::new(),
            scatter: Scatter::new(),
            charges: Vec::new(),
            potentials: Vec::new(),
            values: Vec::new(),
        }
    }

    /// The same with the heavy-tailed `kernel` ([`Kernel`]) in place of the Cauchy one, on
    /// the grid [`GridSpec::for_kernel`] makes of this one.
    pub fn with_kernel(self, kernel: Kernel) -> Self {
        let spec = self.spec.for_kernel(kernel);
        FftRepulsion {
            spec,
            kernel: GridKernel {
                kernel,
                ..self.kernel
            },
            convs: Vec::new(),
            ..self
        }
    }

    /// The same with a near field when `near_field` (Cauchy kernel only;
    /// [`crate::repulse::near`]) wherever the grid is coarser than asked (an adaptive grid at
    /// its node cap; a fixed grid always): the grid convolves the long part of the kernel's
    /// split for its spacing, and the short part is summed directly over the pairs within
    /// the cutoff.
    pub fn with_near_field(self, near_field: bool) -> Self {
        FftRepulsion {
            kernel: self.kernel.with_near_field(near_field, self.spec),
            convs: Vec::new(),
            ..self
        }
    }

    /// The same with an adaptive grid held to `max_nodes` nodes in all
    /// ([`Grid::fit_box_within`]; [`MAX_TOTAL_NODES`] by default).
    pub fn with_max_nodes(self, max_nodes: usize) -> Self {
        FftRepulsion { max_nodes, ..self }
    }

    /// The grid specification this instance was built with.
    pub fn spec(&self) -> GridSpec {
        self.spec
    }

    fn run<const D: usize>(
        &mut self,
        y: &[f32],
        grid: &Grid,
        force: &mut [f32],
    ) -> Result<Repulsion> {
        let len = grid.len();
        let n = y.len() / D;
        let zero = T::zero();

        // Step 1: S2G.
        let t = Instant::now();
        self.charges.resize(channels(D) * len, zero);
        self.scatter.run::<D>(y, grid, &mut self.charges);
        let s2g = t.elapsed().as_secs_f64();

        // Step 2: G2G (kernel spectra built only for a grid no kept convolver fits).
        let t = Instant::now();
        let conv = match self.convs.iter().position(|c| c.fits(grid.p, D, grid.h)) {
            Some(at) => self.convs.remove(at),
            None => Convolver::new(&mut self.planners, grid.p, D, grid.h, self.kernel),
        };
        self.convs.insert(0, conv);
        keep_within(&mut self.convs);
        let conv = &mut self.convs[0];
        self.potentials.resize(channels(D) * len, zero);
        let psi_sum = conv.convolve(&self.charges, &mut self.potentials);
        let g2g = t.elapsed().as_secs_f64();

        // Step 3: G2S.
        let t = Instant::now();
        self.values.resize(n * channels(D), zero);
        let self_sum = gather::<T, D>(
            y,
            grid,
            self.kernel.kernel,
            &self.potentials,
            &mut self.values,
        );
        let g2s = t.elapsed().as_secs_f64();

        // Step 3b: the near field's short-range sums (with a split kernel).
        let (near_z, near) = match self.kernel.near(grid.h) {
            Some(near) => {
                let t = Instant::now();
                let z = add_near::<T, D>(y, grid, &near, &mut self.values);
                (z, t.elapsed().as_secs_f64())
            }
            None => (0.0, 0.0),
        };

        // Step 4: Phi2Force.
        let t = Instant::now();
        let z = phi2force::<T, D>(y, grid, &self.values, (psi_sum + near_z, self_sum), force)?;
        let phi2force = t.elapsed().as_secs_f64();

        Ok(Repulsion {
            z,
            grid: Some(grid.p),
            times: RepulseTimes {
                s2g,
                g2g,
                g2s,
                near,
                phi2force,
            },
            replan_seconds: 0.0,
        })
    }
}

/// Convolvers kept for the grids used last: an embedding near a size class's edge steps
/// back and forth between two sizes, and each step to a size without one rebuilds the kernel
/// spectra (two transforms per kernel). On the 1.3M cpu run, 83 size changes against 70
/// cost 4 s of G2G.
const CONVOLVERS: usize = 4;

/// Memory the kept convolvers may hold beyond the latest one.
const CONVOLVER_BYTES: usize = 256 << 20;

/// Drops the least recently used convolvers past [`CONVOLVERS`], or past
/// [`CONVOLVER_BYTES`] of spectra beyond the first (large 3-D grids keep only their own).
fn keep_within<T: Real>(convs: &mut Vec<Convolver<T>>) {
    let mut bytes = 0;
    let keep = convs
        .iter()
        .enumerate()
        .position(|(at, c)| {
            if at > 0 {
                bytes += c.spectra_bytes();
            }
            at >= CONVOLVERS || bytes > CONVOLVER_BYTES
        })
        .unwrap_or(convs.len());
    convs.truncate(keep);
}

impl<T: Real> Repulse for FftRepulsion<T> {
    fn repulse(&mut self, y: &[f32], dims: usize, force: &mut [f32]) -> Result<Repulsion> {
        check_shapes(y, dims, force.len())?;
        let grid = Grid::fit_within(y, dims, self.spec, self.max_nodes)?;
        match dims {
            1 => self.run::<1>(y, &grid, force),
            2 => self.run::<2>(y, &grid, force),
            _ => self.run::<3>(y, &grid, force),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::repulse::{relative_error, ExactRepulsion};
    use rand::{rngs::StdRng, SeedableRng};
    use rand_distr::{Distribution, Normal, Uniform};

    /// `n` points in `k` Gaussian clusters (std 1–3) with centres spread over `±spread`.
    pub(crate) fn clusters(n: usize, dims: usize, k: usize, spread: f32, seed: u64) -> Vec<f32> {
        let mut rng = StdRng::seed_from_u64(seed);
        let u = Uniform::new(-spread, spread).unwrap();
        let centres: Vec<f32> = (0..k * dims).map(|_| u.sample(&mut rng)).collect();
        let stds: Vec<f32> = (0..k).map(|c| 1.0 + (c % 3) as f32).collect();
        let g = Normal::new(0.0f32, 1.0).unwrap();
        (0..n)
            .flat_map(|i| {
                let c = i % k;
                (0..dims)
                    .map(|a| centres[c * dims + a] + stds[c] * g.sample(&mut rng))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// (force error, relative Z error) of `method` against the exact sums.
    pub(crate) fn errors(method: &mut dyn Repulse, y: &[f32], dims: usize) -> (f64, f64) {
        let mut exact = vec![0.0f32; y.len()];
        let re = ExactRepulsion::new().repulse(y, dims, &mut exact).unwrap();
        let mut approx = vec![0.0f32; y.len()];
        let ra = method.repulse(y, dims, &mut approx).unwrap();
        let e: Vec<f64> = exact.iter().map(|&v| v as f64).collect();
        let a: Vec<f64> = approx.iter().map(|&v| v as f64).collect();
        (relative_error(&e, &a), (ra.z - re.z).abs() / re.z)
    }

    /// Stepping between two grid sizes reuses the kept convolvers: the same forces and Z as
    /// a fresh instance's, bit for bit, and at most [`CONVOLVERS`] kept.
    #[test]
    fn kept_convolvers_give_a_fresh_instance_s_forces() {
        let small = clusters(3000, 2, 5, 10.0, 1);
        let large: Vec<f32> = small.iter().map(|v| v * 3.0).collect();
        let wide: Vec<f32> = small.iter().map(|v| v * 6.0).collect();
        let mut kept = FftRepulsion::new(GridSpec::default_auto());
        for y in [&small, &large, &small, &wide, &large, &small] {
            let mut a = vec![0f32; y.len()];
            let mut b = vec![0f32; y.len()];
            let ra = kept.repulse(y, 2, &mut a).unwrap();
            let rb = FftRepulsion::new(GridSpec::default_auto())
                .repulse(y, 2, &mut b)
                .unwrap();
            assert_eq!(a, b);
            assert_eq!(ra.z.to_bits(), rb.z.to_bits());
        }
        assert_eq!(kept.convs.len(), 3, "one per grid size met");
        assert!(kept.convs.len() <= CONVOLVERS);
    }

    #[test]
    fn matches_exact_on_fine_grids() {
        for (dims, n, h, spread) in [
            (1, 3000, 0.1, 12.0),
            (2, 2000, 0.25, 12.0),
            (3, 1200, 0.2, 6.0),
        ] {
            let y = clusters(n, dims, 6, spread, dims as u64);
            let (ef, ez) = errors(&mut FftRepulsion::new(GridSpec::Auto { h }), &y, dims);
            assert!(
                ef < 1e-3 && ez < 1e-4,
                "{dims}-D h={h}: force {ef:e}, Z {ez:e}"
            );
            let mut f64_grid = FftRepulsion::<f64>::with_precision(GridSpec::Auto { h });
            let (ef64, _) = errors(&mut f64_grid, &y, dims);
            assert!(
                (ef64 - ef).abs() < 0.1 * ef,
                "{dims}-D: f32 {ef:e} vs f64 {ef64:e}"
            );
        }
    }

    /// Heavy-tailed kernels (α = 0.5, 2) hold the Cauchy kernel's error bounds on the same
    /// grids, against the exact sums with the same kernel.
    #[test]
    fn heavy_tails_match_exact_on_fine_grids() {
        for dof in [0.5, 2.0] {
            let kernel = Kernel::new(dof).unwrap();
            for (dims, n, h, spread) in [
                (1, 3000, 0.1, 12.0),
                (2, 2000, 0.25, 12.0),
                (3, 1200, 0.2, 6.0),
            ] {
                let y = clusters(n, dims, 6, spread, dims as u64);
                let mut exact = vec![0.0f32; y.len()];
                let re = ExactRepulsion::with_kernel(kernel)
                    .repulse(&y, dims, &mut exact)
                    .unwrap();
                let mut approx = vec![0.0f32; y.len()];
                let ra = FftRepulsion::new(GridSpec::Auto { h })
                    .with_kernel(kernel)
                    .repulse(&y, dims, &mut approx)
                    .unwrap();
                let e: Vec<f64> = exact.iter().map(|&v| v as f64).collect();
                let a: Vec<f64> = approx.iter().map(|&v| v as f64).collect();
                let (ef, ez) = (relative_error(&e, &a), (ra.z - re.z).abs() / re.z);
                assert!(
                    ef < 1e-3 && ez < 1e-4,
                    "dof {dof}, {dims}-D h={h}: force {ef:e}, Z {ez:e}"
                );
                // A different kernel: the Cauchy forces are not these.
                let mut cauchy = vec![0.0f32; y.len()];
                ExactRepulsion::new()
                    .repulse(&y, dims, &mut cauchy)
                    .unwrap();
                let c: Vec<f64> = cauchy.iter().map(|&v| v as f64).collect();
                assert!(relative_error(&e, &c) > 1e-2, "dof {dof}, {dims}-D");
            }
        }
    }

    /// Two points far apart in 1-D, 2-D and 3-D with each kernel (α = 0.5, 1, 2), and
    /// their exact Z, 2·G₁(d²): the far-pair tests' cases (CPU here, GPU in `fft::gpu`).
    pub(crate) fn far_pairs() -> impl Iterator<Item = (Kernel, usize, Vec<f32>, f64)> {
        [0.5, 1.0, 2.0].into_iter().flat_map(|dof| {
            let kernel = Kernel::new(dof).unwrap();
            (1..=3).map(move |dims| {
                let y: Vec<f32> = [[0.3f32, -1.7, 2.2], [12.05, 9.5, -8.45]]
                    .iter()
                    .flat_map(|p| p[..dims].to_vec())
                    .collect();
                let mut force = vec![0.0f32; y.len()];
                let z = ExactRepulsion::with_kernel(kernel)
                    .repulse(&y, dims, &mut force)
                    .unwrap()
                    .z;
                (kernel, dims, y, z)
            })
        })
    }

    /// Two points far apart, on a coarse grid: Z is their pair's 2·G₁(d²) alone, for every
    /// kernel, as G2G's Σ ψ holds each point's interpolated self term of the grid's kernel,
    /// which G2S takes out. (With the Cauchy kernel's self terms whatever the kernel, Z was
    /// 3–9 % low here for α = 0.5 and 10–120 times the pair's for α = 2.)
    #[test]
    fn far_pair_z_is_the_pair_alone() {
        for (kernel, dims, y, want) in far_pairs() {
            let mut force = vec![0.0f32; y.len()];
            let got = FftRepulsion::<f64>::with_precision(GridSpec::Auto { h: 1.0 })
                .with_kernel(kernel)
                .repulse(&y, dims, &mut force)
                .unwrap()
                .z;
            let at = format!("dof {}, {dims}-D", kernel.dof);
            assert!(
                (got - want).abs() < 1e-3 * want,
                "{at}: Z {got:e} against {want:e}"
            );
        }
    }

    /// A node budget with the near field on keeps the default spacing's accuracy on a
    /// spread-out layout (like a converged map) with a quarter of its nodes; without the
    /// near field the same capped grid errs several times as much.
    #[test]
    fn node_budget_with_the_near_field_keeps_the_error() {
        let y = clusters(3000, 2, 8, 60.0, 13);
        let spec = GridSpec::default_auto();
        let nodes_per_axis = |r: &mut FftRepulsion| {
            let out = r.repulse(&y, 2, &mut vec![0f32; y.len()]).unwrap();
            out.grid.unwrap()
        };
        let mut free = FftRepulsion::new(spec);
        let (e_free, _) = errors(&mut free, &y, 2);
        let nodes = nodes_per_axis(&mut free);
        let budget = nodes * nodes / 4;
        let mut held = FftRepulsion::new(spec)
            .with_near_field(true)
            .with_max_nodes(budget);
        let (e_held, ez_held) = errors(&mut held, &y, 2);
        let p = nodes_per_axis(&mut held);
        assert!(p * p <= budget, "{p}² nodes over a budget of {budget}");
        assert!(
            e_held < 1e-2 && e_held < 2.0 * e_free && ez_held < 5e-3,
            "budget: force {e_held:e}, Z {ez_held:e}; free grid: {e_free:e}"
        );
        let (e_bare, _) = errors(&mut FftRepulsion::new(spec).with_max_nodes(budget), &y, 2);
        assert!(e_bare > 3.0 * e_held, "{e_bare:e} without the near field");
    }

    #[test]
    fn error_falls_as_grid_grows() {
        let y = clusters(1500, 2, 5, 10.0, 11);
        let errs: Vec<f64> = [30, 60, 120]
            .iter()
            .map(|&p| errors(&mut FftRepulsion::new(GridSpec::Fixed(p)), &y, 2).0)
            .collect();
        assert!(
            errs[0] > 4.0 * errs[1] && errs[1] > 4.0 * errs[2],
            "{errs:?}"
        );
    }

    /// `--grid-error E`: a smaller E gives a finer grid on the same embedding, and the
    /// measured error stays under E (a spread-out layout, like a converged embedding).
    #[test]
    fn grid_error_picks_finer_grids_and_holds_the_error() {
        for (dims, n, spread, targets) in [
            (1, 3000, 200.0, [1e-2, 1e-3]),
            (2, 3000, 40.0, [1e-2, 1e-3]),
            (3, 1500, 15.0, [3e-2, 1e-2]),
        ] {
            let y = clusters(n, dims, 12, spread, 21 + dims as u64);
            let mut nodes = Vec::new();
            for e in targets {
                let spec = GridSpec::for_error(e, dims).unwrap();
                let mut rep = FftRepulsion::new(spec);
                let (ef, _) = errors(&mut rep, &y, dims);
                let mut f = vec![0.0f32; y.len()];
                nodes.push(rep.repulse(&y, dims, &mut f).unwrap().grid.unwrap());
                assert!(ef < e, "{dims}-D: E = {e:e}, measured {ef:e} ({spec:?})");
            }
            assert!(nodes[1] > nodes[0], "{dims}-D: {nodes:?}");
        }
        assert!(GridSpec::for_error(0.0, 2).is_err());
        assert!(GridSpec::for_error(1e-3, 4).is_err());
    }

    #[test]
    fn tiny_early_embedding() {
        let y: Vec<f32> = clusters(2000, 2, 4, 3.0, 5)
            .iter()
            .map(|v| v * 1e-4)
            .collect();
        let (ef, ez) = errors(&mut FftRepulsion::new(GridSpec::default_auto()), &y, 2);
        assert!(ef < 1e-3 && ez < 1e-6, "force {ef:e}, Z {ez:e}");
    }

    #[test]
    fn reuses_state_and_reports_grid() {
        let y = clusters(1000, 3, 3, 5.0, 9);
        let mut f = vec![0.0f32; y.len()];
        let mut rep = FftRepulsion::new(GridSpec::Fixed(24));
        let r1 = rep.repulse(&y, 3, &mut f).unwrap();
        let f1 = f.clone();
        let r2 = rep.repulse(&y, 3, &mut f).unwrap();
        // The same up to the order of rayon's parallel sums (which varies with the threads).
        assert_eq!((r1.grid, r2.grid), (Some(24), Some(24)));
        assert!(
            (r1.z - r2.z).abs() <= 1e-12 * r1.z,
            "Z {} vs {}",
            r1.z,
            r2.z
        );
        let scale = f1.iter().fold(0f32, |m, v| m.max(v.abs()));
        assert!(f
            .iter()
            .zip(&f1)
            .all(|(a, b)| (a - b).abs() <= 1e-5 * scale));
        let y2 = clusters(500, 1, 3, 5.0, 9);
        let mut f2 = vec![0.0f32; 500];
        assert!(
            rep.repulse(&y2, 1, &mut f2).is_ok(),
            "switching dims rebuilds"
        );
    }

    #[test]
    fn rejects_bad_shapes() {
        let y = vec![0.5f32; 12];
        let mut f = vec![0.0f32; 12];
        let mut rep = FftRepulsion::new(GridSpec::default_auto());
        for dims in [0, 4, 5] {
            assert!(rep.repulse(&y, dims, &mut f).is_err());
        }
        assert!(rep.repulse(&y[..11], 2, &mut f[..11]).is_err());
        assert!(rep.repulse(&y, 2, &mut f[..10]).is_err());
        assert!(rep.repulse(&y[..2], 2, &mut f[..2]).is_err());
        let mut nan = y.clone();
        nan[3] = f32::NAN;
        assert!(rep.repulse(&nan, 3, &mut f).is_err());
        assert!(FftRepulsion::new(GridSpec::Fixed(3))
            .repulse(&y, 2, &mut f)
            .is_err());
        assert!(FftRepulsion::new(GridSpec::Auto { h: -1.0 })
            .repulse(&y, 2, &mut f)
            .is_err());
    }
}
