//! Collectives between the GPUs of one host, for a run over several of them
//! ([`crate::backend::multi`]): NCCL through cudarc's `nccl` feature, one communicator per
//! GPU, each used by the one thread that drives its GPU. Every collective is queued on the
//! GPU's stream in order with the kernels around it, so the host never waits for one
//! ([`Ranks::sum`], [`Ranks::all_gather`]). A run on one GPU has no communicator: its
//! collectives are copies or nothing, and NCCL is never loaded.
//!
//! Making the communicators costs 0.5–1 s on idle GPUs (NCCL loads its kernels into each
//! GPU's context, then probes the topology and connects the GPUs), so the command line
//! starts the GPUs on side threads while the input loads, loads NCCL's kernels on GPU 0
//! then, and makes the communicators once the run lets them and that load is done
//! ([`make_ahead`], [`go_ahead`]); the run takes them when it gets there ([`take_ahead`]),
//! or joins its own ([`Ranks::join`]) when none were made.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtrMut};
use cudarc::nccl::{Comm, Id, NcclType, ReduceOp};

use super::{Gpu, GpuError};

/// One GPU's place among those of a run: its rank, their number, and the communicator that
/// joins them (none for one GPU).
pub struct Ranks {
    rank: usize,
    world: usize,
    comm: Option<Comm>,
}

// SAFETY: a communicator (a pointer to NCCL's state) may move between threads; NCCL asks
// only that one thread use it at a time, which `Ranks` not being `Sync` keeps: each rank's
// thread owns its own.
unsafe impl Send for Ranks {}

/// Aborts the communicator on a side thread: NCCL's teardown took 0.5 s at the end of a
/// two-GPU run on the first rank (a few ms on the second), and the run's last stages need
/// not wait for it; [`wait_ended`] does, before the process ends. A run that failed
/// still ends the collectives in flight this way (see [`crate::backend::multi`]), a moment
/// later. A run's communicator ends those that loaded NCCL's kernels ([`make_ahead`])
/// with it: ended only before the process ends, one put 0.6–0.8 s more between a
/// two-GPU run's report and its end (10M mixture, 2×H100).
impl Drop for Ranks {
    fn drop(&mut self) {
        if self.world > 1 {
            end_loaders();
        }
        if let Some(comm) = self.comm.take() {
            let ending = Ending(comm);
            // Should no thread start, the closure, and the communicator, drop here.
            let started = std::thread::Builder::new()
                .name("sgtsne-nccl-end".into())
                .spawn(move || ending.abort());
            if let Ok(thread) = started {
                ENDING
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(thread);
            }
        }
    }
}

/// The threads aborting communicators ([`Ranks`]'s drop).
static ENDING: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

/// Waits until every communicator dropped so far is aborted, and those [`make_ahead`]
/// made (to load NCCL's kernels, or for a run that did not take them) are aborted (or,
/// never let start, not made): before the process ends (a library that exits while a
/// thread is inside NCCL may crash in its exit-time destructors).
pub fn wait_ended() {
    crate::trace::event(|| "NCCL: waiting for the end".into());
    let ahead = AHEAD.lock().unwrap_or_else(PoisonError::into_inner).take();
    if let Some((_, making)) = ahead {
        set_gate(Gate::Cancelled);
        drop(making.join());
    }
    end_loaders();
    let threads = std::mem::take(&mut *ENDING.lock().unwrap_or_else(PoisonError::into_inner));
    for thread in threads {
        let _ = thread.join();
    }
    crate::trace::event(|| "NCCL: ended".into());
}

/// Calls [`wait_ended`] when dropped: held by what a run returns
/// ([`crate::embed::Embedding`]), so that a run's communicators end while its caller writes
/// the results, and before the caller can end the process with them; and by the command
/// line for the communicators of a run that failed or never took them.
#[derive(Debug, Default)]
pub struct EndedOnDrop;

impl Drop for EndedOnDrop {
    fn drop(&mut self) {
        wait_ended();
    }
}

/// A communicator on its way to be aborted on another thread.
struct Ending(Comm);

