//! The quality measures' embedding kNN on the GPU: the host builds its levels of grids
//! (`super::embedding_knn`, a parallel sort by cell: about a twentieth of the host's whole
//! measure), the device searches them (`kernels/quality.cu`, one thread per point, the
//! host's search step for step, so the rows are the host's), and each block of rows comes
//! back to be scored on the host's cores as the host's rows are. At 10M points the host's
//! search took 1.4–1.8 s on 32 cores (`benches/RESULTS.md`).

use rayon::prelude::*;

use std::ops::Range;

use cudarc::driver::CudaSlice;

use super::embedding_knn::{add, Layout, Search};
use crate::gpu::kernels::quality::{QualityKnn, MAX_K};
use crate::gpu::memory::{alloc_uninit, ensure_fits};
use crate::gpu::{Gpu, GpuError};
use crate::Result;

/// Queries per launch: their rows (k each) are the launch's device buffer and the host's
/// block of rows, scored while the device searches the next launch's.
const QUERIES: usize = 1 << 20;

/// Why the search is not on the device: the caller measures on the host instead.
pub(super) enum Declined {
    /// No GPU was given.
    NoDevice,
    /// k beyond the kernel's [`MAX_K`].
    LargeK,
    /// Too little free device memory.
    Memory(GpuError),
}

impl Declined {
    /// The report's note, when a GPU was given.
    pub(super) fn note(self) -> Option<String> {
        match self {
            Declined::NoDevice => None,
            Declined::LargeK => Some(format!(
                "the quality measures' neighbours were searched on the host: k above {MAX_K}"
            )),
            Declined::Memory(e) => Some(format!(
                "the quality measures' neighbours were searched on the host: {e}"
            )),
        }
    }
}

/// `super::embedding_knn::sum_over_rows` with the search on `gpus`, each searching an equal
/// contiguous share of the queries (in the search's order): the same sums, or [`Declined`]
/// before any work when a device cannot take it (k above [`MAX_K`], or its arrays do not
/// fit its free memory).
pub(super) fn sum_over_rows<const D: usize, S>(
    gpus: &[&Gpu],
    y: &[f32],
    k: usize,
    score: S,
) -> Result<std::result::Result<[u64; 2], Declined>>
where
    S: Fn(usize, &[u32]) -> [u64; 2] + Sync,
{
    sum_in_batches::<D, S>(gpus, y, k, score, QUERIES)
}

/// [`sum_over_rows`] with at most `queries` queries per launch.
fn sum_in_batches<const D: usize, S>(
    gpus: &[&Gpu],
    y: &[f32],
    k: usize,
    score: S,
    queries: usize,
) -> Result<std::result::Result<[u64; 2], Declined>>
where
    S: Fn(usize, &[u32]) -> [u64; 2] + Sync,
{
    let n = y.len() / D;
    let k = k.min(n.saturating_sub(1));
    if gpus.is_empty() {
        return Ok(Err(Declined::NoDevice));
    }
    if k > MAX_K {
        return Ok(Err(Declined::LargeK));
    }
    if k == 0 {
        return Ok(Ok((0..n).map(|i| score(i, &[])).fold([0, 0], add)));
    }
    let search = Search::<D>::new(y, n);
    let layout = search.layout();
    crate::trace::event(|| "quality: grids built".into());
    let world = gpus.len();
    let batch = queries.min(n.div_ceil(world)).max(1);
    let bytes = 4 * (layout.sorted.len() + n + layout.starts.len() + batch * k);
    for gpu in gpus {
        if let Err(e) = ensure_fits(gpu, "the quality measures' kNN", bytes) {
            return Ok(Err(Declined::Memory(e)));
        }
    }
    let share = Share {
        search: &search,
        layout: &layout,
        k,
        batch,
        score: &score,
    };
    let mut sums: Vec<Result<[u64; 2]>> = (0..world).map(|_| Ok([0; 2])).collect();
    rayon::scope(|sc| {
        for (rank, (gpu, sum)) in gpus.iter().zip(&mut sums).enumerate() {
            let share = &share;
            sc.spawn(move |_| {
                *sum = share.sum(gpu, n * rank / world..n * (rank + 1) / world);
                crate::trace::event(|| format!("quality: GPU {rank}'s share scored"));
            });
        }
    });
    let total = sums
        .into_iter()
        .try_fold([0, 0], |total, sum| sum.map(|sum| add(total, sum)))?;
    Ok(Ok(total))
}

