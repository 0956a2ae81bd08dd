//! Step 1, the perplexity calibration (`affinity_perplexity`, one thread per row, the
//! block's rows staged in shared memory).

use cudarc::driver::{CudaSlice, LaunchConfig};

use super::{check_args, lap};
use crate::gpu::kernels::affinity::AffinityPerplexity;
use crate::gpu::memory::{alloc_uninit, ensure_fits};
use crate::gpu::{Gpu, GpuError};
use crate::Result;

/// Bisection tolerance on |H − ln u| in nats, as on the CPU.
const TOLERANCE: f64 = 1e-5;
/// Bisection steps before falling back to the best β, as on the CPU.
const MAX_STEPS: i32 = 200;
/// Shared memory a block of the perplexity kernel may use (the default limit).
const PERPLEXITY_SMEM: usize = 48 * 1024;

/// Row-stochastic conditional probabilities on the device, with their total Σ C.
pub(crate) struct Conditional {
    /// n × k, row-major, laid out like the neighbours.
    pub(crate) cond: CudaSlice<f32>,
    /// One double: Σ C (= n up to rounding).
    pub(crate) total: CudaSlice<u64>,
}

/// The conditionals p_{j|i} of the squared `distances` (n × k, ascending per row) at
/// `perplexity`.
pub(crate) fn calibrate(
    gpu: &'static Gpu,
    distances: &CudaSlice<f32>,
    n: usize,
    k: usize,
    perplexity: f64,
) -> Result<Conditional> {
    check_args(n, k, perplexity)?;
    let run = || -> std::result::Result<Conditional, GpuError> {
        ensure_fits(gpu, "conditional probabilities", n * k * 4)?;
        let s = &gpu.stream;
        let mut cond = alloc_uninit::<f32>(gpu, n * k)?;
        let mut total = s.alloc_zeros::<u64>(crate::gpu::sum::WORDS)?;
        lap(gpu, "perplexity: alloc");
        // Odd row stride: the threads of a warp read distinct shared-memory banks.
        let stride = k | 1;
        let rows = ((PERPLEXITY_SMEM / (stride * 4)) / 32 * 32).clamp(32, 128);
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(rows).clamp(1, 1 << 20) as u32, 1, 1),
            block_dim: (rows as u32, 1, 1),
            shared_mem_bytes: (rows * stride * 4) as u32,
        };
        AffinityPerplexity {
            n,
            k,
            stride,
            target: perplexity.ln(),
            tol: TOLERANCE,
            max_steps: MAX_STEPS,
            dist: distances,
            cond: &mut cond,
            total: &mut total,
        }
        .launch(gpu, s, cfg)?;
        lap(gpu, "perplexity: kernel");
        Ok(Conditional { cond, total })
    };
    Ok(run()?)
}