impl Ending {
    /// Aborts the communicator (cudarc's `Comm` aborts when dropped).
    fn abort(self) {
        crate::trace::event(|| "NCCL: abort".into());
        drop(self.0);
        crate::trace::event(|| "NCCL: aborted".into());
    }
}

// SAFETY: as for `Ranks`: the communicator moves to the thread that aborts it, and no other
// thread holds it any more.
unsafe impl Send for Ending {}

/// The communicators [`make_ahead`] is making: their number and the thread making them.
type Ahead = (usize, JoinHandle<crate::Result<Vec<Ranks>>>);

static AHEAD: Mutex<Option<Ahead>> = Mutex::new(None);

/// Whether [`make_ahead`]'s threads may start the GPUs beyond the first and then make the
/// communicators.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Gate {
    /// Nothing is held: no [`make_ahead`].
    Unused,
    /// Not yet: the run has not reached a stage that NCCL's set-up can overlap.
    Closed,
    /// Now ([`go_ahead`]).
    Open,
    /// Never: the process is ending without them ([`wait_ended`]).
    Cancelled,
}

static GATE: (Mutex<Gate>, Condvar) = (Mutex::new(Gate::Unused), Condvar::new());

/// Waits while the gate is closed; the gate then. [`make_ahead`]'s thread and the GPUs
/// beyond the first wait for it.
fn gate_opened() -> Gate {
    let (gate, changed) = &GATE;
    *changed
        .wait_while(gate.lock().unwrap_or_else(PoisonError::into_inner), |g| {
            *g == Gate::Closed
        })
        .unwrap_or_else(PoisonError::into_inner)
}

/// Waits while [`make_ahead`] holds back the GPUs beyond the first; whether they may start
/// (not when the process is ending without them). Returns at once when nothing holds
/// them.
pub fn others_may_start() -> bool {
    gate_opened() != Gate::Cancelled
}

/// Sets the gate of [`make_ahead`]'s thread to `to` (unless it is open already) and wakes
/// the thread.
fn set_gate(to: Gate) {
    let (gate, changed) = &GATE;
    let mut gate = gate.lock().unwrap_or_else(PoisonError::into_inner);
    if *gate != Gate::Open {
        *gate = to;
    }
    changed.notify_all();
}

/// Lets [`make_ahead`]'s threads start the GPUs beyond the first and then make the
/// communicators. The run calls it when it starts a stretch of work that NCCL's set-up can
/// overlap: the approximate kNN's order of the cells on the host, with the other GPUs idle
/// until the sweep; the end of any other search; the start of the preparation of a graph or
/// of affinities given. Not before: a context's creation blocks every other thread's driver
/// calls in the process while it lasts (0.26 s for the second GPU, 0.4–0.75 s for the three
/// others of four H100s), which the run's set-up and k-means waited through when the others
/// started as soon as GPU 0 was ready; and made as the GPUs started, the communicators
/// slowed the first GPU's own first steps by 0.3–0.5 s on two and four H200. Not later:
/// beside the kNN's sweep NCCL's set-up took 4.4 s on two H100 (3.7 s on four H200),
/// waiting on the GPUs' queued work, and stalled the host's queueing of the sweep's takes
/// by up to 0.6 s at a time. [`take_ahead`] opens the gate itself when no stage did.
pub fn go_ahead() {
    set_gate(Gate::Open);
}

