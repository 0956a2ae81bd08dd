//! G2G on the GPU (`kernels/g2g.cu`): the zero-padding-free convolution (DESIGN §2.2) with
//! cuFFT, every parity pattern at once: one batched transform per direction and five
//! launches per call, however many patterns (2^dims) there are. The grids are small (10⁵
//! nodes at 1.3M points) and per-pattern launches left the device mostly waiting between
//! them. Real grids go through the transforms two to a complex grid
//! ([`packed_grids`]): in 2-D 4 transforms per pattern instead of 7, where the G2G is
//! bound by the memory its transforms stream (MNIST's 720² grid: 0.12 of the 0.35 s
//! optimisation on an H200).
//!
//! FFT plans are made once per grid size and kept ([`GridFft`]: no work area of their own,
//! so making one neither allocates nor synchronises); buffers only grow; the kernel spectra
//! are recomputed when the size or the spacing changes.

use std::collections::hash_map::{Entry, HashMap};
use std::ops::Range;
use std::sync::Arc;

use cudarc::cufft::FftDirection;
use cudarc::driver::{CudaSlice, CudaStream};

use crate::gpu::fft::GridFft;
use crate::gpu::kernels::g2g::{packed_grids, G2gDemodulate, G2gKernel, G2gModulate, G2gMultiply};
use crate::gpu::kernels::s2g::charge_stride;
use crate::gpu::real::DeviceReal;
use crate::gpu::{Gpu, GpuError};
use crate::kernel::Kernel;
use crate::repulse::grid::{max_nodes_per_axis, Ladder};
use crate::repulse::near::GridKernel;
use crate::repulse::Grid;

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
    /// Ping-pong buffers of 2^dims · [`packed_grids`] complex grids, every pattern at once
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
    fn new(s: &Arc<CudaStream>, dims: usize, len: usize) -> Result<Self, GpuError> {
        let (c_in, c_out, patterns) = (charge_stride(dims), 2 + dims, 1 << dims);
        let packed = packed_grids(dims);
        Ok(Workspace {
            dims,
            capacity: len,
            spectra_for: None,
            charges: s.alloc_zeros(c_in * len)?,
            ping: s.alloc_zeros(patterns * packed * len)?,
            pong: s.alloc_zeros(patterns * packed * len)?,
            phi: s.alloc_zeros(c_out * len)?,
            spectra: s.alloc_zeros(patterns * 2 * len)?,
        })
    }
}

/// The two FFT plans of one (dims, p) for `count` parity patterns, each over count ·
/// [`packed_grids`] complex grids: forward for the modulated charges (and the count · 2
/// kernel grids, which fit), inverse for the potentials. (The same shape and batch: the
/// cache gives one plan for both.)
struct Plans {
    forward: Arc<GridFft>,
    inverse: Arc<GridFft>,
}

impl Plans {
    /// The batches of the two plans of a `dims`-dimensional grid for `count` patterns.
    fn batches(dims: usize, count: usize) -> [usize; 2] {
        [count * packed_grids(dims); 2]
    }

    /// The two plans of (dims, p) for `count` patterns, from the process's cache.
    fn of<T: DeviceReal>(gpu: &Gpu, dims: usize, p: usize, count: usize) -> Result<Self, GpuError> {
        let shape = vec![p; dims];
        let [forward, inverse] = Plans::batches(dims, count);
        Ok(Plans {
            forward: gpu.fft_plans().get(gpu, &shape, forward, T::C2C)?,
            inverse: gpu.fft_plans().get(gpu, &shape, inverse, T::C2C)?,
        })
    }
}

/// Starts making, on a side thread, the plans of every size class of a `dims`-dimensional
/// grid up to `largest` nodes per axis (capped), smallest first, the order an adaptive grid
/// grows through them, for grids in `T` and `patterns` parity patterns (all 2^dims on one
/// GPU, a share on each of several: [`pattern_share`]). Called while the points are
/// searched, so that a first run's cuFFT planning (2.4 s at 1.3M points on a fresh H100
/// machine) overlaps it.
pub(crate) fn plan_ahead<T: DeviceReal>(
    gpu: &'static Gpu,
    dims: usize,
    largest: usize,
    patterns: usize,
) {
    if patterns == 0 {
        return;
    }
    let plans = classes_up_to(dims, largest)
        .into_iter()
        .flat_map(|p| Plans::batches(dims, patterns).map(|batch| (vec![p; dims], batch, T::C2C)))
        .collect();
    gpu.plan_ahead(plans);
}

