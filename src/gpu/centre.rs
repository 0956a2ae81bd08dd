//! Centring n × d points on the device (`kernels/centre.cu`), shared by the exact kNN (whose
//! GEMM form loses fewer digits on centred points) and the PCA: the column sums in double,
//! so that the mean stays exact at n = 10⁶+, then the centred copy and its rows' squared
//! norms.

use cudarc::driver::{CudaSlice, LaunchConfig};

use super::kernels::centre::{CentreColumnSums, CentreRows};
use super::{Gpu, GpuError};

/// The centred points and what centring computed on the way.
pub struct Centred {
    /// x − mean, n × d.
    pub xc: CudaSlice<f32>,
    /// Column sums, d doubles.
    pub sums: CudaSlice<f64>,
    /// Squared norms of the centred rows, zero-padded to the requested length.
    pub norms: CudaSlice<f32>,
}

/// Centres the n × d points `x` (row-major, on the device); the norms come zero-padded to
/// `norms_len ≥ n` (the kNN's tiles read a whole tile's worth).
pub fn centre_on_device(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    n: usize,
    d: usize,
    norms_len: usize,
) -> Result<Centred, GpuError> {
    let s = &gpu.stream;
    let mut sums = s.alloc_zeros::<f64>(d)?;
    let mut xc = s.alloc_zeros::<f32>(n * d)?;
    let mut norms = s.alloc_zeros::<f32>(norms_len.max(n))?;
    // Blocks of 64 rows each, at most 1024 blocks: their atomics on the d sums stay few.
    let blocks = LaunchConfig {
        grid_dim: (n.div_ceil(64).clamp(1, 1024) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    CentreColumnSums {
        x,
        n,
        d,
        sums: &mut sums,
    }
    .launch(gpu, s, blocks)?;
    CentreRows {
        x,
        n,
        d,
        sums: &sums,
        xc: &mut xc,
        norms: &mut norms,
    }
    .launch(gpu, s, gpu.config(n * 32))?;
    Ok(Centred { xc, sums, norms })
}
