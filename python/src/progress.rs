//! The library's progress and warnings in Python: warnings always reach `warnings.warn`;
//! with `verbose`, each stage's start and end and the optimisation's KL (at most once a
//! second) go to the package's logger, which writes to `sys.stderr` (a notebook's cell
//! output) rather than the process's file descriptor 2.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use pyo3::prelude::*;
use sgtsne::progress::Progress;

/// A [`Progress`] that calls `say(message)` and `warn(message)` in Python.
pub struct PyProgress {
    /// Writes a line (the package's `_say`); `None`: not verbose.
    say: Option<Py<PyAny>>,
    /// Issues a `UserWarning` (the package's `_warn`).
    warn: Py<PyAny>,
    stage: Mutex<Option<(String, u64, Instant)>>,
    done: AtomicU64,
    last_status: Mutex<Option<Instant>>,
}

impl PyProgress {
    pub fn new(say: Option<Py<PyAny>>, warn: Py<PyAny>) -> Self {
        PyProgress {
            say,
            warn,
            stage: Mutex::new(None),
            done: AtomicU64::new(0),
            last_status: Mutex::new(None),
        }
    }

    /// Writes `message` when verbose. An exception in the writer is dropped: progress must
    /// never stop a run.
    pub fn say(&self, message: &str) {
        if let Some(say) = &self.say {
            Python::attach(|py| drop(say.call1(py, (message,))));
        }
    }
}

impl Progress for PyProgress {
    fn begin(&self, stage: &str, total: u64) {
        self.done.store(0, Ordering::Relaxed);
        *self.stage.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((stage.to_string(), total, Instant::now()));
        self.say(&format!("{stage}…"));
    }

    fn advance(&self, delta: u64) {
        self.done.fetch_add(delta, Ordering::Relaxed);
    }

    fn status(&self, msg: &str) {
        let mut last = self.last_status.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|t| t.elapsed().as_secs_f64() < 1.0) {
            return;
        }
        *last = Some(Instant::now());
        drop(last);
        let stage = self.stage.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some((name, total, _)) = stage {
            let done = self.done.load(Ordering::Relaxed);
            self.say(&format!("  {name}: {done}/{total}, {msg}"));
        }
    }

    fn end(&self) {
        let stage = self.stage.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((name, _, start)) = stage {
            self.say(&format!(
                "{name} done in {:.2} s",
                start.elapsed().as_secs_f64()
            ));
        }
    }

    fn warn(&self, msg: &str) {
        Python::attach(|py| drop(self.warn.call1(py, (msg,))));
    }
}
