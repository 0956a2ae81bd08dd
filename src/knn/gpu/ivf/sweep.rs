//! The sweep of every query block over its probe cells, on one GPU or several, while the
//! host plans the takes: the tensor-core kernel of the exact kNN over the probe cells'
//! runs, and the exact finish.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::time::Instant;

use cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT;
use cudarc::driver::{CudaEvent, CudaSlice};

use super::cells::split_rows;
use super::recall::exact_candidates;
use super::takes::{Arrival, BlockQueue, EndFeed, Joining, PlanFeed, TakePlan, TAKE};
use crate::gpu::kernels::knn_fused::{CHUNK, QUERIES};
use crate::gpu::memory::{alloc_uninit, copy_peer, copy_peer_after};
use crate::gpu::{Gpu, GpuError};
use crate::knn::gpu::fused::{self, Lists, Plan, Split};
use crate::knn::gpu::{fill_lists, Answer, Shape, SLACK};
use crate::knn::ivf::ProbePlanner;
use crate::progress::Progress;
use crate::{Error, Result};

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
///
/// [`super::refine`]: crate::knn::gpu::refine
pub(super) fn sweep_planned(
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
pub(super) struct SampleSearch<'a> {
    pub(super) positions: &'a [i32],
    pub(super) names: &'a [u32],
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