/// Starts, on a side thread, GPUs 0 … `world` − 1 (each on a thread of its own, the
/// others once GPU 0 is ready and the run lets them, [`go_ahead`]) and then the NCCL
/// communicators of a run over them, for [`take_ahead`]; nothing for one GPU or without
/// NCCL (the run then says why it cannot go on).
///
/// Where the set-up lands in a run of the 10M mixture (traces of `scripts/bench/`'s
/// `ab_traced.sh` and `multi_gpu.sh`, read by `sweep_takes.py`; `benches/RESULTS.md`,
/// 2026-11-28): GPU 0's loader of NCCL's kernels takes 1.7–2.8 s from GPU 0's readiness
/// (4.9–5.2 s in 3 of 22 runs on 4×H100; about 1 s of it NCCL's "kernels", 1.0–1.8 s its
/// "connections", 64 channels for a communicator of one GPU), so the communicators are
/// begun 2.5–4.3 s into the run and made by 3.6–6.6 s, beside the kNN's sweep (begun at
/// 1.5–2.4 s). Each other GPU then loads NCCL's kernels into its context beside its share
/// of the sweep and stands idle meanwhile (a module's load waits for the context's work and
/// holds back what is queued after it): 0.33–1.10 s on each of three GPUs of 4×H100, up to
/// 0.55 s on the second of two (none on a host where the loader ended before the sweep),
/// against nothing on GPU 0. (The other GPUs' late joins of the sweep, 0.75–2.9 s after it
/// began in 12 of 29 four-GPU runs, were not NCCL's: a GPU's copy of the sorted points
/// waits for GPU 0 to have no takes queued, and GPU 0 now waits for the GPUs still starting
/// before its first take; `knn::gpu::ivf`'s sweep.)
pub fn make_ahead(world: usize) {
    if world < 2 || !nccl_present() {
        return;
    }
    *GATE.0.lock().unwrap_or_else(PoisonError::into_inner) = Gate::Closed;
    let making = std::thread::spawn(move || {
        // GPU 0, which the run needs first (the k-means, the cells), starts alone; then the
        // others together, each on a thread of its own (`Gpu::device` waits for a start
        // under way). One after another, each beyond the first took 0.2–0.3 s on an H200
        // host; all together, the driver made the contexts at once and GPU 0 was ready
        // with the last, 1.0–1.6 s into a four-GPU run on 4×H100 against 0.75–0.80 s alone.
        // The others are needed at the sweep, after the cells, and start when the run
        // lets them (`go_ahead`).
        let streams = std::thread::scope(|scope| {
            let starting: Vec<_> = (0..world)
                .map(|ordinal| {
                    std::thread::Builder::new()
                        .name(format!("sgtsne-gpu-{ordinal}"))
                        .spawn_scoped(scope, move || {
                            if ordinal > 0 {
                                // Its failure is the run's to report, on its own use of GPU 0.
                                drop(Gpu::device(0));
                                if !others_may_start() {
                                    return Err(crate::Error::GpuUnavailable {
                                        reason: format!(
                                            "the run ended before it needed GPU {ordinal}"
                                        ),
                                    });
                                }
                                return Gpu::device(ordinal);
                            }
                            let gpu = Gpu::device(0)?;
                            load_kernels(gpu);
                            Ok(gpu)
                        })
                })
                .collect();
            // A GPU whose thread did not start is set up here.
            starting
                .into_iter()
                .enumerate()
                .map(|(ordinal, thread)| {
                    let gpu = match thread {
                        Ok(thread) => thread
                            .join()
                            .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                        Err(_) => Gpu::device(ordinal),
                    };
                    Ok(gpu?.stream.clone())
                })
                .collect::<crate::Result<Vec<_>>>()
        })?;
        if gate_opened() == Gate::Cancelled {
            return Err(crate::Error::GpuUnavailable {
                reason: "the NCCL communicators made ahead were not needed".into(),
            });
        }
        crate::trace::event(|| format!("NCCL: {world} communicators"));
        super::libraries::load(super::libraries::CudaLibrary::Nccl);
        let comms = Comm::from_devices(streams).map_err(GpuError::from)?;
        crate::trace::event(|| "NCCL: communicators made".into());
        Ok(comms
            .into_iter()
            .enumerate()
            .map(|(rank, comm)| Ranks {
                rank,
                world,
                comm: Some(comm),
            })
            .collect())
    });
    *AHEAD.lock().unwrap_or_else(PoisonError::into_inner) = Some((world, making));
}

