//! FFT-accelerated repulsion on the GPU: the CPU path's method and grid (same [`Grid`], same
//! stencil, same self-term correction of Z), with binned S2G ([`super::s2g_gpu`]), cuFFT for the zero-padding-free
//! G2G, a gathering G2S and Phi2Force (`kernels/s2g.cu`, `g2g.cu`, `g2s.cu`,
//! `phi2force.cu`). Grids, FFTs and potentials are in `f32` or `f64` ([`DeviceReal`]), as
//! [`super::FftRepulsion`]'s are on the CPU; work goes to one stream, the process's or a
//! dedicated one (the hybrid backend's, so that its copies overlap the CPU's work).
//!
//! Per call the only host round trip is the bounding box (6 words, needed to place the
//! grid) and Z (1 word). Plans and buffers are kept per grid size, kernel spectra per
//! (size, spacing): with `--grid auto` the spacing is fixed once the embedding has grown,
//! so spectra and plans are rebuilt only when the size class changes.

use std::sync::Arc;

use cudarc::cufft::{CudaFft, FftDirection};
use cudarc::driver::{
    sys::CUevent_flags, CudaEvent, CudaSlice, CudaStream, DeviceRepr, PushKernelArg,
};

use super::s2g_gpu::BinnedScatter;
use super::{Grid, GridSpec, Repulse, RepulseTimes, Repulsion};
use crate::gpu::kernels::KernelId;
use crate::gpu::real::DeviceReal;
use crate::gpu::{Gpu, GpuError};
use crate::{Error, Result};

/// A repulsion whose Y and forces live on the device: writes F_rep of `y` (n × dims) into
/// `force` and returns Z, on the stream it was made for.
pub trait DeviceRepulse: Send {
    fn repulse_device(
        &mut self,
        y: &CudaSlice<f32>,
        n: usize,
        dims: usize,
        force: &mut CudaSlice<f32>,
    ) -> Result<Repulsion>;

    /// The stream its work goes to.
    fn stream(&self) -> &Arc<CudaStream>;
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

/// Buffers and plans for one (dims, p), in precision `T`.
struct Workspace<T: DeviceReal> {
    dims: usize,
    p: usize,
    /// Spacing the spectra were computed for.
    spectra_h: Option<f64>,
    charges: CudaSlice<T>,
    x: CudaSlice<T::Complex>,
    xhat: CudaSlice<T::Complex>,
    yhat: CudaSlice<T::Complex>,
    yout: CudaSlice<T::Complex>,
    phi: CudaSlice<T>,
    kbuf: CudaSlice<T::Complex>,
    spectra: CudaSlice<T::Complex>,
    fft_in: CudaFft,
    fft_kernel: CudaFft,
    fft_out: CudaFft,
}

/// The GPU twin of [`super::FftRepulsion`]: grids in `T` (`f32` by default, `f64` for
/// `--precision f64`).
pub struct FftRepulsionGpu<T: DeviceReal = f32> {
    gpu: &'static Gpu,
    stream: Arc<CudaStream>,
    spec: GridSpec,
    ws: Option<Workspace<T>>,
    pot: Option<CudaSlice<T>>,
    scatter: BinnedScatter,
    z: CudaSlice<f64>,
    lo: CudaSlice<u32>,
    hi: CudaSlice<u32>,
    events: [CudaEvent; 5],
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
        let alloc = || -> std::result::Result<_, GpuError> {
            Ok((
                s.alloc_zeros::<f64>(1)?,
                s.alloc_zeros::<u32>(3)?,
                s.alloc_zeros::<u32>(3)?,
                [ev()?, ev()?, ev()?, ev()?, ev()?],
            ))
        };
        let (z, lo, hi, events) = alloc()?;
        let scatter = BinnedScatter::new(&stream)?;
        Ok(FftRepulsionGpu {
            gpu,
            stream,
            spec,
            ws: None,
            pot: None,
            scatter,
            z,
            lo,
            hi,
            events,
        })
    }