/// The size classes of the device's ladder ([`Ladder::Sparse`]) from its smallest to the
/// first at least `largest`, within the cap of a `dims`-dimensional grid.
pub(crate) fn classes_up_to(dims: usize, largest: usize) -> Vec<usize> {
    let cap = max_nodes_per_axis(dims);
    let mut classes = vec![Ladder::Sparse.smallest(dims)];
    while let Some(&p) = classes.last().filter(|&&p| p < largest) {
        let next = Ladder::Sparse.size_class(p + 1, dims);
        if next > cap {
            break;
        }
        classes.push(next);
    }
    classes
}

/// The parity patterns (of 2^dims) that GPU `rank` of `world` convolves in a run over
/// several: contiguous shares of about equal size, some empty when there are more GPUs
/// than patterns.
pub(crate) fn pattern_share(dims: usize, rank: usize, world: usize) -> Range<usize> {
    let total = 1 << dims;
    total * rank / world..total * (rank + 1) / world
}

/// The GPU twin of [`super::Convolver`]: charges in, potentials out, on one stream.
pub(crate) struct ConvolverGpu<T: DeviceReal> {
    stream: Arc<CudaStream>,
    /// The embedding's kernel, whose G1 and G2 (or their long parts) the spectra hold.
    pub(crate) kernel: GridKernel,
    /// This GPU's rank and the number of GPUs sharing the patterns ([`pattern_share`]):
    /// (0, 1) alone.
    share: (usize, usize),
    /// Buffers of the current grid size.
    ws: Option<Workspace<T>>,
    /// FFT plans of every (dims, p) used so far: the adaptive grid steps back and forth
    /// between neighbouring sizes, and a plan without a work area costs little to keep.
    plans: HashMap<(usize, usize), Plans>,
    /// The plans' shared work area ([`GridFft`]), grown to the largest need.
    fft_work: CudaSlice<u8>,
}

impl<T: DeviceReal> ConvolverGpu<T> {
    /// Nothing allocated yet beyond a one-byte work area; buffers come with the first grid.
    /// The Cauchy kernel's spectra; set [`ConvolverGpu::kernel`] before the first grid for
    /// another.
    pub(crate) fn new(stream: Arc<CudaStream>) -> Result<Self, GpuError> {
        Ok(ConvolverGpu {
            fft_work: stream.alloc_zeros::<u8>(1)?,
            stream,
            kernel: Kernel::CAUCHY.into(),
            share: (0, 1),
            ws: None,
            plans: HashMap::new(),
        })
    }

    /// Convolves only the patterns of GPU `rank` of `world` from now on ([`pattern_share`]):
    /// the potentials are then this GPU's part of the sum, for the caller to add up.
    pub(crate) fn share(&mut self, rank: usize, world: usize) {
        if self.share != (rank, world) {
            self.share = (rank, world);
            self.plans.clear();
            if let Some(ws) = self.ws.as_mut() {
                ws.spectra_for = None;
            }
        }
    }

    /// This convolver's patterns of a `dims`-dimensional grid.
    fn patterns(&self, dims: usize) -> Range<usize> {
        pattern_share(dims, self.share.0, self.share.1)
    }

