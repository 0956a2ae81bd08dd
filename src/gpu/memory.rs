//! Device memory the stages share: checks that a phase fits before it allocates, and
//! uninitialised buffers for outputs a kernel writes whole.

use cudarc::driver::{CudaSlice, DeviceRepr};

use super::{Gpu, GpuError};

/// Free device memory kept in reserve when checking that a phase fits (cuBLAS, cuFFT and
/// the driver allocate beside the stages).
const RESERVE: usize = 64 << 20;

/// Fails with [`GpuError::OutOfMemory`] naming `what` unless `bytes` (plus a reserve) are
/// free.
pub fn ensure_fits(gpu: &Gpu, what: &str, bytes: usize) -> Result<(), GpuError> {
    let free = gpu.free_memory()?;
    if bytes + RESERVE > free {
        return Err(GpuError::OutOfMemory {
            what: what.to_string(),
            needed_mib: (bytes + RESERVE) >> 20,
            free_mib: free >> 20,
        });
    }
    Ok(())
}

/// Element types for which every bit pattern is a value (no `bool`, no enums), so that a
/// buffer nothing wrote holds values, if meaningless ones.
pub trait AnyBits: DeviceRepr + cudarc::driver::ValidAsZeroBits {}

impl AnyBits for i32 {}
impl AnyBits for u32 {}
impl AnyBits for i64 {}
impl AnyBits for u64 {}
impl AnyBits for f32 {}
impl AnyBits for f64 {}

/// Device memory of `len` elements (at least one), left uninitialised: for a kernel's
/// output that it writes whole. An element nothing wrote reads as whatever was there, a
/// wrong value but never undefined behaviour ([`AnyBits`]); the tests look for such entries
/// by poisoning these buffers (`poison`).
pub fn alloc_uninit<T: AnyBits>(gpu: &Gpu, len: usize) -> Result<CudaSlice<T>, GpuError> {
    // SAFETY: every bit pattern of the memory is a value of `T` (AnyBits).
    Ok(unsafe { gpu.stream.alloc::<T>(len.max(1)) }?)
}

/// The bit pattern tests fill outputs with (as f32: a NaN; as i32: −1, never a column).
#[cfg(test)]
pub const POISON: u32 = 0xffff_ffff;

/// Fills `buf` (4-byte elements) with [`POISON`], so that entries a kernel fails to write
/// show in tests.
#[cfg(test)]
pub fn poison<T: AnyBits>(gpu: &Gpu, buf: &mut CudaSlice<T>) -> Result<(), GpuError> {
    assert_eq!(std::mem::size_of::<T>(), 4, "poison fills 4-byte words");
    let len = buf.len();
    // SAFETY: the view covers the same `len` 4-byte words; any bit pattern written there is
    // a value of `T` (AnyBits).
    let mut words = unsafe { buf.transmute_mut::<u32>(len) }.expect("same size");
    super::kernels::affinity::AffinityPoison {
        len,
        out: &mut words,
        value: POISON,
    }
    .launch(gpu, &gpu.stream, gpu.config(len))
}

/// Page-locked host memory of `len` elements, zeroed: the staging buffer of copies that
/// overlap the device's work. `flags` are `cuMemHostAlloc`'s (0, or e.g.
/// `CU_MEMHOSTALLOC_WRITECOMBINED` for a buffer the host only writes).
pub fn pinned<T: AnyBits>(
    gpu: &Gpu,
    len: usize,
    flags: std::ffi::c_uint,
) -> Result<cudarc::driver::PinnedHostSlice<T>, GpuError> {
    // SAFETY: nothing reads the memory before it is zeroed just below.
    let mut buf = unsafe {
        gpu.device
            .context
            .alloc_pinned_with_flags::<T>(len, flags)?
    };
    // SAFETY: the pointer covers the `len` elements of this fresh allocation; zero bits are
    // a value of `T` (AnyBits).
    unsafe { std::ptr::write_bytes(buf.as_mut_ptr()?, 0, len) };
    Ok(buf)
}

#[cfg(test)]
/// Sets the release threshold of the device's default memory pool: 0 (the default)
/// hands freed memory back at each synchronisation, so the next allocation maps it
/// again; u64::MAX keeps it. Only to measure what the re-mapping costs.
pub fn set_release_threshold(gpu: &Gpu, bytes: u64) {
    use cudarc::driver::sys;
    let mut pool = std::ptr::null_mut();
    let mut value = bytes;
    // SAFETY: plain driver calls on the live context's device; `value` outlives them.
    unsafe {
        gpu.device.context.bind_to_thread().unwrap();
        let dev = gpu.device.context.cu_device();
        assert_eq!(
            sys::cuDeviceGetDefaultMemPool(&mut pool, dev),
            sys::CUresult::CUDA_SUCCESS
        );
        assert_eq!(
            sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                &mut value as *mut u64 as *mut std::ffi::c_void,
            ),
            sys::CUresult::CUDA_SUCCESS
        );
    }
}
