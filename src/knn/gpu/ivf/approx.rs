//! The approximate kNN's steps in order, each timed into the report: the cells, the sweep,
//! the recall sample and the refinement.

use std::time::Instant;

use cudarc::driver::CudaSlice;

use super::cells::{assign, kmeans, split_rows, sweep_inputs};
use super::recall::{exact_candidates, RecallSample};
use super::stats::{ApproxSeconds, ApproxStats, CellSteps};
use super::sweep::{sweep_planned, SampleSearch};
use crate::gpu::kernels::ivf::IvfUnsort;
use crate::gpu::kernels::knn_fused::{MAX_DIM, QUERIES};
use crate::gpu::memory::htod_staged;
use crate::gpu::{Gpu, GpuError};
use crate::knn::gpu::fused;
use crate::knn::gpu::refine::refine;
use crate::knn::gpu::{check_params, Answer, Shape};
use crate::knn::ivf::{self as host, Cells, IvfParams, ProbePlanner};
use crate::knn::{Key, Neighbors};
use crate::progress::Progress;
use crate::{Error, Points, Result};

/// The approximate kNN of the points sorted by cell.
pub struct Approx {
    /// The cells: `cells.order[p]` is the input row at sorted position p.
    pub cells: Cells,
    /// The points in that order (host), for a caller that goes on in it.
    pub sorted_points: Points,
    /// n × k neighbour positions (in the sorted numbering), rows by sorted position.
    pub indices: CudaSlice<i32>,
    /// n × k keys (squared distances for the Euclidean key), ascending per row.
    pub distances: CudaSlice<f32>,
    pub stats: ApproxStats,
}

impl Approx {
    /// The neighbours in the input's numbering (row i: input point i), on the device.
    pub fn unsorted(&self, gpu: &Gpu) -> Result<(CudaSlice<i32>, CudaSlice<f32>)> {
        let n = self.cells.order.len();
        let k = self.indices.len() / n.max(1);
        let s = &gpu.stream;
        let order: Vec<i32> = self.cells.order.iter().map(|&i| i as i32).collect();
        let order = s.clone_htod(&order)?;
        let mut out_i = s.alloc_zeros::<i32>(n * k)?;
        let mut out_d = s.alloc_zeros::<f32>(n * k)?;
        IvfUnsort {
            sorted_i: &self.indices,
            sorted_d: &self.distances,
            order: &order,
            n,
            k,
            out_i: &mut out_i,
            out_d: &mut out_d,
        }
        .launch(gpu, s, gpu.config(n))?;
        Ok((out_i, out_d))
    }
}

