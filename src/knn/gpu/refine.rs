//! Refinement of an approximate kNN graph on the GPU: rounds of "a neighbour of a
//! neighbour is likely a neighbour", the local join of NN-descent (Dong, Charikar and Li,
//! WWW 2011) on forward edges, as GPU graph builders use it to polish a coarse graph
//! (GGNN, Groh et al. 2022; CAGRA, Ootomo et al. 2024).
//!
//! The IVF sweep (`super::ivf`) misses the neighbours that sit across a cell border from
//! their query, and those are exactly what its near neighbours know: a round gives every
//! row the k nearest of its current neighbours and of the first `fan` neighbours of its
//! first `fan` neighbours (fan² candidates, keys exact in double). A round reads one
//! graph and writes another, so the result does not depend on the order the rows are
//! done in; it costs one more n × k index buffer. Why forward edges only: reverse edges
//! need a scatter whose order (atomics) would make the graph vary from run to run.

use cudarc::driver::{CudaSlice, LaunchConfig};

use super::{kernel_c, Key};
use crate::gpu::kernels::knn_refine::{KnnRefine, BUF, MAX_DIM, WARPS};
use crate::gpu::progress::LaggedProgress;
use crate::gpu::Gpu;
use crate::progress::Progress;
use crate::{Error, Result};

/// Rows per launch: progress is reported between launches.
const ROWS_PER_LAUNCH: usize = 1 << 20;

/// Largest k the refinement takes (its merge buffer holds k and one round of candidates).
pub const MAX_K: usize = BUF - 32;

/// `rounds` refinement rounds of the graph `graph` (n × k positions of the points `x`,
/// n × d on the device, rows nearest first by `key`) with `fan` × `fan` candidates per
/// row; returns the refined graph and writes its keys into `distances` (n × k). Progress
/// (`"knn refine"`): one unit per launch.
#[allow(clippy::too_many_arguments)]
pub fn refine(
    gpu: &Gpu,
    x: &CudaSlice<f32>,
    (n, d, k): (usize, usize, usize),
    key: Key,
    graph: CudaSlice<i32>,
    distances: &mut CudaSlice<f32>,
    rounds: usize,
    fan: usize,
    progress: &dyn Progress,
) -> Result<CudaSlice<i32>> {
    if d > MAX_DIM || k > MAX_K || !(1..=k).contains(&fan) {
        return Err(Error::param(
            "knn refine",
            format!(
                "takes d ≤ {MAX_DIM}, k ≤ {MAX_K} and 1 ≤ fan ≤ k; got d {d}, k {k}, fan {fan}"
            ),
        ));
    }
    if rounds == 0 {
        return Ok(graph);
    }
    let s = &gpu.stream;
    let mut current = graph;
    let mut next = s.alloc_zeros::<i32>(n * k)?;
    let launches = rounds * n.div_ceil(ROWS_PER_LAUNCH);
    let mut done = LaggedProgress::begin(progress, "knn refine", launches);
    for _ in 0..rounds {
        for row0 in (0..n).step_by(ROWS_PER_LAUNCH) {
            let rows = ROWS_PER_LAUNCH.min(n - row0);
            KnnRefine {
                x,
                n,
                d,
                c: kernel_c(key),
                in_i: &current,
                k,
                fan,
                row0,
                rows,
                out_i: &mut next,
                out_d: &mut *distances,
            }
            .launch(
                gpu,
                s,
                LaunchConfig {
                    grid_dim: (rows.div_ceil(WARPS) as u32, 1, 1),
                    block_dim: ((WARPS * 32) as u32, 1, 1),
                    shared_mem_bytes: 0,
                },
            )?;
            done.queued(s)?;
        }
        std::mem::swap(&mut current, &mut next);
    }
    done.end()?;
    Ok(current)
}
