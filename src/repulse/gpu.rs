//! FFT-accelerated repulsion on the GPU: the CPU path's method and grid (same [`Grid`], same
//! stencil, same self-term correction of Z), with binned S2G ([`super::s2g_gpu`]), cuFFT for the zero-padding-free
//! G2G, a gathering G2S and Phi2Force (`kernels/s2g.cu`, `g2g.cu`, `g2s.cu`,
//! `phi2force.cu`). Grids, FFTs and potentials are in `f32` or `f64` ([`DeviceReal`]), as
//! [`super::FftRepulsion`]'s are on the CPU; work goes to one stream, the process's or a
//! dedicated one (the hybrid backend's, so that its copies overlap the CPU's work).
//!
//! Per call the only host round trip is the bounding box (6 words, needed to place the
//! grid; [`DeviceRepulse::prefetch`] sends it ahead) and Z (1 word, read when the call is
//! collected). FFT plans are made once per grid size and kept ([`GridFft`]: no work area
//! of their own, so making one neither allocates nor synchronises); buffers only grow,
//! and the kernel spectra are recomputed when the size or the spacing
//! changes (with `--grid auto` the spacing is fixed once the embedding has grown).

use std::collections::hash_map::{Entry, HashMap};
use std::sync::Arc;

use cudarc::cufft::FftDirection;
use cudarc::driver::{
    sys::CUevent_flags, CudaEvent, CudaSlice, CudaStream, DeviceRepr, PinnedHostSlice,
    PushKernelArg,
};

use super::grid::max_nodes_per_axis;
use super::s2g_gpu::BinnedScatter;
use super::{Grid, GridSpec, Repulse, RepulseTimes, Repulsion};
use crate::gpu::fft::GridFft;
use crate::gpu::kernels::KernelId;
use crate::gpu::real::DeviceReal;
use crate::gpu::{Gpu, GpuError};
use crate::{Error, Result};

/// Blocks of the bounding-box pass per multiprocessor: enough to stream `y`, few enough
/// that their atomics on the six words of the box do not queue.
const BOUNDS_BLOCKS_PER_SM: usize = 2;

/// A repulsion whose Y and forces live on the device: writes F_rep of `y` (n × dims) into
/// `force` and returns Z, on the stream it was made for.
///
/// Besides the blocking [`DeviceRepulse::repulse_device`], an optimiser can keep the device
/// busy across iterations: [`DeviceRepulse::prefetch`] before queueing other work on `y`
/// (the attraction), [`DeviceRepulse::enqueue`] to queue the forces, and
/// [`DeviceRepulse::collect`] the result later (after queueing the update), with at most
/// two calls outstanding.
pub trait DeviceRepulse: Send {
    /// Queues F_rep of `y` into `force`; Z and the stage times come from
    /// [`DeviceRepulse::collect`].
    fn enqueue(
        &mut self,
        y: &CudaSlice<f32>,
        n: usize,
        dims: usize,
        force: &mut CudaSlice<f32>,
    ) -> Result<Pending>;

    /// Z and the times of an [`DeviceRepulse::enqueue`]d call, waiting for it to finish.
    fn collect(&mut self, pending: Pending) -> Result<Repulsion> {
        match pending {
            Pending::Done(rep) => Ok(rep),
            Pending::Slot(_) => Err(Error::param(
                "pending",
                "a queued repulsion was collected by a method that did not queue it",
            )),
        }
    }

    /// Starts what [`DeviceRepulse::enqueue`] of the same `y` will need on the host (the FFT
    /// repulsion's bounding box), so that it travels while the caller queues other work.
    fn prefetch(&mut self, _y: &CudaSlice<f32>, _n: usize, _dims: usize) -> Result<()> {
        Ok(())
    }

    /// F_rep of `y` into `force` and Z, once they are done.
    fn repulse_device(
        &mut self,
        y: &CudaSlice<f32>,
        n: usize,
        dims: usize,
        force: &mut CudaSlice<f32>,
    ) -> Result<Repulsion> {
        let pending = self.enqueue(y, n, dims, force)?;
        self.collect(pending)
    }

    /// The stream its work goes to.
    fn stream(&self) -> &Arc<CudaStream>;
}