/// What every GPU's share of the search reads: the search, its device layout, the batch
/// size and the score of a row.
struct Share<'a, const D: usize, S> {
    search: &'a Search<D>,
    layout: &'a Layout,
    k: usize,
    batch: usize,
    score: &'a S,
}

impl<const D: usize, S> Share<'_, D, S>
where
    S: Fn(usize, &[u32]) -> [u64; 2] + Sync,
{
    /// The scores' sums over the queries at `positions` of the search's order, searched on
    /// `gpu` a batch per launch; each batch's rows are scored on the host's cores while the
    /// device searches the next.
    fn sum(&self, gpu: &Gpu, positions: Range<usize>) -> Result<[u64; 2]> {
        let (layout, n, k) = (self.layout, self.search.order.len(), self.k);
        gpu.device.context.bind_to_thread()?;
        let s = &gpu.stream;
        let sorted = s.clone_htod(&layout.sorted)?;
        let order = s.clone_htod(&self.search.order)?;
        let starts = s.clone_htod(&layout.starts)?;
        let start_at = s.clone_htod(&layout.start_at)?;
        let first = s.clone_htod(&layout.first)?;
        let geom = s.clone_htod(&layout.geom)?;
        let cells = s.clone_htod(&layout.cells)?;
        let mut rows = alloc_uninit::<u32>(gpu, self.batch * k)?;
        crate::trace::event(|| "quality: grids uploaded".into());
        let launch = |s0: usize, rows: &mut CudaSlice<u32>| {
            let count = self.batch.min(positions.end - s0);
            QualityKnn {
                dims: D,
                n,
                starts_len: layout.starts.len(),
                sorted: &sorted,
                order: &order,
                starts: &starts,
                start_at: &start_at,
                first: &first,
                geom: &geom,
                cells: &cells,
                levels: layout.cells.len(),
                k,
                s0,
                count,
                rows,
            }
            .launch(gpu, s, gpu.config(count))
        };
        let mut host = vec![0u32; self.batch * k];
        let mut sums = [0u64; 2];
        let batches: Vec<usize> = positions.clone().step_by(self.batch).collect();
        if let Some(&s0) = batches.first() {
            launch(s0, &mut rows)?;
        }
        for (b, &s0) in batches.iter().enumerate() {
            let count = self.batch.min(positions.end - s0);
            let block = &mut host[..count * k];
            // Waits for this batch's search; the next is queued before its rows are scored.
            s.memcpy_dtoh(&rows.slice(..count * k), block)?;
            if let Some(&next) = batches.get(b + 1) {
                launch(next, &mut rows)?;
            }
            let scored = block
                .par_chunks(k)
                .enumerate()
                .map(|(t, row)| (self.score)(self.search.order[s0 + t] as usize, row))
                .reduce(|| [0, 0], add);
            sums = add(sums, scored);
        }
        Ok(sums)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    crate::gpu::gpu_test! {
        /// The device's rows are the host's, in 1–3 D: clusters, exact duplicates (ties by
        /// id), a far outlier beyond the bulk's grid and a cluster of far points (levels of
        /// their own), and as few points as k + 1; several launches when the queries are
        /// split (`QUERIES` smaller than n is not reachable here, so each row is checked).
        fn device_rows_equal_the_host_rows(gpu) {
            let seed = rand::random();
            let mut rng = StdRng::seed_from_u64(seed);
            for dims in 1..=3 {
                for n in [20_000, 11] {
                    let mut y: Vec<f32> = (0..n * dims)
                        .map(|e| (e / dims % 5) as f32 * 30.0 + rng.random_range(-2.0f32..2.0))
                        .collect();
                    y[..dims].fill(4e4);
                    if n > 1000 {
                        for v in &mut y[dims..400 * dims] {
                            *v = 900.0 + rng.random_range(-1.0f32..1.0);
                        }
                    }
                    // A duplicate of another point (of the far one when n is small).
                    let twin = if n > 1000 { 500 } else { 0 };
                    let copy = y[twin * dims..(twin + 1) * dims].to_vec();
                    y[3 * dims..4 * dims].copy_from_slice(&copy);
                    let want = crate::quality::embedding_neighbors(&y, dims, 10);
                    let k = 10.min(n - 1);
                    let got = std::sync::Mutex::new(vec![u32::MAX; n * k]);
                    let record = |i: usize, row: &[u32]| {
                        got.lock().unwrap()[i * k..(i + 1) * k].copy_from_slice(row);
                        [0, 0]
                    };
                    let done = match dims {
                        1 => sum_over_rows::<1, _>(&[gpu], &y, 10, record),
                        2 => sum_over_rows::<2, _>(&[gpu], &y, 10, record),
                        _ => sum_over_rows::<3, _>(&[gpu], &y, 10, record),
                    }
                    .unwrap();
                    assert!(done.is_ok(), "seed {seed}: declined");
                    assert_eq!(got.into_inner().unwrap(), want, "seed {seed}: {dims}-D, n {n}");
                }
            }
        }

        /// The scores through the device equal the host's, labels and input neighbours
        /// both.
        fn device_scores_equal_the_host_scores(gpu) {
            let mut rng = StdRng::seed_from_u64(5);
            let n = 30_000;
            let y: Vec<f32> = (0..2 * n).map(|_| rng.random_range(-50.0f32..50.0)).collect();
            let labels: Vec<u32> = (0..n).map(|i| (y[2 * i] > 0.0) as u32).collect();
            let input = crate::knn::Neighbors {
                n,
                k: 12,
                indices: (0..n * 12).map(|_| rng.random_range(0..n as u32)).collect(),
                distances: vec![0.0; n * 12],
            };
            let scores = |gpus: &[&Gpu]| {
                let keep: Vec<u32> = (0..n as u32).step_by(11).collect();
                crate::quality::embedding_scores(&y, 2, 10, Some(&labels), Some(&input), gpus, &keep)
                    .unwrap()
            };
            let (host, device) = (scores(&[]), scores(&[gpu]));
            assert_eq!(host, device);
            assert!(host.knn_accuracy.unwrap() > 0.9, "{host:?}");
        }

        /// Shares of the points over several GPUs (here one GPU named three times, or
        /// every GPU the machine has), each searched in several launches of odd sizes, sum
        /// to the host's scores: every query is scored once.
        fn shares_and_batches_sum_to_the_host_scores(gpu) {
            let mut rng = StdRng::seed_from_u64(8);
            let n = 25_001;
            let y: Vec<f32> = (0..2 * n).map(|_| rng.random_range(-40.0f32..40.0)).collect();
            let labels: Vec<u32> = (0..n).map(|i| (y[2 * i + 1] > 3.0) as u32).collect();
            // Counts the queries too: the first sum is the correct labels, the second the
            // rows seen, each weighted by the query's index so a query scored twice and
            // another missed cannot cancel.
            let score = |i: usize, row: &[u32]| {
                let majority = crate::quality::majority(row, &labels);
                [u64::from(majority == labels[i]), i as u64 + 1]
            };
            let want = super::super::embedding_knn::sum_over_rows::<2, _>(&y, 10, score);
            let all: Vec<&Gpu> = (0..crate::gpu::device_count().unwrap_or(1))
                .filter_map(|d| Gpu::device(d).ok())
                .collect();
            for (gpus, queries) in [(vec![gpu; 3], 3_001), (vec![gpu], 7_777), (all, 4_099)] {
                let got = sum_in_batches::<2, _>(&gpus, &y, 10, score, queries).unwrap();
                assert!(got.is_ok(), "declined");
                assert_eq!(got.ok(), Some(want), "{} GPUs, {queries} a launch", gpus.len());
            }
        }
    }
}
