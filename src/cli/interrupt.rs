//! Ctrl-C (SIGINT) during `sgtsne embed`.
//!
//! A run can take minutes, most of them in the optimisation; an interrupt there should not
//! throw away a usable embedding unless asked to (`--on-interrupt`), nor leave anything
//! half-written. So a first SIGINT during the optimisation only sets a flag, which the
//! library's optimiser reads between two steps through [`Observer::stop`] (on every
//! backend): the run then ends with nothing written, or goes on to write the embedding
//! reached. Any other SIGINT ends the process at once, as the user expects of Ctrl-C: before
//! the optimisation there is nothing to keep, and a second one means "now". Ending at once
//! skips the destructors that remove temporary files, so the handler removes this process's
//! own ([`io::remove_temp_files`]) from every output directory and the kernel cache first;
//! completed outputs were renamed into place whole, and the others are simply not there.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use sgtsne::io;
use sgtsne::optim::{Observer, Stop};

use super::args::OnInterruptArg;

/// Exit status of an interrupted run: 128 + SIGINT, as the shell reports a process that the
/// signal killed, so that scripts see the interrupt.
pub const EXIT_STATUS: u8 = 130;

/// Where the run is, as the handler sees it.
const BEFORE: u8 = 0;
const OPTIMISING: u8 = 1;
/// Interrupted during the optimisation: the run stops before the next step.
const STOPPING: u8 = 2;
const WRITING: u8 = 3;

/// The installed handler's view of the run.
pub struct Interrupts {
    phase: Arc<AtomicU8>,
    on_interrupt: OnInterruptArg,
}

impl Interrupts {
    /// Installs the SIGINT handler; `dirs` are the directories outputs (and compiled GPU
    /// kernels) are written to, where temporary files of this process may lie when it has to
    /// end at once.
    pub fn install(dirs: Vec<PathBuf>, on_interrupt: OnInterruptArg) -> Result<Self> {
        let phase = Arc::new(AtomicU8::new(BEFORE));
        let seen = Arc::clone(&phase);
        ctrlc::set_handler(move || {
            match seen.compare_exchange(OPTIMISING, STOPPING, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => eprintln!(
                    "\ninterrupt: stopping after this iteration (Ctrl-C again to quit at once)"
                ),
                Err(phase) => {
                    for dir in &dirs {
                        io::remove_temp_files(dir);
                    }
                    let what = if phase == WRITING {
                        "interrupted while writing the outputs; those finished are complete, \
                         the others not written"
                    } else {
                        "interrupted; nothing written"
                    };
                    eprintln!("\nerror: {what}");
                    std::process::exit(EXIT_STATUS.into());
                }
            }
        })
        .context("cannot install the Ctrl-C handler")?;
        Ok(Interrupts {
            phase,
            on_interrupt,
        })
    }

    /// An observer of the optimisation that passes Y on to `inner` and answers
    /// [`Observer::stop`] from the handler's flag.
    pub fn watch<'a>(&'a self, inner: Option<&'a mut dyn Observer<[f32]>>) -> Watch<'a> {
        Watch { inner, of: self }
    }

    /// Marks the start of writing (a later SIGINT ends at once) and says whether the run was
    /// interrupted after its optimisation ended, when it was too late to stop it there.
    pub fn writing(&self) -> bool {
        self.phase.swap(WRITING, Ordering::SeqCst) == STOPPING
    }
}

/// The observer of [`Interrupts::watch`].
pub struct Watch<'a> {
    inner: Option<&'a mut dyn Observer<[f32]>>,
    of: &'a Interrupts,
}

impl Observer<[f32]> for Watch<'_> {
    fn wants(&self, iter: usize) -> bool {
        self.inner.as_ref().is_some_and(|o| o.wants(iter))
    }

    fn observe(&mut self, iter: usize, y: &[f32]) -> sgtsne::Result<()> {
        match self.inner.as_mut() {
            Some(o) => o.observe(iter, y),
            None => Ok(()),
        }
    }

    /// The first call (before the first step) tells the handler that the optimisation has
    /// begun, from when a first SIGINT stops the run instead of ending the process.
    fn stop(&self, _iter: usize) -> Option<Stop> {
        let phase = &self.of.phase;
        let _ = phase.compare_exchange(BEFORE, OPTIMISING, Ordering::SeqCst, Ordering::SeqCst);
        (phase.load(Ordering::SeqCst) == STOPPING).then_some(match self.of.on_interrupt {
            OnInterruptArg::Discard => Stop::Abort,
            OnInterruptArg::Save => Stop::Finish,
        })
    }

    fn kl(&mut self, iter: usize, kl: f64) {
        if let Some(o) = self.inner.as_mut() {
            o.kl(iter, kl);
        }
    }
}
