//! Quality of an embedding, as DESIGN §5 measures it: 10-NN label accuracy in the
//! embedding and the preservation of each point's input-space neighbours.
//!
//! Neighbours in the (1–3-D) embedding come from a uniform grid, exact, searched on all
//! cores (`src/quality/embedding_knn.rs`) or on the GPU (`src/quality/gpu.rs`).
//!
//! [`kl_divergence`] scores any embedding of the same points against one P, so embeddings
//! made by other tools can be compared on equal terms (`sgtsne kl`).

mod embedding_knn;
mod gpu;

use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::affinity::{self, Affinities};
use crate::gpu::Gpu;
use crate::kernel::Kernel;
use crate::knn::Neighbors;
use crate::repulse::exact_z_with;
use crate::{Error, Points, Result};

/// The k nearest other points of every point of a low-dimensional embedding
/// (row-major n × k indices, nearest first; k capped at n − 1), exactly
/// (`src/quality/embedding_knn.rs`).
pub fn embedding_neighbors(y: &[f32], dims: usize, k: usize) -> Vec<u32> {
    match dims {
        1 => embedding_knn::neighbors::<1>(y, k),
        2 => embedding_knn::neighbors::<2>(y, k),
        _ => embedding_knn::neighbors::<3>(y, k),
    }
}

/// The k nearest other points of the points `rows` of a low-dimensional embedding
/// (row-major rows.len() × k indices, nearest first; k capped at n − 1), exactly: what
/// [`embedding_neighbors`] gives for those rows, searching only them.
pub fn embedding_neighbors_of(y: &[f32], dims: usize, rows: &[u32], k: usize) -> Vec<u32> {
    match dims {
        1 => embedding_knn::neighbors_of::<1>(y, rows, k),
        2 => embedding_knn::neighbors_of::<2>(y, rows, k),
        _ => embedding_knn::neighbors_of::<3>(y, rows, k),
    }
}

/// The 10-NN measures of an embedding in one pass over its neighbours, none of them kept:
/// the k-NN label accuracy with `labels` ([`knn_accuracy`]) and the preservation of the
/// input's neighbours `input` ([`knn_preservation`]), in the numbering of `y`.
///
/// With `gpus` (none for the host) the neighbours are searched on them, each GPU an equal
/// share of the points, with the same result; on the host when a device declines (too
/// little free memory, k above 32), which the returned note says.
///
/// The rows of the points `keep` (ascending), k' = min(k, n − 1) each, come back in
/// [`Scores::kept_rows`] when any measure is taken.
pub fn embedding_scores(
    y: &[f32],
    dims: usize,
    k: usize,
    labels: Option<&[u32]>,
    input: Option<&Neighbors>,
    gpus: &[&Gpu],
    keep: &[u32],
) -> Result<Scores> {
    let n = y.len() / dims.max(1);
    let mut scores = Scores::default();
    if labels.is_none() && input.is_none() {
        return Ok(scores);
    }
    let kept_k = input.map_or(0, |nb| k.min(nb.k));
    let row_k = k.min(n.saturating_sub(1));
    let kept_rows: Vec<AtomicU32> = (0..keep.len() * row_k).map(|_| AtomicU32::new(0)).collect();
    let score = |i: usize, row: &[u32]| {
        if let Ok(at) = keep.binary_search(&(i as u32)) {
            for (slot, &j) in kept_rows[at * row_k..].iter().zip(row) {
                slot.store(j, Ordering::Relaxed);
            }
        }
        let correct = labels.map_or(0, |l| u64::from(majority(row, l) == l[i]));
        let kept = input.map_or(0, |nb| {
            let (wanted, found) = (
                &nb.indices[i * nb.k..][..kept_k],
                &row[..kept_k.min(row.len())],
            );
            wanted.iter().filter(|j| found.contains(j)).count() as u64
        });
        [correct, kept]
    };
    let on_device = match dims {
        1 => gpu::sum_over_rows::<1, _>(gpus, y, k, score)?,
        2 => gpu::sum_over_rows::<2, _>(gpus, y, k, score)?,
        _ => gpu::sum_over_rows::<3, _>(gpus, y, k, score)?,
    };
    let [correct, kept] = match on_device {
        Ok(sums) => sums,
        Err(declined) => {
            scores.note = declined.note();
            match dims {
                1 => embedding_knn::sum_over_rows::<1, _>(y, k, score),
                2 => embedding_knn::sum_over_rows::<2, _>(y, k, score),
                _ => embedding_knn::sum_over_rows::<3, _>(y, k, score),
            }
        }
    };
    scores.kept_rows = kept_rows.into_iter().map(AtomicU32::into_inner).collect();
    scores.knn_accuracy = labels.map(|_| correct as f64 / n as f64);
    scores.knn_preservation = input.map(|_| kept as f64 / (n * kept_k) as f64);
    Ok(scores)
}

