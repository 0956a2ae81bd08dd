//! The sweep's query blocks handed to the GPUs a take at a time ([`BlockQueue`]), each
//! take's plan made on the host and fed to the GPU that takes it ([`PlanFeed`]), and the
//! wait for the other GPUs to join ([`Joining`]).

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use rayon::prelude::*;

use crate::gpu::kernels::knn_fused::{CHUNK, QUERIES};
use crate::knn::gpu::fused;
use crate::knn::ivf::{self as host, Cells, ProbePlanner};

/// Query blocks a GPU takes from the shared queue at a time (262,144 queries), and the
/// blocks the host plans at a time: one launch of the sweep ([`fused::BLOCKS_PER_LAUNCH`]),
/// so that a take adds no launch (takes of 1024 blocks, two launches' tails where one
/// launch had one, took the 10M mixture's sweep on one H200 from 13.6 to 14.0 s); at 10M
/// points 39 takes, the first planned in about 10 ms.
pub(super) const TAKE: usize = fused::BLOCKS_PER_LAUNCH;

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
    pub(super) fn takes(&self) -> usize {
        self.bounds.len() - 1
    }

    /// The blocks of take `t`.
    pub(super) fn blocks(&self, t: usize) -> Range<usize> {
        self.bounds[t]..self.bounds[t + 1]
    }
}

/// One take's share of the probe plan, as [`Plan::upload`] takes it: its blocks' query
/// rows ([`QUERIES`] each, −1 past the points), their runs of reference chunks and each
/// block's first run, the blocks numbered from the take's first.
///
/// [`Plan::upload`]: fused::Plan::upload
pub(super) struct TakePlan {
    pub(super) first: usize,
    pub(super) qrows: Vec<i32>,
    pub(super) runs: Vec<i32>,
    pub(super) run_off: Vec<i32>,
}

impl TakePlan {
    /// The plan of the blocks `blocks` of the `n` sorted points (on all cores).
    pub(super) fn make(
        planner: &ProbePlanner,
        cells: &Cells,
        blocks: Range<usize>,
        n: usize,
    ) -> TakePlan {
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
    pub(super) fn chunks(&self) -> u64 {
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
pub(super) struct Joining {
    left: Mutex<usize>,
    arrived: Condvar,
}

impl Joining {
    pub(super) fn new(count: usize) -> Self {
        Joining {
            left: Mutex::new(count),
            arrived: Condvar::new(),
        }
    }

    /// Waits until every GPU counted has arrived.
    pub(super) fn wait(&self) {
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
pub(super) struct Arrival<'a>(pub(super) Option<&'a Joining>);

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
pub(super) struct PlanFeed {
    plans: Mutex<Vec<Option<TakePlan>>>,
    made: Condvar,
    /// Set when the host stops making plans (done, failed or a GPU failed): a GPU waiting
    /// for a plan never made gets `None`.
    pub(super) ended: AtomicBool,
}

impl PlanFeed {
    pub(super) fn new() -> Self {
        PlanFeed {
            plans: Mutex::new(Vec::new()),
            made: Condvar::new(),
            ended: AtomicBool::new(false),
        }
    }

    pub(super) fn push(&self, plan: TakePlan) {
        self.plans
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Some(plan));
        self.made.notify_all();
    }

    pub(super) fn end(&self) {
        self.ended.store(true, Ordering::Release);
        self.made.notify_all();
    }

    /// Take t's plan, once made (each take goes to one GPU, which takes it out); `None`
    /// if the host stopped before making it.
    pub(super) fn wait(&self, t: usize) -> Option<TakePlan> {
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
pub(super) struct EndFeed<'a>(pub(super) &'a PlanFeed);

impl Drop for EndFeed<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}