/// A repulsion queued by [`DeviceRepulse::enqueue`].
#[derive(Debug)]
pub enum Pending {
    /// Already finished (methods that wait anyway).
    Done(Repulsion),
    /// Running in the repulsion's timing slot.
    Slot(usize),
}

/// Grid geometry as the kernels take it (`GridGeom` in `kernels/repulse.cuh`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct GridGeom {
    pub(crate) p: i32,
    h: f32,
    inv_h: f32,
    origin: [f32; 3],
    centre: [f32; 3],
}

// SAFETY: plain `#[repr(C)]` data with the layout of the CUDA struct (8 × 4 bytes).
unsafe impl DeviceRepr for GridGeom {}

impl GridGeom {
    fn of(grid: &Grid) -> Self {
        GridGeom {
            p: grid.p as i32,
            h: grid.h as f32,
            inv_h: (1.0 / grid.h) as f32,
            origin: grid.origin.map(|v| v as f32),
            centre: grid.centre.map(|v| v as f32),
        }
    }
}

/// Buffers of the current grid, in precision `T`, with room for `capacity` nodes per grid:
/// a grid of fewer nodes uses their prefixes, so most size changes allocate nothing.
/// (With buffers made anew at every change, a 1.3M-point run's 60–80 changes cost
/// 0.07–0.49 s of host time; grown only, 0.07–0.22 s.)
struct Workspace<T: DeviceReal> {
    dims: usize,
    capacity: usize,
    /// The grid the spectra are for: nodes per axis and spacing.
    spectra_for: Option<(usize, f64)>,
    charges: CudaSlice<T>,
    /// Ping-pong buffers of 2^dims · (2 + dims) grids, every pattern at once
    /// (`kernels/g2g.cu`): modulated charges in `ping`, their FFTs in `pong`, the products
    /// with the spectra back in `ping`, the potentials' inverse FFTs in `pong`.
    ping: CudaSlice<T::Complex>,
    pong: CudaSlice<T::Complex>,
    phi: CudaSlice<T>,
    /// The kernels' FFTs, 2 grids per pattern.
    spectra: CudaSlice<T::Complex>,
}

impl<T: DeviceReal> Workspace<T> {
    /// Buffers for grids of up to `len` nodes in `dims` dimensions, on `stream`.
    fn new(s: &Arc<CudaStream>, dims: usize, len: usize) -> std::result::Result<Self, GpuError> {
        let (c_in, c_out, patterns) = (1 + dims, 2 + dims, 1 << dims);
        Ok(Workspace {
            dims,
            capacity: len,
            spectra_for: None,
            charges: s.alloc_zeros(c_in * len)?,
            ping: s.alloc_zeros(patterns * c_out * len)?,
            pong: s.alloc_zeros(patterns * c_out * len)?,
            phi: s.alloc_zeros(c_out * len)?,
            spectra: s.alloc_zeros(patterns * 2 * len)?,
        })
    }
}

/// The two FFT plans of one (dims, p): forward over the 2^dims · (1 + dims) modulated
/// charge grids (also used for the 2^dims · 2 kernel grids), inverse over the
/// 2^dims · (2 + dims) potential grids.
struct Plans {
    forward: GridFft,
    inverse: GridFft,
}

/// The GPU twin of [`super::FftRepulsion`]: grids in `T` (`f32` by default, `f64` for
/// `--precision f64`).
pub struct FftRepulsionGpu<T: DeviceReal = f32> {
    gpu: &'static Gpu,
    stream: Arc<CudaStream>,
    spec: GridSpec,
    /// Buffers of the current grid size.
    ws: Option<Workspace<T>>,
    /// FFT plans of every (dims, p) used so far: the adaptive grid steps back and forth
    /// between neighbouring sizes, and a plan without a work area costs little to keep.
    plans: HashMap<(usize, usize), Plans>,
    /// The plans' shared work area ([`GridFft`]), grown to the largest need.
    fft_work: CudaSlice<u8>,
    pot: Option<CudaSlice<T>>,
    scatter: BinnedScatter,
    z: CudaSlice<f64>,
    /// Per-axis order-preserving keys of the box: minima (3), then maxima (3).
    bounds: CudaSlice<u32>,
    bounds_host: PinnedHostSlice<u32>,
    /// Recorded after the copy into `bounds_host`. (A pinned slice's own event is recorded
    /// only when cudarc manages several streams, so it cannot be relied on here.)
    bounds_ready: CudaEvent,
    /// Whether `bounds_host` is on its way for the next call ([`DeviceRepulse::prefetch`]).
    prefetched: bool,
    /// Two calls in flight at most: each has its events, Z on the host and grid size.
    slots: [Slot; 2],
    next: usize,
}

