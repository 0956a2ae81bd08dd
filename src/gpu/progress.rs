//! Progress over work queued on a stream: a unit is reported once the device has finished
//! it, with one unit kept queued ahead so that the device never waits for the host.

use cudarc::driver::{CudaEvent, CudaStream};

use super::GpuError;
use crate::progress::Progress;

/// Progress of one stage whose units are queued on a stream.
pub struct LaggedProgress<'a> {
    progress: &'a dyn Progress,
    pending: Option<CudaEvent>,
}

impl<'a> LaggedProgress<'a> {
    /// Starts stage `stage` of `units` units.
    pub fn begin(progress: &'a dyn Progress, stage: &str, units: usize) -> Self {
        progress.begin(stage, units as u64);
        LaggedProgress {
            progress,
            pending: None,
        }
    }

    /// Marks the end of a unit of work queued on `stream`; reports the previous one.
    pub fn queued(&mut self, stream: &CudaStream) -> Result<(), GpuError> {
        if let Some(prev) = self.pending.replace(stream.record_event(None)?) {
            prev.synchronize()?;
            self.progress.advance(1);
        }
        Ok(())
    }

    /// Waits for the last unit and ends the stage.
    pub fn end(self) -> Result<(), GpuError> {
        if let Some(last) = self.pending {
            last.synchronize()?;
            self.progress.advance(1);
        }
        self.progress.end();
        Ok(())
    }
}
