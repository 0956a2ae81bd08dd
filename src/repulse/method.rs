//! Which repulsion a run uses and where: the one place that turns `--repulsion`,
//! `--precision` and `--grid` into an implementation, on the host ([`RepulsionSpec::host`],
//! the cpu backend) or on the device ([`RepulsionSpec::device`], gpu and hybrid).

use std::sync::Arc;

use cudarc::driver::CudaStream;
use serde::Serialize;

use super::{
    ExactRepulsion, ExactRepulsionGpu, FftRepulsion, FftRepulsionGpu, GridSpec, Repulse, RepulseGpu,
};
use crate::gpu::Gpu;
use crate::kernel::Kernel;
use crate::Result;

/// How the repulsion is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RepulsionMethod {
    /// FFT-accelerated interpolation on a grid (DESIGN §2.2).
    Fft,
    /// Direct O(n²) sums, the reference.
    Exact,
}

/// Precision of the FFT repulsion's grids, FFTs and potentials (coordinates and forces are
/// `f32` throughout). `f64` is the reference thesis's choice; it is meant for the hybrid
/// backend, where the repulsion is hidden behind the CPU attraction. It also runs on the cpu
/// and gpu backends, where it costs repulsion time on the critical path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Single precision (default): its rounding is far below the interpolation error.
    F32,
    /// Double precision.
    F64,
}

/// A repulsion as a run asks for it: the method, and for the FFT method its grid and
/// precision.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RepulsionSpec {
    pub method: RepulsionMethod,
    pub grid: GridSpec,
    pub precision: Precision,
    /// The embedding's kernel (Student's t of any α, on either device).
    pub kernel: Kernel,
    /// On the device, spread the charges in fixed point, so that runs repeat bit for bit
    /// (`--deterministic`; the host's repulsion always does).
    pub deterministic: bool,
    /// Split the kernel: the grid convolves its long part, the pairs within the cutoff sum
    /// the short part directly ([`crate::repulse::near`]; FFT method, Cauchy kernel).
    pub near_field: bool,
    /// The most nodes of an adaptive grid ([`crate::repulse::Grid::fit_box_within`]:
    /// [`crate::repulse::grid::MAX_TOTAL_NODES`] unless a budget holds it lower).
    pub max_nodes: usize,
}

impl RepulsionSpec {
    /// The repulsion on the host (rayon).
    pub fn host(&self) -> Box<dyn Repulse> {
        match (self.method, self.precision) {
            (RepulsionMethod::Fft, Precision::F32) => Box::new(
                FftRepulsion::new(self.grid)
                    .with_kernel(self.kernel)
                    .with_near_field(self.near_field)
                    .with_max_nodes(self.max_nodes),
            ),
            (RepulsionMethod::Fft, Precision::F64) => Box::new(
                FftRepulsion::<f64>::with_precision(self.grid)
                    .with_kernel(self.kernel)
                    .with_near_field(self.near_field)
                    .with_max_nodes(self.max_nodes),
            ),
            (RepulsionMethod::Exact, _) => Box::new(ExactRepulsion::with_kernel(self.kernel)),
        }
    }

    /// The repulsion on the device, its work queued on `stream` (of `gpu`'s context).
    pub fn device(
        &self,
        gpu: &'static Gpu,
        stream: Arc<CudaStream>,
    ) -> Result<Box<dyn RepulseGpu>> {
        Ok(match (self.method, self.precision) {
            (RepulsionMethod::Fft, Precision::F32) => Box::new(
                FftRepulsionGpu::<f32>::on_stream(gpu, stream, self.grid)?
                    .with_kernel(self.kernel)
                    .with_near_field(self.near_field)
                    .with_max_nodes(self.max_nodes)
                    .with_deterministic(self.deterministic),
            ),
            (RepulsionMethod::Fft, Precision::F64) => Box::new(
                FftRepulsionGpu::<f64>::on_stream(gpu, stream, self.grid)?
                    .with_kernel(self.kernel)
                    .with_near_field(self.near_field)
                    .with_max_nodes(self.max_nodes)
                    .with_deterministic(self.deterministic),
            ),
            (RepulsionMethod::Exact, _) => {
                Box::new(ExactRepulsionGpu::on_stream(gpu, stream)?.with_kernel(self.kernel))
            }
        })
    }
}
