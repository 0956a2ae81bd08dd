//! Device memory the stages share: checks that a phase fits before it allocates, and
//! uninitialised buffers for outputs a kernel writes whole.

use cudarc::driver::{CudaSlice, CudaStream, CudaView, DeviceRepr};
use std::sync::Arc;

use super::{Gpu, GpuError};

/// Free device memory kept in reserve when checking that a phase fits (cuBLAS, cuFFT and
/// the driver allocate beside the stages).
pub(crate) const RESERVE: usize = 64 << 20;

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

impl AnyBits for u8 {}
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

/// `len` copies of `value` (at least one) on the device, filled there: the optimiser's unit
/// gains were an n × dims host vector uploaded from pageable memory (80 MB at 10M points).
pub fn filled(gpu: &Gpu, len: usize, value: f32) -> Result<CudaSlice<f32>, GpuError> {
    use cudarc::driver::DevicePtrMut;
    let s = &gpu.stream;
    let mut buf = alloc_uninit::<f32>(gpu, len)?;
    let words = buf.len();
    {
        let (ptr, _write) = buf.device_ptr_mut(s);
        // SAFETY: `ptr` covers the buffer's `words` 4-byte words, alive until the stream
        // has run the fill (the buffer is freed in stream order); the fill is queued on the
        // stream that owns the view.
        unsafe {
            cudarc::driver::sys::cuMemsetD32Async(ptr, value.to_bits(), words, s.cu_stream())
                .result()?;
        }
    }
    Ok(buf)
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

/// Copies the device `src` into the host `dst` (of the same length) through a page-locked
/// buffer, in chunks: on the GPU machines a copy straight into pageable memory moved about
/// 1.4 GB/s (a 10M-point run's 7.2 GB of neighbours in 5 s), through the buffer about
/// 5 GB/s.
pub fn dtoh_staged<T: AnyBits + Copy + Send + Sync>(
    gpu: &Gpu,
    src: &CudaView<'_, T>,
    dst: &mut [T],
) -> Result<(), GpuError> {
    dtoh_staged_on(gpu, &gpu.stream, src, dst)
}

/// [`dtoh_staged`] on `stream` (of `gpu`'s context), for a copy beside the work queued on
/// `gpu`'s own stream.
pub fn dtoh_staged_on<T: AnyBits + Copy + Send + Sync>(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    src: &CudaView<'_, T>,
    dst: &mut [T],
) -> Result<(), GpuError> {
    let chunk = STAGING_BYTES / std::mem::size_of::<T>();
    download_staged(gpu, stream, src, dst, chunk)
}

/// [`dtoh_staged_on`] `chunk` elements at a time.
fn download_staged<T: AnyBits + Copy + Send + Sync>(
    gpu: &Gpu,
    s: &Arc<CudaStream>,
    src: &CudaView<'_, T>,
    dst: &mut [T],
    chunk: usize,
) -> Result<(), GpuError> {
    assert_eq!(
        src.len(),
        dst.len(),
        "a staged copy's two sides differ in length"
    );
    through_stage(gpu, src.len(), chunk, |host, at| {
        s.memcpy_dtoh(&src.slice(at.clone()), host)?;
        s.synchronize()?;
        copy_parallel(&mut dst[at], host);
        Ok(())
    })
}

/// The host `src` on the device, copied through a page-locked buffer in chunks, as
/// [`dtoh_staged`] copies the other way: the points' uploads (2 GB at 10M × 50) are the
/// large ones of a run.
pub fn htod_staged<T: AnyBits + Copy + Send + Sync>(
    gpu: &Gpu,
    src: &[T],
) -> Result<CudaSlice<T>, GpuError> {
    let mut dst = alloc_uninit::<T>(gpu, src.len())?;
    upload_staged(gpu, src, &mut dst, STAGING_BYTES / std::mem::size_of::<T>())?;
    Ok(dst)
}

/// [`htod_staged`] into `dst` (at least as long as `src`), `chunk` elements at a time.
fn upload_staged<T: AnyBits + Copy + Send + Sync>(
    gpu: &Gpu,
    src: &[T],
    dst: &mut CudaSlice<T>,
    chunk: usize,
) -> Result<(), GpuError> {
    let s = &gpu.stream;
    through_stage(gpu, src.len(), chunk, |host, at| {
        copy_parallel(host, &src[at.clone()]);
        s.memcpy_htod(&*host, &mut dst.slice_mut(at))?;
        // Done before the buffer is filled again.
        s.synchronize()?;
        Ok(())
    })
}

/// Hands `step` each range of at most `chunk` of the `len` elements in order, with one
/// page-locked buffer cut to that range's length (the driver's copies take the host
/// side's length), for the staged copies either way. The buffer is the GPU's kept one
/// (grown to need), or a fresh one while another copy holds that: allocating, zeroing and
/// freeing 14 MB of page-locked memory took 7 of the 8 ms of MNIST's upload on an H200,
/// which a process's later runs (the Python package's) no longer pay.
fn through_stage<T: AnyBits>(
    gpu: &Gpu,
    len: usize,
    chunk: usize,
    mut step: impl FnMut(&mut [T], std::ops::Range<usize>) -> Result<(), GpuError>,
) -> Result<(), GpuError> {
    if len == 0 {
        return Ok(());
    }
    let chunk = chunk.clamp(1, len);
    let bytes = chunk * std::mem::size_of::<T>();
    let mut kept = gpu.staging.try_lock().ok();
    let mut fresh = None;
    let stage = match kept.as_deref_mut() {
        Some(slot) => {
            let buffer = match slot.take() {
                Some(b) if b.len() >= bytes => b,
                small => {
                    drop(small);
                    pinned::<u8>(gpu, bytes, 0)?
                }
            };
            slot.insert(buffer)
        }
        None => fresh.insert(pinned::<u8>(gpu, bytes, 0)?),
    };
    let base = stage.as_mut_slice()?.as_mut_ptr();
    // SAFETY: the buffer holds at least `chunk` elements of `T` (`bytes` of them), a
    // page-locked allocation starts on a page, which is aligned for any `T`, and any bits
    // are a `T` (AnyBits); the slice borrows `stage`, which outlives it.
    let host = unsafe { std::slice::from_raw_parts_mut(base.cast::<T>(), chunk) };
    for at in (0..len).step_by(chunk) {
        let end = (at + chunk).min(len);
        step(&mut host[..end - at], at..end)?;
    }
    Ok(())
}

/// `dst.copy_from_slice(src)` on the pool's threads, a slice of at least 1 MiB each: one
/// core copied the points into the page-locked buffer at a few GB/s, most of an upload's
/// time.
fn copy_parallel<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    use rayon::prelude::*;
    let piece = ((1 << 20) / std::mem::size_of::<T>().max(1)).max(1);
    dst.par_chunks_mut(piece)
        .zip(src.par_chunks(piece))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

/// Bytes of the page-locked buffer [`dtoh_staged`] and [`htod_staged`] copy through.
const STAGING_BYTES: usize = 64 << 20;

/// Copies `src`, on `from`'s device, into `dst`, on `to`'s, GPU to GPU (over NVLink where
/// the two are linked: the driver's peer copy, with peer access enabled once per pair), once
/// the work queued on `from`'s stream is done; returns when the copy is. For the stages
/// whose parts run on several GPUs before their communicator exists (the kNN's split
/// sweep and refinement), where the host's round trip cost seconds at 10M points.
pub fn copy_peer<T: DeviceRepr>(
    to: &Gpu,
    dst: &mut cudarc::driver::CudaViewMut<'_, T>,
    from: &Gpu,
    src: &cudarc::driver::CudaView<'_, T>,
) -> Result<(), GpuError> {
    let ready = from.stream.record_event(None)?;
    copy_peer_after(to, dst, (from, &ready), src)
}

/// [`copy_peer`] once `from`'s stream reaches `ready` (recorded there after the last write
/// of `src`), whatever `from`'s thread queues meanwhile: for a GPU that joins another's
/// work under way.
pub fn copy_peer_after<T: DeviceRepr>(
    to: &Gpu,
    dst: &mut cudarc::driver::CudaViewMut<'_, T>,
    (from, ready): (&Gpu, &cudarc::driver::CudaEvent),
    src: &cudarc::driver::CudaView<'_, T>,
) -> Result<(), GpuError> {
    use cudarc::driver::{sys, DevicePtr, DevicePtrMut};
    assert_eq!(dst.len(), src.len(), "peer copy of unequal lengths");
    if src.is_empty() {
        return Ok(());
    }
    to.stream.wait(ready)?;
    enable_peer_access(to, from)?;
    let bytes = src.len() * std::mem::size_of::<T>();
    {
        // Each view's bookkeeping event is recorded on a stream of its own context.
        let (src_ptr, _read) = src.device_ptr(&from.stream);
        let (dst_ptr, _write) = dst.device_ptr_mut(&to.stream);
        // SAFETY: both pointers cover `bytes` bytes of live allocations (equal lengths,
        // asserted) in their own contexts; the source's writers are done when the copy
        // starts (it is ordered after `ready` on `to`'s stream), and `to`'s stream is
        // synchronised below, before either view can be dropped.
        unsafe {
            sys::cuMemcpyPeerAsync(
                dst_ptr,
                to.device.context.cu_ctx(),
                src_ptr,
                from.device.context.cu_ctx(),
                bytes,
                to.stream.cu_stream(),
            )
            .result()?;
        }
    }
    to.stream.synchronize()?;
    Ok(())
}

/// Lets `to`'s context read and write `from`'s memory directly (and the reverse), where
/// the devices can (an NVLink or PCIe peer path); elsewhere the peer copies go through the
/// host, slower but correct. Once per pair of devices in a process: the contexts' peer
/// access, and each device's access to the other's default memory pool, which every
/// buffer here comes from (cudarc allocates stream-ordered) and which the contexts' peer
/// access does not open.
fn enable_peer_access(to: &Gpu, from: &Gpu) -> Result<(), GpuError> {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static OPENED: Mutex<Option<HashSet<(usize, usize)>>> = Mutex::new(None);
    let (a, b) = (to.device.context.ordinal(), from.device.context.ordinal());
    if a == b {
        return Ok(());
    }
    let mut opened = OPENED.lock().unwrap_or_else(|p| p.into_inner());
    let pairs = opened.get_or_insert_with(HashSet::new);
    if pairs.contains(&(a.min(b), a.max(b))) {
        return Ok(());
    }
    for (reader, owner) in [(to, from), (from, to)] {
        if open_peer(reader, owner)? {
            // A pool that cannot be opened leaves the copies correct, through the host and
            // ten times slower (`benches/RESULTS.md`): not worth failing a run for.
            let _ = set_pool_access(reader, owner, true);
        }
    }
    pairs.insert((a.min(b), a.max(b)));
    to.device.context.bind_to_thread()?;
    Ok(())
}

/// Enables `reader`'s context to reach `owner`'s memory; false where the devices have no
/// peer path.
fn open_peer(reader: &Gpu, owner: &Gpu) -> Result<bool, GpuError> {
    use cudarc::driver::sys::{self, CUresult};
    let mut can = 0;
    reader.device.context.bind_to_thread()?;
    // SAFETY: plain driver queries and settings on two live contexts; `can` outlives the
    // call.
    let status = unsafe {
        sys::cuDeviceCanAccessPeer(
            &mut can,
            reader.device.context.cu_device(),
            owner.device.context.cu_device(),
        )
        .result()?;
        if can == 0 {
            return Ok(false);
        }
        sys::cuCtxEnablePeerAccess(owner.device.context.cu_ctx(), 0)
    };
    match status {
        CUresult::CUDA_SUCCESS | CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
        e => e.result()?,
    }
    Ok(true)
}

/// Opens (or, with `open` false, closes) `owner`'s default memory pool, its buffers now
/// and later, to `reader`'s device for reading and writing.
fn set_pool_access(reader: &Gpu, owner: &Gpu, open: bool) -> Result<(), GpuError> {
    use cudarc::driver::sys;
    let flags = match open {
        true => sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        false => sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE,
    };
    let desc = sys::CUmemAccessDesc {
        location: sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: reader.device.context.ordinal() as std::ffi::c_int,
        },
        flags,
    };
    let mut pool = std::ptr::null_mut();
    // SAFETY: driver calls on a live device; `pool` and `desc` outlive them.
    unsafe {
        sys::cuDeviceGetDefaultMemPool(&mut pool, owner.device.context.cu_device()).result()?;
        sys::cuMemPoolSetAccess(pool, &desc, 1).result()?;
    }
    Ok(())
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

/// Points' values copy to the device as a slice does, whether they are their own or a
/// caller's buffer read in place.
impl cudarc::driver::HostSlice<f32> for crate::points::PointData {
    fn len(&self) -> usize {
        <[f32]>::len(self)
    }

    // SAFETY: host memory that the driver does not manage: as for `Vec` and slices, nothing
    // needs synchronising before the caller's own use of the slice with `stream`.
    unsafe fn stream_synced_slice<'a>(
        &'a self,
        _stream: &'a CudaStream,
    ) -> (&'a [f32], cudarc::driver::SyncOnDrop<'a>) {
        (self, cudarc::driver::SyncOnDrop::Sync(None))
    }

    // SAFETY: as above; a caller's buffer is copied into a `Vec` of its own first.
    unsafe fn stream_synced_mut_slice<'a>(
        &'a mut self,
        _stream: &'a CudaStream,
    ) -> (&'a mut [f32], cudarc::driver::SyncOnDrop<'a>) {
        (self, cudarc::driver::SyncOnDrop::Sync(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::gpu::gpu_test! {
        /// A staged upload places every element, in one chunk or in many (the last short).
        fn staged_uploads_place_everything(gpu) {
            let m: Vec<i32> = (0..10_007).collect();
            assert_eq!(gpu.stream.clone_dtoh(&htod_staged(gpu, &m).unwrap()).unwrap(), m);
            for chunk in [1, 100, 10_006, 20_000] {
                let mut dst = gpu.stream.alloc_zeros::<i32>(m.len()).unwrap();
                upload_staged(gpu, &m, &mut dst, chunk).unwrap();
                assert_eq!(gpu.stream.clone_dtoh(&dst).unwrap(), m, "chunks of {chunk}");
            }
        }

        /// A filled buffer holds the value everywhere.
        fn filled_buffers_hold_the_value(gpu) {
            let got = gpu.stream.clone_dtoh(&filled(gpu, 10_007, 1.5).unwrap()).unwrap();
            assert_eq!(got, vec![1.5f32; 10_007]);
        }

        /// A staged copy brings every element, in one chunk or in many (the last short).
        fn staged_copies_bring_everything(gpu) {
            let m: Vec<f32> = (0..10_007).map(|i| i as f32 * 0.5).collect();
            let dev = gpu.stream.clone_htod(&m).unwrap();
            let mut got = vec![0f32; m.len() - 7];
            dtoh_staged(gpu, &dev.slice(7..), &mut got).unwrap();
            assert_eq!(got, m[7..]);
            for chunk in [1, 100, 10_006, 20_000] {
                let mut got = vec![-1f32; m.len()];
                download_staged(gpu, &gpu.stream, &dev.slice(..), &mut got, chunk).unwrap();
                assert_eq!(got, m, "chunks of {chunk}");
            }
        }

        /// A peer copy moves a range between two GPUs, or within one when the host has a
        /// single GPU, and leaves the rest of the destination alone.
        fn peer_copies_move_a_range(gpu) {
            let other = match crate::gpu::device_count().unwrap() {
                1 => gpu,
                _ => Gpu::device(1).unwrap(),
            };
            let src: Vec<f32> = (0..5000).map(|i| i as f32 * 0.5).collect();
            let from = gpu.stream.clone_htod(&src).unwrap();
            let mut to = other.stream.alloc_zeros::<f32>(6000).unwrap();
            copy_peer(other, &mut to.slice_mut(1000..4000), gpu, &from.slice(2000..5000))
                .unwrap();
            let got = other.stream.clone_dtoh(&to).unwrap();
            assert!(got[..1000].iter().chain(&got[4000..]).all(|&v| v == 0.0));
            assert_eq!(&got[1000..4000], &src[2000..5000]);
            gpu.device.context.bind_to_thread().unwrap();
        }

        /// Peer-copy bandwidth between GPUs 0 and 1 (run by hand: `--ignored
        /// peer_copy_bandwidth`), with each device's pool open to the other, as
        /// [`copy_peer`] leaves them, and closed: medians of 5 copies of 1 and 4 GiB.
        #[ignore]
        fn peer_copy_bandwidth(gpu) {
            if crate::gpu::device_count().unwrap() < 2 {
                eprintln!("one GPU: nothing to measure");
                return;
            }
            let other = Gpu::device(1).unwrap();
            for gib in [1usize, 4] {
                let from = gpu.stream.alloc_zeros::<u8>(gib << 30).unwrap();
                let mut to = other.stream.alloc_zeros::<u8>(gib << 30).unwrap();
                copy_peer(other, &mut to.slice_mut(..), gpu, &from.slice(..)).unwrap();
                for open in [true, false, true] {
                    set_pool_access(other, gpu, open).unwrap();
                    set_pool_access(gpu, other, open).unwrap();
                    let mut t = Vec::new();
                    for _ in 0..5 {
                        let start = std::time::Instant::now();
                        copy_peer(other, &mut to.slice_mut(..), gpu, &from.slice(..)).unwrap();
                        t.push(start.elapsed().as_secs_f64());
                    }
                    t.sort_by(f64::total_cmp);
                    eprintln!(
                        "{gib} GiB GPU 0 -> 1, pools {}: {:.2} ms, {:.0} GB/s",
                        if open { "open" } else { "closed" },
                        t[2] * 1e3,
                        (gib << 30) as f64 / t[2] / 1e9
                    );
                }
            }
            gpu.device.context.bind_to_thread().unwrap();
        }
    }
}
