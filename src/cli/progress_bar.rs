//! A terminal progress bar for the library's [`Progress`] callbacks; hidden when stderr is
//! not a terminal or with `--quiet`.

use std::io::IsTerminal;
use std::sync::Mutex;

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
}
