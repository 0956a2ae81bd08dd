//! FFT-accelerated repulsion on the GPU: the CPU path's method and grid (same [`Grid`], same
//! stencil, same self-term correction of Z), with binned S2G ([`super::s2g_gpu`]), cuFFT for the zero-padding-free
//! G2G, a gathering G2S and Phi2Force (`kernels/s2g.cu`, `g2g.cu`, `g2s.cu`,
//! `phi2force.cu`).
//!
//! Per call the only host round trip is the bounding box (6 words, needed to place the
//! grid) and Z (1 word). Plans and buffers are kept per grid size, kernel spectra per
//! (size, spacing): with `--grid auto` the spacing is fixed once the embedding has grown,
//! so spectra and plans are rebuilt only when the size class changes.

use cudarc::cufft::{sys::cufftType, sys::float2, CudaFft, FftDirection};
use cudarc::driver::{sys::CUevent_flags, CudaEvent, CudaSlice, DeviceRepr, PushKernelArg};

use super::s2g_gpu::BinnedScatter;
use super::{Grid, GridSpec, Repulse, RepulseTimes, Repulsion};
use crate::gpu::kernels::KernelId;
use crate::gpu::{Gpu, GpuError};
use crate::{Error, Result};

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

/// Buffers and plans for one (dims, p).
struct Workspace {
    dims: usize,
    p: usize,
    /// Spacing the spectra were computed for.
    spectra_h: Option<f64>,
    charges: CudaSlice<f32>,
    x: CudaSlice<float2>,
    xhat: CudaSlice<float2>,
    yhat: CudaSlice<float2>,
    yout: CudaSlice<float2>,
    phi: CudaSlice<f32>,
    kbuf: CudaSlice<float2>,
    spectra: CudaSlice<float2>,
    fft_in: CudaFft,
    fft_kernel: CudaFft,
    fft_out: CudaFft,
}

/// The GPU twin of [`super::FftRepulsion`].
pub struct FftRepulsionGpu {
    gpu: &'static Gpu,
    spec: GridSpec,
    ws: Option<Workspace>,
    pot: Option<CudaSlice<f32>>,
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

impl FftRepulsionGpu {
    /// A repulsion on `gpu` with grid `spec`; buffers come with the first call.
    pub fn new(gpu: &'static Gpu, spec: GridSpec) -> Result<Self> {
        let s = &gpu.stream;
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
        Ok(FftRepulsionGpu {
            gpu,
            spec,
            ws: None,
            pot: None,
            scatter: BinnedScatter::new(gpu)?,
            z,
            lo,
            hi,
            events,
        })
    }

