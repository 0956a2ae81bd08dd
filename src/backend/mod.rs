//! Backends: where each stage runs (DESIGN §3).
//!
//! - `cpu`: everything on the host with rayon; CSB attraction, CPU FFT repulsion.
//! - `gpu`: everything resident on one CUDA device.
//! - `hybrid`: CPU attraction overlapped with GPU repulsion, the update on the host.
//! - `auto`: gpu when a device is usable, else cpu.

pub mod cpu;
pub mod gpu;
pub mod hybrid;
pub mod multi;

use crate::gpu::Gpu;
use crate::Result;

/// The backend a user asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Auto,
    Cpu,
    Gpu,
    Hybrid,
}

/// The backend a run resolves to, and why.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Resolved {
    /// What actually runs (`cpu`, `gpu` or `hybrid`).
    pub kind: BackendKind,
    /// Why `auto` chose it, or the device used.
    pub note: String,
}

impl BackendKind {
    /// The name users type.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Auto => "auto",
            BackendKind::Cpu => "cpu",
            BackendKind::Gpu => "gpu",
            BackendKind::Hybrid => "hybrid",
        }
    }

    /// Whether the repulsion runs on the GPU (gpu and hybrid; `auto` only once resolved,
    /// so it counts as the host here).
    pub fn on_device(self) -> bool {
        matches!(self, BackendKind::Gpu | BackendKind::Hybrid)
    }

    /// Resolves `auto` by probing for a GPU (gpu when usable, else cpu); an explicit
    /// `gpu` or `hybrid` fails with the probe's reason when no device is usable.
    pub fn resolve(self) -> Result<Resolved> {
        let device = || Gpu::get().map(|g| g.device.name.clone());
        match self {
            BackendKind::Cpu => Ok(Resolved {
                kind: BackendKind::Cpu,
                note: "requested".into(),
            }),
            BackendKind::Auto => Ok(match device() {
                Ok(name) => Resolved {
                    kind: BackendKind::Gpu,
                    note: format!("auto: {name}"),
                },
                Err(e) => Resolved {
                    kind: BackendKind::Cpu,
                    note: format!("auto: {e}"),
                },
            }),
            BackendKind::Gpu => Ok(Resolved {
                kind: BackendKind::Gpu,
                note: device()?,
            }),
            BackendKind::Hybrid => Ok(Resolved {
                kind: BackendKind::Hybrid,
                note: device()?,
            }),
        }
    }
}

/// P of the built-in digits (1,797 points, perplexity 30), as the cpu backend builds it: the
/// backends' tests run on it.
#[cfg(test)]
pub(crate) fn digits_p() -> crate::affinity::Affinities {
    use crate::affinity::{self, PerplexityParams};
    let points = crate::demo::points().unwrap();
    let nb = crate::knn::exact(&points, 90, &crate::progress::Silent).unwrap();
    let pp = PerplexityParams::default();
    let cond = affinity::conditional_probabilities(&nb, &pp).unwrap();
    let indptr: Vec<usize> = (0..=nb.n).map(|i| i * nb.k).collect();
    let cond: Vec<f64> = cond.iter().map(|&v| v as f64).collect();
    affinity::symmetrize(nb.n, &indptr, &nb.indices, &cond).unwrap()
}
