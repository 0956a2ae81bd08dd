//! `kernels/centre.cu`: centring n × d points on the device (`crate::gpu::centre`).

use crate::gpu::launch::kernels;
use crate::gpu::sum::WORDS;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[];

kernels! {
    file: Centre;

    /// The largest magnitude of each column of the n × d points `x`, as float bits, into
    /// `maxbits` (zeroed first); any grid, blocks of a multiple of 32 threads.
    pub struct CentreColumnMax = "centre_column_max" {
        x: in f32 [n * d],
        n: usize as i64,
        d: usize as i32,
        maxbits: out u32 [d],
    }

    /// Column sums of `x`, each column scaled below 1 by a power of two from `maxbits`, into
    /// `sums` (zeroed first; exact sums, `crate::gpu::sum`); the grid of [`CentreColumnMax`].
    pub struct CentreColumnSums = "centre_column_sums" {
        x: in f32 [n * d],
        n: usize as i64,
        d: usize as i32,
        maxbits: in u32 [d],
        sums: out u64 [d * WORDS],
    }

    /// The column means from [`CentreColumnSums`]'s sums into `mean`.
    pub struct CentreMeans = "centre_means" {
        n: usize as i64,
        d: usize as i32,
        maxbits: in u32 [d],
        sums: in u64 [d * WORDS],
        mean: out f64 [d],
    }

    /// `xc` = `x` − `mean`, and the squared norms of its rows into `norms` (one warp per
    /// row).
    pub struct CentreRows = "centre_rows" {
        x: in f32 [n * d],
        n: usize as i64,
        d: usize as i32,
        mean: in f64 [d],
        xc: out f32 [n * d],
        norms: out f32 [n],
    }
}