    /// F_rep of the device-resident `y` (n × dims) into `force`, Z returned.
    pub fn repulse_device(
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

    /// Reduces the bounding box on the device and places the grid on the host.
    fn fit_grid(&mut self, y: &CudaSlice<f32>, n: usize, dims: usize) -> Result<Grid> {
        let gpu = self.gpu;
        let mut go = || -> std::result::Result<([u32; 3], [u32; 3]), GpuError> {
            gpu.stream.memcpy_htod(&[u32::MAX; 3], &mut self.lo)?;
            gpu.stream.memset_zeros(&mut self.hi)?;
            let f = gpu.function(KernelId::S2g, &format!("s2g_bounds_{dims}d"))?;
            let n32 = n as i32;
            let mut b = gpu.stream.launch_builder(&f);
            b.arg(&n32).arg(y).arg(&mut self.lo).arg(&mut self.hi);
            // SAFETY: s2g_bounds contract: y holds n·dims floats, lo/hi 3 words each.
            unsafe { b.launch(gpu.config(n)) }?;
            let mut lo = [0u32; 3];
            let mut hi = [0u32; 3];
            gpu.stream.memcpy_dtoh(&self.lo, &mut lo)?;
            gpu.stream.memcpy_dtoh(&self.hi, &mut hi)?;
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
        let s = &self.gpu.stream;
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
                cufftType::CUFFT_C2C,
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
        let s = &gpu.stream;
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
            let f = gpu.function(KernelId::G2g, "g2g_kernel")?;
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
                ws.fft_kernel
                    .exec_c2c(&mut ws.kbuf, &mut out, FftDirection::Forward)?;
            }
            ws.spectra_h = Some(grid.h);
        }

        self.events[0].record(s)?;
        // Step 1: S2G.
        s.memset_zeros(&mut ws.charges)?;
        self.scatter.run(gpu, y, n, dims, &geom, &mut ws.charges)?;
        self.events[1].record(s)?;

        // Step 2: G2G, one pass per parity pattern.
        let modulate = gpu.function(KernelId::G2g, "g2g_modulate")?;
        let multiply = gpu.function(KernelId::G2g, "g2g_multiply")?;
        let demodulate = gpu.function(KernelId::G2g, "g2g_demodulate")?;
        let (c_in32, c_out32) = ((1 + dims) as i32, c_out as i32);
        for pattern in 0..(1i32 << dims) {
            let mut b = s.launch_builder(&modulate);
            b.arg(&len).arg(&p32).arg(&d32).arg(&pattern).arg(&c_in32);
            b.arg(&ws.charges).arg(&mut ws.x);
            // SAFETY: g2g_modulate contract: charges and x hold (1+dims)·len values.
            unsafe { b.launch(cfg_grid) }?;
            ws.fft_in
                .exec_c2c(&mut ws.x, &mut ws.xhat, FftDirection::Forward)?;
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
            ws.fft_out
                .exec_c2c(&mut ws.yhat, &mut ws.yout, FftDirection::Inverse)?;
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
        let f = gpu.function(KernelId::G2s, &format!("g2s_gather_{dims}d"))?;
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
        let f = gpu.function(KernelId::Phi2force, &format!("phi2force_{dims}d"))?;
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

impl Repulse for FftRepulsionGpu {
    /// Host-to-host form of [`FftRepulsionGpu::repulse_device`], for tests against the CPU.
    fn repulse(&mut self, y: &[f32], dims: usize, force: &mut [f32]) -> Result<Repulsion> {
        let gpu = self.gpu;
        on_host(gpu, y, dims, force, |y, n, f| {
            self.repulse_device(y, n, dims, f)
        })
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

/// Runs a device repulsion on host slices: uploads Y and the caller's force buffer as is (so
/// poisoned entries the kernels miss show), runs `repulse(y, n, force)`, downloads the forces.
pub(crate) fn on_host(
    gpu: &Gpu,
    y: &[f32],
    dims: usize,
    force: &mut [f32],
    repulse: impl FnOnce(&CudaSlice<f32>, usize, &mut CudaSlice<f32>) -> Result<Repulsion>,
) -> Result<Repulsion> {
    if dims == 0 || y.len() % dims != 0 || force.len() != y.len() {
        return Err(Error::param(
            "y",
            "y and force must both hold n × dims values",
        ));
    }
    let s = &gpu.stream;
    let up = |e| Error::from(GpuError::from(e));
    let y_dev = s.clone_htod(y).map_err(up)?;
    let mut f_dev = s.clone_htod(force).map_err(up)?;
    let out = repulse(&y_dev, y.len() / dims, &mut f_dev)?;
    s.memcpy_dtoh(&f_dev, force).map_err(up)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repulse::{relative_error, ExactRepulsion, FftRepulsion};
    use rand::{rngs::StdRng, Rng, SeedableRng};
    use rand_distr::StandardNormal;

    fn wide(v: &[f32]) -> Vec<f64> {
        v.iter().map(|&x| x as f64).collect()
    }

    /// Clustered points: `clusters` Gaussian blobs of std 1 spread over ±`spread`.
    fn clustered(n: usize, dims: usize, spread: f32, rng: &mut StdRng) -> Vec<f32> {
        let centres: Vec<f32> = (0..10 * dims)
            .map(|_| rng.random_range(-spread..spread))
            .collect();
        let mut y = Vec::with_capacity(n * dims);
        for i in 0..n {
            for a in 0..dims {
                let z: f32 = rng.sample(StandardNormal);
                y.push(centres[(i % 10) * dims + a] + z);
            }
        }
        y
    }

    /// GPU FFT repulsion equals the CPU FFT repulsion (same grid) to 1e-4 and the exact
    /// repulsion to 1e-3 at a fine grid, in 1-D, 2-D and 3-D, for fixed and adaptive grids.
    #[test]
    fn gpu_fft_equals_cpu_fft_and_exact() {
        let Some(gpu) = crate::gpu::for_test() else {
            return;
        };
        let seed = rand::random();
        let mut rng = StdRng::seed_from_u64(seed);
        for (dims, n, spread, fine) in [
            (1, 4000, 30.0, 0.1),
            (2, 3000, 20.0, 0.25),
            (3, 1500, 8.0, 0.2),
        ] {
            let y = clustered(n, dims, spread, &mut rng);
            let mut exact = vec![0f32; n * dims];
            let z_exact = ExactRepulsion::new()
                .repulse(&y, dims, &mut exact)
                .unwrap()
                .z;
            for spec in [
                GridSpec::Auto { h: fine },
                GridSpec::default_auto(),
                GridSpec::Fixed(40),
            ] {
                let mut cpu = vec![0f32; n * dims];
                let rc = FftRepulsion::new(spec).repulse(&y, dims, &mut cpu).unwrap();
                // S2G with the default binning, every tile dense, every tile sparse.
                let mut dev = vec![f32::NAN; n * dims];
                let mut rg = Repulsion::default();
                for dense_min in [None, Some(1), Some(usize::MAX)] {
                    let mut r = FftRepulsionGpu::new(gpu, spec).unwrap();
                    if let Some(m) = dense_min {
                        r.scatter.set_dense_min(m);
                    }
                    dev.fill(f32::NAN);
                    rg = r.repulse(&y, dims, &mut dev).unwrap();
                    let e = relative_error(&wide(&cpu), &wide(&dev));
                    assert!(
                        e < 1e-4,
                        "seed {seed} {dims}-D {spec:?} dense_min {dense_min:?}: GPU vs CPU {e}"
                    );
                }
                assert_eq!(rc.grid, rg.grid, "seed {seed}: same grid");
                assert!(
                    (rc.z - rg.z).abs() < 1e-4 * rc.z,
                    "seed {seed}: Z {} vs {}",
                    rg.z,
                    rc.z
                );
                if spec == (GridSpec::Auto { h: fine }) {
                    let e = relative_error(&wide(&exact), &wide(&dev));
                    assert!(e < 1e-3, "seed {seed} {dims}-D: GPU vs exact {e}");
                    assert!((rg.z - z_exact).abs() < 1e-3 * z_exact);
                }
            }
        }
    }
}
