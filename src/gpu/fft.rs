//! Batched complex FFTs over the repulsion's grids (cuFFT), run with a work area the caller
//! owns.
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
//! planning, 30–110 ms a shape on the H100 whatever the length's factors, while another
//! batch of a known shape costs under a millisecond (`plan_cost_by_length` below). Made
//! ahead while the neighbours are searched, that cost overlaps the search (which still
//! waits on it in part), and the device's sparse ladder of grid sizes
//! ([`crate::repulse::grid::Ladder::Sparse`]) keeps the shapes few.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::cufft::result::{self, CufftError};
use cudarc::cufft::sys::{cufftHandle, cufftType};
use cudarc::cufft::FftDirection;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtrMut};

use super::real::DeviceReal;
use super::GpuError;

/// A batched complex-to-complex plan over `batch` contiguous grids of one shape.
pub struct GridFft {
    handle: cufftHandle,
    /// Complex values the input and output hold: batch × nodes per grid.
    values: usize,
    work_size: usize,
    /// Held from setting the plan's stream and work area to queuing the transform: a
    /// cached plan may be shared by repulsions on different streams (tests in parallel),
    /// and cuFFT reads both when the call is queued, not later.
    queue: Mutex<()>,
}

impl GridFft {
    /// A plan of `batch` grids of `shape` (nodes per axis), contiguous, of transform `ty`.
    pub fn new(shape: &[usize], batch: usize, ty: cufftType) -> Result<Self, CufftError> {
        super::libraries::load(super::libraries::CudaLibrary::Cufft);
        let nodes: usize = shape.iter().product();
        let mut plan = GridFft {
            handle: result::create()?,
            values: batch * nodes,
            work_size: 0,
            queue: Mutex::new(()),
        };
        let mut n: Vec<i32> = shape.iter().map(|&p| p as i32).collect();
        let null = std::ptr::null_mut();
        // SAFETY: a live handle; `n` holds rank sizes; no embedding (contiguous grids).
        plan.work_size = unsafe {
            result::set_auto_allocation(plan.handle, false)?;
            result::make_plan_many(
                plan.handle,
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

    /// Transforms `input` into `output` on `stream`, with `work` (at least
    /// [`GridFft::work_size`] bytes) as the work area; `T` must match the plan's type.
    pub fn exec<T: DeviceReal>(
        &self,
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
            result::set_stream(self.handle, stream.cu_stream() as _)?;
            result::set_work_area(self.handle, w as *mut c_void)?;
            T::exec(self.handle, i, o, direction)?;
        }
        Ok(())
    }
}

/// What identifies a plan: nodes per axis, batch and transform type.
type PlanKey = (Vec<usize>, usize, i32);

/// A plan made once by its first asker (later ones wait for it), or why it could not be.
type PlanCell = Arc<OnceLock<Result<Arc<GridFft>, CufftError>>>;

/// One plan per (shape, batch, type), made at most once (a second asker waits for the
/// first) and kept for the process: a plan without a work area holds no device memory.
#[derive(Default)]
pub struct PlanCache {
    plans: Mutex<HashMap<PlanKey, PlanCell>>,
}

impl PlanCache {
    /// The plan of `batch` grids of `shape` of transform `ty`, made now unless it was
    /// (or is being) made before.
    pub fn get(
        &self,
        shape: &[usize],
        batch: usize,
        ty: cufftType,
    ) -> Result<Arc<GridFft>, CufftError> {
        let cell = self
            .plans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry((shape.to_vec(), batch, ty as i32))
            .or_default()
            .clone();
        cell.get_or_init(|| GridFft::new(shape, batch, ty).map(Arc::new))
            .clone()
    }
}

impl Drop for GridFft {
    fn drop(&mut self) {
        // SAFETY: the handle was created by cufftCreate and is destroyed once, here; the
        // plan owns no work area, so this frees nothing on the device.
        let _ = unsafe { result::destroy(self.handle) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repulse::grid::{fft_friendly, Ladder, MIN_NODES};
    use cudarc::cufft::sys::float2;

    crate::gpu::gpu_test! {
        /// The process's cache makes a plan once: a second ask, and an ask after the plan
        /// was made ahead on a side thread, get the same plan.
        fn cached_plans_are_made_once(gpu) {
            let ty = <f32 as DeviceReal>::C2C;
            let a = gpu.fft_plans().get(&[48, 48], 12, ty).unwrap();
            assert!(Arc::ptr_eq(&a, &gpu.fft_plans().get(&[48, 48], 12, ty).unwrap()));
            gpu.plan_ahead(vec![(vec![54, 54], 12, ty)]);
            let b = gpu.fft_plans().get(&[54, 54], 12, ty).unwrap();
            assert!(Arc::ptr_eq(&b, &gpu.fft_plans().get(&[54, 54], 12, ty).unwrap()));
            assert!(!Arc::ptr_eq(&a, &b));
        }
    }

    crate::gpu::gpu_test! {
        /// Time to make plans of every FFT-friendly length from [`MIN_NODES`] to 1024: a
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
                let plan = GridFft::new(shape, batch, ty).unwrap();
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
        /// Time to make the two plans of each 2-D size class and to run them once, in two
        /// passes: what the first pass pays beyond the second is cuFFT loading (or compiling)
        /// its kernels for a size. `--ignored --nocapture` on the GPU machine.
        #[ignore]
        fn plan_cost_bench(gpu) {
            let s = &gpu.stream;
            let mut sizes = vec![Ladder::Sparse.smallest(2)];
            while *sizes.last().unwrap() < 1024 {
                sizes.push(Ladder::Sparse.size_class(sizes.last().unwrap() + 1, 2));
            }
            for pass in 0..2 {
                let (mut plan_total, mut run_total) = (0.0, 0.0);
                for &p in &sizes {
                    let t = std::time::Instant::now();
                    let fwd = GridFft::new(&[p, p], 12, <f32 as DeviceReal>::C2C).unwrap();
                    let inv = GridFft::new(&[p, p], 16, <f32 as DeviceReal>::C2C).unwrap();
                    let plan = t.elapsed().as_secs_f64();
                    let need = fwd.work_size().max(inv.work_size()).max(1);
                    let mut work = s.alloc_zeros::<u8>(need).unwrap();
                    let mut a = s.alloc_zeros::<float2>(16 * p * p).unwrap();
                    let mut b = s.alloc_zeros::<float2>(16 * p * p).unwrap();
                    s.synchronize().unwrap();
                    let t = std::time::Instant::now();
                    fwd.exec::<f32>(s, &mut work, &mut a, &mut b, FftDirection::Forward)
                        .unwrap();
                    inv.exec::<f32>(s, &mut work, &mut b, &mut a, FftDirection::Inverse)
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