/// The approximate kNN of `points` (host, input order) by `key` (made from `points`): see
/// the module doc. Progress (`"knn"`): one unit per sweep launch.
///
/// Long on purpose, as its host twin `approx_cpu`: the method's steps in order, each timed
/// into the report, sharing the device buffers one step leaves for the next.
pub fn approx_device(
    gpu: &Gpu,
    points: &Points,
    k: usize,
    key: Key,
    params: &IvfParams,
    progress: &dyn Progress,
) -> Result<Approx> {
    let (n, d) = (points.n, points.d);
    check_params(n, d, k)?;
    params.check(n, k)?;
    if d > MAX_DIM {
        return Err(Error::param(
            "knn",
            format!(
                "the approximate kNN takes at most {MAX_DIM} dimensions, the points have {d}: \
                 reduce them with --pca (default 50) or use --knn exact"
            ),
        ));
    }
    let lists = params.lists_for(n);
    let mut seconds = ApproxSeconds::default();
    let mut clock = Clock::start(gpu)?;

    // k-means on the sample, then every point to its cell, cells in a locality order. (The
    // points uploaded on a stream of their own beside the k-means slowed it by more than
    // the overlap saved: 0.37 s against 0.08–0.15 over two H200.)
    let centroids = kmeans(gpu, points, lists, params)?;
    seconds.kmeans = clock.lap()?;
    crate::trace::event(|| "knn: k-means done".into());
    let x = htod_staged(gpu, &points.data)?;
    crate::trace::event(|| "knn: points uploaded".into());
    let lists = centroids.len() / d;
    let centroids = host::order_cells(&centroids, d);
    let labels = assign(gpu, &x, n, d, &centroids)?;
    let mut steps = CellSteps {
        assign: clock.lap()?,
        ..CellSteps::default()
    };
    crate::trace::event(|| "knn: points assigned".into());
    // The host's order of the cells calls no driver (only the recall sample's search
    // beside it may): the other GPUs of a run over several start meanwhile, for the sweep,
    // and then NCCL's set-up for the optimisation.
    crate::gpu::comm::go_ahead();
    // The host sorts and orders the cells while the device finds the recall sample's
    // exact neighbours among the points as they came (a sweep of all of them, about 0.4 s
    // at 10M points on an H200, mostly off the path); in a first run, whose sweep kernel is still compiling,
    // after the sweep instead. Over several GPUs the last one searches, once it has joined
    // the sweep: GPU 0 is then loading NCCL's kernels, beside which the search took
    // 0.44–0.74 s on 4×H100, longer than the order.
    let shape = Shape::new(n, d, k, key);
    let mut sample = RecallSample::new(n, params.seed);
    let gpus = params.gpus.max(1);
    let (beside, cells, sorted_points, order_seconds) = std::thread::scope(|scope| {
        let exact = scope.spawn(|| -> Result<Option<Vec<Vec<u32>>>, GpuError> {
            if gpus > 1 || !fused::sweep_ready(gpu, d) {
                return Ok(None);
            }
            gpu.device.context.bind_to_thread()?;
            let split = split_rows(gpu, &x, shape)?;
            let queries: Vec<i32> = sample.rows.iter().map(|&r| r as i32).collect();
            exact_candidates(gpu, &split, &queries, None, shape).map(Some)
        });
        let t = Instant::now();
        let mut cells = Cells::sort(&labels, lists);
        let sorted_points = cells.order_within(points, QUERIES);
        let order_seconds = t.elapsed().as_secs_f64();
        let beside = exact
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (beside, cells, sorted_points, order_seconds)
    });
    drop(labels);
    let beside = beside?;
    sample.place(&cells);
    steps.order = order_seconds;
    crate::trace::event(|| "knn: cells ordered".into());
    // The wait for the sample beyond the order is the recall's.
    seconds.recall = (clock.lap()? - order_seconds).max(0.0);

    // The probe plan's shared part (the cells' radii); each take's blocks are planned on
    // this thread while the GPUs sweep the takes planned before ([`sweep_planned`]).
    let probing = params.probing(k);
    let planner = ProbePlanner::new(&cells, &sorted_points, &centroids, key, probing, QUERIES);
    steps.plan = clock.lap()?;

    // The sorted points on the device, the key's rows split for the sweep.
    let (sorted, split) = sweep_inputs(gpu, &x, &cells.order, shape)?;
    drop(x);
    steps.upload = clock.lap()?;
    seconds.cells = steps.assign + steps.order + steps.plan + steps.upload;
    crate::trace::event(|| "knn: sweep begins".into());
    seconds.cell_steps = steps;

    let mut answer = Answer::poisoned(gpu, shape)?;
    let inputs = (&sorted, &split);
    let search = (gpus > 1).then_some(SampleSearch {
        positions: &sample.positions,
        names: &cells.order,
    });
    let outputs = (&mut answer, search);
    let (candidates, searched) =
        sweep_planned(gpu, gpus, inputs, &planner, shape, outputs, progress)?;
    drop(planner);
    seconds.sweep = clock.lap()?;
    crate::trace::event(|| "knn: swept".into());

    sample.candidates = match beside.or(searched) {
        Some(candidates) => candidates,
        None => {
            let order = &cells.order;
            exact_candidates(gpu, &split, &sample.positions, Some(order), shape)?
        }
    };
    drop(split);
    let recall_sweep = sample.recall(gpu, points, &cells, &answer.indices, shape)?;
    seconds.recall += clock.lap()?;

    let fan = params.fan.min(k);
    let rounds = params.rounds_after(recall_sweep);
    let Answer {
        indices,
        mut distances,
    } = answer;
    // The rounds' rows split over up to REFINE_GPUS of the sweep's GPUs (the same graph).
    let gpus = (1..params.gpus.clamp(1, REFINE_GPUS))
        .map(Gpu::device)
        .collect::<Result<Vec<_>>>()?;
    let indices = refine(
        &[&[gpu][..], &gpus].concat(),
        &sorted,
        (n, d, k),
        key,
        indices,
        &mut distances,
        rounds,
        fan,
        progress,
    )?;
    seconds.refine = clock.lap()?;
    crate::trace::event(|| format!("knn: {rounds} refinement rounds done"));
    let recall = if rounds > 0 {
        sample.recall(gpu, points, &cells, &indices, shape)?
    } else {
        recall_sweep
    };
    seconds.recall += clock.lap()?;
    Ok(Approx {
        cells,
        sorted_points,
        indices,
        distances,
        stats: ApproxStats {
            recall_sample: recall,
            recall_sweep,
            sample: sample.rows.len(),
            lists,
            probes: params.probes,
            spread: probing.spread,
            max_probes: probing.max_probes,
            candidates,
            refine: rounds,
            fan,
            seconds,
        },
    })
}

/// The most GPUs the refinement's rows are split over: each round's graph goes to every
/// one of them (3.6 GB at 10M points, k = 90), which beyond two costs more than the rows
/// save (10M points on 4×H200, `benches/RESULTS.md`: 1.23 s on one GPU, 1.03 s on two,
/// 1.14 s on three, 1.34 s on four).
const REFINE_GPUS: usize = 2;

/// Wall seconds between points where the device has caught up with the host.
struct Clock<'a> {
    gpu: &'a Gpu,
    last: Instant,
}

impl<'a> Clock<'a> {
    fn start(gpu: &'a Gpu) -> Result<Self, GpuError> {
        gpu.stream.synchronize()?;
        Ok(Clock {
            gpu,
            last: Instant::now(),
        })
    }

    /// Seconds since the last lap, once the queued work is done.
    fn lap(&mut self) -> Result<f64, GpuError> {
        self.gpu.stream.synchronize()?;
        let now = Instant::now();
        let t = (now - self.last).as_secs_f64();
        self.last = now;
        Ok(t)
    }
}

/// [`approx_device`] with the answer in the input's numbering, on the host.
pub fn approx_gpu(
    points: &Points,
    k: usize,
    key: Key,
    params: &IvfParams,
    progress: &dyn Progress,
) -> Result<(Neighbors, ApproxStats)> {
    let gpu = Gpu::get()?;
    let approx = approx_device(gpu, points, k, key, params, progress)?;
    let (indices, distances) = approx.unsorted(gpu)?;
    let s = &gpu.stream;
    let nb = Neighbors {
        n: points.n,
        k,
        indices: s
            .clone_dtoh(&indices)?
            .into_iter()
            .map(|j| j as u32)
            .collect(),
        distances: s.clone_dtoh(&distances)?,
    };
    Ok((nb, approx.stats))
}
