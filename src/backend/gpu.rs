//! The GPU backend's optimisation: Y, the update, the gains and every force stay on the
//! device; per iteration only the repulsion grid's bounding box and Z (a few words) come
//! back, and the KL's Σ p ln w every `kl_every` iterations.

use std::sync::Arc;

use cudarc::driver::{sys::CUevent_flags, CudaEvent, CudaSlice, CudaStream};

use crate::attract::gpu::HybGpu;
use crate::embed::{Precision, RepulsionMethod};
use crate::gpu::{Gpu, GpuError};
use crate::optim::gpu::DeviceOptimizer;
use crate::optim::{Observer, OptimParams, OptimReport};
use crate::progress::Progress;
use crate::repulse::exact_gpu::ExactRepulsionGpu;
use crate::repulse::gpu::{DeviceRepulse, FftRepulsionGpu};
use crate::repulse::{GridSpec, Repulsion};
use crate::Result;

/// P resident on the device, with the constants the KL needs.
pub struct DeviceP {
    /// P in HYB.
    pub hyb: HybGpu,
    /// Σ p ln p.
    pub p_log_p: f64,
    /// Stored non-zeros of P.
    pub nnz: usize,
}

/// A repulsion method that runs on the device ([`device_repulsion`]).
pub type DeviceRepulsion = Box<dyn DeviceRepulse>;

/// The device repulsion of `method` (the FFT one with `grid` in `precision`), its work on
/// `stream`.
pub fn device_repulsion(
    gpu: &'static Gpu,
    stream: Arc<CudaStream>,
    method: RepulsionMethod,
    grid: GridSpec,
    precision: Precision,
) -> Result<DeviceRepulsion> {
    Ok(match (method, precision) {
        (RepulsionMethod::Fft, Precision::F32) => {
            Box::new(FftRepulsionGpu::<f32>::on_stream(gpu, stream, grid)?)
        }
        (RepulsionMethod::Fft, Precision::F64) => {
            Box::new(FftRepulsionGpu::<f64>::on_stream(gpu, stream, grid)?)
        }
        (RepulsionMethod::Exact, _) => Box::new(ExactRepulsionGpu::on_stream(gpu, stream)?),
    })
}

/// Device buffers of one optimisation.
struct Buffers {
    attr: CudaSlice<f32>,
    rep: CudaSlice<f32>,
    kl: CudaSlice<f64>,
    /// Around the attraction and around the update, for timing.
    events: [CudaEvent; 4],
}

/// Runs `params.iters` steps on the device from `y` (n × dims, resident), in place.
pub fn optimize_device(
    gpu: &'static Gpu,
    p: &DeviceP,
    repulse: &mut DeviceRepulsion,
    y: &mut CudaSlice<f32>,
    dims: usize,
    params: &OptimParams,
    progress: &dyn Progress,
) -> Result<OptimReport> {
    optimize_device_observed(gpu, p, repulse, y, dims, params, progress, None)
}

/// [`optimize_device`], showing the resident Y to `observer` after the steps it asks for
/// (on the same stream, so it sees each step finished).
#[allow(clippy::too_many_arguments)]
pub fn optimize_device_observed(
    gpu: &'static Gpu,
    p: &DeviceP,
    repulse: &mut DeviceRepulsion,
    y: &mut CudaSlice<f32>,
    dims: usize,
    params: &OptimParams,
    progress: &dyn Progress,
    mut observer: Option<&mut dyn Observer<CudaSlice<f32>>>,
) -> Result<OptimReport> {
    params.validate()?;
    let (attract, p_log_p) = (&p.hyb, p.p_log_p);
    let n = attract.n();
    let s = &gpu.stream;
    let ctx = &gpu.device.context;
    let make = || -> std::result::Result<Buffers, GpuError> {
        let ev = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT));
        Ok(Buffers {
            attr: s.alloc_zeros(n * dims)?,
            rep: s.alloc_zeros(n * dims)?,
            kl: s.alloc_zeros(1)?,
            events: [ev()?, ev()?, ev()?, ev()?],
        })
    };
    let mut buf = make()?;
    let mut opt = DeviceOptimizer::new(gpu, n, dims)?;
    let mut report = OptimReport::default();
    progress.begin("optimise", params.iters as u64);
    for iter in 0..params.iters {
        let phase = params.phase(iter);
        let with_kl = params.kl_every > 0 && iter % params.kl_every == 0;
        let (rep, kl) = evaluate(gpu, attract, repulse, &mut buf, y, dims, with_kl)?;
        report.add_repulsion(&rep);
        report.attract_seconds += elapsed(&buf.events[0], &buf.events[1])?;
        if iter > 0 {
            report.update_seconds += elapsed(&buf.events[2], &buf.events[3])?;
        }
        if let Some(plw) = kl {
            let kl = p_log_p - plw + rep.z.ln();
            report.kl_history.push((iter, kl));
            progress.status(&format!("KL {kl:.4}"));
        }
        buf.events[2].record(s).map_err(GpuError::from)?;
        opt.step(gpu, y, &buf.attr, &buf.rep, phase, params)?;
        buf.events[3].record(s).map_err(GpuError::from)?;
        progress.advance(1);
        if let Some(o) = observer.as_mut().filter(|o| o.wants(iter + 1)) {
            o.observe(iter + 1, y)?;
        }
    }
    let (rep, kl) = evaluate(gpu, attract, repulse, &mut buf, y, dims, true)?;
    if params.iters > 0 {
        report.update_seconds += elapsed(&buf.events[2], &buf.events[3])?;
    }
    let kl = p_log_p - kl.unwrap_or(f64::NAN) + rep.z.ln();
    report.kl_history.push((params.iters, kl));
    report.final_kl = kl;
    report.final_grid = rep.grid;
    progress.end();
    Ok(report)
}

/// Attraction into `buf.attr` (with Σ p ln w when `with_kl`), repulsion into `buf.rep`.
fn evaluate(
    gpu: &Gpu,
    attract: &HybGpu,
    repulse: &mut DeviceRepulsion,
    buf: &mut Buffers,
    y: &CudaSlice<f32>,
    dims: usize,
    with_kl: bool,
) -> Result<(Repulsion, Option<f64>)> {
    let s = &gpu.stream;
    let up = |e| crate::Error::from(GpuError::from(e));
    buf.events[0].record(s).map_err(up)?;
    if with_kl {
        s.memset_zeros(&mut buf.kl).map_err(up)?;
        attract.attract_device(y, dims, &mut buf.attr, Some(&mut buf.kl))?;
    } else {
        attract.attract_device(y, dims, &mut buf.attr, None)?;
    }
    buf.events[1].record(s).map_err(up)?;
    let rep = repulse.repulse_device(y, attract.n(), dims, &mut buf.rep)?;
    let kl = if with_kl {
        let mut v = [0f64];
        s.memcpy_dtoh(&buf.kl, &mut v).map_err(up)?;
        Some(v[0])
    } else {
        None
    };
    Ok((rep, kl))
}

fn elapsed(a: &CudaEvent, b: &CudaEvent) -> std::result::Result<f64, GpuError> {
    Ok(a.elapsed_ms(b)? as f64 / 1e3)
}
