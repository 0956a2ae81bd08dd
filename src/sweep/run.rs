//! The sweep's driver: data, then per n the shared stages (kNN, P, initialisation) once and
//! the optimisations with their [`Recorder`]s.

use std::time::Instant;

use rand::rngs::StdRng;
use rand::SeedableRng;

use super::config::{DataSource, SweepConfig, Trajectory};
use super::probe::cpu::ProbeCpu;
use super::probe::gpu::ProbeGpu;
use super::probe::{Plan, Recorder};
use super::{grid_label, SweepRow};
use crate::backend::cpu::CpuGradient;
use crate::backend::gpu::optimize_device_observed;
use crate::backend::BackendKind;
use crate::embed::{self, EmbedParams};
use crate::gen::gaussian_mixture;
use crate::gpu::Gpu;
use crate::optim::{optimize_observed, OptimParams};
use crate::progress::{Progress, Silent};
use crate::report::StageSeconds;
use crate::repulse::{FftRepulsion, FftRepulsionGpu, GridSpec, RepulseGpu};
use crate::sparse::{Csb, P};
use crate::{io, Error, Points, Result};

/// Runs the sweep `cfg` and returns its measurements, reporting each sample to `progress`
/// (`begin` once with the number of samples, a `status` line per sample and per stage).
pub fn run_sweep(cfg: &SweepConfig, progress: &dyn Progress) -> Result<Vec<SweepRow>> {
    let backend = cfg.backend.resolve()?;
    if !matches!(backend.kind, BackendKind::Gpu | BackendKind::Cpu) {
        return Err(Error::param(
            "backend",
            format!("the sweep runs on cpu or gpu, not {}", backend.kind.name()),
        ));
    }
    let t = Instant::now();
    let points = match &cfg.data {
        DataSource::Gen(g) => gaussian_mixture(g)?.0,
        DataSource::File(path) => io::read_points(path)?,
    };
    let largest = *cfg.sizes.last().expect("validated: not empty");
    if largest > points.n {
        return Err(Error::param(
            "data.n",
            format!("has {largest}, more than the data's {} points", points.n),
        ));
    }
    progress.status(&format!(
        "data: {} × {} in {:.1} s; backend {} ({})",
        points.n,
        points.d,
        t.elapsed().as_secs_f64(),
        backend.kind.name(),
        backend.note
    ));
    let runs: Vec<(GridSpec, Vec<GridSpec>)> = match cfg.trajectory {
        Trajectory::PerGrid => cfg.grids.iter().map(|&g| (g, vec![g])).collect(),
        Trajectory::Shared { reference } => vec![(reference, cfg.grids.clone())],
    };
    let samples = cfg.sample_iterations();
    progress.begin(
        "sweep",
        (cfg.sizes.len() * runs.len() * samples.len()) as u64,
    );
    let mut rows = Vec::new();
    for &n in &cfg.sizes {
        let t = Instant::now();
        let sub = subsample(&points, n, cfg.seed);
        let mut params = EmbedParams {
            dims: cfg.dims,
            perplexity: cfg.perplexity,
            backend: backend.kind,
            seed: cfg.seed,
            ..Default::default()
        };
        let mut seconds = StageSeconds::default();
        let mut prepared =
            embed::prepare_points(sub, &params, backend.kind, &mut seconds, &Silent)?;
        let y0 = embed::initialise(&mut prepared, &mut params, n)?;
        let p = match backend.kind {
            BackendKind::Gpu => prepared.p.into_hyb(Gpu::get()?)?,
            _ => {
                let beta = Csb::default_beta(n, rayon::current_num_threads());
                prepared.p.into_csb(beta)?
            }
        };
        progress.status(&format!(
            "n {n}: kNN {:.1} s, affinities {:.1} s, initialised in {:.1} s",
            seconds.knn,
            seconds.affinities,
            t.elapsed().as_secs_f64()
        ));
        let optim = OptimParams {
            iters: cfg.iters,
            early_exaggeration_iters: cfg.exaggeration_iters,
            learning_rate: OptimParams::auto_learning_rate(
                n,
                OptimParams::default().early_exaggeration,
            ),
            kl_every: 0,
            ..Default::default()
        };
        let targets = targets(n, cfg.targets, cfg.seed);
        for (trajectory, grids) in &runs {
            let t = Instant::now();
            let plan = Plan {
                dims: cfg.dims,
                trajectory: *trajectory,
                grids,
                near_field: cfg.near_field,
                targets: &targets,
                samples: &samples,
                repeats: cfg.repeats,
                progress,
            };
            let measured = optimise_observed(&p, y0.clone(), backend.kind, &optim, plan)?;
            progress.status(&format!(
                "n {n} · run {}: {} iterations and {} measurements in {:.1} s",
                grid_label(*trajectory),
                cfg.iters,
                measured.len(),
                t.elapsed().as_secs_f64()
            ));
            rows.extend(measured);
        }
    }
    progress.end();
    Ok(rows)
}