/// What [`embedding_scores`] measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scores {
    /// The k-NN label accuracy, with labels.
    pub knn_accuracy: Option<f64>,
    /// The preservation of the input's k nearest, with the input's neighbours.
    pub knn_preservation: Option<f64>,
    /// Why the search ran on the host though a GPU was given.
    pub note: Option<String>,
    /// The neighbours of the points asked to be kept, row after row (empty when nothing
    /// was measured).
    pub kept_rows: Vec<u32>,
}

/// Leave-one-out k-NN classification accuracy: the fraction of points whose label is the
/// majority label of their k nearest embedding neighbours (ties → smallest label).
pub fn knn_accuracy(neighbors: &[u32], k: usize, labels: &[u32]) -> f64 {
    knn_accuracy_among(neighbors, k, labels, labels)
}

/// k-NN classification accuracy of query points among labelled ones: the fraction of
/// queries whose label (`labels`) is the majority of their k neighbours' (`known`; ties →
/// smallest label). Row i of `neighbors` holds query i's neighbours as indices into `known`.
pub fn knn_accuracy_among(neighbors: &[u32], k: usize, labels: &[u32], known: &[u32]) -> f64 {
    let n = labels.len();
    let correct: usize = neighbors
        .par_chunks(k)
        .zip(labels.par_iter())
        .map(|(row, &label)| usize::from(majority(row, known) == label))
        .sum();
    correct as f64 / n as f64
}

/// The most frequent label among the neighbours `row` (`known[j]` for each), the smallest
/// on ties; 0 for no neighbours. By pairs, as rows are short (k = 10).
fn majority(row: &[u32], known: &[u32]) -> u32 {
    let mut best = (0usize, 0u32);
    for &a in row {
        let c = known[a as usize];
        let votes = row.iter().filter(|&&b| known[b as usize] == c).count();
        if votes > best.0 || (votes == best.0 && c < best.1) {
            best = (votes, c);
        }
    }
    best.1
}

/// Mean fraction of each point's `k` nearest input-space neighbours that are also among
/// its `k` nearest embedding neighbours.
pub fn knn_preservation(input: &Neighbors, embedded: &[u32], k: usize) -> f64 {
    let k = k.min(input.k);
    let kept: usize = (0..input.n)
        .into_par_iter()
        .map(|i| {
            let a = &input.indices[i * input.k..i * input.k + k];
            let b = &embedded[i * k..i * k + k];
            a.iter().filter(|j| b.contains(j)).count()
        })
        .sum();
    kept as f64 / (input.n * k) as f64
}

/// How [`kl_of_embedding`] builds P from the points (`sgtsne kl`'s flags).
#[derive(Clone, Copy, Debug)]
pub struct KlOptions {
    /// The perplexity P is calibrated at (default 30).
    pub perplexity: f64,
    /// P over every pair ([`crate::affinity::exact_affinities`]) instead of each point's
    /// ⌈3·perplexity⌉ exact nearest neighbours.
    pub exact: bool,
    /// Degrees of freedom of Q's kernel (default 1, t-SNE's Cauchy kernel).
    pub dof: f64,
    /// Reduce the points to this many principal components first when they have more
    /// (default 50, as `embed` does).
    pub pca: Option<usize>,
}

