//! Initial embeddings (DESIGN §1.6), both seeded and reproducible.
//!
//! PCA initialisation (Kobak & Linderman 2021) keeps the global structure of the data;
//! scaling its first axis to standard deviation 1e-4 makes the start as small as the
//! customary random one, so early exaggeration behaves the same.

use rand::{rngs::StdRng, SeedableRng};
use rand_distr::{Distribution, Normal};

use crate::{prep, Points, Result};

/// Standard deviation of the initial embedding along its first axis.
pub const INIT_STD: f32 = 1e-4;

/// How to initialise Y.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InitKind {
    /// Top principal components of the input, first axis scaled to std 1e-4.
    Pca,
    /// Isotropic Gaussian with std 1e-4 from the seed.
    Random,
    /// An array the caller gives (`EmbedParams::init_y`), centred ([`given`]).
    Given,
}

/// The first `dims` principal components of `points`, scaled to std [`INIT_STD`] on the
/// first axis (the other axes keep their relative variance). Beyond [`FIT_SAMPLE`] points
/// (of at most `EXACT_MAX_D` features) the axes are fitted on a seeded sample of that many
/// and every point is projected on them: a start needs the directions, not their last
/// digits, and the covariance of all points was the longest step on the way to the
/// optimisation once the device made P (10M × 50 on one H200: the initialisation 0.45–0.75
/// s beside the affinities' 0.18; `benches/RESULTS.md`).
pub fn pca(points: &Points, dims: usize) -> Result<Vec<f32>> {
    if points.n <= FIT_SAMPLE || points.d > prep::EXACT_MAX_D {
        return Ok(from_scores(&prep::pca(points, dims)?, dims));
    }
    let mut rng = StdRng::seed_from_u64(FIT_SEED);
    let mut rows: Vec<u32> = rand::seq::index::sample(&mut rng, points.n, FIT_SAMPLE)
        .iter()
        .map(|r| r as u32)
        .collect();
    rows.sort_unstable();
    let fit = prep::Pca::fit(&points.gather(&rows), dims)?;
    Ok(project_scaled(points, &fit, dims))
}

/// Every point's first `dims` scores on `fit`'s axes, scaled as [`from_scores`] scales
/// them, on all cores: each score a dot product in f64, the first axis's mean and variance
/// summed in blocks of [`PROJECT_BLOCK`] points added in order (the same start on any
/// number of threads). At 10M × 50 the general projection and the serial scaling took
/// about 0.37 s beside the affinities' 0.18 on one H200 (`benches/RESULTS.md`).
fn project_scaled(points: &Points, fit: &prep::Pca, dims: usize) -> Vec<f32> {
    use rayon::prelude::*;
    let (n, d) = (points.n, points.d);
    let mut y = vec![0f32; n * dims];
    y.par_chunks_mut(PROJECT_BLOCK * dims)
        .zip(points.data.par_chunks(PROJECT_BLOCK * d))
        .for_each(|(out, rows)| {
            for (o, x) in out.chunks_exact_mut(dims).zip(rows.chunks_exact(d)) {
                for (a, o) in o.iter_mut().enumerate() {
                    let axis = &fit.axes[a * d..(a + 1) * d];
                    let dot: f64 = x
                        .iter()
                        .zip(axis)
                        .zip(&fit.mean)
                        .map(|((&v, &w), &m)| (f64::from(v) - m) * w)
                        .sum();
                    *o = dot as f32;
                }
            }
        });
    // The first axis's mean, then its variance, as `from_scores` takes them.
    let block_sums = |f: &(dyn Fn(f64) -> f64 + Sync)| -> f64 {
        y.par_chunks(PROJECT_BLOCK * dims)
            .map(|c| {
                c.iter()
                    .step_by(dims)
                    .map(|&v| f(f64::from(v)))
                    .sum::<f64>()
            })
            .collect::<Vec<f64>>()
            .iter()
            .sum()
    };
    let mean = block_sums(&|v| v) / n as f64;
    let var = block_sums(&|v| (v - mean).powi(2)) / n as f64;
    if var <= 0.0 {
        // All points coincide along every axis: no direction to keep.
        return random(n, dims, 0);
    }
    let scale = INIT_STD as f64 / var.sqrt();
    y.par_iter_mut()
        .for_each(|v| *v = (f64::from(*v) * scale) as f32);
    y
}

/// Points a block of [`project_scaled`] (a job, and a partial sum).
const PROJECT_BLOCK: usize = 4096;

/// Points [`pca`] fits its axes on, at most.
pub const FIT_SAMPLE: usize = 1 << 18;

/// The seed of [`pca`]'s sample: fixed, so that a run repeats.
const FIT_SEED: u64 = 0x1b17;