/// One optimisation of P from `y` on `backend` with the grid of `plan.trajectory`, whose
/// Y `plan` measures at its samples: the rows it recorded.
fn optimise_observed(
    p: &P,
    mut y: Vec<f32>,
    backend: BackendKind,
    optim: &OptimParams,
    plan: Plan,
) -> Result<Vec<SweepRow>> {
    let (dims, trajectory, grids, near) = (plan.dims, plan.trajectory, plan.grids, plan.near_field);
    Ok(match backend {
        BackendKind::Gpu => {
            let gpu = Gpu::get()?;
            let mut y_dev = gpu.stream.clone_htod(&y)?;
            let mut repulse: Box<dyn RepulseGpu> =
                Box::new(FftRepulsionGpu::new(gpu, trajectory)?.with_near_field(near));
            let probe = ProbeGpu::new(gpu, p.n(), dims, (grids, near))?;
            let mut rec = Recorder::new(probe, plan);
            let observer = Some(&mut rec as _);
            optimize_device_observed(
                gpu,
                p,
                crate::kernel::Kernel::CAUCHY,
                &mut repulse,
                &mut y_dev,
                dims,
                optim,
                &Silent,
                observer,
            )?;
            rec.rows
        }
        _ => {
            let repulse = Box::new(FftRepulsion::new(trajectory).with_near_field(near));
            let mut gradient = CpuGradient::new(p, repulse)?;
            let mut rec = Recorder::new(ProbeCpu::new(dims, (grids, near)), plan);
            let observer = Some(&mut rec as _);
            optimize_observed(&mut gradient, &mut y, dims, optim, &Silent, observer)?;
            rec.rows
        }
    })
}

/// `n` of the points, chosen at random without replacement (seeded) and kept in their
/// order; all of them when `n` is their number.
fn subsample(points: &Points, n: usize, seed: u64) -> Points {
    if n >= points.n {
        return points.clone();
    }
    let mut picked =
        rand::seq::index::sample(&mut StdRng::seed_from_u64(seed), points.n, n).into_vec();
    picked.sort_unstable();
    let mut data = Vec::with_capacity(n * points.d);
    for &i in &picked {
        data.extend_from_slice(points.row(i));
    }
    Points::new(n, points.d, data)
}

/// The fixed random targets of the exact reference: `count` of the `n` points (all when
/// `count ≥ n`), seeded, ascending.
fn targets(n: usize, count: usize, seed: u64) -> Vec<usize> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x7a46_e75e);
    let mut t = rand::seq::index::sample(&mut rng, n, count.min(n)).into_vec();
    t.sort_unstable();
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsamples_and_targets_are_seeded_and_distinct() {
        let points = Points::new(10, 2, (0..20).map(|v| v as f32).collect());
        let a = subsample(&points, 4, 1);
        assert_eq!(a, subsample(&points, 4, 1));
        assert_eq!(a.n, 4);
        let firsts: Vec<f32> = (0..4).map(|i| a.row(i)[0]).collect();
        assert!(firsts.windows(2).all(|w| w[0] < w[1]), "{firsts:?}");
        assert_eq!(subsample(&points, 10, 1), points);
        let t = targets(100, 30, 2);
        assert_eq!(t.len(), 30);
        assert!(t.windows(2).all(|w| w[0] < w[1]) && t[29] < 100);
        assert_eq!(targets(5, 30, 2), vec![0, 1, 2, 3, 4]);
    }
}
