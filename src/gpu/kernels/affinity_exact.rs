//! `kernels/affinity_exact.cu`: exact affinities over every pair of points
//! (`crate::affinity::gpu::exact`, whose module doc describes the scheme). Rows are taken in
//! blocks of `rows` rows from `row0`; every rows × n array is row-major.

use crate::gpu::launch::kernels;
use crate::gpu::sum::WORDS;

/// Side of the square tile of pairs one block of [`ExactDistances`] computes.
pub const PAIR_TILE: usize = 32;
/// Threads of an [`ExactDistances`] block along the tile's rows (`PAIR_TILE` along its
/// columns): each thread takes `PAIR_TILE / TILE_ROWS` rows of one column.
pub const TILE_ROWS: usize = 8;
/// Dimensions staged in shared memory per step of [`ExactDistances`]: a multiple of the 8
/// lanes the CPU's squared distance sums in, so that lane l of a group is the CPU's lane l.
pub const DIM_CHUNK: usize = 32;
/// Most threads of an [`ExactCalibrate`] block (one row).
pub const CALIBRATE_THREADS: usize = 1024;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[
    ("PAIR_TILE", PAIR_TILE),
    ("TILE_ROWS", TILE_ROWS),
    ("DIM_CHUNK", DIM_CHUNK),
    ("CALIBRATE_THREADS", CALIBRATE_THREADS),
];

kernels! {
    file: AffinityExact;

    /// The squared distances from the points `row0 .. row0 + rows` to every point of `x`
    /// (n × d) into `dist` (rows × n), each equal bit for bit to the CPU's
    /// `crate::knn::sq_dist`. Needs `row0 + rows ≤ n`; blocks of ([`PAIR_TILE`],
    /// [`TILE_ROWS`]) threads, grid (⌈n / [`PAIR_TILE`]⌉, ⌈rows / [`PAIR_TILE`]⌉).
    pub struct ExactDistances = "exact_distances" {
        n: usize as i32,
        d: usize as i32,
        row0: usize as i32,
        rows: usize as i32,
        x: in f32 [n * d],
        dist: out f32 [rows * n],
    }

    /// Per row `row0 + b` of `dist` (as [`ExactDistances`] wrote it), the perplexity
    /// bisection over its n − 1 other points, in f64 as the CPU's: its precision, smallest
    /// distance and normaliser into `beta`, `shift` and `norm` (at the row's index), its
    /// conditionals rounded to f32 added to `total` (zeroed before the first block of rows;
    /// an exact sum, `crate::gpu::sum`). One block per row of a multiple of 32 threads, at
    /// most [`CALIBRATE_THREADS`].
    pub struct ExactCalibrate = "exact_calibrate" {
        n: usize as i32,
        row0: usize as i32,
        rows: usize as i32,
        target: f64,
        tol: f64,
        max_steps: i32,
        dist: in f32 [rows * n],
        beta: out f64 [n],
        shift: out f64 [n],
        norm: out f64 [n],
        total: out u64 [WORDS],
    }

    /// P's rows `row0 .. row0 + rows` without the diagonal into `p` (rows × (n − 1), column
    /// order): (c_ij + c_ji) · `scale` rounded to f32, both conditionals recomputed from the
    /// rows' calibration ([`ExactCalibrate`], every row done) at the distance in `dist`;
    /// −0.0 where c_ij + c_ji is 0, counted in `dropped` (zeroed). Any grid.
    pub struct ExactJoint = "exact_joint" {
        n: usize as i32,
        row0: usize as i32,
        rows: usize as i32,
        scale: f64,
        dist: in f32 [rows * n],
        beta: in f64 [n],
        shift: in f64 [n],
        norm: in f64 [n],
        p: out f32 [rows * n.saturating_sub(1)],
        dropped: out u64 [1],
    }
}
