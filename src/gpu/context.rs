//! One CUDA context per device, its stream, and the kernel modules compiled for it.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::cufft::sys::cufftType;
use cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
use cudarc::driver::{
    CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PinnedHostSlice,
};
use cudarc::nvrtc::Ptx;

use super::compile::{arch_name, Cubins, Precompile, Variant};
use super::fft::PlanCache;
use super::kernels::KernelId;
use super::{probe_device, Device, GpuError};
use crate::{Error, Result};

/// Threads per block of the element-wise and reduction kernels (a multiple of 32; the
/// block reductions in `kernels/common.cuh` assume at most 1024).
pub const BLOCK: u32 = 256;

/// One of the process's GPUs: device, stream and compiled modules. Device 0 ([`Gpu::get`])
/// runs every single-GPU stage; the others join it in a run over several GPUs
/// ([`Gpu::device`], [`crate::backend::multi`]).
pub struct Gpu {
    /// The device and its context.
    pub device: Device,
    /// The stream every stage launches on, in order.
    pub stream: Arc<CudaStream>,
    multiprocessors: usize,
    cubins: Arc<Cubins>,
    modules: Mutex<HashMap<Variant, Arc<CudaModule>>>,
    fft_plans: PlanCache,
    /// Device memory held back by `SGTSNE_GPU_MEMORY_LIMIT` ([`Gpu::withheld_bytes`]).
    withheld: Option<CudaSlice<u8>>,
    /// The page-locked buffer of the staged copies, kept for the process's next run
    /// ([`super::memory::htod_staged`]).
    pub(super) staging: Mutex<Option<PinnedHostSlice<u8>>>,
}

/// The environment variable that limits the device memory this process can allocate, a
/// fault injection for tests and for rehearsing a smaller card: at start-up all free
/// memory beyond this many bytes is taken and held, so that the stages' allocations meet
/// the driver's own out-of-memory errors. `BYTES` limits every GPU, `DEVICE:BYTES` only GPU
/// `DEVICE` (one GPU of a run over several short of memory). A run's plan before the work does not see it
/// (as when another process takes memory after the check), so the failure comes where the
/// memory runs out, and the run reports that stage ([`crate::Error::DeviceMemory`]).
pub const MEMORY_LIMIT_VAR: &str = "SGTSNE_GPU_MEMORY_LIMIT";

/// Takes the free memory of device `ordinal` beyond [`MEMORY_LIMIT_VAR`] bytes, if it is
/// set for that device.
fn withhold(
    stream: &Arc<CudaStream>,
    ordinal: usize,
) -> std::result::Result<Option<CudaSlice<u8>>, String> {
    let Ok(text) = std::env::var(MEMORY_LIMIT_VAR) else {
        return Ok(None);
    };
    let bad = || format!("{MEMORY_LIMIT_VAR} must be BYTES or DEVICE:BYTES, got `{text}`");
    let (device, bytes) = match text.trim().split_once(':') {
        Some((d, b)) => (Some(d.trim().parse::<usize>().map_err(|_| bad())?), b),
        None => (None, text.trim()),
    };
    let limit: usize = bytes.trim().parse().map_err(|_| bad())?;
    if device.is_some_and(|d| d != ordinal) {
        return Ok(None);
    }
    let free = stream
        .context()
        .mem_get_info()
        .map_err(|e| e.to_string())?
        .0;
    // The driver keeps a little of what it reports free: hold back less, 32 MiB at a time,
    // until it gives the buffer.
    let mut bytes = free.saturating_sub(limit);
    while bytes > 0 {
        if let Ok(held) = stream.alloc_zeros::<u8>(bytes) {
            return Ok(Some(held));
        }
        bytes = bytes.saturating_sub(32 << 20);
    }
    Ok(None)
}

/// Devices a process can set up (far more than one host holds).
pub const MAX_DEVICES: usize = 64;

static GPUS: [OnceLock<std::result::Result<Gpu, String>>; MAX_DEVICES] =
    [const { OnceLock::new() }; MAX_DEVICES];

