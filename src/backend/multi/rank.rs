//! One GPU's part of a run over several: its set-up, then the iterations of
//! [`super`]'s design, on the thread that drives that GPU.

use std::sync::{Mutex, RwLock};

use cudarc::driver::{sys::CUevent_flags, CudaEvent, CudaSlice};

use super::partition::Partition;
use super::watch::Watch;
use crate::gpu::comm::{Ranks, RanksId};
use crate::gpu::{Gpu, GpuError};
use crate::kernel::Kernel;
use crate::optim::gpu::OptimizerGpu;
use crate::optim::{stops, Observer, OptimParams, OptimReport};
use crate::progress::Progress;
use crate::repulse::{Pending, RepulseGpu, RepulsionSpec};
use crate::sparse::{BlockShape, Hyb, HybGpu};
use crate::{Error, Result};

/// Where the GPUs' blocks of P come from.
pub(super) enum Blocks<'a> {
    /// P on the host (graph mode, host affinities): each GPU uploads its rows.
    Host(&'a Hyb),
    /// P on GPU 0 ([`Lead::whole`]): GPU 0 copies its own block and sends the others
    /// theirs, GPU to GPU; their shapes, per rank.
    Device(Vec<BlockShape>),
    /// P in its row blocks on their GPUs already, where the affinity stage placed them:
    /// each rank takes its own.
    Placed(Vec<Mutex<Option<HybGpu>>>),
}

/// What every rank reads: the problem and the ranks' shared state.
pub(super) struct Shared<'a> {
    pub part: Partition,
    /// Where each GPU's rows of P come from.
    pub p: Blocks<'a>,
    /// Σ p ln p of the whole P.
    pub p_log_p: f64,
    pub kernel: Kernel,
    pub repulsion: &'a RepulsionSpec,
    /// The embedding, n × dims: the start, which every GPU reads in its set-up, then the
    /// end, which rank 0 writes once the iterations are done (after every set-up: the
    /// ranks meet before the first iteration). Shared, not copied: the copy (80 MB at 10M
    /// points) held the GPUs' threads back 0.05–0.15 s over two H200.
    pub y: &'a RwLock<&'a mut [f32]>,
    pub dims: usize,
    pub params: &'a OptimParams,
    pub watch: &'a Watch,
    /// The communicator's identity, for ranks that join one (none for one GPU, or when
    /// the communicators were made ahead).
    pub id: Option<RanksId>,
}

/// What rank 0 alone does: hold the whole P when it is on the device, show progress, ask
/// the observer, return Y.
pub(super) struct Lead<'a, 'o> {
    /// P on GPU 0 ([`Blocks::Device`]), dropped once the blocks are out.
    pub whole: Option<HybGpu>,
    pub progress: &'a dyn Progress,
    pub observer: Option<&'a mut (dyn Observer<[f32]> + 'o)>,
}

/// One GPU's device state.
struct State {
    gpu: &'static Gpu,
    ranks: Ranks,
    /// This GPU's rows of P.
    p: HybGpu,
    /// Every point (the blocks of all GPUs, the last one padded), refreshed each step.
    y_all: CudaSlice<f32>,
    /// This GPU's points, padded to a block; the optimiser moves them.
    y_own: CudaSlice<f32>,
    attr: CudaSlice<f32>,
    rep: CudaSlice<f32>,
    kl: CudaSlice<u64>,
    fixed: Option<CudaSlice<i64>>,
    repulse: Box<dyn RepulseGpu>,
    opt: OptimizerGpu,
    /// Per iteration parity: around the attraction, the update and the all-gather, for
    /// timing.
    events: [[CudaEvent; 5]; 2],
}

/// An iteration whose repulsion and timings are read once the next one has been queued.
struct InFlight {
    parity: usize,
    repulsion: Pending,
    timed_update: bool,
}

/// Runs rank `rank` to the end, with its communicator when it was made ahead (`ranks`); on
/// an error marks the run failed first, so that the other ranks stop waiting for this one.
/// Returns the report and the set-up's seconds (P's blocks in place, every buffer made,
/// the GPUs joined).
pub(super) fn run(
    shared: &Shared,
    rank: usize,
    ranks: Option<Ranks>,
    mut lead: Option<Lead<'_, '_>>,
) -> Result<(OptimReport, f64)> {
    let start = std::time::Instant::now();
    let whole = lead.as_mut().and_then(|l| l.whole.take());
    let result = set_up(shared, rank, ranks, whole).and_then(|state| {
        let setup = start.elapsed().as_secs_f64();
        crate::trace::event(|| format!("optimise: GPU {rank} set up"));
        let report = iterate(shared, state, lead)?;
        crate::trace::event(|| format!("optimise: GPU {rank} done"));
        Ok((report, setup))
    });
    if result.is_err() {
        shared.watch.fail_by(rank);
    }
    result
}