    /// Makes the buffers, plans and kernel spectra ready for `grid`: what a grid size the
    /// convolver has not used just before costs on the host (plans made at first use of a
    /// size, buffers grown, spectra recomputed when the size or spacing changed).
    pub(crate) fn prepare(&mut self, gpu: &Gpu, grid: &Grid) -> Result<(), GpuError> {
        let (dims, p) = (grid.dims, grid.p);
        let len = grid.len();
        if !matches!(&self.ws, Some(w) if w.dims == dims && w.capacity >= len) {
            // Free the old buffers before allocating the new ones, with room for the next
            // size class (12.5–40 % more per axis) as the embedding grows.
            self.ws = None;
            let room = Ladder::Sparse.size_class(p + 1, dims).pow(dims as u32);
            let room = room.min(max_nodes_per_axis(dims).pow(dims as u32)).max(len);
            self.ws = Some(Workspace::new(&self.stream, dims, room)?);
        }
        let patterns = self.patterns(dims);
        if patterns.is_empty() {
            return Ok(());
        }
        if let Entry::Vacant(slot) = self.plans.entry((dims, p)) {
            slot.insert(Plans::of::<T>(gpu, dims, p, patterns.len())?);
        }
        let plans = &self.plans[&(dims, p)];
        let need = plans.forward.work_size().max(plans.inverse.work_size());
        if self.fft_work.len() < need {
            self.fft_work = self.stream.alloc_zeros(need)?;
        }
        let ws = self.ws.as_mut().expect("workspace just made");
        if ws.spectra_for != Some((p, grid.h)) {
            let s = &self.stream;
            G2gKernel::<T> {
                len,
                p,
                dims,
                first: patterns.start,
                count: patterns.len(),
                h: grid.h as f32,
                dof: self.kernel.kernel.dof,
                t0: self.kernel.near(grid.h).map_or(0.0, |near| near.t0),
                kernel: &mut ws.ping,
            }
            .launch(gpu, s, gpu.config(len))?;
            // The forward plan transforms count · packed_grids(dims) ≥ count · 2 grids: the
            // first count · 2 of its output are the spectra.
            let (work, ping, pong) = (&mut self.fft_work, &mut ws.ping, &mut ws.pong);
            plans
                .forward
                .exec::<T>(gpu, s, work, ping, pong, FftDirection::Forward)?;
            let spectra_len = patterns.len() * 2 * len;
            s.memcpy_dtod(
                &ws.pong.slice(..spectra_len),
                &mut ws.spectra.slice_mut(..spectra_len),
            )?;
            ws.spectra_for = Some((p, grid.h));
        }
        Ok(())
    }

    /// The charge grids of `grid` (node-major, [`charge_stride`] reals a node,
    /// [`ConvolverGpu::prepare`]d), zeroed, for S2G to add to.
    pub(crate) fn charges(&mut self, grid: &Grid) -> Result<&mut CudaSlice<T>, GpuError> {
        let ws = self.ws.as_mut().expect("prepared");
        self.stream.memset_zeros(
            &mut ws
                .charges
                .slice_mut(..charge_stride(grid.dims) * grid.len()),
        )?;
        Ok(&mut ws.charges)
    }