impl Default for KlOptions {
    fn default() -> Self {
        KlOptions {
            perplexity: 30.0,
            exact: false,
            dof: 1.0,
            pca: Some(50),
        }
    }
}

/// KL(P‖Q) of an embedding `y` of `points` made by any tool, with P built from the points
/// as `embed` builds it (values scaled into f32's range, PCA, exact neighbours or every
/// pair) and Q's exact normalisation ([`kl_divergence_with`]): embeddings are scored on
/// equal terms. Runs on the current rayon pool.
pub fn kl_of_embedding(mut points: Points, y: &Points, options: &KlOptions) -> Result<f64> {
    let u = options.perplexity;
    if !(u >= 1.0 && u.is_finite()) {
        return Err(Error::param(
            "perplexity",
            format!("must be at least 1, got {u}"),
        ));
    }
    if y.n != points.n {
        return Err(Error::Data(format!(
            "the embedding has {} rows, but there are {} points",
            y.n, points.n
        )));
    }
    let kernel = Kernel::new(options.dof)?;
    crate::prep::fit_points_f32_range(&mut points);
    let points = match options.pca {
        Some(m) if points.d > m => crate::prep::pca(&points, m)?,
        _ => points,
    };
    let p = match options.exact {
        true => crate::affinity::exact_affinities(&points, u)?,
        false => {
            let k = (3.0 * u).ceil() as usize;
            let nb = crate::knn::exact(&points, k, &crate::progress::Silent)?;
            crate::affinity::from_neighbors(&nb, u)?
        }
    };
    kl_divergence_with(kernel, &p, &y.data, y.d)
}

/// KL(P‖Q) of the embedding `y` (row-major n × dims) with the exact normalisation:
/// $\sum p \ln p - \sum p \ln w + \ln Z$, $w_{ij} = 1/(1 + |y_i - y_j|^2)$,
/// $Z = \sum_{i \ne j} w_{ij}$ by direct O(n²) sums (seconds at n = 70k), so no
/// interpolation error of any tool enters the score.
pub fn kl_divergence(p: &Affinities, y: &[f32], dims: usize) -> Result<f64> {
    kl_divergence_with(Kernel::CAUCHY, p, y, dims)
}