/// Places this GPU's rows of P and the embedding, and makes every buffer, before the ranks
/// join: a GPU short of memory then fails alone, before any collective waits for it. Then
/// joins the others (or takes its communicator made `ahead`) and, when P is on GPU 0
/// (`whole`, rank 0's), moves the blocks.
fn set_up(
    shared: &Shared,
    rank: usize,
    ahead: Option<Ranks>,
    whole: Option<HybGpu>,
) -> Result<State> {
    let gpu = Gpu::device(rank)?;
    gpu.device.context.bind_to_thread()?;
    let s = &gpu.stream;
    let (part, dims) = (shared.part, shared.dims);
    let (n, block, rows) = (part.n(), part.block(), part.rows(rank));
    let nb = rows.len();
    let mut p = match (&shared.p, &whole) {
        (Blocks::Host(hyb), _) => HybGpu::new(gpu, &hyb.row_block(rows.clone()))?,
        (Blocks::Device(shapes), Some(whole)) => whole.row_block(&shapes[rank])?,
        (Blocks::Device(shapes), None) => HybGpu::for_block(gpu, &shapes[rank])?,
        (Blocks::Placed(blocks), _) => blocks[rank]
            .lock()
            .map_err(|_| panicked())?
            .take()
            .ok_or_else(|| Error::param("p", format!("GPU {rank}'s block of P was taken")))?,
    };
    crate::trace::event(|| format!("optimise: GPU {rank}'s rows of P here"));
    let mut y_all = s.alloc_zeros::<f32>(part.world() * block * dims)?;
    {
        let y0 = shared.y.read().map_err(|_| panicked())?;
        s.memcpy_htod(&y0[..], &mut y_all.slice_mut(..n * dims))?;
    }
    crate::trace::event(|| format!("optimise: GPU {rank}'s Y uploaded"));
    // This GPU's rows of Y, from the copy just uploaded.
    let mut y_own = s.alloc_zeros::<f32>(block * dims)?;
    s.memcpy_dtod(
        &y_all.slice(rows.start * dims..rows.end * dims),
        &mut y_own.slice_mut(..nb * dims),
    )?;
    let ev = || {
        gpu.device
            .context
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
    };
    let make = || -> std::result::Result<_, GpuError> {
        Ok((
            s.alloc_zeros::<f32>(nb * dims)?,
            s.alloc_zeros::<f32>(nb * dims)?,
            s.alloc_zeros::<u64>(crate::gpu::sum::WORDS)?,
            match shared.params.deterministic {
                true => Some(s.alloc_zeros::<i64>(nb * dims)?),
                false => None,
            },
            [
                [ev()?, ev()?, ev()?, ev()?, ev()?],
                [ev()?, ev()?, ev()?, ev()?, ev()?],
            ],
        ))
    };
    let (attr, rep, kl, fixed, events) = make()?;
    let repulse = shared.repulsion.device(gpu, s.clone())?;
    crate::trace::event(|| format!("optimise: GPU {rank}'s repulsion made"));
    let opt = OptimizerGpu::new(gpu, nb, dims)?;
    shared.watch.settle(s)?;
    crate::trace::event(|| format!("optimise: GPU {rank}'s buffers made"));
    // Every rank is ready (or one failed, and this returns its error) before NCCL's
    // initialisation, which waits for all of them.
    shared.watch.meet(rank, 0)?;
    crate::trace::event(|| format!("optimise: GPU {rank} met the others"));
    let ranks = match (ahead, shared.id) {
        (Some(ranks), _) => ranks,
        (None, Some(id)) => Ranks::join(gpu, s.clone(), rank, part.world(), id)?,
        (None, None) => Ranks::single(),
    };
    if let Blocks::Device(shapes) = &shared.p {
        match whole {
            Some(whole) => {
                for (peer, shape) in shapes.iter().enumerate().skip(1) {
                    whole.send_block(shape, &ranks, peer)?;
                }
                shared.watch.settle(s)?;
            }
            None => p.recv_block(&ranks, 0)?,
        }
    }
    Ok(State {
        gpu,
        ranks,
        p,
        y_all,
        y_own,
        attr,
        rep,
        kl,
        fixed,
        repulse,
        opt,
        events,
    })
}

