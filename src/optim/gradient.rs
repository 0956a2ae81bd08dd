//! The gradient interface the optimiser drives; each backend implements it.

use crate::repulse::RepulseTimes;
use crate::Result;

/// What one gradient evaluation reports.
#[derive(Clone, Copy, Debug, Default)]
pub struct GradientInfo {
    /// Z = Σ_{i≠j} w_ij at the evaluated Y.
    pub z: f64,
    /// KL(P‖Q) at the evaluated Y (un-exaggerated P), when asked for.
    pub kl: Option<f64>,
    /// Seconds in the attraction.
    pub attract_seconds: f64,
    /// Seconds in the repulsion.
    pub repulse_seconds: f64,
    /// Repulsion seconds by sub-stage.
    pub repulse_split: RepulseTimes,
    /// Grid nodes per axis used by the repulsion, if it is grid based.
    pub grid: Option<usize>,
}

/// Evaluates $g = α F_{attr} − F_{rep}$ (the t-SNE gradient divided by 4, see
/// [`crate::optim`]) at Y.
pub trait Gradient {
    /// Writes g (row-major n × dims) into `grad`; `with_kl` asks for KL(P‖Q) as well.
    fn gradient(
        &mut self,
        y: &[f32],
        dims: usize,
        exaggeration: f32,
        grad: &mut [f32],
        with_kl: bool,
    ) -> Result<GradientInfo>;
}