/// One call's timing events (around S2G, G2G, G2S, Phi2Force), Z and grid.
struct Slot {
    events: [CudaEvent; 5],
    z_host: PinnedHostSlice<f64>,
    /// Recorded after the copy into `z_host`.
    z_ready: CudaEvent,
    grid: usize,
    /// Host seconds spent preparing the grid size (see [`Repulsion::replan_seconds`]).
    replan: f64,
}

/// Inverse of the order-preserving key of `kernels/s2g.cu`.
fn key_to_f32(k: u32) -> f32 {
    f32::from_bits(if k & 0x8000_0000 != 0 {
        k & 0x7fff_ffff
    } else {
        !k
    })
}

impl FftRepulsionGpu<f32> {
    /// A single-precision repulsion on `gpu`'s stream with grid `spec`.
    pub fn new(gpu: &'static Gpu, spec: GridSpec) -> Result<Self> {
        Self::on_stream(gpu, gpu.stream.clone(), spec)
    }
}

impl<T: DeviceReal> FftRepulsionGpu<T> {
    /// A repulsion with grids in `T` whose work goes to `stream` (of `gpu`'s context), with
    /// grid `spec`; buffers come with the first call.
    pub fn on_stream(gpu: &'static Gpu, stream: Arc<CudaStream>, spec: GridSpec) -> Result<Self> {
        let s = &stream;
        let ctx = &gpu.device.context;
        let ev = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT));
        let slot = || -> std::result::Result<Slot, GpuError> {
            Ok(Slot {
                events: [ev()?, ev()?, ev()?, ev()?, ev()?],
                // SAFETY: read only after a copy into it has completed (z_ready).
                z_host: unsafe { ctx.alloc_pinned_with_flags::<f64>(1, 0)? },
                z_ready: ev()?,
                grid: 0,
                replan: 0.0,
            })
        };
        let alloc = || -> std::result::Result<_, GpuError> {
            Ok((
                s.alloc_zeros::<f64>(1)?,
                s.alloc_zeros::<u32>(6)?,
                // SAFETY: read only after a copy into it has completed (bounds_ready).
                unsafe { ctx.alloc_pinned_with_flags::<u32>(6, 0)? },
                ev()?,
                [slot()?, slot()?],
            ))
        };
        let (z, bounds, bounds_host, bounds_ready, slots) = alloc()?;
        let fft_work = s.alloc_zeros::<u8>(1).map_err(GpuError::from)?;
        let scatter = BinnedScatter::new(&stream)?;
        Ok(FftRepulsionGpu {
            gpu,
            stream,
            spec,
            ws: None,
            plans: HashMap::new(),
            fft_work,
            pot: None,
            scatter,
            z,
            bounds,
            bounds_host,
            bounds_ready,
            prefetched: false,
            slots,
            next: 0,
        })
    }

    /// Queues the bounding box's reduction and its trip to the host.
    fn send_bounds(
        &mut self,
        y: &CudaSlice<f32>,
        n: usize,
        dims: usize,
    ) -> std::result::Result<(), GpuError> {
        let s = self.stream.clone();
        s.memcpy_htod(&[u32::MAX, u32::MAX, u32::MAX, 0, 0, 0], &mut self.bounds)?;
        let f =
            self.gpu
                .function_with(KernelId::S2g, T::DEFINES, &format!("s2g_bounds_{dims}d"))?;
        let n32 = n as i32;
        let (mut lo, mut hi) = self.bounds.split_at_mut(3);
        let mut b = s.launch_builder(&f);
        b.arg(&n32).arg(y).arg(&mut lo).arg(&mut hi);
        // Few blocks: each ends in one atomic per word (s2g.cu).
        let config = self.gpu.config_waves(n, BOUNDS_BLOCKS_PER_SM);
        // SAFETY: s2g_bounds contract: y holds n·dims floats, lo/hi 3 words each.
        unsafe { b.launch(config) }?;
        s.memcpy_dtoh(&self.bounds, &mut self.bounds_host)?;
        self.bounds_ready.record(&s)?;
        self.prefetched = true;
        Ok(())
    }

    /// Places the grid on the host from the bounding box reduced on the device (sent by
    /// [`DeviceRepulse::prefetch`], or now).
    fn fit_grid(&mut self, y: &CudaSlice<f32>, n: usize, dims: usize) -> Result<Grid> {
        if !self.prefetched {
            self.send_bounds(y, n, dims)?;
        }
        self.prefetched = false;
        self.bounds_ready.synchronize().map_err(GpuError::from)?;
        let keys = self.bounds_host.as_slice().map_err(GpuError::from)?;
        let mut lo64 = [0f64; 3];
        let mut hi64 = [0f64; 3];
        for a in 0..dims {
            lo64[a] = key_to_f32(keys[a]) as f64;
            hi64[a] = key_to_f32(keys[3 + a]) as f64;
            if !(lo64[a].is_finite() && hi64[a].is_finite()) {
                return Err(Error::param("y", "an embedding coordinate is not finite"));
            }
        }
        Grid::fit_box(lo64, hi64, dims, self.spec)
    }

    /// Makes room for a grid of (`dims`, `p`) in the buffers and its plans ready (made
    /// now if this size is new), with a work area large enough for them.
    fn workspace(&mut self, dims: usize, p: usize) -> std::result::Result<(), GpuError> {
        let len = p.pow(dims as u32);
        if !matches!(&self.ws, Some(w) if w.dims == dims && w.capacity >= len) {
            // Free the old buffers before allocating the new ones, with room for two more
            // size classes (≈ 12.5 % per axis each) as the embedding grows.
            self.ws = None;
            let room = ((p as f64 * 1.27).ceil() as usize).pow(dims as u32);
            let room = room.min(max_nodes_per_axis(dims).pow(dims as u32)).max(len);
            self.ws = Some(Workspace::new(&self.stream, dims, room)?);
        }
        if let Entry::Vacant(slot) = self.plans.entry((dims, p)) {
            let shape = vec![p; dims];
            let patterns = 1 << dims;
            slot.insert(Plans {
                forward: GridFft::new(&shape, patterns * (1 + dims), T::C2C)?,
                inverse: GridFft::new(&shape, patterns * (2 + dims), T::C2C)?,
            });
        }
        let plans = &self.plans[&(dims, p)];
        let need = plans.forward.work_size().max(plans.inverse.work_size());
        if self.fft_work.len() < need {
            self.fft_work = self.stream.alloc_zeros(need)?;
        }
        Ok(())
    }

    /// Queues the four stages into timing slot `slot`, Z on its way to the slot's host copy.
    fn run(
        &mut self,
        y: &CudaSlice<f32>,
        n: usize,
        dims: usize,
        grid: &Grid,
        force: &mut CudaSlice<f32>,
        slot: usize,
    ) -> std::result::Result<(), GpuError> {
        let gpu = self.gpu;
        let function = |id, name: &str| gpu.function_with(id, T::DEFINES, name);
        let stream = self.stream.clone();
        let s = &stream;
        let prepare = std::time::Instant::now();
        self.workspace(dims, grid.p)?;
        let c_out = 2 + dims;
        if self.pot.as_ref().is_none_or(|p| p.len() < n * c_out) {
            self.pot = Some(s.alloc_zeros(n * c_out)?);
        }
        let ws = self.ws.as_mut().expect("workspace just made");
        let plans = &self.plans[&(dims, grid.p)];
        let work = &mut self.fft_work;
        let pot = self.pot.as_mut().expect("potentials just made");
        let geom = GridGeom::of(grid);
        let len = grid.len() as i64;
        let (p32, d32, n32) = (grid.p as i32, dims as i32, n as i32);
        let cfg_grid = gpu.config(grid.len());

        // Kernel spectra, when the spacing changed.
        let patterns = 1usize << dims;
        if ws.spectra_for != Some((grid.p, grid.h)) {
            let f = function(KernelId::G2g, "g2g_kernel")?;
            let h = grid.h as f32;
            let mut b = s.launch_builder(&f);
            b.arg(&len).arg(&p32).arg(&d32).arg(&h).arg(&mut ws.ping);
            // SAFETY: g2g_kernel contract: ping holds 2^dims·2·len complex values (it holds
            // 2^dims·(2+dims)·len).
            unsafe { b.launch(cfg_grid) }?;
            // The forward plan transforms 2^dims · (1 + dims) ≥ 2^dims · 2 grids: the first
            // 2^dims · 2 of its output are the spectra.
            plans
                .forward
                .exec::<T>(s, work, &mut ws.ping, &mut ws.pong, FftDirection::Forward)?;
            let spectra_len = patterns * 2 * grid.len();
            s.memcpy_dtod(
                &ws.pong.slice(..spectra_len),
                &mut ws.spectra.slice_mut(..spectra_len),
            )?;
            ws.spectra_for = Some((grid.p, grid.h));
        }
        let replan = prepare.elapsed().as_secs_f64();

        let events = &self.slots[slot].events;
        events[0].record(s)?;
        // Step 1: S2G.
        s.memset_zeros(&mut ws.charges.slice_mut(..(1 + dims) * grid.len()))?;
        self.scatter
            .run(gpu, s, y, n, dims, &geom, &mut ws.charges)?;
        events[1].record(s)?;

        // Step 2: G2G, every parity pattern at once.
        let modulate = function(KernelId::G2g, "g2g_modulate")?;
        let multiply = function(KernelId::G2g, "g2g_multiply")?;
        let demodulate = function(KernelId::G2g, "g2g_demodulate")?;
        let (c_in32, c_out32) = ((1 + dims) as i32, c_out as i32);
        let mut b = s.launch_builder(&modulate);
        b.arg(&len).arg(&p32).arg(&d32).arg(&c_in32);
        b.arg(&ws.charges).arg(&mut ws.ping);
        // SAFETY: g2g_modulate contract: charges (1+dims)·len values, ping room for
        // 2^dims·(1+dims)·len.
        unsafe { b.launch(cfg_grid) }?;
        plans
            .forward
            .exec::<T>(s, work, &mut ws.ping, &mut ws.pong, FftDirection::Forward)?;
        let mut b = s.launch_builder(&multiply);
        b.arg(&len)
            .arg(&d32)
            .arg(&ws.pong)
            .arg(&ws.spectra)
            .arg(&mut ws.ping);
        // SAFETY: g2g_multiply contract: pong 2^dims·(1+dims)·len, spectra 2^dims·2·len,
        // ping 2^dims·(2+dims)·len complex values.
        unsafe { b.launch(cfg_grid) }?;
        plans
            .inverse
            .exec::<T>(s, work, &mut ws.ping, &mut ws.pong, FftDirection::Inverse)?;
        let mut b = s.launch_builder(&demodulate);
        b.arg(&len).arg(&p32).arg(&d32).arg(&c_out32);
        b.arg(&ws.pong).arg(&mut ws.phi);
        // SAFETY: g2g_demodulate contract: pong 2^dims·(2+dims)·len complex, phi
        // (2+dims)·len values.
        unsafe { b.launch(cfg_grid) }?;
        events[2].record(s)?;

        // Step 3: G2S (and Z).
        s.memset_zeros(&mut self.z)?;
        let f = function(KernelId::G2s, &format!("g2s_gather_{dims}d"))?;
        let mut b = s.launch_builder(&f);
        b.arg(&n32)
            .arg(&geom)
            .arg(y)
            .arg(self.scatter.sorted())
            .arg(&ws.phi)
            .arg(&mut *pot)
            .arg(&mut self.z);
        // SAFETY: g2s_gather contract: order a permutation of 0..n (S2G's, just made), phi
        // (2+dims)·len, pot n·(2+dims), z one double.
        unsafe { b.launch(gpu.config(n)) }?;
        events[3].record(s)?;

        // Step 4: Phi2Force.
        let f = function(KernelId::Phi2force, &format!("phi2force_{dims}d"))?;
        let c = geom.centre;
        let mut b = s.launch_builder(&f);
        b.arg(&n32)
            .arg(&c[0])
            .arg(&c[1])
            .arg(&c[2])
            .arg(y)
            .arg(&*pot)
            .arg(&self.z);
        b.arg(&mut *force);
        // SAFETY: phi2force contract: y and force n·dims, pot n·(2+dims), z one double.
        unsafe { b.launch(gpu.config(n)) }?;
        events[4].record(s)?;

        let slot = &mut self.slots[slot];
        s.memcpy_dtoh(&self.z, &mut slot.z_host)?;
        slot.z_ready.record(s)?;
        slot.grid = grid.p;
        slot.replan = replan;
        Ok(())
    }

    /// Z, stage times and grid of the call in `slot`, once it has finished.
    fn collect_slot(&self, slot: usize) -> std::result::Result<Repulsion, GpuError> {
        let slot = &self.slots[slot];
        slot.z_ready.synchronize()?;
        let z = slot.z_host.as_slice()?[0];
        let e = &slot.events;
        let ms = |a: usize, b: usize| -> std::result::Result<f64, GpuError> {
            Ok(e[a].elapsed_ms(&e[b])? as f64 / 1e3)
        };
        Ok(Repulsion {
            z,
            grid: Some(slot.grid),
            times: RepulseTimes {
                s2g: ms(0, 1)?,
                g2g: ms(1, 2)?,
                g2s: ms(2, 3)?,
                phi2force: ms(3, 4)?,
            },
            replan_seconds: slot.replan,
        })
    }
}

