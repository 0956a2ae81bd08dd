//! The quality measures' embedding kNN on the GPU: the host builds its levels of grids
//! (`super::embedding_knn`, a parallel sort by cell: about a twentieth of the host's whole
//! measure), the device searches them (`kernels/quality.cu`, one thread per point, the
//! host's search step for step, so the rows are the host's), and each block of rows comes
//! back to be scored on the host's cores as the host's rows are. At 10M points the host's
//! search took 1.4–1.8 s on 32 cores (`benches/RESULTS.md`).

use rayon::prelude::*;

use super::embedding_knn::{add, Search};
use crate::gpu::kernels::quality::{QualityKnn, MAX_K};
use crate::gpu::memory::{alloc_uninit, ensure_fits};
use crate::gpu::{Gpu, GpuError};
use crate::Result;

/// Queries per launch: their rows (k each) are the launch's device buffer.
const QUERIES: usize = 1 << 22;

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

/// `super::embedding_knn::sum_over_rows` with the search on `gpu`: the same sums, or
/// [`Declined`] before any work when the device cannot take it (k above [`MAX_K`], or its
/// arrays do not fit the free memory).
pub(super) fn sum_over_rows<const D: usize, S>(
    gpu: &Gpu,
    y: &[f32],
    k: usize,
    score: S,
) -> Result<std::result::Result<[u64; 2], Declined>>
where
    S: Fn(usize, &[u32]) -> [u64; 2] + Sync,
{
    let n = y.len() / D;
    let k = k.min(n.saturating_sub(1));
    if k > MAX_K {
        return Ok(Err(Declined::LargeK));
    }
    if k == 0 {
        return Ok(Ok((0..n).map(|i| score(i, &[])).fold([0, 0], add)));
    }
    let search = Search::<D>::new(y, n);
    let layout = search.layout();
    let batch = QUERIES.min(n);
    let bytes = 4 * (layout.sorted.len() + n + layout.starts.len() + batch * k);
    if let Err(e) = ensure_fits(gpu, "the quality measures' kNN", bytes) {
        return Ok(Err(Declined::Memory(e)));
    }
    gpu.device.context.bind_to_thread()?;
    let s = &gpu.stream;
    let sorted = s.clone_htod(&layout.sorted)?;
    let order = s.clone_htod(&search.order)?;
    let starts = s.clone_htod(&layout.starts)?;
    let start_at = s.clone_htod(&layout.start_at)?;
    let first = s.clone_htod(&layout.first)?;
    let geom = s.clone_htod(&layout.geom)?;
    let cells = s.clone_htod(&layout.cells)?;
    let mut rows = alloc_uninit::<u32>(gpu, batch * k)?;
    let mut host = vec![0u32; batch * k];
    let mut sums = [0u64; 2];
    for s0 in (0..n).step_by(batch) {
        let count = batch.min(n - s0);
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
            rows: &mut rows,
        }
        .launch(gpu, s, gpu.config(count))?;
        s.memcpy_dtoh(&rows.slice(..count * k), &mut host[..count * k])?;
        let block = host[..count * k]
            .par_chunks(k)
            .enumerate()
            .map(|(t, row)| score(search.order[s0 + t] as usize, row))
            .reduce(|| [0, 0], add);
        sums = add(sums, block);
    }
    Ok(Ok(sums))
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
                        1 => sum_over_rows::<1, _>(gpu, &y, 10, record),
                        2 => sum_over_rows::<2, _>(gpu, &y, 10, record),
                        _ => sum_over_rows::<3, _>(gpu, &y, 10, record),
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
            let scores = |gpu| {
                crate::quality::embedding_scores(&y, 2, 10, Some(&labels), Some(&input), gpu)
                    .unwrap()
            };
            let (host, device) = (scores(None), scores(Some(gpu)));
            assert_eq!(host, device);
            assert!(host.knn_accuracy.unwrap() > 0.9, "{host:?}");
        }
    }
}