/// Loads NCCL's kernels into `gpu`'s context, by making a communicator of that one GPU,
/// for [`make_ahead`] while GPU 0 is still nearly idle (the input loading, the run's
/// set-up). NCCL's set-up looks up every one of its kernels on each GPU, and with CUDA's
/// lazy loading that loads them: 0.5–0.6 s on an idle H100, 2.0–2.7 s beside the kNN's
/// sweep on GPU 0, which it then stalled, its loads waiting on the sweep's kernels (NCCL's
/// "Init timings", "kernels"; with `CUDA_MODULE_LOADING=EAGER` 0.00 s). Loaded once per
/// context, they cost the run's own set-up nothing later on GPU 0; the other GPUs load
/// theirs when the run's communicators are made (see [`make_ahead`] for where that
/// lands). The communicator ends with the run's ([`Ranks`]' drop,
/// else [`wait_ended`]): ended at once, its abort waited 2.5–3 s on the sweep's kernels
/// beside it. A failure here is the run's to report, at its own set-up.
fn load_kernels(gpu: &Gpu) {
    crate::trace::event(|| "NCCL: loading its kernels on GPU 0".into());
    super::libraries::load(super::libraries::CudaLibrary::Nccl);
    match Comm::from_devices(vec![gpu.stream.clone()]) {
        Ok(comms) => {
            let loaders = comms.into_iter().map(|comm| Ranks {
                rank: 0,
                world: 1,
                comm: Some(comm),
            });
            LOADERS
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(loaders);
            crate::trace::event(|| "NCCL: kernels loaded on GPU 0".into());
        }
        Err(e) => {
            let e = GpuError::from(e);
            crate::trace::event(|| format!("NCCL: kernels not loaded on GPU 0: {e}"))
        }
    }
}

/// The communicators of [`load_kernels`], until a run's own end ([`Ranks`]' drop) or
/// [`wait_ended`].
static LOADERS: Mutex<Vec<Ranks>> = Mutex::new(Vec::new());

/// Ends the communicators of [`load_kernels`]: their drop hands them to threads of
/// `ENDING` (taken out of the lock first).
fn end_loaders() {
    let loaders = std::mem::take(&mut *LOADERS.lock().unwrap_or_else(PoisonError::into_inner));
    drop(loaders);
}

/// The communicators [`make_ahead`] made for `world` GPUs, once they are ready, rank by
/// rank; none when it was not asked for that many or failed (the run then joins its own,
/// and reports the failure if it happens again).
pub fn take_ahead(world: usize) -> Option<Vec<Ranks>> {
    let mut ahead = AHEAD.lock().unwrap_or_else(PoisonError::into_inner);
    match ahead.take() {
        Some((w, making)) if w == world => {
            drop(ahead);
            go_ahead();
            crate::trace::event(|| "NCCL: taking the communicators".into());
            let made = making.join().ok()?.ok();
            crate::trace::event(|| "NCCL: taken".into());
            made
        }
        // Made for another number of GPUs: left for `wait_ended` to end.
        other => {
            *ahead = other;
            None
        }
    }
}

/// NCCL's settings a run over several GPUs is made for, each applied by
/// [`set_nccl_defaults`] unless the environment gives it a value of its own:
/// `NCCL_NVLS_ENABLE=0`, NVLink multicast off, which nothing here needs (on NVSwitch hosts
/// its set-up takes device memory and time). (`NCCL_CUMEM_ENABLE=0`, NCCL's buffers from
/// `cudaMalloc`, was tried and is not set: on 4×H100 the 10M mixture's walls had medians
/// of 12.68 s against 13.13 over 8 runs each, on 4×H200 12.86 against 12.37 over 5 and 2;
/// `benches/RESULTS.md`, 2026-11-28.)
pub const NCCL_DEFAULTS: &[(&str, &str)] = &[("NCCL_NVLS_ENABLE", "0")];

/// Puts [`NCCL_DEFAULTS`] into the process's environment where it holds no value of its
/// own, for NCCL to read when a run first loads it. The environment is the process's: call
/// this at the start of `main`, before any other thread starts (a C library that reads the
/// environment on one thread while another changes it may crash). The command line does;
/// a library caller may, or may set the variables itself.
pub fn set_nccl_defaults() {
    for (name, value) in NCCL_DEFAULTS {
        if std::env::var_os(name).is_none() {
            std::env::set_var(name, value);
        }
    }
}

