//! The GPU backend's optimisation: Y, the update, the gains and every force stay on the
//! device; per iteration only the repulsion grid's bounding box and Z (a few words) come
//! back, and the KL's Σ p ln w every `kl_every` iterations, all read while the device
//! works on queued work (see [`optimize_device_observed`]); Y itself only where an observer
//! asks for it ([`Downloaded`]).

use cudarc::driver::{sys::CUevent_flags, CudaEvent, CudaSlice};

use crate::gpu::{Gpu, GpuError};
use crate::kernel::Kernel;
use crate::optim::gpu::OptimizerGpu;
use crate::optim::{stops, Observer, OptimParams, OptimReport, Stop};
use crate::progress::Progress;
use crate::repulse::{Pending, RepulseGpu};
use crate::sparse::{HybGpu, P};
use crate::Result;

/// Device buffers of one optimisation.
struct Buffers {
    attr: CudaSlice<f32>,
    rep: CudaSlice<f32>,
    /// Σ p ln w, an exact sum ([`crate::gpu::sum`]).
    kl: CudaSlice<u64>,
    /// The attraction's fixed-point sums of a deterministic run ([`HybGpu::attract_device`]).
    fixed: Option<CudaSlice<i64>>,
    /// Per iteration parity: around the attraction and around the update, for timing.
    events: [[CudaEvent; 4]; 2],
}

/// An iteration whose repulsion and timings are read one iteration late, so that the host
/// never waits for the device to drain (the next iteration is queued first).
struct InFlight {
    parity: usize,
    repulsion: Pending,
    timed_update: bool,
}

/// Shows the resident Y to an observer of the host Y, downloading it at the iterations the
/// observer asks for only (a synchronous copy on the optimiser's stream, after the step),
/// through page-locked memory into one host buffer kept for the run: the device waits
/// while Y travels, and a copy straight into fresh pageable memory moved 1.4 GB/s on the
/// GPU machines, 60 ms for a 10M-point map at each of `--iters auto`'s checkpoints.
pub struct Downloaded<'a> {
    gpu: &'static Gpu,
    inner: &'a mut dyn Observer<[f32]>,
    host: Vec<f32>,
}

impl<'a> Downloaded<'a> {
    /// `inner` shown the Y of `gpu`'s optimisation.
    pub fn new(gpu: &'static Gpu, inner: &'a mut dyn Observer<[f32]>) -> Self {
        Downloaded {
            gpu,
            inner,
            host: Vec::new(),
        }
    }
}

impl Observer<CudaSlice<f32>> for Downloaded<'_> {
    fn wants(&self, iter: usize) -> bool {
        self.inner.wants(iter)
    }

    fn observe(&mut self, iter: usize, y: &CudaSlice<f32>) -> Result<()> {
        self.host.resize(y.len(), 0.0);
        crate::gpu::memory::dtoh_staged(self.gpu, &y.slice(..), &mut self.host)?;
        self.inner.observe(iter, &self.host)
    }

    fn stop(&self, iter: usize) -> Option<Stop> {
        self.inner.stop(iter)
    }

    fn kl(&mut self, iter: usize, kl: f64) {
        self.inner.kl(iter, kl)
    }
}

