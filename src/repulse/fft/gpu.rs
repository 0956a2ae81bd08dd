//! FFT-accelerated repulsion on the GPU: the CPU path's method and grid (same [`Grid`]
//! nodes, on a sparser ladder of node counts: [`Ladder::Sparse`]; same stencil, same
//! self-term correction of Z), its sub-stages on the device beside their CPU
//! twins: S2G ([`crate::repulse::s2g::gpu`]), the zero-padding-free G2G with cuFFT
//! ([`crate::repulse::g2g::gpu`]), G2S and Phi2Force. Grids, FFTs and potentials are in
//! `f32` or `f64` ([`DeviceReal`]), as [`super::FftRepulsion`]'s are on the CPU; work goes to
//! one stream, the process's or a dedicated one (the hybrid backend's, so that its copies
//! overlap the CPU's work).
//!
//! Per call the only host round trips are the bounding box (6 words, needed to place the
//! grid; [`RepulseGpu::prefetch`] sends it ahead) and Z (1 word, read when the call is
//! collected).
//!
//! Over several GPUs ([`RepulseGpu::enqueue_rows`]) each places the same grid from the box
//! of every point, spreads its own points' charges, and the grids are summed (NCCL, a few
//! MB); each then convolves the whole grid for its share of the parity patterns, and the
//! parts of the potentials are summed (a few MB again); each gathers its points'
//! potentials, and Z is summed before the forces divide by it.

use std::sync::Arc;

use cudarc::driver::{sys::CUevent_flags, CudaEvent, CudaSlice, CudaStream, PinnedHostSlice};

use crate::gpu::comm::Ranks;
use crate::gpu::kernels::repulse::GridGeom;
use crate::gpu::kernels::s2g::charge_stride;
use crate::gpu::memory::pinned;
use crate::gpu::real::DeviceReal;
use crate::gpu::{Gpu, GpuError};
use crate::kernel::Kernel;
use crate::repulse::g2g::gpu::ConvolverGpu;
use crate::repulse::g2s::gpu::gather_device;
use crate::repulse::grid::{Ladder, MAX_TOTAL_NODES};
use crate::repulse::near::gpu::NearGpu;
use crate::repulse::phi2force::gpu::phi2force_device;
use crate::repulse::s2g::gpu::{BoundsGpu, ScatterGpu};
use crate::repulse::{
    check_device_args, Grid, GridSpec, Pending, RepulseGpu, RepulseTimes, Repulsion,
};
use crate::{Error, Result};

/// The GPU twin of [`super::FftRepulsion`]: grids in `T` (`f32` by default, `f64` for
/// `--precision f64`).
pub struct FftRepulsionGpu<T: DeviceReal = f32> {
    gpu: &'static Gpu,
    stream: Arc<CudaStream>,
    spec: GridSpec,
    /// The adaptive grid's node budget ([`Grid::fit_box_within`]).
    max_nodes: usize,
    bounds: BoundsGpu,
    scatter: ScatterGpu,
    convolver: ConvolverGpu<T>,
    near: NearGpu,
    /// The gathered potentials, n × (2 + dims), grown on demand.
    pot: Option<CudaSlice<T>>,
    /// Z, an exact sum ([`crate::gpu::sum`]).
    z: CudaSlice<u64>,
    /// Two calls in flight at most: each has its events, Z on the host and grid size.
    slots: [Slot; 2],
    next: usize,
}

/// One call's timing events (around S2G, G2G, G2S, the near field, Phi2Force), Z and grid.
struct Slot {
    events: [CudaEvent; 6],
    z_host: PinnedHostSlice<u64>,
    /// Recorded after the copy into `z_host`.
    z_ready: CudaEvent,
    grid: usize,
    /// Host seconds spent preparing the grid size (see [`Repulsion::replan_seconds`]).
    replan: f64,
}

