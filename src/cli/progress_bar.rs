//! The library's [`Progress`] callbacks on stderr: a terminal progress bar ([`Bar`], hidden
//! when stderr is not a terminal or with `--quiet`), or plain timestamped lines ([`Lines`],
//! for long runs whose stderr is a log).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sgtsne::progress::Progress;

/// One bar per stage, drawn on stderr.
pub struct Bar {
    visible: bool,
    bar: Mutex<Option<ProgressBar>>,
}

impl Bar {
    pub fn new(quiet: bool) -> Self {
        Bar {
            visible: !quiet && std::io::stderr().is_terminal(),
            bar: Mutex::new(None),
        }
    }

    fn with(&self, f: impl FnOnce(&ProgressBar)) {
        if let Some(bar) = self.bar.lock().expect("progress lock").as_ref() {
            f(bar);
        }
    }
}

impl Progress for Bar {
    fn begin(&self, stage: &str, total: u64) {
        if !self.visible {
            return;
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>9} [{bar:36}] {pos}/{len} {msg} ({elapsed}, eta {eta})",
            )
            .expect("constant template")
            .progress_chars("=> "),
        );
        bar.set_prefix(stage.to_string());
        *self.bar.lock().expect("progress lock") = Some(bar);
    }

    fn advance(&self, delta: u64) {
        self.with(|b| b.inc(delta));
    }

    fn status(&self, msg: &str) {
        self.with(|b| b.set_message(msg.to_string()));
    }

    fn end(&self) {
        if let Some(bar) = self.bar.lock().expect("progress lock").take() {
            bar.finish_and_clear();
        }
    }

    /// Shown with --quiet too, above the bar when one is drawn.
    fn warn(&self, msg: &str) {
        match self.bar.lock().expect("progress lock").as_ref() {
            Some(bar) => bar.suspend(|| eprintln!("warning: {msg}")),
            None => eprintln!("warning: {msg}"),
        }
    }
}

/// One line per status message, prefixed with the elapsed time and the work done so far.
pub struct Lines {
    quiet: bool,
    start: Instant,
    done: AtomicU64,
    total: AtomicU64,
}

impl Lines {
    pub fn new(quiet: bool) -> Self {
        Lines {
            quiet,
            start: Instant::now(),
            done: AtomicU64::new(0),
            total: AtomicU64::new(0),
        }
    }
}

impl Progress for Lines {
    fn begin(&self, _stage: &str, total: u64) {
        self.total.store(total, Ordering::Relaxed);
        self.done.store(0, Ordering::Relaxed);
    }

    fn advance(&self, delta: u64) {
        self.done.fetch_add(delta, Ordering::Relaxed);
    }

    fn status(&self, msg: &str) {
        if !self.quiet {
            eprintln!(
                "[{:>7.1} s {}/{}] {msg}",
                self.start.elapsed().as_secs_f64(),
                self.done.load(Ordering::Relaxed),
                self.total.load(Ordering::Relaxed)
            );
        }
    }

    fn end(&self) {}

    fn warn(&self, msg: &str) {
        eprintln!("warning: {msg}");
    }
}