/// Runs `params.iters` steps on the device from `y` (n × dims, resident), in place; P in
/// HYB on the device ([`P::into_hyb`]); the embedding's `kernel` for the attraction (`repulse`
/// was built with the same); shows the resident Y to `observer` after the steps
/// it asks for (on the same stream, so it sees each step finished); an observer that stops
/// the run ([`Observer::stop`]) makes the current iteration the last, evaluated for the KL
/// only.
///
/// The host stays about one iteration ahead of the device: per iteration it queues the
/// repulsion's bounding box, the attraction, the repulsion (waiting only for the box, while
/// the device works on the attraction) and the update, then reads the previous iteration's
/// Z and timings, which are done by then. Only the KL iterations (every `kl_every`) wait
/// for their own results.
#[allow(clippy::too_many_arguments)]
pub fn optimize_device_observed(
    gpu: &'static Gpu,
    p: &P,
    kernel: Kernel,
    repulse: &mut Box<dyn RepulseGpu>,
    y: &mut CudaSlice<f32>,
    dims: usize,
    params: &OptimParams,
    progress: &dyn Progress,
    mut observer: Option<&mut dyn Observer<CudaSlice<f32>>>,
) -> Result<OptimReport> {
    params.validate()?;
    let (attract, p_log_p) = (p.hyb()?, p.p_log_p());
    let n = attract.n();
    let s = &gpu.stream;
    let ctx = &gpu.device.context;
    let make = || -> std::result::Result<Buffers, GpuError> {
        let ev = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT));
        Ok(Buffers {
            attr: s.alloc_zeros(n * dims)?,
            rep: s.alloc_zeros(n * dims)?,
            kl: s.alloc_zeros(crate::gpu::sum::WORDS)?,
            fixed: match params.deterministic {
                true => Some(s.alloc_zeros(n * dims)?),
                false => None,
            },
            events: [[ev()?, ev()?, ev()?, ev()?], [ev()?, ev()?, ev()?, ev()?]],
        })
    };
    let mut buf = make()?;
    let mut opt = OptimizerGpu::new(gpu, n, dims)?;
    let mut report = OptimReport::default();
    let mut in_flight: Option<InFlight> = None;
    progress.begin("optimise", params.iters as u64);
    let mut end = params.iters;
    for iter in 0..=params.iters {
        if iter < end && stops(observer.as_deref(), iter, params.iters, &mut report)? {
            end = iter;
        }
        let last = iter == end;
        let parity = iter % 2;
        let with_kl = last || (params.kl_every > 0 && iter % params.kl_every == 0);
        let (repulsion, kl) = evaluate(
            gpu,
            (attract, kernel),
            repulse,
            &mut buf,
            parity,
            y,
            dims,
            with_kl,
        )?;
        let repulsion = match kl {
            Some(plw) => {
                let rep = repulse.collect(repulsion)?;
                let kl = p_log_p - plw + rep.z.ln();
                report.kl_history.push((iter, kl));
                progress.status(&format!("KL {kl:.4}"));
                if let Some(o) = observer.as_mut() {
                    o.kl(iter, kl);
                }
                if last {
                    report.final_kl = kl;
                    report.iterations = iter;
                }
                Pending::Done(rep)
            }
            None => repulsion,
        };
        if !last {
            let e = &buf.events[parity];
            e[2].record(s)?;
            opt.step(gpu, y, &buf.attr, &buf.rep, params.phase(iter), params)?;
            e[3].record(s)?;
        }
        let done = in_flight.replace(InFlight {
            parity,
            repulsion,
            timed_update: !last,
        });
        if let Some(done) = done {
            account(repulse, &buf, done, &mut report)?;
        }
        if !last {
            progress.advance(1);
            if let Some(o) = observer.as_mut().filter(|o| o.wants(iter + 1)) {
                o.observe(iter + 1, y)?;
            }
        } else {
            break;
        }
    }
    if let Some(done) = in_flight {
        account(repulse, &buf, done, &mut report)?;
    }
    progress.end();
    Ok(report)
}

/// Adds a finished iteration's repulsion and attraction/update times to `report`.
fn account(
    repulse: &mut Box<dyn RepulseGpu>,
    buf: &Buffers,
    done: InFlight,
    report: &mut OptimReport,
) -> Result<()> {
    // The repulsion was queued after the attraction, so once it is collected the
    // attraction's events are complete; the update's are waited for.
    let rep = repulse.collect(done.repulsion)?;
    report.add_repulsion(&rep);
    let e = &buf.events[done.parity];
    report.attract_seconds += elapsed(&e[0], &e[1])?;
    if done.timed_update {
        e[3].synchronize()?;
        report.update_seconds += elapsed(&e[2], &e[3])?;
    }
    Ok(())
}

/// Queues the attraction into `buf.attr` (with Σ p ln w when `with_kl`, read back) and the
/// repulsion into `buf.rep`, timed with `buf.events[parity]`.
#[allow(clippy::too_many_arguments)]
fn evaluate(
    gpu: &Gpu,
    (attract, kernel): (&HybGpu, Kernel),
    repulse: &mut Box<dyn RepulseGpu>,
    buf: &mut Buffers,
    parity: usize,
    y: &CudaSlice<f32>,
    dims: usize,
    with_kl: bool,
) -> Result<(Pending, Option<f64>)> {
    let s = &gpu.stream;
    let n = attract.n();
    repulse.prefetch(y, n, dims)?;
    let e = &buf.events[parity];
    e[0].record(s)?;
    if with_kl {
        s.memset_zeros(&mut buf.kl)?;
    }
    let kl = with_kl.then_some(&mut buf.kl);
    attract.attract_device(s, kernel, y, dims, &mut buf.attr, kl, buf.fixed.as_mut())?;
    e[1].record(s)?;
    let rep = repulse.enqueue(y, n, dims, &mut buf.rep)?;
    let kl = match with_kl {
        true => Some(crate::gpu::sum::read(&gpu.stream, &buf.kl)?[0]),
        false => None,
    };
    Ok((rep, kl))
}

fn elapsed(a: &CudaEvent, b: &CudaEvent) -> std::result::Result<f64, GpuError> {
    Ok(a.elapsed_ms(b)? as f64 / 1e3)
}
