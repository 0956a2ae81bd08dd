//! Batched complex FFTs over the repulsion's grids, run with a work area the caller owns:
//! square 2-D grids by the kernels of `kernels/grid_fft.cu`, every other shape by cuFFT.
//!
//! A cuFFT plan made the usual way allocates its work area with `cudaMalloc` when it is
//! planned and frees it, with a device-wide synchronisation, when it is destroyed. The
//! adaptive grid changes size tens of times per run (66 times on the 1.3M-point mixture),
//! and with three such plans per size the host spent 0.5 s of a 3.6 s optimisation making
//! and destroying them while the device waited. These plans are made with cuFFT's
//! auto-allocation off; the caller keeps one plan per size for the whole run and passes one
//! stream-ordered buffer, grown to the largest plan's need, as the work area of every call.
//!
//! Plans live in the process's [`PlanCache`] ([`crate::gpu::Gpu::fft_plans`]), so they can
//! be made ahead on a side thread ([`crate::gpu::Gpu::plan_ahead`]): on a fresh machine
//! cuFFT has its kernels compiled (into the driver's cache) for every new grid shape while
//! planning, 30–180 ms a shape on the H100 whatever the length's factors, while another
//! batch of a known shape costs under a millisecond (`plan_cost_by_length` below). The 6–8
//! shapes of a 2-D run so cost a fresh machine's first MNIST run 1.3–1.6 s beyond a warm
//! run's 0.9 s, all of it waiting on the driver (`benches/RESULTS.md`). The 2-D grids are
//! therefore transformed by kernels shipped compiled with the others
//! ([`crate::gpu::kernels::grid_fft`]: a row pass and a column pass, the lines in shared
//! memory), which plan nothing; 1-D and 3-D grids, and sides with a prime factor above 7,
//! stay with cuFFT. `SGTSNE_FFT=cufft` in the environment sends every grid to cuFFT (for
//! comparing the two).

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::cufft::result::{self, CufftError};
use cudarc::cufft::sys::{cufftHandle, cufftType};
use cudarc::cufft::FftDirection;
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtrMut, LaunchConfig};

use super::kernels::grid_fft::{GridFftLines, MAX_SIDE, THREADS};
use super::kernels::KernelId;
use super::real::DeviceReal;
use super::{Gpu, GpuError};

/// The environment variable that sends every grid to cuFFT (`cufft`); unset or `auto`, the
/// square 2-D grids go to `kernels/grid_fft.cu`.
pub const ENGINE_VAR: &str = "SGTSNE_FFT";

/// How a plan transforms.
enum Engine {
    /// A cuFFT plan.
    Cufft(cufftHandle),
    /// `kernels/grid_fft.cu` over `batch` grids of side `p`: `rows` lines a block in the
    /// row pass, `columns` in the column pass.
    Lines {
        p: usize,
        batch: usize,
        rows: usize,
        columns: usize,
    },
}

/// A batched complex-to-complex plan over `batch` contiguous grids of one shape.
pub struct GridFft {
    engine: Engine,
    /// Complex values the input and output hold: batch × nodes per grid.
    values: usize,
    work_size: usize,
    /// Held from setting the plan's stream and work area to queuing the transform: a
    /// cached plan may be shared by repulsions on different streams (tests in parallel),
    /// and cuFFT reads both when the call is queued, not later.
    queue: Mutex<()>,
}

/// Bytes of one complex value of transform `ty`.
fn complex_bytes(ty: cufftType) -> usize {
    match ty {
        cufftType::CUFFT_Z2Z => 16,
        _ => 8,
    }
}

/// Whether `p` has no prime factor above 7.
fn seven_smooth(mut p: usize) -> bool {
    if p == 0 {
        return false;
    }
    for r in [2, 3, 5, 7] {
        while p.is_multiple_of(r) {
            p /= r;
        }
    }
    p == 1
}