/// [`kl_divergence`] with Q from the heavy-tailed `kernel` ([`Kernel`], `--dof`):
/// $\ln w = -α \ln(1 + d^2/α)$.
pub fn kl_divergence_with(kernel: Kernel, p: &Affinities, y: &[f32], dims: usize) -> Result<f64> {
    let n = p.rows();
    if !(1..=3).contains(&dims) || y.len() != n * dims {
        return Err(Error::Data(format!(
            "the embedding has {} values; P has {n} points, so {n} × dims (1–3) were expected",
            y.len()
        )));
    }
    let p_log_w = crate::ordered::sum_in_order((0..n).into_par_iter().map(|i| {
        let yi = &y[i * dims..(i + 1) * dims];
        let row = p.outer_view(i).expect("row of a square CSR");
        row.iter()
            .map(|(j, &pij)| {
                let d2: f64 = yi
                    .iter()
                    .zip(&y[j * dims..(j + 1) * dims])
                    .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
                    .sum();
                -(pij as f64) * kernel.dof * (1.0 + d2 / kernel.dof).ln()
            })
            .sum::<f64>()
    }));
    Ok(affinity::p_log_p(p) - p_log_w + exact_z_with(kernel, y, dims)?.ln())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbors_on_a_line() {
        let y: Vec<f32> = (0..10).map(|i| (i * i) as f32).collect();
        let nb = embedding_neighbors(&y, 1, 2);
        assert_eq!(&nb[0..2], &[1, 2]);
        assert_eq!(&nb[2 * 5..2 * 5 + 2], &[4, 6]);
    }

    /// The neighbours of a few rows are those rows of every point's neighbours, in 1–3 D,
    /// with a far outlier, a repeated row and k beyond n.
    #[test]
    fn neighbours_of_some_rows_are_their_rows_of_all() {
        for dims in 1..=3 {
            let n = 3001;
            let mut y: Vec<f32> = (0..n * dims)
                .map(|i| ((i * 7919) % 1013) as f32 * 0.01 + (i % 7) as f32)
                .collect();
            y[..dims].fill(1e5);
            for k in [1, 10, n + 5] {
                let all = embedding_neighbors(&y, dims, k);
                let kk = k.min(n - 1);
                let rows = [0u32, 5, 5, 1500, 3000];
                let some = embedding_neighbors_of(&y, dims, &rows, k);
                assert_eq!(some.len(), rows.len() * kk, "{dims}-D, k {k}");
                for (r, &i) in rows.iter().enumerate() {
                    let i = i as usize;
                    assert_eq!(
                        &some[r * kk..(r + 1) * kk],
                        &all[i * kk..(i + 1) * kk],
                        "{dims}-D, k {k}, row {i}"
                    );
                }
            }
        }
    }

    #[test]
    fn accuracy_of_two_clusters() {
        // Two well separated 2-D clusters labelled by cluster, one mislabelled point.
        let mut y = Vec::new();
        let mut labels = Vec::new();
        for c in 0..2 {
            for i in 0..20 {
                y.push(c as f32 * 100.0 + (i % 5) as f32);
                y.push((i / 5) as f32);
                labels.push(c);
            }
        }
        labels[0] = 1;
        let nb = embedding_neighbors(&y, 2, 5);
        let acc = knn_accuracy(&nb, 5, &labels);
        assert!((acc - 39.0 / 40.0).abs() < 1e-12, "{acc}");
    }

    /// The one-pass scores and the rows kept equal the measures and rows of the neighbour
    /// table, in 1–3 D, with clusters, ties, a far outlier (beyond the grid's bulk) and as
    /// many labels as points.
    #[test]
    fn one_pass_scores_match_the_table() {
        use rand::{rngs::StdRng, Rng, SeedableRng};
        let mut rng = StdRng::seed_from_u64(3);
        for dims in 1..=3 {
            for (n, classes) in [(3000, 7u32), (50, 50), (12, 2)] {
                // n > 10: rows of 10.
                let mut y: Vec<f32> = (0..n * dims)
                    .map(|e| (e / dims % 4) as f32 * 20.0 + rng.random_range(-1.0f32..1.0))
                    .collect();
                y[..dims].fill(5e4);
                let copy = y[dims..2 * dims].to_vec();
                y[2 * dims..3 * dims].copy_from_slice(&copy);
                let labels: Vec<u32> = (0..n).map(|_| rng.random_range(0..classes)).collect();
                let input = Neighbors {
                    n,
                    k: 12,
                    indices: (0..n * 12).map(|_| rng.random_range(0..n as u32)).collect(),
                    distances: vec![0.0; n * 12],
                };
                let table = embedding_neighbors(&y, dims, 10);
                let keep: Vec<u32> = (0..n as u32).step_by(7).collect();
                let scores =
                    embedding_scores(&y, dims, 10, Some(&labels), Some(&input), &[], &keep)
                        .unwrap();
                let rows: Vec<u32> = keep
                    .iter()
                    .flat_map(|&i| table[i as usize * 10..][..10].iter().copied())
                    .collect();
                assert_eq!(scores.kept_rows, rows, "{dims}-D, n {n}");
                assert_eq!(
                    scores.knn_accuracy,
                    Some(knn_accuracy(&table, 10, &labels)),
                    "{dims}-D, n {n}"
                );
                let want = knn_preservation(&input, &table, 10);
                assert_eq!(scores.knn_preservation, Some(want), "{dims}-D, n {n}");
                let none = embedding_scores(&y, dims, 10, None, None, &[], &[]).unwrap();
                assert_eq!(none, Scores::default());
            }
        }
    }

    /// Against the definition Σ p ln(p/q) over all pairs, on 3 points in 2-D.
    #[test]
    fn kl_of_three_points() {
        let mut t = sprs::TriMatI::<f32, u32>::new((3, 3));
        for (i, j, v) in [(0, 1, 0.2), (1, 0, 0.2), (1, 2, 0.3), (2, 1, 0.3)] {
            t.add_triplet(i, j, v);
        }
        let p: Affinities = t.to_csr();
        let y = [0.0f32, 0.0, 1.0, 0.0, 1.0, 2.0];
        let w = |i: usize, j: usize| {
            let d2 = (y[2 * i] - y[2 * j]).powi(2) + (y[2 * i + 1] - y[2 * j + 1]).powi(2);
            1.0 / (1.0 + d2 as f64)
        };
        let z: f64 = (0..3)
            .flat_map(|i| (0..3).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| w(i, j))
            .sum();
        let want = 2.0 * (0.2 * (0.2 / (w(0, 1) / z)).ln() + 0.3 * (0.3 / (w(1, 2) / z)).ln());
        let got = kl_divergence(&p, &y, 2).unwrap();
        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
        assert!(kl_divergence(&p, &y[..5], 2).is_err());
    }
}