impl Slot {
    fn new(gpu: &Gpu) -> std::result::Result<Self, GpuError> {
        let ev = || {
            gpu.device
                .context
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        };
        Ok(Slot {
            events: [ev()?, ev()?, ev()?, ev()?, ev()?, ev()?],
            z_host: pinned(gpu, crate::gpu::sum::WORDS, 0)?,
            z_ready: ev()?,
            grid: 0,
            replan: 0.0,
        })
    }
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
        Ok(FftRepulsionGpu {
            gpu,
            bounds: BoundsGpu::new(gpu, &stream)?,
            scatter: ScatterGpu::new(&stream)?,
            convolver: ConvolverGpu::new(stream.clone())?,
            near: NearGpu::new(),
            pot: None,
            z: stream.alloc_zeros::<u64>(crate::gpu::sum::WORDS)?,
            slots: [Slot::new(gpu)?, Slot::new(gpu)?],
            next: 0,
            stream,
            spec,
            max_nodes: MAX_TOTAL_NODES,
        })
    }

    /// The same with the heavy-tailed `kernel` ([`Kernel`]) in place of the Cauchy one, on
    /// the grid [`GridSpec::for_kernel`] makes of this one (as [`super::FftRepulsion`]'s).
    pub fn with_kernel(mut self, kernel: Kernel) -> Self {
        self.spec = self.spec.for_kernel(kernel);
        self.convolver.kernel.kernel = kernel;
        self
    }

    /// The same with a near field when `near_field` (Cauchy kernel only; as
    /// [`super::FftRepulsion::with_near_field`]). One GPU only: over several, the grid keeps
    /// the whole kernel.
    pub fn with_near_field(mut self, near_field: bool) -> Self {
        self.convolver.kernel = self.convolver.kernel.with_near_field(near_field, self.spec);
        self
    }

    /// The same with an adaptive grid held to `max_nodes` nodes in all
    /// ([`Grid::fit_box_within`]; [`MAX_TOTAL_NODES`] by default).
    pub fn with_max_nodes(mut self, max_nodes: usize) -> Self {
        self.max_nodes = max_nodes;
        self
    }

    /// The same with S2G in fixed point when `deterministic` (`--deterministic`): the grid,
    /// and so the forces, then repeat bit for bit from run to run
    /// (see `kernels/s2g.cu`).
    pub fn with_deterministic(mut self, deterministic: bool) -> Self {
        self.scatter.set_deterministic(deterministic);
        self
    }

    /// Places the grid on the host from the bounding box reduced on the device (sent by
    /// [`RepulseGpu::prefetch`], or now).
    fn fit_grid(&mut self, y: &CudaSlice<f32>, n: usize, dims: usize) -> Result<Grid> {
        let (lo, hi) = self.bounds.read::<T>(self.gpu, &self.stream, y, n, dims)?;
        let mut lo64 = [0f64; 3];
        let mut hi64 = [0f64; 3];
        for a in 0..dims {
            (lo64[a], hi64[a]) = (lo[a] as f64, hi[a] as f64);
            if !(lo64[a].is_finite() && hi64[a].is_finite()) {
                return Err(Error::param("y", "an embedding coordinate is not finite"));
            }
        }
        Grid::fit_box_within(lo64, hi64, dims, self.spec, Ladder::Sparse, self.max_nodes)
    }

    /// Queues the four stages for the n points `y` into timing slot `slot`, Z on its way to
    /// the slot's host copy. In a run over several GPUs `y` are this GPU's points, and the
    /// charges on the grid and Z are summed over every GPU's (`ranks`) before they are used.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        (y, n): (&CudaSlice<f32>, usize),
        dims: usize,
        grid: &Grid,
        force: &mut CudaSlice<f32>,
        slot: usize,
        ranks: &Ranks,
    ) -> std::result::Result<(), GpuError> {
        let gpu = self.gpu;
        let s = &self.stream;
        let prepare = std::time::Instant::now();
        self.convolver.share(ranks.rank(), ranks.world());
        self.convolver.prepare(gpu, grid)?;
        if self.pot.as_ref().is_none_or(|p| p.len() < n * (2 + dims)) {
            self.pot = Some(s.alloc_zeros(n * (2 + dims))?);
        }
        let pot = self.pot.as_mut().expect("potentials just made");
        let replan = prepare.elapsed().as_secs_f64();
        let geom = GridGeom::of(grid);
        let kernel = self.convolver.kernel.kernel;
        let events = &self.slots[slot].events;

        events[0].record(s)?;
        // Step 1: S2G.
        let charges = self.convolver.charges(grid)?;
        self.scatter.run(gpu, s, y, n, dims, &geom, charges)?;
        ranks.sum(&mut charges.slice_mut(..charge_stride(dims) * grid.len()))?;
        events[1].record(s)?;
        // Step 2: G2G, every parity pattern at once (this GPU's share of them, its part of
        // the potentials summed over the GPUs).
        let phi = self.convolver.convolve(gpu, grid)?;
        if ranks.world() > 1 {
            ranks.sum(&mut phi.slice_mut(..(2 + dims) * grid.len()))?;
        }
        events[2].record(s)?;
        // Step 3: G2S (and Z).
        let sorted = self.scatter.sorted();
        gather_device(
            gpu,
            s,
            (y, n, dims),
            (geom, kernel),
            sorted,
            phi,
            pot,
            &mut self.z,
        )?;
        events[3].record(s)?;
        // Step 3b: the near field's short-range sums (one GPU: S2G sorted all the points).
        if let Some(near) = self.convolver.kernel.near(grid.h) {
            let cells = (sorted, self.scatter.cell_starts());
            self.near
                .add(gpu, s, (y, n, dims), (geom, &near), cells, pot, &mut self.z)?;
        }
        ranks.sum(&mut self.z)?;
        events[4].record(s)?;
        // Step 4: Phi2Force.
        phi2force_device(gpu, s, (y, n, dims), geom, pot, &self.z, force)?;
        events[5].record(s)?;

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
        let z = crate::gpu::sum::value(slot.z_host.as_slice()?);
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
                near: ms(3, 4)?,
                phi2force: ms(4, 5)?,
            },
            replan_seconds: slot.replan,
        })
    }
}

impl<T: DeviceReal> RepulseGpu for FftRepulsionGpu<T> {
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
        self.run((y, n), dims, &grid, force, slot, &Ranks::single())?;
        Ok(Pending::Slot(slot))
    }

    fn enqueue_rows(
        &mut self,
        (y_all, n_all): (&CudaSlice<f32>, usize),
        (own, n_own): (&CudaSlice<f32>, usize),
        dims: usize,
        force: &mut CudaSlice<f32>,
        ranks: &Ranks,
    ) -> Result<Pending> {
        check_device_args(n_all, dims, y_all.len(), n_all * dims)?;
        check_device_args(n_own, dims, own.len(), force.len())?;
        if self.convolver.kernel.near_field {
            return Err(Error::param(
                "near-field",
                "the near field runs on one GPU only (use --near-field off with --gpus)",
            ));
        }
        let grid = self.fit_grid(y_all, n_all, dims)?;
        let slot = self.next;
        self.next ^= 1;
        self.run((own, n_own), dims, &grid, force, slot, ranks)?;
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
        Ok(self.bounds.send::<T>(self.gpu, &self.stream, y, n, dims)?)
    }

    fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
}

#[cfg(test)]
mod tests;