/// Lines a block of `kernels/grid_fft.cu` takes in the row and the column pass for square
/// grids of side `p` in values of `bytes`, within `shared` bytes of shared memory a block:
/// about 2048 values a block in the row pass, 64 bytes of each row (eight columns in single
/// precision: whole sectors) in the column pass, fewer where they do not fit. `None` for a
/// side the kernels do not take, or too long for the shared memory.
fn lines_for(p: usize, bytes: usize, shared: usize) -> Option<(usize, usize)> {
    if !(2..=MAX_SIDE).contains(&p) || !seven_smooth(p) {
        return None;
    }
    let fits = |lines: usize| (2 * lines + 1) * p * bytes <= shared;
    let largest = |want: usize| (1..=want.max(1)).rev().find(|&l| fits(l));
    Some((largest(2048 / p)?, largest(64 / bytes)?))
}

impl GridFft {
    /// A plan of `batch` grids of `shape` (nodes per axis), contiguous, of transform `ty`,
    /// on `gpu`: the grid kernels for a square 2-D shape they take, else cuFFT.
    fn new(gpu: &Gpu, shape: &[usize], batch: usize, ty: cufftType) -> Result<Self, PlanError> {
        let nodes: usize = shape.iter().product();
        let own = std::env::var(ENGINE_VAR).map_or(true, |v| !v.eq_ignore_ascii_case("cufft"));
        if own && shape.len() == 2 && shape[0] == shape[1] {
            let (p, bytes) = (shape[0], complex_bytes(ty));
            let shared = gpu.max_shared_bytes().map_err(PlanError::Driver)?;
            if let Some((rows, columns)) = lines_for(p, bytes, shared) {
                return Ok(GridFft {
                    engine: Engine::Lines {
                        p,
                        batch,
                        rows,
                        columns,
                    },
                    values: batch * nodes,
                    work_size: 0,
                    queue: Mutex::new(()),
                });
            }
        }
        Self::cufft(shape, batch, ty).map_err(PlanError::Cufft)
    }

    /// The cuFFT plan of [`GridFft::new`].
    fn cufft(shape: &[usize], batch: usize, ty: cufftType) -> Result<Self, CufftError> {
        super::libraries::load(super::libraries::CudaLibrary::Cufft);
        let nodes: usize = shape.iter().product();
        let handle = result::create()?;
        let mut plan = GridFft {
            engine: Engine::Cufft(handle),
            values: batch * nodes,
            work_size: 0,
            queue: Mutex::new(()),
        };
        let mut n: Vec<i32> = shape.iter().map(|&p| p as i32).collect();
        let null = std::ptr::null_mut();
        // SAFETY: a live handle; `n` holds rank sizes; no embedding (contiguous grids).
        plan.work_size = unsafe {
            result::set_auto_allocation(handle, false)?;
            result::make_plan_many(
                handle,
                n.len() as i32,
                n.as_mut_ptr(),
                null,
                1,
                nodes as i32,
                null,
                1,
                nodes as i32,
                ty,
                batch as i32,
            )?
        };
        Ok(plan)
    }

    /// Bytes of work area a call needs.
    pub fn work_size(&self) -> usize {
        self.work_size
    }

    /// Whether the plan is cuFFT's (not the grid kernels').
    #[cfg(test)]
    fn is_cufft(&self) -> bool {
        matches!(self.engine, Engine::Cufft(_))
    }

    /// Transforms `input` into `output` on `stream` of `gpu`, with `work` (at least
    /// [`GridFft::work_size`] bytes) as the work area; `T` must match the plan's type.
    pub fn exec<T: DeviceReal>(
        &self,
        gpu: &Gpu,
        stream: &CudaStream,
        work: &mut CudaSlice<u8>,
        input: &mut CudaSlice<T::Complex>,
        output: &mut CudaSlice<T::Complex>,
        direction: FftDirection,
    ) -> Result<(), GpuError> {
        assert!(
            work.len() >= self.work_size.max(1),
            "FFT work area too small"
        );
        assert!(input.len() >= self.values && output.len() >= self.values);
        let handle = match &self.engine {
            Engine::Cufft(handle) => *handle,
            Engine::Lines {
                p,
                batch,
                rows,
                columns,
            } => {
                let shape = (*p, *batch, *rows, *columns);
                return lines::<T>(gpu, stream, shape, input, output, direction);
            }
        };
        let (w, _w) = work.device_ptr_mut(stream);
        let (i, _i) = input.device_ptr_mut(stream);
        let (o, _o) = output.device_ptr_mut(stream);
        let _queue = self
            .queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // SAFETY: a live plan of T's transform over `values` complex values, which input
        // and output hold; the work area is large enough and lives on `stream`, where the
        // call is queued.
        unsafe {
            result::set_stream(handle, stream.cu_stream() as _)?;
            result::set_work_area(handle, w as *mut c_void)?;
            T::exec(handle, i, o, direction)?;
        }
        Ok(())
    }
}

