//! `kernels/grid_fft.cu`: batched 2-D complex FFTs of square grids whose side has no prime
//! factor above 7, a pass over rows or over columns a launch, for the G2G's transforms
//! without cuFFT ([`crate::gpu::fft`]).

use crate::gpu::launch::kernels;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[];

/// Threads per block of [`GridFftLines`].
pub const THREADS: u32 = 256;

/// The longest side the kernels take.
pub const MAX_SIDE: usize = 4096;

kernels! {
    file: GridFft;

    /// One pass of the transforms of `batch` grids of `p` × `p` values (row-major, grid g at
    /// g · p²), `lines` lines a block: the rows of `input` into `output` (`columns` 0), or
    /// the columns of `output` in place (`columns` 1, `input` unread); `sign` −1 forward, +1
    /// inverse, unnormalised. Dynamic shared memory: (2 · `lines` + 1) · `p` complex values.
    pub struct GridFftLines<T> = "grid_fft_lines" {
        p: usize as i32,
        batch: usize as i32,
        lines: usize as i32,
        columns: i32,
        sign: i32,
        input: in T::Complex [batch * p * p],
        output: out T::Complex [batch * p * p],
    }
}