/// The communicator's identity, made once ([`Ranks::new_id`]) and handed to every rank's
/// thread, which joins with it ([`Ranks::join`]).
#[derive(Clone, Copy)]
pub struct RanksId(Id);

/// Whether NCCL's library can be loaded (probed without letting cudarc panic).
pub fn nccl_present() -> bool {
    super::libraries::available(super::libraries::CudaLibrary::Nccl)
}

impl Ranks {
    /// The one rank of a run on one GPU.
    pub fn single() -> Self {
        Ranks {
            rank: 0,
            world: 1,
            comm: None,
        }
    }

    /// A new communicator identity for `world` ranks; the library must be present
    /// ([`nccl_present`]).
    pub fn new_id() -> Result<RanksId, GpuError> {
        super::libraries::load(super::libraries::CudaLibrary::Nccl);
        Ok(RanksId(Id::new()?))
    }

    /// Rank `rank` of `world` on `gpu`, joining the others (each on its own thread, all at
    /// once: NCCL's initialisation waits for every rank), its collectives queued on
    /// `stream` (of `gpu`'s context). The thread is bound to `gpu`'s context first, as NCCL
    /// takes the current device.
    pub fn join(
        gpu: &Gpu,
        stream: Arc<CudaStream>,
        rank: usize,
        world: usize,
        id: RanksId,
    ) -> Result<Self, GpuError> {
        if world == 1 {
            return Ok(Self::single());
        }
        gpu.device.context.bind_to_thread()?;
        super::libraries::load(super::libraries::CudaLibrary::Nccl);
        let comm = Comm::from_rank(stream, rank, world, id.0)?;
        Ok(Ranks {
            rank,
            world,
            comm: Some(comm),
        })
    }

    /// This GPU's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of GPUs.
    pub fn world(&self) -> usize {
        self.world
    }

    /// Replaces `buf` on every rank by the element-wise sum of every rank's `buf`
    /// (nothing on one GPU). Integer sums wrap, as the exact sums' words expect
    /// ([`super::sum`]): their totals are then the same whatever the number of GPUs.
    pub fn sum<T: NcclType, B: DevicePtrMut<T>>(&self, buf: &mut B) -> Result<(), GpuError> {
        if let Some(comm) = &self.comm {
            comm.all_reduce_in_place(buf, &ReduceOp::Sum)?;
        }
        Ok(())
    }

    /// Rank r's `own` (each rank's of the same length) into block r of `all`
    /// (`world` · `own.len()` long), on the communicator's stream; on one GPU a copy on
    /// `stream`.
    pub fn all_gather(
        &self,
        own: &CudaView<'_, f32>,
        all: &mut CudaSlice<f32>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        match &self.comm {
            Some(comm) => {
                comm.all_gather(own, all)?;
            }
            None => stream.memcpy_dtod(own, &mut all.slice_mut(..own.len()))?,
        }
        Ok(())
    }

    /// Sends `data` to rank `peer`, which receives it with [`Ranks::recv`] (in the same
    /// order as the other messages between the two).
    pub fn send<T: NcclType>(&self, data: &CudaView<'_, T>, peer: usize) -> Result<(), GpuError> {
        self.comm()?.send(data, peer as i32)?;
        Ok(())
    }

    /// Receives into `buf` what rank `from` sent with [`Ranks::send`].
    pub fn recv<T: NcclType>(
        &self,
        buf: &mut CudaViewMut<'_, T>,
        from: usize,
    ) -> Result<(), GpuError> {
        self.comm()?.recv(buf, from as i32)?;
        Ok(())
    }

    fn comm(&self) -> Result<&Comm, GpuError> {
        self.comm
            .as_ref()
            .ok_or_else(|| GpuError::Nccl("a message between GPUs in a run on one GPU".into()))
    }
}