/// The two passes of `kernels/grid_fft.cu` over `batch` grids of side `p`, `rows` and
/// `columns` lines a block: the rows of `input` into `output`, then the columns of
/// `output` in place.
fn lines<T: DeviceReal>(
    gpu: &Gpu,
    stream: &CudaStream,
    (p, batch, rows, columns): (usize, usize, usize, usize),
    input: &mut CudaSlice<T::Complex>,
    output: &mut CudaSlice<T::Complex>,
    direction: FftDirection,
) -> Result<(), GpuError> {
    let sign = match direction {
        FftDirection::Forward => -1,
        FftDirection::Inverse => 1,
    };
    let bytes = std::mem::size_of::<T::Complex>();
    let name = "grid_fft_lines";
    for (pass, lines) in [(0, rows), (1, columns)] {
        let shared = (2 * lines + 1) * p * bytes;
        if shared > 48 << 10 {
            gpu.function(KernelId::GridFft, T::DEFINES, name)?
                .set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared as i32,
                )?;
        }
        let blocks = match pass {
            0 => (batch * p).div_ceil(lines),
            _ => batch * p.div_ceil(lines),
        };
        let cfg = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: shared as u32,
        };
        GridFftLines::<T> {
            p,
            batch,
            lines,
            columns: pass,
            sign,
            input: &*input,
            output: &mut *output,
        }
        .launch(gpu, stream, cfg)?;
    }
    Ok(())
}

/// What identifies a plan: nodes per axis, batch and transform type.
type PlanKey = (Vec<usize>, usize, i32);

/// A plan made once by its first asker (later ones wait for it), or why it could not be.
type PlanCell = Arc<OnceLock<Result<Arc<GridFft>, PlanError>>>;

/// Why a plan could not be made, kept for every later asker.
#[derive(Clone, Copy, Debug)]
enum PlanError {
    Cufft(CufftError),
    Driver(cudarc::driver::DriverError),
}

impl From<PlanError> for GpuError {
    fn from(e: PlanError) -> Self {
        match e {
            PlanError::Cufft(e) => GpuError::Cufft(e),
            PlanError::Driver(e) => GpuError::Driver(e),
        }
    }
}

/// One plan per (shape, batch, type), made at most once (a second asker waits for the
/// first) and kept for the process: a plan without a work area holds no device memory.
#[derive(Default)]
pub struct PlanCache {
    plans: Mutex<HashMap<PlanKey, PlanCell>>,
}

impl PlanCache {
    /// The plan of `batch` grids of `shape` of transform `ty` on `gpu`, made now unless it
    /// was (or is being) made before.
    pub fn get(
        &self,
        gpu: &Gpu,
        shape: &[usize],
        batch: usize,
        ty: cufftType,
    ) -> Result<Arc<GridFft>, GpuError> {
        let cell = self
            .plans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry((shape.to_vec(), batch, ty as i32))
            .or_default()
            .clone();
        cell.get_or_init(|| GridFft::new(gpu, shape, batch, ty).map(Arc::new))
            .clone()
            .map_err(GpuError::from)
    }
}