/// The first `dims` columns of PCA `scores` (columns by decreasing variance, as
/// [`prep::pca`] returns them), scaled like [`pca`]: when the input was already reduced by
/// PCA, its leading columns are its principal components and need no second PCA.
pub fn from_scores(scores: &Points, dims: usize) -> Vec<f32> {
    let (n, m) = (scores.n, scores.d);
    let first: Vec<f64> = (0..n).map(|i| scores.data[i * m] as f64).collect();
    let mean = first.iter().sum::<f64>() / n as f64;
    let var = first.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
    if var <= 0.0 {
        // All points coincide along every axis: no direction to keep.
        return random(n, dims, 0);
    }
    let scale = INIT_STD as f64 / var.sqrt();
    (0..n)
        .flat_map(|i| scores.data[i * m..i * m + dims].iter())
        .map(|&v| (v as f64 * scale) as f32)
        .collect()
}

/// A given initial embedding (n × `dims`, row-major) made ready: every value finite, each
/// axis centred on 0, and, with `rescale`, scaled so that the first axis has std
/// [`INIT_STD`] (the others keep their ratio to it). Without `rescale` the scale is kept, as
/// openTSNE keeps a given initialisation; a large one slows the early exaggeration phase.
pub fn given(y: &[f32], n: usize, dims: usize, rescale: bool) -> Result<Vec<f32>> {
    if y.len() != n * dims {
        return Err(crate::Error::param(
            "init",
            format!(
                "the initial embedding has {} values ({} rows of {dims}); the input has {n} \
                 points",
                y.len(),
                y.len() as f64 / dims.max(1) as f64
            ),
        ));
    }
    if let Some(i) = y.iter().position(|v| !v.is_finite()) {
        return Err(crate::Error::param(
            "init",
            format!(
                "value {} of point {i} (counting from 0) is not finite",
                y[i]
            ),
        ));
    }
    let mut out = y.to_vec();
    for a in 0..dims {
        let mean = (0..n).map(|i| y[i * dims + a] as f64).sum::<f64>() / n.max(1) as f64;
        for i in 0..n {
            out[i * dims + a] = (y[i * dims + a] as f64 - mean) as f32;
        }
    }
    let first_std = first_axis_std(&out, dims);
    if rescale && first_std > 0.0 {
        let scale = INIT_STD as f64 / first_std;
        out.iter_mut().for_each(|v| *v = (*v as f64 * scale) as f32);
    }
    Ok(out)
}

/// Standard deviation of the first axis of `y` (n × `dims`): what `--init FILE` reports as
/// its scale.
pub fn first_axis_std(y: &[f32], dims: usize) -> f64 {
    let n = y.len() / dims.max(1);
    if n == 0 {
        return 0.0;
    }
    let mean = (0..n).map(|i| y[i * dims] as f64).sum::<f64>() / n as f64;
    ((0..n)
        .map(|i| (y[i * dims] as f64 - mean).powi(2))
        .sum::<f64>()
        / n as f64)
        .sqrt()
}

/// n × dims Gaussian values with std [`INIT_STD`], from `seed`.
pub fn random(n: usize, dims: usize, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    let normal = Normal::new(0.0f32, INIT_STD).expect("constant, valid std");
    (0..n * dims).map(|_| normal.sample(&mut rng)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Beyond the sample's size the axes fitted on the sample give all but the whole
    /// PCA's start: within 1 % of the start's spread, every point.
    #[test]
    fn sampled_axes_give_the_whole_pca_start() {
        let (n, d) = (FIT_SAMPLE + 40_000, 6);
        let normal = Normal::new(0.0f32, 1.0).unwrap();
        let mut rng = StdRng::seed_from_u64(5);
        let data: Vec<f32> = (0..n * d)
            .map(|t| normal.sample(&mut rng) * (d - t % d) as f32 + (t % d) as f32)
            .collect();
        let points = Points::new(n, d, data);
        let sampled = pca(&points, 2).unwrap();
        let whole = from_scores(&prep::pca(&points, 2).unwrap(), 2);
        let worst = sampled
            .iter()
            .zip(&whole)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(worst < 0.01 * INIT_STD, "largest difference {worst}");
    }

    /// On PCA scores, a second PCA changes nothing: its axes are the unit vectors (signed
    /// positive), so reusing the leading columns gives the same initialisation.
    #[test]
    fn scores_need_no_second_pca() {
        let digits = crate::demo::points().unwrap();
        let scores = prep::pca(&digits, 50).unwrap();
        for dims in 1..=3 {
            let twice = pca(&scores, dims).unwrap();
            let once = from_scores(&scores, dims);
            let worst = twice
                .iter()
                .zip(&once)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(
                worst < 1e-4 * INIT_STD,
                "dims {dims}: max difference {worst}"
            );
        }
    }
}