impl<T: DeviceReal> DeviceRepulse for FftRepulsionGpu<T> {
    fn enqueue(
        &mut self,
        y: &CudaSlice<f32>,
        n: usize,
        dims: usize,
        force: &mut CudaSlice<f32>,
    ) -> Result<Pending> {
        check_device_args(n, dims, y.len(), force.len())?;
        let grid = self.fit_grid(y, n, dims)?;
        let slot = self.next;
        self.next ^= 1;
        self.run(y, n, dims, &grid, force, slot)?;
        Ok(Pending::Slot(slot))
    }

    fn collect(&mut self, pending: Pending) -> Result<Repulsion> {
        match pending {
            Pending::Done(rep) => Ok(rep),
            Pending::Slot(slot) => Ok(self.collect_slot(slot)?),
        }
    }

    fn prefetch(&mut self, y: &CudaSlice<f32>, n: usize, dims: usize) -> Result<()> {
        check_device_args(n, dims, y.len(), n * dims)?;
        Ok(self.send_bounds(y, n, dims)?)
    }
    fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
}

/// Shape checks shared by the device repulsions.
pub(crate) fn check_device_args(n: usize, dims: usize, y_len: usize, f_len: usize) -> Result<()> {
    if !(1..=3).contains(&dims) {
        return Err(Error::param(
            "dims",
            format!("must be 1, 2 or 3, got {dims}"),
        ));
    }
    if n < 2 || y_len < n * dims || f_len < n * dims {
        return Err(Error::param(
            "y",
            format!("need ≥ 2 points of {dims} coordinates"),
        ));
    }
    Ok(())
}

/// Host-to-host form of every device repulsion, for tests against the CPU paths: uploads Y
/// and the caller's force buffer as is (so poisoned entries the kernels miss show), runs the
/// repulsion on its stream, downloads the forces.
impl<R: DeviceRepulse> Repulse for R {
    fn repulse(&mut self, y: &[f32], dims: usize, force: &mut [f32]) -> Result<Repulsion> {
        if dims == 0 || y.len() % dims != 0 || force.len() != y.len() {
            return Err(Error::param(
                "y",
                "y and force must both hold n × dims values",
            ));
        }
        let s = self.stream().clone();
        let up = |e| Error::from(GpuError::from(e));
        let y_dev = s.clone_htod(y).map_err(up)?;
        let mut f_dev = s.clone_htod(force).map_err(up)?;
        let out = self.repulse_device(&y_dev, y.len() / dims, dims, &mut f_dev)?;
        s.memcpy_dtoh(&f_dev, force).map_err(up)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
