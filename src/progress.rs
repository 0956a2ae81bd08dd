//! Progress reporting from long stages, without the library printing anything.
//!
//! The CLI implements [`Progress`] with a terminal progress bar; tests and library users
//! pass [`Silent`].

/// Receives progress of a long stage: `begin` once, `advance` any number of times from any
/// thread, `end` once.
pub trait Progress: Sync {
    /// A stage named `stage` starts; it has `total` units of work.
    fn begin(&self, stage: &str, total: u64);
    /// `delta` more units are done.
    fn advance(&self, delta: u64);
    /// Sets a short status line (e.g. the latest KL).
    fn status(&self, _msg: &str) {}
    /// The stage is over.
    fn end(&self);
    /// Something the user should know about the data that does not stop the run (many
    /// duplicate points, …): the library prints nothing itself.
    fn warn(&self, _msg: &str) {}
}

/// A [`Progress`] that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Silent;

impl Progress for Silent {
    fn begin(&self, _stage: &str, _total: u64) {}
    fn advance(&self, _delta: u64) {}
    fn end(&self) {}
}
