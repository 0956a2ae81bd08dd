//! The recall sample: rows drawn at random, their exact neighbours by a sweep of every
//! reference, and the recall of a graph on them.

use cudarc::driver::CudaSlice;
use rayon::prelude::*;

use crate::gpu::kernels::ivf::IvfRows;
use crate::gpu::kernels::knn_fused::{CHUNK, QUERIES};
use crate::gpu::memory::alloc_uninit;
use crate::gpu::{Gpu, GpuError};
use crate::knn::gpu::fused::{self, Lists, Plan, Split};
use crate::knn::gpu::{fill_lists, Shape};
use crate::knn::ivf::{self as host, Cells};
use crate::Points;

/// Points in the recall sample.
pub const RECALL_SAMPLE: usize = 10_000;

/// The exact candidates (a superset of the k nearest, input rows) of the rows `queries` of
/// `split`, whose rows are input rows `names` (`None`: input rows themselves): a sweep of
/// every reference chunk for each block of queries. The references are cut into parts,
/// each block of queries sweeping each part as a block of its own, so that the launch
/// has blocks for every multiprocessor (the recall sample is 79 blocks, an H200 has 132
/// multiprocessors: its search at 10M points took 0.47–0.50 s, in parts 0.38–0.41); a
/// query's parts' lists are then merged into the `list` nearest by the sweep's key, which
/// hold its k nearest as one part's list would.
pub(super) fn exact_candidates(
    gpu: &Gpu,
    split: &Split,
    queries: &[i32],
    names: Option<&[u32]>,
    shape: Shape,
) -> Result<Vec<Vec<u32>>, GpuError> {
    let s = &gpu.stream;
    let Shape { n, kr, .. } = shape;
    let take = queries.len().div_ceil(QUERIES);
    let steps = n.div_ceil(CHUNK);
    let list = shape.list();
    let most = EXACT_LIST_BYTES / (take * QUERIES * list * 8).max(1);
    let parts = (EXACT_BLOCKS_PER_SM * gpu.multiprocessors())
        .div_ceil(take.max(1))
        .min(most)
        .clamp(1, steps.max(1));
    let blocks = take * parts;
    let qrows: Vec<i32> = (0..blocks)
        .flat_map(|b| b / parts * QUERIES..(b / parts + 1) * QUERIES)
        .map(|q| queries.get(q).copied().unwrap_or(-1))
        .collect();
    let runs: Vec<i32> = (0..blocks)
        .flat_map(|b| {
            // A run is its first chunk and its count of chunks.
            let (part, first) = (b % parts, (b % parts) * steps / parts);
            [first, (part + 1) * steps / parts - first].map(|chunks| chunks as i32)
        })
        .collect();
    let run_off: Vec<i32> = (0..=blocks as i32).collect();
    let plan = Plan::upload(gpu, &qrows, &runs, &run_off)?;
    let mut state_d = s.alloc_zeros::<f32>(blocks * QUERIES * list)?;
    let mut state_i = s.alloc_zeros::<i32>(blocks * QUERIES * list)?;
    fill_lists(
        gpu,
        kr,
        &mut state_d,
        &mut state_i,
        blocks * QUERIES * list,
        f32::INFINITY,
    )?;
    let lists = Lists {
        d: &mut state_d,
        i: &mut state_i,
        slot0: 0,
    };
    let silent = &crate::progress::Silent;
    fused::sweep(gpu, split, &plan, 0..blocks, kr, lists, &[], silent)?;
    let dist: Vec<f32> = s.clone_dtoh(&state_d)?;
    let index: Vec<i32> = s.clone_dtoh(&state_i)?;
    let name = |j: i32| names.map_or(j as u32, |order| order[j as usize]);
    Ok((0..queries.len())
        .into_par_iter()
        .map(|q| {
            let (block, lane) = (q / QUERIES, q % QUERIES);
            let mut found: Vec<(f32, i32)> = (0..parts)
                .flat_map(|part| {
                    let at = ((block * parts + part) * QUERIES + lane) * list;
                    dist[at..at + list]
                        .iter()
                        .copied()
                        .zip(index[at..at + list].iter().copied())
                })
                .filter(|&(_, j)| j >= 0)
                .collect();
            if parts > 1 {
                found.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                found.truncate(list);
            }
            found.into_iter().map(|(_, j)| name(j)).collect()
        })
        .collect())
}

/// Blocks per multiprocessor [`exact_candidates`] aims its parts at.
const EXACT_BLOCKS_PER_SM: usize = 4;

/// At most this many bytes of candidate lists in [`exact_candidates`] (its parts fewer
/// where k is large): 72 MB for the recall sample at k = 90 on an H200.
const EXACT_LIST_BYTES: usize = 256 << 20;

/// The recall sample: [`RECALL_SAMPLE`] input rows drawn at random (the CPU twin's,
/// [`host::recall_sample`]), with their exact candidate lists from a sweep over every
/// reference.
pub(super) struct RecallSample {
    /// The input rows of the sample, ascending.
    pub(super) rows: Vec<u32>,
    /// Their sorted positions, once the cells are known ([`RecallSample::place`]).
    pub(super) positions: Vec<i32>,
    /// Each row's exact candidates (a superset of its k nearest), input rows.
    pub(super) candidates: Vec<Vec<u32>>,
}

impl RecallSample {
    /// The sample's rows, their positions and candidates yet to be found.
    pub(super) fn new(n: usize, seed: u64) -> Self {
        RecallSample {
            rows: host::recall_sample(n, RECALL_SAMPLE, seed),
            positions: Vec::new(),
            candidates: Vec::new(),
        }
    }

    /// Finds the sample's sorted positions in `cells.order`.
    pub(super) fn place(&mut self, cells: &Cells) {
        let found: Vec<(usize, i32)> = cells
            .order
            .par_iter()
            .enumerate()
            .filter_map(|(p, i)| self.rows.binary_search(i).ok().map(|s| (s, p as i32)))
            .collect();
        self.positions = vec![-1; self.rows.len()];
        for (s, p) in found {
            self.positions[s] = p;
        }
    }

    /// The recall of the graph `indices` (n × k sorted positions, rows by sorted position)
    /// on the sample by the shape's key ([`host::sample_recall`]).
    pub(super) fn recall(
        &self,
        gpu: &Gpu,
        points: &Points,
        cells: &Cells,
        indices: &CudaSlice<i32>,
        shape: Shape,
    ) -> Result<f64, GpuError> {
        let Shape { n, k, key, .. } = shape;
        let s = &gpu.stream;
        let count = self.positions.len();
        if count == 0 || k == 0 {
            return Ok(host::sample_recall(points, key, k, &[], &[], &[]));
        }
        let pos = s.clone_htod(&self.positions)?;
        let mut rows = alloc_uninit::<i32>(gpu, count * k)?;
        IvfRows {
            src: indices,
            n,
            k,
            pos: &pos,
            count,
            rows: &mut rows,
        }
        .launch(gpu, s, gpu.config(count * k))?;
        let approx: Vec<u32> = s
            .clone_dtoh(&rows)?
            .into_iter()
            .map(|j| cells.order[j as usize])
            .collect();
        Ok(host::sample_recall(
            points,
            key,
            k,
            &self.rows,
            &approx,
            &self.candidates,
        ))
    }
}
