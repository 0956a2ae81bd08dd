//! The approximate all-points kNN on the GPU (`--knn approx`): IVF cells by k-means, then
//! the exact kNN's tensor-core sweep (`knn::gpu::fused`) over each query block's probe cells
//! only. The host side (sample, centroid updates, sort, probe lists, runs) is
//! [`crate::knn::ivf`]; why this method, and its numbers, are in its doc and in the README.
//!
//! Steps: k-means on a seeded sample (assignment on the device, [`IvfAssign`]; updates on
//! the host); every point assigned to its cell; the points sorted by cell, and within a
//! cell in a locality order; one sweep whose block b covers the cells nearest its queries
//! (planned on the host a share of the blocks at a time while the device sweeps the shares
//! planned before); the exact finish (`knn_finish`) in double; where the recall sample's
//! recall is below [`IvfParams::refine_below`], rounds of refinement by neighbours of
//! neighbours ([`super::refine`]). Memory: the points (input and sorted copy, FP16 split),
//! the answer (n × k, and one more index buffer for the refinement), and candidate lists
//! for as many query blocks at a time as the free memory holds; never n × n nor n × lists.
//!
//! Every run measures its recall: the exact kNN of [`RECALL_SAMPLE`] rows drawn at random
//! (a sweep of all references for them, on the device while the host orders the cells, or
//! over several GPUs on the last one as it joins the sweep), against the approximate rows
//! ([`crate::knn::ivf::sample_recall`]).
//!
//! Everything but the cells ranks by the search's [`Key`], as the CPU twin
//! ([`crate::knn::ivf_cpu`]) does: the cells probed (nearest to each query block by the key,
//! [`Cells::block_probes`]), the sweep (the key's rows and terms, `super::key_rows`), the
//! finish, the refinement and the recall sample. The k-means cells stay Euclidean: they
//! only group the points, and probing by the key is what finds each query's largest inner
//! products.

use cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT;
use cudarc::driver::{CudaEvent, CudaSlice, LaunchConfig};
use rand::{rngs::StdRng, SeedableRng};
use rayon::prelude::*;

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use super::fused::{self, Lists, Plan, Split};
use super::refine::refine;
use super::{check_params, fill_lists, key_rows, Answer, KeyRows, Shape, SLACK};
use crate::gpu::kernels::ivf::{IvfAssign, IvfGather, IvfRows, IvfUnsort, THREADS};
use crate::gpu::kernels::knn_fused::{CHUNK, MAX_DIM, QUERIES};
use crate::gpu::memory::{alloc_uninit, copy_peer, copy_peer_after, htod_staged};
use crate::gpu::{Gpu, GpuError};
use crate::knn::ivf::{self as host, Cells, IvfParams, ProbePlanner};
use crate::knn::Key;
use crate::knn::Neighbors;
use crate::progress::Progress;
use crate::{Error, Points, Result};

/// Points in the recall sample.
pub const RECALL_SAMPLE: usize = 10_000;

/// What an approximate kNN run measured, for the report.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ApproxStats {
    /// The recall measured on the sample ([`RECALL_SAMPLE`] points or all): of the final
    /// graph.
    pub recall_sample: f64,
    /// The same sample's recall after the sweep of the cells, before the refinement.
    pub recall_sweep: f64,
    /// Points in the recall sample.
    pub sample: usize,
    /// k-means cells.
    pub lists: usize,
    /// Nearest cells probed per query (its own included; more where cells are small).
    pub probes: usize,
    /// The spread rule's ε and cap ([`crate::knn::ivf::Probing`]; 0: off).
    pub spread: f64,
    pub max_probes: usize,
    /// References swept per query, on average.
    pub candidates: f64,
    /// Refinement rounds run (none where the sweep's sample recall reached
    /// [`IvfParams::refine_below`]) and their fan (`crate::knn::gpu::refine`).
    pub refine: usize,
    pub fan: usize,
    /// Seconds per step.
    pub seconds: ApproxSeconds,
}

/// Seconds per step of the approximate kNN.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct ApproxSeconds {
    /// k-means on the sample.
    pub kmeans: f64,
    /// Assignment of every point, the sort by cell, the probe plan and the split points
    /// (the sum of [`ApproxSeconds::cell_steps`]).
    pub cells: f64,
    /// The cells stage's steps.
    pub cell_steps: CellSteps,
    /// The sweep of each block's probe cells, with the exact finish (the host planning
    /// the blocks beside it, a share at a time).
    pub sweep: f64,
    /// The refinement rounds.
    pub refine: f64,
    /// What the recall sample adds: the wait for its exact neighbours beyond the cells'
    /// order (which they run beside; over several GPUs they are searched in the sweep) and
    /// both recalls.
    pub recall: f64,
}