    /// Queues the convolution of the charges into the potentials ((2 + dims) channels: ψ,
    /// φ₀, φ_1 … φ_dims), every parity pattern at once (this GPU's share of them, a part
    /// of the potentials, in a run over several: [`ConvolverGpu::share`]); returns the
    /// potentials.
    pub(crate) fn convolve(
        &mut self,
        gpu: &Gpu,
        grid: &Grid,
    ) -> Result<&mut CudaSlice<T>, GpuError> {
        let (dims, p, len) = (grid.dims, grid.p, grid.len());
        let patterns = self.patterns(dims);
        let s = &self.stream;
        let ws = self.ws.as_mut().expect("prepared");
        if patterns.is_empty() {
            s.memset_zeros(&mut ws.phi.slice_mut(..(2 + dims) * len))?;
            return Ok(&mut ws.phi);
        }
        let (first, count) = (patterns.start, patterns.len());
        let plans = &self.plans[&(dims, p)];
        let work = &mut self.fft_work;
        let cfg = gpu.config(len);
        G2gModulate::<T> {
            len,
            p,
            dims,
            first,
            count,
            charges: &ws.charges,
            modulated: &mut ws.ping,
        }
        .launch(gpu, s, cfg)?;
        let (ping, pong) = (&mut ws.ping, &mut ws.pong);
        plans
            .forward
            .exec::<T>(gpu, s, work, ping, pong, FftDirection::Forward)?;
        G2gMultiply::<T> {
            len,
            dims,
            count,
            xhat: &ws.pong,
            spectra: &ws.spectra,
            yhat: &mut ws.ping,
        }
        .launch(gpu, s, cfg)?;
        let (ping, pong) = (&mut ws.ping, &mut ws.pong);
        plans
            .inverse
            .exec::<T>(gpu, s, work, ping, pong, FftDirection::Inverse)?;
        G2gDemodulate::<T> {
            len,
            p,
            dims,
            first,
            count,
            patterns: &ws.pong,
            phi: &mut ws.phi,
        }
        .launch(gpu, s, cfg)?;
        Ok(&mut ws.phi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repulse::grid::MIN_NODES;

    /// The classes planned ahead are the adaptive grid's ladder, up to the first class at
    /// least as large as asked, never past the node cap.
    #[test]
    fn plans_ahead_follow_the_ladder() {
        let c = classes_up_to(2, 500);
        assert_eq!(c[0], Ladder::Sparse.smallest(2));
        assert!(c
            .windows(2)
            .all(|w| w[1] == Ladder::Sparse.size_class(w[0] + 1, 2)));
        assert!(*c.last().unwrap() >= 500 && c[c.len() - 2] < 500);
        let capped = classes_up_to(3, 10_000);
        assert!(*capped.last().unwrap() <= max_nodes_per_axis(3));
        assert!(Ladder::Sparse.size_class(capped.last().unwrap() + 1, 3) > max_nodes_per_axis(3));
        assert_eq!(classes_up_to(1, 1), vec![Ladder::Sparse.smallest(1)]);
        assert_eq!(classes_up_to(3, 1), vec![MIN_NODES]);
    }

    /// The shares cover every pattern once, in order, for any number of GPUs.
    #[test]
    fn pattern_shares_cover_every_pattern_once() {
        for dims in 1..=3 {
            for world in 1..=9 {
                let shares: Vec<_> = (0..world).map(|r| pattern_share(dims, r, world)).collect();
                assert_eq!(shares[0].start, 0);
                assert_eq!(shares[world - 1].end, 1 << dims);
                assert!(shares.windows(2).all(|w| w[0].end == w[1].start));
            }
        }
    }

    crate::gpu::gpu_test! {
        /// The potentials of every GPU's share of the patterns add up to those of all the
        /// patterns at once, in 1-D, 2-D and 3-D, for 2 to 5 GPUs (some shares empty).
        fn pattern_shares_add_up_to_the_whole(gpu) {
            use rand::{rngs::StdRng, Rng, SeedableRng};
            let mut rng = StdRng::seed_from_u64(11);
            for dims in 1..=3 {
                let grid = Grid::fit_box(
                    [-3.0, -2.0, -1.0],
                    [4.0, 5.0, 6.0],
                    dims,
                    crate::repulse::GridSpec::Fixed(24),
                    Ladder::Sparse,
                )
                .unwrap();
                let len = grid.len();
                let charges: Vec<f32> =
                    (0..charge_stride(dims) * len).map(|_| rng.random_range(-1.0..1.0)).collect();
                let run = |rank: usize, world: usize| {
                    let mut c = ConvolverGpu::<f32>::new(gpu.stream.clone()).unwrap();
                    c.share(rank, world);
                    c.prepare(gpu, &grid).unwrap();
                    let dst = c.charges(&grid).unwrap();
                    gpu.stream
                        .memcpy_htod(&charges, &mut dst.slice_mut(..charges.len()))
                        .unwrap();
                    let phi = c.convolve(gpu, &grid).unwrap();
                    gpu.stream
                        .clone_dtoh(&phi.slice(..(2 + dims) * len))
                        .unwrap()
                };
                let whole = run(0, 1);
                let scale = whole.iter().fold(0f32, |m, v| m.max(v.abs()));
                for world in 2..=5 {
                    let mut sum = vec![0f32; whole.len()];
                    for rank in 0..world {
                        for (s, v) in sum.iter_mut().zip(run(rank, world)) {
                            *s += v;
                        }
                    }
                    let worst = whole
                        .iter()
                        .zip(&sum)
                        .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
                    assert!(
                        worst <= 1e-5 * scale,
                        "{dims}-D over {world} GPUs: max |Δφ| {worst} at scale {scale}"
                    );
                }
            }
        }
    }
}
