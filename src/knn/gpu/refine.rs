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
use crate::gpu::memory::{alloc_uninit, copy_peer};
use crate::gpu::progress::LaggedProgress;
use crate::gpu::Gpu;
use crate::progress::Progress;
use crate::{Error, Result};

/// Rows per launch: progress is reported between launches.
const ROWS_PER_LAUNCH: usize = 1 << 20;

/// Largest k the refinement takes (its merge buffer holds k and one round of candidates).
pub const MAX_K: usize = BUF - 32;

/// `rounds` refinement rounds of the graph `graph` (n × k positions of the points `x`,
/// n × d on the first of `gpus`, rows nearest first by `key`) with `fan` × `fan`
/// candidates per row; returns the refined graph and writes its keys into `distances`
/// (n × k). Progress (`"knn refine"`): one unit per launch of the first GPU.
///
/// Over several GPUs each round's rows are split: every other GPU gets the points once and
/// the round's graph at each round, GPU to GPU, refines its contiguous share of the rows
/// into its own buffers, and the first gathers the shares (and, after the last round,
/// their keys). The rounds read only the previous graph, so the result is the one-GPU
/// graph exactly.
#[allow(clippy::too_many_arguments)]
pub fn refine(
    gpus: &[&Gpu],
    x: &CudaSlice<f32>,
    shape: (usize, usize, usize),
    key: Key,
    graph: CudaSlice<i32>,
    distances: &mut CudaSlice<f32>,
    rounds: usize,
    fan: usize,
    progress: &dyn Progress,
) -> Result<CudaSlice<i32>> {
    let [first, others @ ..] = gpus else {
        return Err(Error::param("gpus", "the refinement needs a GPU"));
    };
    check(shape, fan)?;
    if rounds == 0 {
        return Ok(graph);
    }
    let (n, _, k) = shape;
    let share = n.div_ceil(gpus.len());
    let rows = |g: usize| (g * share).min(n)..((g + 1) * share).min(n);
    // Each other GPU's points, graph, next graph and keys.
    let mut parts = others
        .iter()
        .map(|&other| -> Result<_> {
            let mut px = alloc_uninit::<f32>(other, x.len())?;
            copy_peer(other, &mut px.slice_mut(..), first, &x.slice(..))?;
            let s = &other.stream;
            Ok((
                other,
                px,
                s.alloc_zeros::<i32>(n * k)?,
                s.alloc_zeros::<i32>(n * k)?,
                s.alloc_zeros::<f32>(n * k)?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    first.device.context.bind_to_thread()?;
    let mut current = graph;
    let mut next = first.stream.alloc_zeros::<i32>(n * k)?;
    let launches = rounds * rows(0).len().div_ceil(ROWS_PER_LAUNCH);
    let mut done = LaggedProgress::begin(progress, "knn refine", launches);
    let base = Round { x, shape, key, fan };
    for round_no in 0..rounds {
        // Every other GPU takes the round's graph at once, then all refine their rows;
        // the first starts once the copies, which wait for its queue, are done.
        let copied = std::sync::Barrier::new(gpus.len());
        std::thread::scope(|scope| -> Result<()> {
            let (copied, current) = (&copied, &current);
            let handles: Vec<_> = parts
                .iter_mut()
                .enumerate()
                .map(|(i, (other, px, graph, next, keys))| {
                    let round = Round { x: px, ..base };
                    scope.spawn(move || -> Result<()> {
                        let copy =
                            copy_peer(other, &mut graph.slice_mut(..), first, &current.slice(..));
                        copied.wait();
                        copy?;
                        other.device.context.bind_to_thread()?;
                        let mut quiet = LaggedProgress::begin(&crate::progress::Silent, "", 0);
                        round.rows(other, rows(i + 1), graph, next, keys, &mut quiet)?;
                        other.stream.synchronize()?;
                        Ok(())
                    })
                })
                .collect();
            copied.wait();
            first.device.context.bind_to_thread()?;
            let own = base.rows(first, rows(0), current, &mut next, distances, &mut done);
            let mut result = own;
            for h in handles {
                let got = h
                    .join()
                    .unwrap_or_else(|_| Err(Error::param("gpus", "a GPU's thread panicked")));
                result = result.and(got);
            }
            result
        })?;
        first.device.context.bind_to_thread()?;
        let last = round_no + 1 == rounds;
        for (i, (other, _, _, their_next, keys)) in parts.iter().enumerate() {
            let at = rows(i + 1).start * k..rows(i + 1).end * k;
            let src = their_next.slice(at.clone());
            copy_peer(first, &mut next.slice_mut(at.clone()), other, &src)?;
            if last {
                copy_peer(
                    first,
                    &mut distances.slice_mut(at.clone()),
                    other,
                    &keys.slice(at),
                )?;
            }
        }
        std::mem::swap(&mut current, &mut next);
    }
    done.end()?;
    Ok(current)
}

/// Refuses shapes the kernel cannot take.
fn check((_, d, k): (usize, usize, usize), fan: usize) -> Result<()> {
    if d > MAX_DIM || k > MAX_K || !(1..=k).contains(&fan) {
        return Err(Error::param(
            "knn refine",
            format!(
                "takes d ≤ {MAX_DIM}, k ≤ {MAX_K} and 1 ≤ fan ≤ k; got d {d}, k {k}, fan {fan}"
            ),
        ));
    }
    Ok(())
}

/// One round's fixed inputs: the points (on the GPU that runs it), the shape (n, d, k),
/// the key and the fan.
#[derive(Clone, Copy)]
struct Round<'a> {
    x: &'a CudaSlice<f32>,
    shape: (usize, usize, usize),
    key: Key,
    fan: usize,
}

impl Round<'_> {
    /// Refines the rows `rows` of `current` into `next` and their keys into `distances`,
    /// on `gpu`, in launches of [`ROWS_PER_LAUNCH`] rows.
    fn rows(
        &self,
        gpu: &Gpu,
        rows: std::ops::Range<usize>,
        current: &CudaSlice<i32>,
        next: &mut CudaSlice<i32>,
        distances: &mut CudaSlice<f32>,
        done: &mut LaggedProgress,
    ) -> Result<()> {
        let (n, d, k) = self.shape;
        let s = &gpu.stream;
        for row0 in rows.clone().step_by(ROWS_PER_LAUNCH) {
            let count = ROWS_PER_LAUNCH.min(rows.end - row0);
            KnnRefine {
                x: self.x,
                n,
                d,
                c: kernel_c(self.key),
                in_i: current,
                k,
                fan: self.fan,
                row0,
                rows: count,
                out_i: &mut *next,
                out_d: &mut *distances,
            }
            .launch(
                gpu,
                s,
                LaunchConfig {
                    grid_dim: (count.div_ceil(WARPS) as u32, 1, 1),
                    block_dim: ((WARPS * 32) as u32, 1, 1),
                    shared_mem_bytes: 0,
                },
            )?;
            done.queued(s)?;
        }
        Ok(())
    }
}