/// The adjusted Rand index of two labellings of the same points (Hubert and Arabie 1985):
/// 1 for the same partition up to renaming, about 0 for independent ones. Codes are small
/// integers (a dense contingency table of max code + 1 squared cells is built).
pub fn adjusted_rand_index(a: &[u32], b: &[u32]) -> f64 {
    assert_eq!(
        a.len(),
        b.len(),
        "adjusted_rand_index: labellings of unequal length"
    );
    let pairs = |c: f64| c * (c - 1.0) / 2.0;
    let ka = a.iter().max().map_or(0, |&m| m as usize + 1);
    let kb = b.iter().max().map_or(0, |&m| m as usize + 1);
    let mut table = vec![0u64; ka * kb];
    for (&i, &j) in a.iter().zip(b) {
        table[i as usize * kb + j as usize] += 1;
    }
    let (mut rows, mut cols) = (vec![0u64; ka], vec![0u64; kb]);
    for i in 0..ka {
        for j in 0..kb {
            rows[i] += table[i * kb + j];
            cols[j] += table[i * kb + j];
        }
    }
    let index: f64 = table.iter().map(|&c| pairs(c as f64)).sum();
    let sum_a: f64 = rows.iter().map(|&c| pairs(c as f64)).sum();
    let sum_b: f64 = cols.iter().map(|&c| pairs(c as f64)).sum();
    let expected = sum_a * sum_b / pairs(a.len() as f64);
    let max = 0.5 * (sum_a + sum_b);
    if max == expected {
        // Both labellings put every point in one cluster, or each in its own.
        return 1.0;
    }
    (index - expected) / (max - expected)
}

#[cfg(test)]
mod ari_tests {
    use super::adjusted_rand_index;

    #[test]
    fn renaming_gives_one_and_matches_a_hand_count() {
        assert_eq!(adjusted_rand_index(&[0, 0, 1, 1, 2], &[2, 2, 0, 0, 1]), 1.0);
        // scikit-learn: adjusted_rand_score([0,0,0,1,1,1], [0,0,1,1,2,2]) = 0.24242424…
        let ari = adjusted_rand_index(&[0, 0, 0, 1, 1, 1], &[0, 0, 1, 1, 2, 2]);
        assert!((ari - 0.242_424_242_424_242_4).abs() < 1e-12, "{ari}");
    }
}