/// Seconds of the cells stage's steps: the largest part of the kNN that runs on one GPU
/// and the host in a run over several.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct CellSteps {
    /// Every point to its nearest centroid (on the GPU: the points' upload, the assignment
    /// and the labels' download).
    pub assign: f64,
    /// The sort by cell and the PCA-tree order within each cell (host).
    pub order: f64,
    /// The probe plan's shared part (each cell's mean squared radius, host); the blocks'
    /// probe cells and runs of reference chunks are planned during the sweep.
    pub plan: f64,
    /// The sorted points to the device and their split for the sweep (0 on the host).
    pub upload: f64,
}

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

/// The cells' centroids (`lists` × d, or fewer when the sample has fewer distinct points):
/// k-means on a seeded sample of `points`, each iteration's assignment on `gpu` and its
/// update on the host.
fn kmeans(gpu: &Gpu, points: &Points, lists: usize, params: &IvfParams) -> Result<Vec<f32>> {
    let d = points.d;
    let rows = host::kmeans_sample(points.n, lists, params.sample_per_list, params.seed);
    let sample_x = points.gather(&rows).data;
    let sample_dev = gpu.stream.clone_htod(&sample_x)?;
    let mut centroids = host::initial_centroids(&sample_x, d, lists, params.seed);
    let mut rng = StdRng::seed_from_u64(params.seed);
    for _ in 0..params.kmeans_iters {
        let labels = assign(gpu, &sample_dev, rows.len(), d, &centroids)?;
        host::update_centroids(&sample_x, d, &labels, &mut centroids, &mut rng);
    }
    Ok(centroids)
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

/// Nearest centroid of each of the n points `x` (device) among `centroids` (host).
fn assign(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    n: usize,
    d: usize,
    centroids: &[f32],
) -> Result<Vec<u32>, GpuError> {
    let s = &gpu.stream;
    let lists = centroids.len() / d;
    let c = s.clone_htod(centroids)?;
    let mut labels = s.alloc_zeros::<i32>(n)?;
    IvfAssign {
        x,
        n,
        d,
        centroids: &c,
        lists,
        labels: &mut labels,
    }
    .launch(
        gpu,
        s,
        LaunchConfig {
            grid_dim: (n.div_ceil(THREADS) as u32, 1, 1),
            block_dim: (THREADS as u32, 1, 1),
            shared_mem_bytes: 0,
        },
    )?;
    Ok(s.clone_dtoh(&labels)?
        .into_iter()
        .map(|l| l as u32)
        .collect())
}

/// The points sorted by cell on `gpu`, gathered there from `x` (the points in input
/// order, uploaded for the k-means assignment) by `order` (sorted position → input row),
/// and the key's rows split for the sweep. (Uploading the host's sorted copy instead took
/// 0.1 s at 1.3M points, a staged copy of n × d floats.)
fn sweep_inputs(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    order: &[u32],
    shape: Shape,
) -> Result<(CudaSlice<f32>, Split), GpuError> {
    let s = &gpu.stream;
    let (n, d) = (shape.n, shape.d);
    let order: Vec<i32> = order.iter().map(|&i| i as i32).collect();
    let order = s.clone_htod(&order)?;
    let mut sorted = alloc_uninit::<f32>(gpu, n * d)?;
    IvfGather {
        x,
        n,
        d,
        order: &order,
        out: &mut sorted,
    }
    .launch(gpu, s, gpu.config(n * d))?;
    drop(order);
    let split = split_rows(gpu, &sorted, shape)?;
    Ok((sorted, split))
}

/// The key's rows of the sorted points `sorted` (on `gpu`), split for the sweep.
fn split_rows(gpu: &Gpu, sorted: &CudaSlice<f32>, shape: Shape) -> Result<Split, GpuError> {
    let (n, d) = (shape.n, shape.d);
    let KeyRows { rows, terms } = key_rows(gpu, sorted, n, d, shape.key, n)?;
    Split::new(gpu, &rows, &terms, n, d, &[])
}

/// Query blocks a GPU takes from the shared queue at a time (262,144 queries), and the
/// blocks the host plans at a time: one launch of the sweep ([`fused::BLOCKS_PER_LAUNCH`]),
/// so that a take adds no launch (takes of 1024 blocks, two launches' tails where one
/// launch had one, took the 10M mixture's sweep on one H200 from 13.6 to 14.0 s); at 10M
/// points 39 takes, the first planned in about 10 ms.
const TAKE: usize = fused::BLOCKS_PER_LAUNCH;

/// The plan's blocks handed out a take at a time, in order, to whichever GPU asks next:
/// takes of `take` blocks, but over several GPUs the last `gpus` takes' worth shrinks
/// (guided self-scheduling: each a 2·`gpus`-th of what is left, at least a quarter take),
/// so that the GPUs end together. (A take of 2048 blocks is 0.35 s of the 10M mixture's
/// sweep on one H200: with whole takes to the end, one GPU of two swept up to that long
/// alone.)
pub(super) struct BlockQueue {
    next: AtomicUsize,
    /// The takes' first blocks, and the number of blocks.
    bounds: Vec<usize>,
}

impl BlockQueue {
    pub(super) fn new(blocks: usize, take: usize, gpus: usize) -> Self {
        let take = take.max(1);
        let (tail, least) = match gpus {
            0 | 1 => (0, take),
            _ => (gpus * take, (take / 4).max(1)),
        };
        let mut bounds = vec![0];
        let mut at = 0;
        while at < blocks {
            let left = blocks - at;
            let size = match left > tail {
                true => take,
                false => left.div_ceil(2 * gpus).clamp(least, take),
            };
            at += size.min(left);
            bounds.push(at);
        }
        BlockQueue {
            next: AtomicUsize::new(0),
            bounds,
        }
    }

    /// The next take to sweep, its number and blocks, or `None` once all are taken.
    pub(super) fn take(&self) -> Option<(usize, Range<usize>)> {
        let t = self.next.fetch_add(1, Ordering::Relaxed);
        (t < self.takes()).then(|| (t, self.blocks(t)))
    }

    /// How many takes there are in all.
    fn takes(&self) -> usize {
        self.bounds.len() - 1
    }

    /// The blocks of take `t`.
    fn blocks(&self, t: usize) -> Range<usize> {
        self.bounds[t]..self.bounds[t + 1]
    }
}

/// One take's share of the probe plan, as [`Plan::upload`] takes it: its blocks' query
/// rows ([`QUERIES`] each, −1 past the points), their runs of reference chunks and each
/// block's first run, the blocks numbered from the take's first.
struct TakePlan {
    first: usize,
    qrows: Vec<i32>,
    runs: Vec<i32>,
    run_off: Vec<i32>,
}

impl TakePlan {
    /// The plan of the blocks `blocks` of the `n` sorted points (on all cores).
    fn make(planner: &ProbePlanner, cells: &Cells, blocks: Range<usize>, n: usize) -> TakePlan {
        let per_block: Vec<Vec<(usize, usize)>> = blocks
            .clone()
            .into_par_iter()
            .map(|b| cells.runs_of(b * QUERIES, &planner.probes(b), CHUNK))
            .collect();
        let (runs, run_off) = host::flatten_runs(&per_block);
        let qrows = fused::query_rows(blocks.start * QUERIES..blocks.end * QUERIES, n);
        TakePlan {
            first: blocks.start,
            qrows,
            runs,
            run_off,
        }
    }

    /// Reference chunks the take's blocks sweep, in all.
    fn chunks(&self) -> u64 {
        self.runs.chunks_exact(2).map(|r| r[1] as u64).sum()
    }
}

/// The other GPUs whose set-up has begun when the sweep begins, until each has its copy of
/// the sorted points ([`Arrival`]): GPU 0 queues its first take only then; their split rows
/// and answers follow beside it (0.15–0.19 s on 4×H100, which GPU 0 waited for before). A
/// GPU's copy (or the opening of peer access before it) waits for a moment when GPU 0 has
/// no takes queued, though it is ordered only after an event recorded before them: one
/// that joined after GPU 0 had queued takes had its copy only once they ended (10M
/// mixture: GPU 1 began 0.7–1.7 s after GPU 0 in 14 of 23 runs on 2×H100, busy 6.0 s of
/// the sweep against GPU 0's 7.4; on 2×H200 0.7 s after in 3 of 4). Joined first, the GPUs
/// were busy 6.81–6.89 s of a 6.94–7.01 s sweep against 7.06–7.31 (2×H200), GPU 0 waiting
/// 66–101 ms for them. The GPUs still starting are waited for too: a run over several
/// starts them beside the cells' order, and on 4×H100 and 4×H200 they were ready 26–77 ms
/// after the sweep began, then joined 0.7–1.9 s into it in 12 of 29 runs (on 4×H200, none
/// of four runs against one of four, GPU 0 waiting 0.12–0.14 s). Where GPU 0 alone would
/// sweep everything before they are up (small inputs), the sweep's end waited for them
/// anyway (it joins every GPU's thread): the wait then costs only their share of the takes.
struct Joining {
    left: Mutex<usize>,
    arrived: Condvar,
}

impl Joining {
    fn new(count: usize) -> Self {
        Joining {
            left: Mutex::new(count),
            arrived: Condvar::new(),
        }
    }

    /// Waits until every GPU counted has arrived.
    fn wait(&self) {
        let left = self.left.lock().unwrap_or_else(|e| e.into_inner());
        drop(
            self.arrived
                .wait_while(left, |left| *left > 0)
                .unwrap_or_else(|e| e.into_inner()),
        );
    }
}

/// A GPU's arrival at [`Joining`] (none for a GPU not counted there), when dropped: a GPU
/// that fails before it joins arrives too, and GPU 0 does not wait for it.
struct Arrival<'a>(Option<&'a Joining>);

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        if let Some(joining) = self.0.take() {
            let mut left = joining.left.lock().unwrap_or_else(|e| e.into_inner());
            *left = left.saturating_sub(1);
            joining.arrived.notify_all();
        }
    }
}