    /// Reduces the bounding box on the device and places the grid on the host.
    fn fit_grid(&mut self, y: &CudaSlice<f32>, n: usize, dims: usize) -> Result<Grid> {
        let gpu = self.gpu;
        let s = self.stream.clone();
        let mut go = || -> std::result::Result<([u32; 3], [u32; 3]), GpuError> {
            s.memcpy_htod(&[u32::MAX; 3], &mut self.lo)?;
            s.memset_zeros(&mut self.hi)?;
            let f = gpu.function_with(KernelId::S2g, T::DEFINES, &format!("s2g_bounds_{dims}d"))?;
            let n32 = n as i32;
            let mut b = s.launch_builder(&f);
            b.arg(&n32).arg(y).arg(&mut self.lo).arg(&mut self.hi);
            // SAFETY: s2g_bounds contract: y holds n·dims floats, lo/hi 3 words each.
            unsafe { b.launch(gpu.config(n)) }?;
            let mut lo = [0u32; 3];
            let mut hi = [0u32; 3];
            s.memcpy_dtoh(&self.lo, &mut lo)?;
            s.memcpy_dtoh(&self.hi, &mut hi)?;
            Ok((lo, hi))
        };
        let (lo, hi) = go()?;
        let mut lo64 = [0f64; 3];
        let mut hi64 = [0f64; 3];
        for a in 0..dims {
            lo64[a] = key_to_f32(lo[a]) as f64;
            hi64[a] = key_to_f32(hi[a]) as f64;
            if !(lo64[a].is_finite() && hi64[a].is_finite()) {
                return Err(Error::param("y", "an embedding coordinate is not finite"));
            }
        }
        Grid::fit_box(lo64, hi64, dims, self.spec)
    }

    fn workspace(&mut self, dims: usize, p: usize) -> std::result::Result<(), GpuError> {
        if matches!(&self.ws, Some(w) if w.dims == dims && w.p == p) {
            return Ok(());
        }
        self.ws = None; // free the old buffers before allocating the new ones
        let s = &self.stream;
        let len = p.pow(dims as u32);
        let (c_in, c_out) = (1 + dims, 2 + dims);
        let shape = vec![p as i32; dims];
        let plan = |batch: usize| {
            CudaFft::plan_many(
                &shape,
                None,
                1,
                len as i32,
                None,
                1,
                len as i32,
                T::C2C,
                batch as i32,
                s.clone(),
            )
        };
        self.ws = Some(Workspace {
            dims,
            p,
            spectra_h: None,
            charges: s.alloc_zeros(c_in * len)?,
            x: s.alloc_zeros(c_in * len)?,
            xhat: s.alloc_zeros(c_in * len)?,
            yhat: s.alloc_zeros(c_out * len)?,
            yout: s.alloc_zeros(c_out * len)?,
            phi: s.alloc_zeros(c_out * len)?,
            kbuf: s.alloc_zeros(2 * len)?,
            spectra: s.alloc_zeros((1 << dims) * 2 * len)?,
            fft_in: plan(c_in)?,
            fft_kernel: plan(2)?,
            fft_out: plan(c_out)?,
        });
        Ok(())
    }

