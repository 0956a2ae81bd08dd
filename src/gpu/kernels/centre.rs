//! `kernels/centre.cu`: centring n × d points on the device (`crate::gpu::centre`).

use crate::gpu::launch::kernels;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[];

kernels! {
    file: Centre;

    /// Column sums of the n × d points `x` in double, into `sums` (zeroed first); any grid,
    /// blocks of a multiple of 32 threads.
    pub struct CentreColumnSums = "centre_column_sums" {
        x: in f32 [n * d],
        n: usize as i64,
        d: usize as i32,
        sums: out f64 [d],
    }

    /// `xc` = `x` − `sums` / n, and the squared norms of its rows into `norms` (one warp per
    /// row).
    pub struct CentreRows = "centre_rows" {
        x: in f32 [n * d],
        n: usize as i64,
        d: usize as i32,
        sums: in f64 [d],
        xc: out f32 [n * d],
        norms: out f32 [n],
    }
}