/// Whether each device's set-up has begun ([`Gpu::begun`]), set before its context is made.
static BEGUN: [AtomicBool; MAX_DEVICES] = [const { AtomicBool::new(false) }; MAX_DEVICES];

/// The kernels compiled per architecture, shared by the devices of one kind, so that a
/// second GPU loads what the first compiled instead of compiling it again.
fn cubins_for(arch: &'static str) -> Arc<Cubins> {
    static BY_ARCH: Mutex<Vec<(&'static str, Arc<Cubins>)>> = Mutex::new(Vec::new());
    let mut known = BY_ARCH
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, c)) = known.iter().find(|(a, _)| *a == arch) {
        return c.clone();
    }
    let made = Arc::new(Cubins::new(arch));
    known.push((arch, made.clone()));
    made
}

impl Gpu {
    /// The process's first GPU (device 0), the one every single-GPU stage runs on, probed
    /// and set up on first use; [`Error::GpuUnavailable`] with the probe's reason when there
    /// is none.
    pub fn get() -> Result<&'static Gpu> {
        Self::device(0)
    }

    /// GPU `ordinal` if its set-up has ended well, without waiting for one under way or
    /// starting one.
    pub fn started(ordinal: usize) -> Option<&'static Gpu> {
        GPUS.get(ordinal)?.get()?.as_ref().ok()
    }

    /// Whether GPU `ordinal`'s set-up has begun, ended (well or not) or still under way:
    /// [`Gpu::device`] would not start one, only wait for it.
    pub fn begun(ordinal: usize) -> bool {
        BEGUN
            .get(ordinal)
            .is_some_and(|b| b.load(Ordering::Acquire))
    }

    /// GPU `ordinal` of those the process sees, set up on first use as [`Gpu::get`] sets up
    /// device 0.
    pub fn device(ordinal: usize) -> Result<&'static Gpu> {
        let slot = GPUS.get(ordinal).ok_or_else(|| Error::GpuUnavailable {
            reason: format!("GPU {ordinal} is beyond the {MAX_DEVICES} a process can use"),
        })?;
        slot.get_or_init(|| {
            BEGUN[ordinal].store(true, Ordering::Release);
            crate::trace::event(|| format!("GPU {ordinal}: set-up"));
            let device = probe_device(ordinal)?;
            let stream = device.context.default_stream();
            let arch = arch_name(device.compute_capability);
            let multiprocessors = device
                .context
                .attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                .map_err(|e| e.to_string())? as usize;
            let withheld = withhold(&stream, ordinal)?;
            crate::trace::event(|| format!("GPU {ordinal}: ready"));
            Ok(Gpu {
                device,
                stream,
                multiprocessors,
                cubins: cubins_for(arch),
                modules: Mutex::new(HashMap::new()),
                fft_plans: PlanCache::default(),
                withheld,
                staging: Mutex::new(None),
            })
        })
        .as_ref()
        .map_err(|reason| Error::GpuUnavailable {
            reason: reason.clone(),
        })
    }

    /// Starts compiling, on at most `threads` background threads, the kernel files and
    /// variants a run is about to use (in the order it uses them), so that compilation
    /// overlaps the run's first stages instead of stalling each stage in turn;
    /// [`Gpu::function`] then waits for a file still in compilation. Keep the guard until
    /// the run ends (see [`Precompile`] for why).
    pub fn precompile(&self, variants: &[Variant], threads: usize) -> Precompile {
        self.cubins.precompile(variants, threads)
    }

    /// The kernel `name` of file `id` compiled with the NVRTC `defines` (a variant of the
    /// file, e.g. [`crate::gpu::real::DeviceReal::DEFINES`]; `&[]` for the plain file),
    /// compiled (or awaited from [`Gpu::precompile`]) and loaded on first use. Launches go
    /// through the kernels' declarations ([`crate::gpu::launch`]); this is for what a launch
    /// does not set (function attributes).
    pub fn function(
        &self,
        id: KernelId,
        defines: &'static [&'static str],
        name: &str,
    ) -> std::result::Result<CudaFunction, GpuError> {
        let loaded = self.modules_lock().get(&(id, defines)).cloned();
        let module = match loaded {
            Some(m) => m,
            None => {
                // Outside the lock: a compilation takes seconds, and other threads may
                // want modules that are ready meanwhile.
                let bin = self.cubins.get(id, defines)?;
                match self.modules_lock().entry((id, defines)) {
                    Entry::Occupied(e) => e.get().clone(),
                    Entry::Vacant(e) => e
                        .insert(self.device.context.load_module(Ptx::from_binary(bin))?)
                        .clone(),
                }
            }
        };
        Ok(module.load_function(name)?)
    }

    /// Whether the kernels of `id` with `defines` are loaded or their cubin at hand:
    /// [`Gpu::function`] would not wait for a compilation.
    pub fn kernel_ready(&self, id: KernelId, defines: &'static [&'static str]) -> bool {
        self.modules_lock().contains_key(&(id, defines)) || self.cubins.ready(id, defines)
    }

    /// The loaded modules; a poisoned lock still guards a whole map (a panic cannot leave
    /// an insert half done).
    fn modules_lock(&self) -> std::sync::MutexGuard<'_, HashMap<Variant, Arc<CudaModule>>> {
        self.modules
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A launch covering `n` work items with [`BLOCK`] threads per block, the grid capped
    /// so that grid-stride loops keep every SM busy without launching idle blocks.
    pub fn config(&self, n: usize) -> LaunchConfig {
        let blocks = n.div_ceil(BLOCK as usize).clamp(1, 65_535 * 8) as u32;
        LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// [`Gpu::config`] with at most `blocks_per_sm` blocks per multiprocessor, for
    /// grid-stride kernels that should run in one wave (their per-block atomics or
    /// register-bound occupancy make more blocks wait, not help).
    pub fn config_waves(&self, n: usize, blocks_per_sm: usize) -> LaunchConfig {
        let mut config = self.config(n);
        let cap = (blocks_per_sm * self.multiprocessors).clamp(1, u32::MAX as usize) as u32;
        config.grid_dim.0 = config.grid_dim.0.min(cap);
        config
    }

    /// Streaming multiprocessors of the device (read once, at set-up).
    pub fn multiprocessors(&self) -> usize {
        self.multiprocessors
    }

    /// Bytes of shared memory a block may ask for, beyond the default 48 KiB where the
    /// device lets a kernel opt in.
    pub fn max_shared_bytes(&self) -> std::result::Result<usize, cudarc::driver::DriverError> {
        use cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN;
        let bytes = self
            .device
            .context
            .attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
        Ok(bytes.max(0) as usize)
    }

    /// The process's FFT plans of the repulsion's grids ([`PlanCache`]).
    pub fn fft_plans(&self) -> &PlanCache {
        &self.fft_plans
    }

    /// Makes the `plans` (each a shape, batch and type for [`PlanCache::get`]) on a side
    /// thread, in order, so that later asks find them made; failures are left for those
    /// asks to meet. For the repulsion's grid sizes, while the points are searched
    /// ([`crate::repulse::g2g`]'s `plan_ahead`).
    pub fn plan_ahead(&'static self, plans: Vec<(Vec<usize>, usize, cufftType)>) {
        std::thread::spawn(move || {
            if self.device.context.bind_to_thread().is_err() {
                return;
            }
            for (shape, batch, ty) in plans {
                let _ = self.fft_plans.get(self, &shape, batch, ty);
            }
        });
    }

    /// Free device memory in bytes.
    pub fn free_memory(&self) -> std::result::Result<usize, GpuError> {
        Ok(self.device.context.mem_get_info()?.0)
    }

    /// Device bytes held back by [`MEMORY_LIMIT_VAR`] (0 when it is not set): free to a
    /// run's plan, not to its allocations.
    pub fn withheld_bytes(&self) -> usize {
        self.withheld.as_ref().map_or(0, |w| w.len())
    }
}
