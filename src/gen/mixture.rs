//! A seeded Gaussian mixture with uneven cluster sizes.
//!
//! Cluster c gets a share ∝ (c + 1)^−0.8 of the points (a Zipf-like spread: the largest
//! cluster is several times the median, like cell types in single-cell data), a centre
//! drawn from N(0, 5²·I) — centres lie ≈ 5·√(2d) apart while a cluster spans ≈ σ_c·√(2d) —
//! and its own spread σ_c ∈ [0.5, 1.5]. Generated in fixed chunks each seeded from (seed, chunk), so the
//! output does not depend on the number of threads.

use rand::{rngs::StdRng, Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

use crate::{Error, Points, Result};

/// Points per independently seeded chunk.
const CHUNK: usize = 8192;

/// Parameters of the mixture.
#[derive(Clone, Copy, Debug)]
pub struct MixtureParams {
    /// Number of points.
    pub n: usize,
    /// Dimension.
    pub dim: usize,
    /// Number of clusters.
    pub clusters: usize,
    /// Seed.
    pub seed: u64,
}

/// The mixture's points and each point's cluster.
pub fn gaussian_mixture(params: &MixtureParams) -> Result<(Points, Vec<u32>)> {
    let MixtureParams {
        n,
        dim,
        clusters,
        seed,
    } = *params;
    if n == 0 || dim == 0 || clusters == 0 {
        return Err(Error::param(
            "gen",
            format!("n, dim and clusters must be positive (got {n}, {dim}, {clusters})"),
        ));
    }
    if clusters > n {
        return Err(Error::param(
            "clusters",
            format!("{clusters} clusters for {n} points"),
        ));
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let centre_scale = 5.0;
    let centres: Vec<f32> = (0..clusters * dim)
        .map(|_| (rng.sample::<f64, _>(StandardNormal) * centre_scale) as f32)
        .collect();
    let spreads: Vec<f32> = (0..clusters).map(|_| rng.random_range(0.5..1.5)).collect();
    // Cumulative shares for sampling a point's cluster.
    let weights: Vec<f64> = (0..clusters).map(|c| ((c + 1) as f64).powf(-0.8)).collect();
    let total: f64 = weights.iter().sum();
    let mut cumulative = Vec::with_capacity(clusters);
    let mut acc = 0.0;
    for w in &weights {
        acc += w / total;
        cumulative.push(acc);
    }

    let mut data = vec![0f32; n * dim];
    let mut labels = vec![0u32; n];
    data.par_chunks_mut(CHUNK * dim)
        .zip(labels.par_chunks_mut(CHUNK))
        .enumerate()
        .for_each(|(chunk, (rows, labs))| {
            let mut rng = StdRng::seed_from_u64(
                seed ^ (chunk as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            );
            for (row, lab) in rows.chunks_mut(dim).zip(labs.iter_mut()) {
                let u: f64 = rng.random();
                let c = cumulative.partition_point(|&x| x < u).min(clusters - 1);
                *lab = c as u32;
                let centre = &centres[c * dim..(c + 1) * dim];
                for (v, m) in row.iter_mut().zip(centre) {
                    let z: f32 = StandardNormal.sample(&mut rng);
                    *v = m + spreads[c] * z;
                }
            }
        });
    Ok((Points::new(n, dim, data), labels))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_uneven_and_shaped() {
        let p = MixtureParams {
            n: 20_000,
            dim: 10,
            clusters: 8,
            seed: 3,
        };
        let (a, la) = gaussian_mixture(&p).unwrap();
        let (b, lb) = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| gaussian_mixture(&p).unwrap());
        assert_eq!(a, b);
        assert_eq!(la, lb);
        assert_eq!(a.data.len(), 20_000 * 10);
        let mut counts = [0usize; 8];
        for &l in &la {
            counts[l as usize] += 1;
        }
        assert!(counts[0] > 3 * counts[7], "sizes not uneven: {counts:?}");
        assert!(counts.iter().all(|&c| c > 0));
    }

    #[test]
    fn rejects_empty() {
        let p = MixtureParams {
            n: 0,
            dim: 10,
            clusters: 1,
            seed: 0,
        };
        assert!(gaussian_mixture(&p).is_err());
    }
}