/// The iterations: per step the attraction of this GPU's rows, the repulsion of its points
/// (grid and Z summed over the GPUs), the update of its points, and the all-gather of
/// every GPU's points for the next step. Rank 0's decision to stop (its observer) reaches
/// every rank at the meeting that opens each step.
fn iterate(shared: &Shared, mut st: State, mut lead: Option<Lead<'_, '_>>) -> Result<OptimReport> {
    let (params, watch, dims) = (shared.params, shared.watch, shared.dims);
    let rank = st.ranks.rank();
    let n = shared.part.n();
    let nb = shared.part.rows(rank).len();
    let gpu = st.gpu;
    let s = &gpu.stream;
    let mut report = OptimReport::default();
    let mut in_flight: Option<InFlight> = None;
    if let Some(l) = &lead {
        l.progress.begin("optimise", params.iters as u64);
    }
    let mut end = params.iters;
    for iter in 0..=params.iters {
        let mut proposal = end;
        if let Some(l) = &lead {
            if iter < end && stops(l.observer.as_deref(), iter, params.iters, &mut report)? {
                proposal = iter;
            }
        }
        end = watch.meet(rank, proposal)?;
        let last = iter == end;
        let parity = iter % 2;
        let with_kl = last || (params.kl_every > 0 && iter % params.kl_every == 0);

        st.repulse.prefetch(&st.y_all, n, dims)?;
        let boxed = Watch::mark(s)?;
        let e = &st.events[parity];
        e[0].record(s)?;
        if with_kl {
            s.memset_zeros(&mut st.kl)?;
        }
        let kl = with_kl.then_some(&mut st.kl);
        st.p.attract_device(
            s,
            shared.kernel,
            &st.y_all,
            dims,
            &mut st.attr,
            kl,
            st.fixed.as_mut(),
        )?;
        e[1].record(s)?;
        // The box (and all before it: the last all-gather, the last iteration's work).
        watch.wait(&boxed)?;
        let mut repulsion = st.repulse.enqueue_rows(
            (&st.y_all, n),
            (&st.y_own, nb),
            dims,
            &mut st.rep,
            &st.ranks,
        )?;
        if with_kl {
            st.ranks.sum(&mut st.kl)?;
            watch.settle(s)?;
            let plw = crate::gpu::sum::read(s, &st.kl)?[0];
            let rep = st.repulse.collect(repulsion)?;
            let kl = shared.p_log_p - plw + rep.z.ln();
            report.kl_history.push((iter, kl));
            if let Some(l) = lead.as_mut() {
                l.progress.status(&format!("KL {kl:.4}"));
                if let Some(o) = l.observer.as_mut() {
                    o.kl(iter, kl);
                }
            }
            if last {
                report.final_kl = kl;
                report.iterations = iter;
            }
            repulsion = Pending::Done(rep);
        }
        if !last {
            let e = &st.events[parity];
            e[2].record(s)?;
            st.opt.step_ranks(
                gpu,
                &mut st.y_own,
                (&st.attr, &st.rep),
                params.phase(iter),
                params,
                (&st.ranks, n),
            )?;
            e[3].record(s)?;
            st.ranks.all_gather(&st.y_own.slice(..), &mut st.y_all, s)?;
            e[4].record(s)?;
        }
        let done = in_flight.replace(InFlight {
            parity,
            repulsion,
            timed_update: !last,
        });
        if let Some(done) = done {
            account(&mut st, done, &mut report)?;
        }
        if last {
            break;
        }
        if let Some(l) = lead.as_mut() {
            l.progress.advance(1);
            if let Some(o) = l.observer.as_mut().filter(|o| o.wants(iter + 1)) {
                watch.settle(s)?;
                let y = s.clone_dtoh(&st.y_all.slice(..n * dims))?;
                o.observe(iter + 1, &y)?;
            }
        }
    }
    watch.settle(s)?;
    if let Some(done) = in_flight {
        account(&mut st, done, &mut report)?;
    }
    if let Some(l) = lead {
        let mut y = shared.y.write().map_err(|_| panicked())?;
        crate::gpu::memory::dtoh_staged(gpu, &st.y_all.slice(..n * dims), &mut y[..])?;
        l.progress.end();
    }
    Ok(report)
}

/// Adds a finished iteration's repulsion and attraction/update times to `report` (its work
/// is done: the caller waited for later work on the same stream).
fn account(st: &mut State, done: InFlight, report: &mut OptimReport) -> Result<()> {
    let rep = st.repulse.collect(done.repulsion)?;
    report.add_repulsion(&rep);
    let e = &st.events[done.parity];
    let secs = |a: &CudaEvent, b: &CudaEvent| -> Result<f64> { Ok(a.elapsed_ms(b)? as f64 / 1e3) };
    report.attract_seconds += secs(&e[0], &e[1])?;
    if done.timed_update {
        report.update_seconds += secs(&e[2], &e[3])?;
        report.exchange_seconds += secs(&e[3], &e[4])?;
    }
    Ok(())
}

/// The error of a lock left poisoned by a GPU's thread that panicked.
pub(super) fn panicked() -> Error {
    Error::param("gpus", "a GPU's thread panicked")
}