    fn run(
        &mut self,
        y: &CudaSlice<f32>,
        n: usize,
        dims: usize,
        grid: &Grid,
        force: &mut CudaSlice<f32>,
    ) -> std::result::Result<Repulsion, GpuError> {
        let gpu = self.gpu;
        let function = |id, name: &str| gpu.function_with(id, T::DEFINES, name);
        let stream = self.stream.clone();
        let s = &stream;
        self.workspace(dims, grid.p)?;
        let c_out = 2 + dims;
        if self.pot.as_ref().is_none_or(|p| p.len() < n * c_out) {
            self.pot = Some(s.alloc_zeros(n * c_out)?);
        }
        let ws = self.ws.as_mut().expect("workspace just made");
        let pot = self.pot.as_mut().expect("potentials just made");
        let geom = GridGeom::of(grid);
        let len = grid.len() as i64;
        let (p32, d32, n32) = (grid.p as i32, dims as i32, n as i32);
        let cfg_grid = gpu.config(grid.len());

        // Kernel spectra, when the spacing changed.
        if ws.spectra_h != Some(grid.h) {
            let f = function(KernelId::G2g, "g2g_kernel")?;
            let h = grid.h as f32;
            for pattern in 0..(1i32 << dims) {
                let mut b = s.launch_builder(&f);
                b.arg(&len)
                    .arg(&p32)
                    .arg(&d32)
                    .arg(&pattern)
                    .arg(&h)
                    .arg(&mut ws.kbuf);
                // SAFETY: g2g_kernel contract: kbuf holds 2·len complex values.
                unsafe { b.launch(cfg_grid) }?;
                let at = pattern as usize * 2 * grid.len();
                let mut out = ws.spectra.slice_mut(at..at + 2 * grid.len());
                T::exec(
                    &ws.fft_kernel,
                    &mut ws.kbuf,
                    &mut out,
                    FftDirection::Forward,
                )?;
            }
            ws.spectra_h = Some(grid.h);
        }

        self.events[0].record(s)?;
        // Step 1: S2G.
        s.memset_zeros(&mut ws.charges)?;
        self.scatter
            .run(gpu, s, y, n, dims, &geom, &mut ws.charges)?;
        self.events[1].record(s)?;

        // Step 2: G2G, one pass per parity pattern.
        let modulate = function(KernelId::G2g, "g2g_modulate")?;
        let multiply = function(KernelId::G2g, "g2g_multiply")?;
        let demodulate = function(KernelId::G2g, "g2g_demodulate")?;
        let (c_in32, c_out32) = ((1 + dims) as i32, c_out as i32);
        for pattern in 0..(1i32 << dims) {
            let mut b = s.launch_builder(&modulate);
            b.arg(&len).arg(&p32).arg(&d32).arg(&pattern).arg(&c_in32);
            b.arg(&ws.charges).arg(&mut ws.x);
            // SAFETY: g2g_modulate contract: charges and x hold (1+dims)·len values.
            unsafe { b.launch(cfg_grid) }?;
            T::exec(&ws.fft_in, &mut ws.x, &mut ws.xhat, FftDirection::Forward)?;
            let at = pattern as usize * 2 * grid.len();
            let spectra = ws.spectra.slice(at..at + 2 * grid.len());
            let mut b = s.launch_builder(&multiply);
            b.arg(&len)
                .arg(&d32)
                .arg(&ws.xhat)
                .arg(&spectra)
                .arg(&mut ws.yhat);
            // SAFETY: g2g_multiply contract: xhat (1+dims)·len, spectra 2·len,
            // yhat (2+dims)·len complex values.
            unsafe { b.launch(cfg_grid) }?;
            T::exec(
                &ws.fft_out,
                &mut ws.yhat,
                &mut ws.yout,
                FftDirection::Inverse,
            )?;
            let accumulate = i32::from(pattern > 0);
            let mut b = s.launch_builder(&demodulate);
            b.arg(&len)
                .arg(&p32)
                .arg(&d32)
                .arg(&pattern)
                .arg(&c_out32)
                .arg(&accumulate);
            b.arg(&ws.yout).arg(&mut ws.phi);
            // SAFETY: g2g_demodulate contract: yout and phi hold (2+dims)·len values.
            unsafe { b.launch(cfg_grid) }?;
        }
        self.events[2].record(s)?;

        // Step 3: G2S (and Z).
        s.memset_zeros(&mut self.z)?;
        let f = function(KernelId::G2s, &format!("g2s_gather_{dims}d"))?;
        let mut b = s.launch_builder(&f);
        b.arg(&n32)
            .arg(&geom)
            .arg(y)
            .arg(&ws.phi)
            .arg(&mut *pot)
            .arg(&mut self.z);
        // SAFETY: g2s_gather contract: phi (2+dims)·len, pot n·(2+dims), z one double.
        unsafe { b.launch(gpu.config(n)) }?;
        self.events[3].record(s)?;

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
        self.events[4].record(s)?;

        let mut z = [0f64];
        s.memcpy_dtoh(&self.z, &mut z)?;
        let ms = |a: usize, b: usize| -> std::result::Result<f64, GpuError> {
            Ok(self.events[a].elapsed_ms(&self.events[b])? as f64 / 1e3)
        };
        let times = RepulseTimes {
            s2g: ms(0, 1)?,
            g2g: ms(1, 2)?,
            g2s: ms(2, 3)?,
            phi2force: ms(3, 4)?,
        };
        Ok(Repulsion {
            z: z[0],
            grid: Some(grid.p),
            times,
        })
    }
}

impl<T: DeviceReal> DeviceRepulse for FftRepulsionGpu<T> {
    fn repulse_device(
        &mut self,
        y: &CudaSlice<f32>,
        n: usize,
        dims: usize,
        force: &mut CudaSlice<f32>,
    ) -> Result<Repulsion> {
        check_device_args(n, dims, y.len(), force.len())?;
        let grid = self.fit_grid(y, n, dims)?;
        Ok(self.run(y, n, dims, &grid, force)?)
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
