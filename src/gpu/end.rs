//! The end of a process's GPU work: every GPU's context destroyed at once, on a thread of
//! its own, while the command line writes its outputs.
//!
//! Left to the process's exit, the driver tears the contexts down one after the other: on
//! a 4×H100 host the 10M-point runs ended 0.26–0.29 s after their report's total on one GPU
//! and 0.62–0.73 s on four (`benches/RESULTS.md`, 2026-11-27), each GPU adding its share
//! to a run's wall time after its outputs were written; ended here, 0.16–0.20 and
//! 0.23–0.27 s after the last trace point (2026-11-28). `cuDevicePrimaryCtxReset` destroys a
//! device's primary context and everything in it (buffers, modules, streams, FFT plans),
//! so the teardown can run beside the writing of the outputs instead, all GPUs together.

use std::thread::JoinHandle;

use cudarc::driver::sys;

use super::context::MAX_DEVICES;
use super::Gpu;

/// The thread of [`end_contexts`]; dropping it waits for it (a process must not exit
/// while a thread is inside the driver).
#[must_use = "dropping it at once waits for the contexts' end"]
pub struct ContextsEnding(Option<JoinHandle<()>>);

impl Drop for ContextsEnding {
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            let _ = thread.join();
        }
    }
}

/// On a side thread: runs `before` (what must end first: the side threads that use a GPU,
/// NCCL's teardown), then destroys the primary context of every GPU this process has set
/// up, each on its own thread, all at once. A context whose thread cannot start is left to
/// the process's exit, as before.
///
/// # Safety
///
/// Nothing may use a GPU of this process once `before` has returned, on any thread: every
/// [`Gpu`] it set up, and every buffer, stream, module, FFT plan or communicator made on
/// one, refers to a context that no longer exists (the driver then answers with an error,
/// or worse, for memory already handed back); `Drop`s of GPU objects must not run after it
/// (the [`Gpu`]s themselves, being statics, never drop). Only for the command line's end: a
/// library caller may embed again.
pub unsafe fn end_contexts<F: FnOnce() + Send + 'static>(before: F) -> ContextsEnding {
    let coordinator = std::thread::Builder::new()
        .name("sgtsne-end".into())
        .spawn(move || {
            before();
            let threads: Vec<JoinHandle<()>> = (0..MAX_DEVICES)
                .filter_map(Gpu::started)
                .filter_map(|gpu| {
                    let ordinal = gpu.device.context.ordinal();
                    let device = gpu.device.context.cu_device();
                    std::thread::Builder::new()
                        .name(format!("sgtsne-end-{ordinal}"))
                        .spawn(move || {
                            crate::trace::event(|| format!("GPU {ordinal}: context ending"));
                            // SAFETY: the caller's promise: nothing uses the device any
                            // more. An error leaves the context to the process's exit.
                            let _ = unsafe { sys::cuDevicePrimaryCtxReset_v2(device) };
                            crate::trace::event(|| format!("GPU {ordinal}: context ended"));
                        })
                        .ok()
                })
                .collect();
            for thread in threads {
                let _ = thread.join();
            }
        });
    // No thread: `before` drops unrun with the closure, and the caller's guards it holds
    // end where they would have; the contexts end with the process.
    ContextsEnding(coordinator.ok())
}
