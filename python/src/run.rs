//! Long work off the GIL, with Ctrl-C and callbacks.
//!
//! Python runs signal handlers on its main thread only, and only when that thread asks, so
//! the work runs on a thread of its own while the calling thread waits with the GIL released
//! and wakes every [`POLL`] to ask (`PyErr_CheckSignals`). A `KeyboardInterrupt` sets the
//! flag the optimiser reads between two steps ([`Watch::stop`]); the work then ends at once
//! (no worker is left running), and the exception is raised. Callbacks (openTSNE's: the
//! iteration, the KL and a copy of the embedding every N iterations) are called from the
//! work's thread with the GIL taken for the call; returning `True` finishes the run with the
//! embedding reached, and an exception in a callback ends it and is raised.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use numpy::PyArray1;
use pyo3::prelude::*;
use sgtsne::optim::{Observer, Stop};

/// How often the waiting thread looks for a signal.
const POLL: Duration = Duration::from_millis(20);

/// Runs `work` on a thread of its own in `pool`, the GIL released, raising a
/// `KeyboardInterrupt` received meanwhile once the work has ended (after `stop` has been
/// set, which the work's observer reads).
pub fn detached<T: Send>(
    py: Python<'_>,
    pool: &rayon::ThreadPool,
    stop: &AtomicBool,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    let finished = (Mutex::new(false), Condvar::new());
    let mut interrupt = None;
    let out = std::thread::scope(|s| {
        let worker = s.spawn(|| {
            let out = pool.install(work);
            let (lock, wake) = &finished;
            *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
            wake.notify_all();
            out
        });
        loop {
            let done = py.detach(|| {
                let (lock, wake) = &finished;
                let guard = lock.lock().unwrap_or_else(|e| e.into_inner());
                let (guard, _) = wake
                    .wait_timeout_while(guard, POLL, |done| !*done)
                    .unwrap_or_else(|e| e.into_inner());
                *guard
            });
            if done {
                break;
            }
            if let Err(e) = py.check_signals() {
                stop.store(true, Ordering::SeqCst);
                interrupt.get_or_insert(e);
            }
        }
        py.detach(|| worker.join())
    });
    if let Some(e) = interrupt {
        return Err(e);
    }
    out.map_err(|_| {
        pyo3::exceptions::PyRuntimeError::new_err("internal error: the run's thread panicked")
    })
}

/// The optimisation's observer: the stop flag, and the callbacks.
pub struct Watch<'a> {
    stop: &'a AtomicBool,
    callbacks: Vec<Py<PyAny>>,
    every: usize,
    dims: usize,
    /// Y after the last step a callback wants, until its KL arrives.
    pending: Option<(usize, Vec<f32>)>,
    /// A callback asked to stop (`True`).
    finish: AtomicBool,
    /// An exception raised by a callback, raised again once the run has ended.
    pub error: Mutex<Option<PyErr>>,
}

impl<'a> Watch<'a> {
    /// Watches `stop`; calls each of `callbacks` every `every` iterations (the KL is then
    /// computed at those iterations: the caller sets `kl_every` to `every`).
    pub fn new(stop: &'a AtomicBool, callbacks: Vec<Py<PyAny>>, every: usize, dims: usize) -> Self {
        Watch {
            stop,
            callbacks,
            every: every.max(1),
            dims,
            pending: None,
            finish: AtomicBool::new(false),
            error: Mutex::new(None),
        }
    }

    /// Calls the callbacks with (iteration, KL, a copy of Y as (n, dims)); whether one
    /// asked to stop.
    fn call(&self, iter: usize, kl: f64, y: Vec<f32>) -> PyResult<bool> {
        Python::attach(|py| {
            let n = y.len() / self.dims;
            let array = PyArray1::from_vec(py, y);
            let array = numpy::PyArrayMethods::reshape(&array, [n, self.dims])?;
            let mut stop = false;
            for callback in &self.callbacks {
                let answer = callback.call1(py, (iter, kl, array.clone()))?;
                stop |= answer.bind(py).is_truthy()?;
            }
            Ok(stop)
        })
    }
}

impl Observer<[f32]> for Watch<'_> {
    fn wants(&self, iter: usize) -> bool {
        !self.callbacks.is_empty() && iter.is_multiple_of(self.every)
    }

    fn observe(&mut self, iter: usize, y: &[f32]) -> sgtsne::Result<()> {
        self.pending = Some((iter, y.to_vec()));
        Ok(())
    }

    fn stop(&self, _iter: usize) -> Option<Stop> {
        if self.stop.load(Ordering::Relaxed) {
            return Some(Stop::Abort);
        }
        if self
            .error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
        {
            return Some(Stop::Abort);
        }
        self.finish.load(Ordering::Relaxed).then_some(Stop::Finish)
    }

    fn kl(&mut self, iter: usize, kl: f64) {
        let Some((at, y)) = self.pending.take_if(|(at, _)| *at == iter) else {
            return;
        };
        debug_assert_eq!(at, iter);
        match self.call(iter, kl, y) {
            Ok(true) => self.finish.store(true, Ordering::Relaxed),
            Ok(false) => {}
            Err(e) => *self.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e),
        }
    }
}