impl Drop for GridFft {
    fn drop(&mut self) {
        if let Engine::Cufft(handle) = self.engine {
            // SAFETY: the handle was created by cufftCreate and is destroyed once, here; the
            // plan owns no work area, so this frees nothing on the device.
            let _ = unsafe { result::destroy(handle) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repulse::g2g::gpu::classes_up_to;
    use crate::repulse::grid::{fft_friendly, MIN_NODES};
    use cudarc::cufft::sys::{double2, float2};
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// The grid kernels take square sides with no prime factor above 7, as many lines a
    /// block as shared memory holds (fewer for longer sides), and no side too long for it.
    #[test]
    fn lines_follow_the_side_and_the_shared_memory() {
        assert!([1, 2, 7, 126, 720, 1440, 2016, 4096]
            .iter()
            .all(|&p| seven_smooth(p)));
        assert!(![0, 11, 13 * 8, 2 * 17 * 9].iter().any(|&p| seven_smooth(p)));
        let h100 = 227 << 10;
        assert_eq!(lines_for(126, 8, h100), Some((16, 8)));
        assert_eq!(lines_for(720, 8, h100), Some((2, 8)));
        assert_eq!(lines_for(2016, 16, h100), Some((1, 3)));
        assert_eq!(lines_for(720, 8, 48 << 10), Some((2, 3)));
        assert_eq!(lines_for(4096, 16, 48 << 10), None);
        assert_eq!(lines_for(5 * 4096, 8, usize::MAX), None);
        assert_eq!(lines_for(11 * 16, 8, h100), None);
        assert_eq!(lines_for(1, 8, h100), None);
        for p in (2..=4096).filter(|&p| seven_smooth(p)) {
            let (rows, columns) = lines_for(p, 8, h100).unwrap();
            assert!((2 * rows.max(columns) + 1) * p * 8 <= h100, "side {p}");
        }
    }

    crate::gpu::gpu_test! {
        /// The process's cache makes a plan once: a second ask, and an ask after the plan
        /// was made ahead on a side thread, get the same plan; square 2-D grids go to the
        /// grid kernels, others to cuFFT.
        fn cached_plans_are_made_once(gpu) {
            let ty = <f32 as DeviceReal>::C2C;
            let a = gpu.fft_plans().get(gpu, &[48, 48], 12, ty).unwrap();
            assert!(Arc::ptr_eq(&a, &gpu.fft_plans().get(gpu, &[48, 48], 12, ty).unwrap()));
            gpu.plan_ahead(vec![(vec![54, 54], 12, ty)]);
            let b = gpu.fft_plans().get(gpu, &[54, 54], 12, ty).unwrap();
            assert!(Arc::ptr_eq(&b, &gpu.fft_plans().get(gpu, &[54, 54], 12, ty).unwrap()));
            assert!(!Arc::ptr_eq(&a, &b));
            let own = std::env::var(ENGINE_VAR).map_or(true, |v| v != "cufft");
            assert_eq!(a.is_cufft(), !own);
            assert!(gpu.fft_plans().get(gpu, &[48], 12, ty).unwrap().is_cufft());
            assert!(gpu.fft_plans().get(gpu, &[22, 22], 12, ty).unwrap().is_cufft());
        }
    }

    /// Complex values of a precision to and from pairs of f64.
    trait Pairs: DeviceReal {
        fn pairs(v: &[f64]) -> Vec<Self::Complex>;
        fn values(c: &[Self::Complex]) -> Vec<f64>;
    }

    impl Pairs for f32 {
        fn pairs(v: &[f64]) -> Vec<float2> {
            v.chunks(2)
                .map(|c| float2 {
                    x: c[0] as f32,
                    y: c[1] as f32,
                })
                .collect()
        }
        fn values(c: &[float2]) -> Vec<f64> {
            c.iter().flat_map(|z| [z.x as f64, z.y as f64]).collect()
        }
    }

    impl Pairs for f64 {
        fn pairs(v: &[f64]) -> Vec<double2> {
            v.chunks(2).map(|c| double2 { x: c[0], y: c[1] }).collect()
        }
        fn values(c: &[double2]) -> Vec<f64> {
            c.iter().flat_map(|z| [z.x, z.y]).collect()
        }
    }

    /// `batch` grids of side `p` transformed both ways by the grid kernels and by cuFFT in
    /// precision `T`: the largest difference of each direction relative to the largest
    /// value of cuFFT's output, and the round trip's relative to p² times the input.
    fn against_cufft<T: Pairs>(gpu: &Gpu, p: usize, batch: usize, seed: u64) -> [f64; 3] {
        let s = &gpu.stream;
        let own = GridFft::new(gpu, &[p, p], batch, T::C2C).unwrap();
        assert!(!own.is_cufft() || std::env::var(ENGINE_VAR).is_ok());
        let cufft = GridFft::cufft(&[p, p], batch, T::C2C).unwrap();
        let mut rng = StdRng::seed_from_u64(seed);
        let len = 2 * batch * p * p;
        let values: Vec<f64> = (0..len).map(|_| rng.random_range(-1.0..1.0)).collect();
        let upload = |v: &[f64]| -> CudaSlice<T::Complex> { s.clone_htod(&T::pairs(v)).unwrap() };
        let mut work = s.alloc_zeros::<u8>(cufft.work_size().max(1)).unwrap();
        let mut run = |plan: &GridFft, input: &[f64], direction| -> Vec<f64> {
            let mut a = upload(input);
            let mut b = upload(&vec![0.0; len]);
            plan.exec::<T>(gpu, s, &mut work, &mut a, &mut b, direction)
                .unwrap();
            T::values(&s.clone_dtoh(&b).unwrap())
        };
        let worst = |a: &[f64], b: &[f64]| {
            let scale = b.iter().fold(0f64, |m, v| m.max(v.abs()));
            a.iter().zip(b).fold(0f64, |m, (x, y)| m.max((x - y).abs())) / scale
        };
        let forward = run(&own, &values, FftDirection::Forward);
        let inverse = run(&own, &values, FftDirection::Inverse);
        let round: Vec<f64> = run(&own, &forward, FftDirection::Inverse)
            .iter()
            .map(|v| v / (p * p) as f64)
            .collect();
        [
            worst(&forward, &run(&cufft, &values, FftDirection::Forward)),
            worst(&inverse, &run(&cufft, &values, FftDirection::Inverse)),
            worst(&round, &values),
        ]
    }

    crate::gpu::gpu_test! {
        /// The grid kernels transform as cuFFT does, both ways, in single and double
        /// precision, for sides of every radix (4, 2, 3, 5, 7 and their mixes, a prime, a
        /// power of two, the device's ladder): within a few roundings of the largest value.
        fn grid_kernels_transform_as_cufft_does(gpu) {
            let sides = [2, 3, 5, 7, 8, 12, 49, 125, 126, 180, 243, 252, 343, 720, 1024, 2016];
            for (i, &p) in sides.iter().enumerate() {
                let batch = 1 + i % 3;
                let single = against_cufft::<f32>(gpu, p, batch, i as u64);
                let double = against_cufft::<f64>(gpu, p, batch, i as u64);
                assert!(single.iter().all(|&e| e < 2e-6), "side {p}, f32: {single:?}");
                assert!(double.iter().all(|&e| e < 1e-13), "side {p}, f64: {double:?}");
            }
        }
    }

    crate::gpu::gpu_test! {
        /// Microseconds of one transform of the 2-D ladder's sizes (8 grids, as MNIST's
        /// G2G), by the grid kernels and by cuFFT, medians of 50 after a warm-up.
        /// `--ignored --nocapture` on the GPU machine.
        #[ignore]
        fn grid_kernels_against_cufft_bench(gpu) {
            let s = &gpu.stream;
            let ty = <f32 as DeviceReal>::C2C;
            for p in classes_up_to(2, 2016) {
                let own = GridFft::new(gpu, &[p, p], 8, ty).unwrap();
                let cufft = GridFft::cufft(&[p, p], 8, ty).unwrap();
                let mut work = s.alloc_zeros::<u8>(cufft.work_size().max(1)).unwrap();
                let mut a = s.alloc_zeros::<float2>(8 * p * p).unwrap();
                let mut b = s.alloc_zeros::<float2>(8 * p * p).unwrap();
                let mut time = |plan: &GridFft| {
                    let mut us: Vec<f64> = (0..51)
                        .map(|_| {
                            let ctx = &gpu.device.context;
                            let (e0, e1) = (ctx.new_event(None).unwrap(), ctx.new_event(None).unwrap());
                            e0.record(s).unwrap();
                            plan.exec::<f32>(gpu, s, &mut work, &mut a, &mut b, FftDirection::Forward)
                                .unwrap();
                            e1.record(s).unwrap();
                            e1.synchronize().unwrap();
                            e0.elapsed_ms(&e1).unwrap() as f64 * 1e3
                        })
                        .skip(1)
                        .collect();
                    us.sort_by(f64::total_cmp);
                    us[us.len() / 2]
                };
                let (o, c) = (time(&own), time(&cufft));
                println!("p {p:5}: grid kernels {o:8.1} us, cuFFT {c:8.1} us ({:.2}x)", o / c);
            }
        }
    }

    crate::gpu::gpu_test! {
        /// Time to make cuFFT plans of every FFT-friendly length from [`MIN_NODES`] to 1024: a
        /// 1-D plan of the length, then a 2-D plan of it squared, then the same 2-D shape at
        /// another batch. Run with an empty driver cache (`CUDA_CACHE_PATH` a new folder) to
        /// see which lengths cuFFT compiles kernels for and whether a length's kernels serve
        /// its other shapes and batches. `--ignored --nocapture` on the GPU machine.
        #[ignore]
        fn plan_cost_by_length(gpu) {
            let _ = gpu;
            let ty = <f32 as DeviceReal>::C2C;
            let time = |shape: &[usize], batch: usize| {
                let t = std::time::Instant::now();
                let plan = GridFft::cufft(shape, batch, ty).unwrap();
                drop(plan);
                t.elapsed().as_secs_f64() * 1e3
            };
            let mut total = [0.0; 3];
            for p in (MIN_NODES..=1024).filter(|&p| fft_friendly(p) == p) {
                let ms = [time(&[p], 12), time(&[p, p], 12), time(&[p, p], 16)];
                println!(
                    "p {p:5}: 1-D {:8.3} ms, 2-D {:8.3} ms, 2-D other batch {:8.3} ms",
                    ms[0], ms[1], ms[2]
                );
                for (t, m) in total.iter_mut().zip(ms) {
                    *t += m / 1e3;
                }
            }
            println!(
                "totals: 1-D {:.3} s, 2-D {:.3} s, 2-D other batch {:.3} s",
                total[0], total[1], total[2]
            );
        }
    }

    crate::gpu::gpu_test! {
        /// Time to make cuFFT's two plans of each 2-D size class and to run them once, in
        /// two passes: what the first pass pays beyond the second is cuFFT loading (or
        /// compiling) its kernels for a size. `--ignored --nocapture` on the GPU machine.
        #[ignore]
        fn plan_cost_bench(gpu) {
            let s = &gpu.stream;
            let sizes = classes_up_to(2, 1024);
            for pass in 0..2 {
                let (mut plan_total, mut run_total) = (0.0, 0.0);
                for &p in &sizes {
                    let t = std::time::Instant::now();
                    let fwd = GridFft::cufft(&[p, p], 12, <f32 as DeviceReal>::C2C).unwrap();
                    let inv = GridFft::cufft(&[p, p], 16, <f32 as DeviceReal>::C2C).unwrap();
                    let plan = t.elapsed().as_secs_f64();
                    let need = fwd.work_size().max(inv.work_size()).max(1);
                    let mut work = s.alloc_zeros::<u8>(need).unwrap();
                    let mut a = s.alloc_zeros::<float2>(16 * p * p).unwrap();
                    let mut b = s.alloc_zeros::<float2>(16 * p * p).unwrap();
                    s.synchronize().unwrap();
                    let t = std::time::Instant::now();
                    fwd.exec::<f32>(gpu, s, &mut work, &mut a, &mut b, FftDirection::Forward)
                        .unwrap();
                    inv.exec::<f32>(gpu, s, &mut work, &mut b, &mut a, FftDirection::Inverse)
                        .unwrap();
                    s.synchronize().unwrap();
                    let run = t.elapsed().as_secs_f64();
                    plan_total += plan;
                    run_total += run;
                    println!(
                        "pass {pass} p {p:5}: plans {:7.3} ms, first run {:7.3} ms",
                        plan * 1e3,
                        run * 1e3
                    );
                }
                println!(
                    "pass {pass}: {} sizes, plans {plan_total:.3} s, first runs {run_total:.3} s",
                    sizes.len()
                );
            }
        }
    }
}
