//! Centring n × d points on the device (`kernels/centre.cu`), shared by the exact kNN (whose
//! GEMM form loses fewer digits on centred points) and the PCA: the column means from exact
//! sums ([`super::sum`]: exact at n = 10⁶+, and the same whatever order the blocks add in,
//! so the distances after them repeat bit for bit), each column first scaled below 1 by a
//! power of two; then the centred copy and its rows' squared norms. The columns' largest
//! magnitudes also give the fused kNN's FP16 split its scale ([`largest_magnitude`]).

use cudarc::driver::{CudaSlice, LaunchConfig};

use super::kernels::centre::{CentreColumnMax, CentreColumnSums, CentreMeans, CentreRows};
use super::{Gpu, GpuError};

/// The centred points and what centring computed on the way.
pub struct Centred {
    /// x − mean, n × d.
    pub xc: CudaSlice<f32>,
    /// Column means, d doubles.
    pub mean: CudaSlice<f64>,
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
    let maxbits = column_max(gpu, x, n, d)?;
    let mut sums = s.alloc_zeros::<u64>(d * super::sum::WORDS)?;
    let mut mean = s.alloc_zeros::<f64>(d)?;
    let mut xc = s.alloc_zeros::<f32>(n * d)?;
    let mut norms = s.alloc_zeros::<f32>(norms_len.max(n))?;
    let blocks = column_blocks(n);
    CentreColumnSums {
        x,
        n,
        d,
        maxbits: &maxbits,
        sums: &mut sums,
    }
    .launch(gpu, s, blocks)?;
    CentreMeans {
        n,
        d,
        maxbits: &maxbits,
        sums: &sums,
        mean: &mut mean,
    }
    .launch(gpu, s, gpu.config(d))?;
    CentreRows {
        x,
        n,
        d,
        mean: &mean,
        xc: &mut xc,
        norms: &mut norms,
    }
    .launch(gpu, s, gpu.config(n * 32))?;
    Ok(Centred { xc, mean, norms })
}

/// The column kernels' grid: blocks of 64 rows each, at most 1024 blocks, so that their
/// atomics on the d per-column words stay few.
fn column_blocks(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(64).clamp(1, 1024) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Each column's largest |x_ij| of the n × d points `x`, as f32 bits (non-negative floats
/// order as their bits).
fn column_max(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    n: usize,
    d: usize,
) -> Result<CudaSlice<u32>, GpuError> {
    let mut maxbits = gpu.stream.alloc_zeros::<u32>(d)?;
    CentreColumnMax {
        x,
        n,
        d,
        maxbits: &mut maxbits,
    }
    .launch(gpu, &gpu.stream, column_blocks(n))?;
    Ok(maxbits)
}

/// The largest |x_ij| of the n × d points `x` (on the device), on the host.
pub fn largest_magnitude(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    n: usize,
    d: usize,
) -> Result<f32, GpuError> {
    let maxbits = gpu.stream.clone_dtoh(&column_max(gpu, x, n, d)?)?;
    Ok(maxbits.into_iter().map(f32::from_bits).fold(0.0, f32::max))
}