/// The takes' plans as the host makes them, in order, for the GPUs' threads to wait on.
struct PlanFeed {
    plans: Mutex<Vec<Option<TakePlan>>>,
    made: Condvar,
    /// Set when the host stops making plans (done, failed or a GPU failed): a GPU waiting
    /// for a plan never made gets `None`.
    ended: AtomicBool,
}

impl PlanFeed {
    fn new() -> Self {
        PlanFeed {
            plans: Mutex::new(Vec::new()),
            made: Condvar::new(),
            ended: AtomicBool::new(false),
        }
    }

    fn push(&self, plan: TakePlan) {
        self.plans
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Some(plan));
        self.made.notify_all();
    }

    fn end(&self) {
        self.ended.store(true, Ordering::Release);
        self.made.notify_all();
    }

    /// Take t's plan, once made (each take goes to one GPU, which takes it out); `None`
    /// if the host stopped before making it.
    fn wait(&self, t: usize) -> Option<TakePlan> {
        let mut plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(plan) = plans.get_mut(t) {
                return plan.take();
            }
            if self.ended.load(Ordering::Acquire) {
                return None;
            }
            plans = self.made.wait(plans).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Ends the feed however the host's planning loop leaves.
struct EndFeed<'a>(&'a PlanFeed);

impl Drop for EndFeed<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// The sweep of every query block over its probe cells on `gpus` GPUs, while this thread
/// plans the blocks [`TAKE`] at a time ([`TakePlan::make`], on all cores) and feeds them to
/// the GPUs' threads, which take blocks from one queue ([`BlockQueue`], its last takes
/// smaller over several GPUs) in the order they are planned; the planning (0.4–0.5 s at 10M
/// points on 32 cores, all of it before the sweep began) costs the sweep only its first
/// take. GPU 0 sweeps into `answer`; with several GPUs each other one joins when it is
/// ready, copying the sorted points from GPU 0, GPU to GPU; they sweep into answers of
/// their own and GPU 0 copies their rows into `answer` at the end. A block's lists are the
/// same whichever GPU sweeps it. The sweep is most of the search at scale (13.6 s of 15.2 s
/// at 10M points on one H200); the cells stay on GPU 0, and the refinement splits its rows
/// apart ([`super::refine`]). (Contiguous runs of equal chunk counts, one per GPU, split the
/// 10M mixture's sweep 1.71× on two GPUs: the blocks of its large clusters cost more per
/// chunk. Through the host, the points' uploads and the answers' round trip took 2.8 s of
/// the four-GPU sweep's 6.3 s at 10M points.) The last GPU makes `search` once it has
/// joined, before its first take (it then takes fewer). Returns the references swept per
/// query, on average, and the search's candidates (`None` without a search or a GPU beyond
/// the first).
fn sweep_planned(
    gpu: &Gpu,
    gpus: usize,
    (sorted, split): (&CudaSlice<f32>, &Split),
    planner: &ProbePlanner,
    shape: Shape,
    (answer, search): (&mut Answer, Option<SampleSearch<'_>>),
    progress: &dyn Progress,
) -> Result<(f64, Searched)> {
    let blocks = planner.blocks();
    let queue = BlockQueue::new(blocks, TAKE, gpus);
    let rows = |b: &Range<usize>| (b.start * QUERIES).min(shape.n)..(b.end * QUERIES).min(shape.n);
    // The sorted points as they are now, for the other GPUs to copy whenever they join.
    let ready = gpu.stream.record_event(None)?;
    let feed = PlanFeed::new();
    let begun: Vec<bool> = (0..gpus).map(|r| r > 0 && Gpu::begun(r)).collect();
    let joining = Joining::new(begun.iter().filter(|&&s| s).count());
    progress.begin("knn", queue.takes() as u64);
    let (queue, feed, cells, ready) = (&queue, &feed, planner.cells(), &ready);
    let (begun, joining) = (&begun, &joining);
    let own_answer = &mut *answer;
    let result = std::thread::scope(|scope| {
        let own = scope.spawn(move || -> Result<()> {
            let answer = own_answer;
            gpu.device.context.bind_to_thread()?;
            joining.wait();
            crate::trace::event(|| "knn: GPU 0 sweeps, the GPUs started have joined".into());
            let inputs = (sorted, split);
            let swept = sweep_from_queue(gpu, inputs, shape, answer, queue, feed, progress);
            if swept.is_err() {
                feed.end();
            }
            swept.map(drop)
        });
        // Each other GPU joins once it has started (a run over several starts them beside
        // the cells' order) and copied the sorted points, GPU to GPU.
        let others: Vec<_> = (1..gpus)
            .map(|r| {
                let search = search.filter(|_| r + 1 == gpus);
                scope.spawn(
                    move || -> Result<(&'static Gpu, Answer, Vec<Range<usize>>, Searched)> {
                        let run = || -> Result<_> {
                            let arrival = Arrival(begun[r].then_some(joining));
                            let other = Gpu::device(r)?;
                            other.device.context.bind_to_thread()?;
                            crate::trace::event(|| {
                                format!("knn: GPU {r} copies the sorted points")
                            });
                            let mut copy = alloc_uninit::<f32>(other, sorted.len())?;
                            let from = (gpu, ready);
                            copy_peer_after(
                                other,
                                &mut copy.slice_mut(..),
                                from,
                                &sorted.slice(..),
                            )?;
                            let sorted = copy;
                            crate::trace::event(|| format!("knn: GPU {r} has the sorted points"));
                            // Nothing more of this GPU's waits on GPU 0's work.
                            drop(arrival);
                            let split = split_rows(other, &sorted, shape)?;
                            let mut part = Answer::poisoned(other, shape)?;
                            // The host's steps of the join, against the device's end of the
                            // GPU's first take (see `Joining` for what they waited on).
                            crate::trace::event(|| format!("knn: GPU {r} joins the sweep"));
                            let searched = match search {
                                Some(s) => {
                                    let (queries, names) = (s.positions, Some(s.names));
                                    let found =
                                        exact_candidates(other, &split, queries, names, shape)?;
                                    crate::trace::event(|| {
                                        format!("knn: GPU {r} searched the recall sample")
                                    });
                                    Some(found)
                                }
                                None => None,
                            };
                            let inputs = (&sorted, &split);
                            let taken = sweep_from_queue(
                                other, inputs, shape, &mut part, queue, feed, progress,
                            )?;
                            other.stream.synchronize()?;
                            Ok((other, part, taken, searched))
                        };
                        let swept = run();
                        if swept.is_err() {
                            feed.end();
                        }
                        swept
                    },
                )
            })
            .collect();
        // This thread plans the takes in order while the GPUs sweep.
        let mut chunks = 0u64;
        {
            let _end = EndFeed(feed);
            for t in 0..queue.takes() {
                if feed.ended.load(Ordering::Acquire) {
                    break;
                }
                let plan = TakePlan::make(planner, cells, queue.blocks(t), shape.n);
                chunks += plan.chunks();
                feed.push(plan);
            }
        }
        let mut first_error = joined(own).err();
        let mut parts = Vec::new();
        for h in others {
            match joined(h) {
                Ok(part) => parts.push(part),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        Ok((chunks, parts))
    });
    progress.end();
    let (chunks, parts) = result?;
    gpu.device.context.bind_to_thread()?;
    let mut found = None;
    for (other, part, taken, searched) in parts {
        found = found.or(searched);
        for blocks in &taken {
            let q = rows(blocks);
            let at = q.start * shape.k..q.end * shape.k;
            let (dst, src) = (&mut answer.indices, &part.indices);
            copy_peer(
                gpu,
                &mut dst.slice_mut(at.clone()),
                other,
                &src.slice(at.clone()),
            )?;
            let (dst, src) = (&mut answer.distances, &part.distances);
            copy_peer(gpu, &mut dst.slice_mut(at.clone()), other, &src.slice(at))?;
        }
    }
    Ok((chunks as f64 * CHUNK as f64 / blocks.max(1) as f64, found))
}

/// The recall sample's exact search for [`sweep_planned`]'s last GPU: the sample's rows by
/// sorted position, and the sorted points' input rows.
#[derive(Clone, Copy)]
struct SampleSearch<'a> {
    positions: &'a [i32],
    names: &'a [u32],
}

/// A [`SampleSearch`]'s candidates, from the GPU that made it.
type Searched = Option<Vec<Vec<u32>>>;

/// What a GPU's thread returned (a panic as an error).
fn joined<T>(thread: std::thread::ScopedJoinHandle<'_, Result<T>>) -> Result<T> {
    thread
        .join()
        .unwrap_or_else(|_| Err(Error::param("gpus", "a GPU's thread panicked")))
}

/// Sweeps blocks taken from `queue` on `gpu` into `answer` until none are left, each
/// take's plan from `feed` (waited for where the host has not made it yet) and uploaded on
/// a side stream; the ranges of blocks it took. The host stays one take ahead of the
/// device: it queues a take, then waits for the one before (one unit of `progress`), so
/// that the device does not wait for the host between takes and a GPU holds at most two
/// takes of the shared queue.
fn sweep_from_queue(
    gpu: &Gpu,
    (sorted, split): (&CudaSlice<f32>, &Split),
    shape: Shape,
    answer: &mut Answer,
    queue: &BlockQueue,
    feed: &PlanFeed,
    progress: &dyn Progress,
) -> Result<Vec<Range<usize>>> {
    let uploads = gpu.stream.fork()?;
    let (mut taken, mut queued) = (Vec::new(), None);
    while let Some((t, blocks)) = queue.take() {
        let asked = Instant::now();
        let Some(host) = feed.wait(t) else {
            return Err(Error::param(
                "knn",
                "the probe plan stopped before this GPU's blocks (another GPU failed)",
            ));
        };
        let planned = Instant::now();
        let began = gpu.stream.record_event(Some(CU_EVENT_DEFAULT))?;
        let plan = Plan::upload_on(&uploads, &host.qrows, &host.runs, &host.run_off)?;
        gpu.stream.join(&uploads)?;
        sweep_in_batches(gpu, sorted, split, &plan.at(host.first), shape, answer)?;
        let take = QueuedTake {
            t,
            blocks: blocks.len(),
            plan_wait: planned - asked,
            queueing: planned.elapsed(),
            began,
            done: gpu.stream.record_event(Some(CU_EVENT_DEFAULT))?,
        };
        if let Some(before) = queued.replace(take) {
            before.finish(gpu, progress)?;
        }
        taken.push(blocks);
    }
    if let Some(last) = queued {
        last.finish(gpu, progress)?;
    }
    crate::trace::event(|| {
        format!(
            "knn: GPU {} swept {} takes",
            gpu.device.context.ordinal(),
            taken.len()
        )
    });
    Ok(taken)
}

/// A take queued on the device, with its times for the trace ([`crate::trace`]).
struct QueuedTake {
    t: usize,
    blocks: usize,
    /// The host's wait for the take's plan, then its time to queue the take.
    plan_wait: std::time::Duration,
    queueing: std::time::Duration,
    /// Recorded before and after the take on the GPU's stream.
    began: CudaEvent,
    done: CudaEvent,
}

impl QueuedTake {
    /// Waits for the take on `gpu`, traces it and counts it in `progress`.
    fn finish(self, gpu: &Gpu, progress: &dyn Progress) -> Result<(), GpuError> {
        self.done.synchronize()?;
        crate::trace::event(|| {
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
            let on_device = self.began.elapsed_ms(&self.done).unwrap_or(f32::NAN);
            format!(
                "knn: GPU {} take {} ({} blocks): plan waited {:.1} ms, queued in {:.1} ms, \
                 {on_device:.1} ms on the device",
                gpu.device.context.ordinal(),
                self.t,
                self.blocks,
                ms(self.plan_wait),
                ms(self.queueing)
            )
        });
        progress.advance(1);
        Ok(())
    }
}

/// Queues the sweep of the blocks of `plan` (a take's, [`Plan::at`] its first block) and
/// the finish of their queries, with the candidate lists of as many blocks at a time as
/// the free memory holds.
fn sweep_in_batches(
    gpu: &Gpu,
    sorted: &CudaSlice<f32>,
    split: &Split,
    plan: &Plan,
    shape: Shape,
    answer: &mut Answer,
) -> Result<(), GpuError> {
    let s = &gpu.stream;
    let list = shape.list();
    let per_block = QUERIES * list * 8;
    let free = gpu.free_memory()?.saturating_sub(SLACK);
    let batch = (free / per_block).clamp(1, plan.blocks.max(1));
    let mut state_d = s.alloc_zeros::<f32>(batch * QUERIES * list)?;
    let mut state_i = s.alloc_zeros::<i32>(batch * QUERIES * list)?;
    for b0 in (0..plan.blocks).step_by(batch) {
        let b1 = (b0 + batch).min(plan.blocks);
        let slots = (b1 - b0) * QUERIES;
        fill_lists(
            gpu,
            shape.kr,
            &mut state_d,
            &mut state_i,
            slots * list,
            f32::INFINITY,
        )?;
        let lists = Lists {
            d: &mut state_d,
            i: &mut state_i,
            slot0: b0 * QUERIES,
        };
        fused::queue_sweep(gpu, split, plan, b0..b1, shape.kr, lists, &[], |_| Ok(()))?;
        let q0 = (plan.first + b0) * QUERIES;
        let q_count = ((plan.first + b1) * QUERIES).min(shape.n) - q0;
        answer.finish(gpu, sorted, shape, (q0, q_count), &state_i)?;
    }
    Ok(())
}

/// The exact candidates (a superset of the k nearest, input rows) of the rows `queries` of
/// `split`, whose rows are input rows `names` (`None`: input rows themselves): a sweep of
/// every reference chunk for each block of queries. The references are cut into parts,
/// each block of queries sweeping each part as a block of its own, so that the launch
/// has blocks for every multiprocessor (the recall sample is 79 blocks, an H200 has 132
/// multiprocessors: its search at 10M points took 0.47–0.50 s, in parts 0.38–0.41); a
/// query's parts' lists are then merged into the `list` nearest by the sweep's key, which
/// hold its k nearest as one part's list would.
fn exact_candidates(
    gpu: &Gpu,
    split: &Split,
    queries: &[i32],
    names: Option<&[u32]>,
    shape: Shape,
) -> Result<Vec<Vec<u32>>, GpuError> {
    let s = &gpu.stream;
    let Shape { n, kr, .. } = shape;
    let take = queries.len().div_ceil(QUERIES);
    let steps = n.div_ceil(CHUNK);
    let list = shape.list();
    let most = EXACT_LIST_BYTES / (take * QUERIES * list * 8).max(1);
    let parts = (EXACT_BLOCKS_PER_SM * gpu.multiprocessors())
        .div_ceil(take.max(1))
        .min(most)
        .clamp(1, steps.max(1));
    let blocks = take * parts;
    let qrows: Vec<i32> = (0..blocks)
        .flat_map(|b| b / parts * QUERIES..(b / parts + 1) * QUERIES)
        .map(|q| queries.get(q).copied().unwrap_or(-1))
        .collect();
    let runs: Vec<i32> = (0..blocks)
        .flat_map(|b| {
            // A run is its first chunk and its count of chunks.
            let (part, first) = (b % parts, (b % parts) * steps / parts);
            [first, (part + 1) * steps / parts - first].map(|chunks| chunks as i32)
        })
        .collect();
    let run_off: Vec<i32> = (0..=blocks as i32).collect();
    let plan = Plan::upload(gpu, &qrows, &runs, &run_off)?;
    let mut state_d = s.alloc_zeros::<f32>(blocks * QUERIES * list)?;
    let mut state_i = s.alloc_zeros::<i32>(blocks * QUERIES * list)?;
    fill_lists(
        gpu,
        kr,
        &mut state_d,
        &mut state_i,
        blocks * QUERIES * list,
        f32::INFINITY,
    )?;
    let lists = Lists {
        d: &mut state_d,
        i: &mut state_i,
        slot0: 0,
    };
    let silent = &crate::progress::Silent;
    fused::sweep(gpu, split, &plan, 0..blocks, kr, lists, &[], silent)?;
    let dist: Vec<f32> = s.clone_dtoh(&state_d)?;
    let index: Vec<i32> = s.clone_dtoh(&state_i)?;
    let name = |j: i32| names.map_or(j as u32, |order| order[j as usize]);
    Ok((0..queries.len())
        .into_par_iter()
        .map(|q| {
            let (block, lane) = (q / QUERIES, q % QUERIES);
            let mut found: Vec<(f32, i32)> = (0..parts)
                .flat_map(|part| {
                    let at = ((block * parts + part) * QUERIES + lane) * list;
                    dist[at..at + list]
                        .iter()
                        .copied()
                        .zip(index[at..at + list].iter().copied())
                })
                .filter(|&(_, j)| j >= 0)
                .collect();
            if parts > 1 {
                found.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                found.truncate(list);
            }
            found.into_iter().map(|(_, j)| name(j)).collect()
        })
        .collect())
}

/// Blocks per multiprocessor [`exact_candidates`] aims its parts at.
const EXACT_BLOCKS_PER_SM: usize = 4;

/// At most this many bytes of candidate lists in [`exact_candidates`] (its parts fewer
/// where k is large): 72 MB for the recall sample at k = 90 on an H200.
const EXACT_LIST_BYTES: usize = 256 << 20;

/// The recall sample: [`RECALL_SAMPLE`] input rows drawn at random (the CPU twin's,
/// [`host::recall_sample`]), with their exact candidate lists from a sweep over every
/// reference.
struct RecallSample {
    /// The input rows of the sample, ascending.
    rows: Vec<u32>,
    /// Their sorted positions, once the cells are known ([`RecallSample::place`]).
    positions: Vec<i32>,
    /// Each row's exact candidates (a superset of its k nearest), input rows.
    candidates: Vec<Vec<u32>>,
}

impl RecallSample {
    /// The sample's rows, their positions and candidates yet to be found.
    fn new(n: usize, seed: u64) -> Self {
        RecallSample {
            rows: host::recall_sample(n, RECALL_SAMPLE, seed),
            positions: Vec::new(),
            candidates: Vec::new(),
        }
    }

    /// Finds the sample's sorted positions in `cells.order`.
    fn place(&mut self, cells: &Cells) {
        let found: Vec<(usize, i32)> = cells
            .order
            .par_iter()
            .enumerate()
            .filter_map(|(p, i)| self.rows.binary_search(i).ok().map(|s| (s, p as i32)))
            .collect();
        self.positions = vec![-1; self.rows.len()];
        for (s, p) in found {
            self.positions[s] = p;
        }
    }

    /// The recall of the graph `indices` (n × k sorted positions, rows by sorted position)
    /// on the sample by the shape's key ([`host::sample_recall`]).
    fn recall(
        &self,
        gpu: &Gpu,
        points: &Points,
        cells: &Cells,
        indices: &CudaSlice<i32>,
        shape: Shape,
    ) -> Result<f64, GpuError> {
        let Shape { n, k, key, .. } = shape;
        let s = &gpu.stream;
        let count = self.positions.len();
        if count == 0 || k == 0 {
            return Ok(host::sample_recall(points, key, k, &[], &[], &[]));
        }
        let pos = s.clone_htod(&self.positions)?;
        let mut rows = alloc_uninit::<i32>(gpu, count * k)?;
        IvfRows {
            src: indices,
            n,
            k,
            pos: &pos,
            count,
            rows: &mut rows,
        }
        .launch(gpu, s, gpu.config(count * k))?;
        let approx: Vec<u32> = s
            .clone_dtoh(&rows)?
            .into_iter()
            .map(|j| cells.order[j as usize])
            .collect();
        Ok(host::sample_recall(
            points,
            key,
            k,
            &self.rows,
            &approx,
            &self.candidates,
        ))
    }
}

#[cfg(test)]
mod tests;
