//! Backends: where each stage runs (DESIGN §3).
//!
//! - `cpu`: everything on the host with rayon; CSB attraction, CPU FFT repulsion.
//! - `gpu`: everything resident on one CUDA device (not built yet).
//! - `hybrid`: CPU attraction overlapped with GPU repulsion (not built yet).
//! - `auto`: gpu when a device is usable, else cpu.

pub mod cpu;

use crate::{gpu, Error, Result};

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

    /// Resolves `auto` by probing for a GPU; an explicit `gpu` or `hybrid` fails with the
    /// probe's reason when no device is usable, and with [`Error::NotBuilt`] until those
    /// backends exist.
    pub fn resolve(self) -> Result<Resolved> {
        match self {
            BackendKind::Cpu => Ok(Resolved {
                kind: BackendKind::Cpu,
                note: "requested".into(),
            }),
            BackendKind::Auto => Ok(Resolved {
                kind: BackendKind::Cpu,
                note: match gpu::probe() {
                    Ok(d) => format!(
                        "GPU {} found, but the GPU backend is not built yet; using cpu",
                        d.name
                    ),
                    Err(reason) => format!("no usable GPU ({reason}); using cpu"),
                },
            }),
            BackendKind::Gpu | BackendKind::Hybrid => match gpu::probe() {
                Err(reason) => Err(Error::GpuUnavailable { reason }),
                Ok(_) => Err(Error::NotBuilt(self.name())),
            },
        }
    }
}
