//! The distance the neighbours are found by (`--metric`): Euclidean, cosine and
//! correlation as Euclidean distance between transformed rows, or the inner product.
//!
//! For rows scaled to unit length, ‖a − b‖² = 2 − 2 cos(a, b) = 2 · (cosine distance): the
//! Euclidean ranking of the scaled rows is the cosine ranking, and every stage after it
//! (PCA, exact or approximate kNN on either device, the perplexity calibration) works
//! unchanged on them. Correlation distance is cosine distance between rows centred on their
//! own mean first (Pearson's r). This is how openTSNE and umap-learn compute both for their
//! Euclidean indexes too. A row with no direction (all zeros; for correlation, constant)
//! has no cosine to anything and is refused with its row number.
//!
//! The inner product (maximum inner product search) is no row transform's Euclidean
//! distance: it reaches the kNN engines, which rank by its key instead of the squared
//! distance (`crate::knn::Key`), and the rows are left as they are here.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::{Error, Points, Result};

/// The distance between points.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// ‖a − b‖ (the default).
    #[default]
    Euclidean,
    /// 1 − cos(a, b): Euclidean on rows scaled to unit length.
    Cosine,
    /// 1 − r(a, b), Pearson's r over the features: cosine on rows centred on their mean.
    Correlation,
    /// Largest x · y first: the engines rank by 2(c − x · y), c the largest squared norm
    /// (`crate::knn::Key`), with no centring and no row transform.
    InnerProduct,
}

impl Metric {
    /// Whether [`Metric::apply`] changes the rows (cosine and correlation scale them).
    pub fn transforms_rows(self) -> bool {
        matches!(self, Metric::Cosine | Metric::Correlation)
    }

    /// Transforms the rows of `points` in place so that their Euclidean distances rank
    /// pairs as this metric does (nothing for Euclidean). Errors name the first row with no
    /// direction. The inner product ranks the rows as they are (nothing either).
    pub fn apply(self, points: &mut Points) -> Result<()> {
        if !self.transforms_rows() || points.d == 0 {
            return Ok(());
        }
        let centre = self == Metric::Correlation;
        let bad = points
            .data
            .par_chunks_mut(points.d)
            .enumerate()
            .filter_map(|(i, row)| {
                if centre {
                    let mean = row.iter().map(|&x| x as f64).sum::<f64>() / row.len() as f64;
                    row.iter_mut().for_each(|x| *x = (*x as f64 - mean) as f32);
                }
                let norm = row
                    .iter()
                    .map(|&x| (x as f64) * (x as f64))
                    .sum::<f64>()
                    .sqrt();
                if norm > 0.0 && norm.is_finite() {
                    row.iter_mut().for_each(|x| *x = (*x as f64 / norm) as f32);
                    None
                } else {
                    Some(i)
                }
            })
            .min();
        match bad {
            None => Ok(()),
            Some(i) => Err(Error::Data(format!(
                "row {i} (counting from 0) is {}: it has no {} distance to any point; remove \
                 it or use --metric euclidean",
                if centre { "constant" } else { "all zeros" },
                if centre { "correlation" } else { "cosine" }
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knn::exact;
    use crate::progress::Silent;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    fn random(n: usize, d: usize, seed: u64) -> Points {
        let mut rng = StdRng::seed_from_u64(seed);
        Points::new(
            n,
            d,
            (0..n * d).map(|_| rng.random::<f32>() - 0.3).collect(),
        )
    }

    fn cosine(a: &[f32], b: &[f32]) -> f64 {
        let dot: f64 = a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum();
        let na: f64 = a.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
        let nb: f64 = b.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
        dot / (na * nb)
    }

    /// The exact kNN of the scaled rows is the brute-force ranking by cosine distance, and
    /// its squared distances are 2 · (1 − cos).
    #[test]
    fn cosine_neighbours_are_the_brute_force_ones() {
        let raw = random(400, 12, 1);
        let mut scaled = raw.clone();
        Metric::Cosine.apply(&mut scaled).unwrap();
        let k = 10;
        let nb = exact(&scaled, k, &Silent).unwrap();
        for i in 0..raw.n {
            let mut by_cos: Vec<(f64, usize)> = (0..raw.n)
                .filter(|&j| j != i)
                .map(|j| (1.0 - cosine(raw.row(i), raw.row(j)), j))
                .collect();
            by_cos.sort_by(|a, b| a.0.total_cmp(&b.0));
            let want: Vec<u32> = by_cos[..k].iter().map(|&(_, j)| j as u32).collect();
            assert_eq!(nb.row_indices(i), &want[..], "row {i}");
            for (&dist, &(cd, _)) in nb.row_distances(i).iter().zip(&by_cos) {
                assert!(
                    (dist as f64 - 2.0 * cd).abs() < 1e-5,
                    "row {i}: {dist} vs {cd}"
                );
            }
        }
    }

    /// Correlation: rows centred then scaled, so that their squared distances are
    /// 2 · (1 − r).
    #[test]
    fn correlation_rows_are_centred_and_unit() {
        let raw = random(50, 7, 2);
        let mut t = raw.clone();
        Metric::Correlation.apply(&mut t).unwrap();
        for i in 0..t.n {
            let row = t.row(i);
            let mean: f64 = row.iter().map(|&x| x as f64).sum::<f64>() / 7.0;
            let norm: f64 = row.iter().map(|&x| (x as f64).powi(2)).sum();
            assert!(mean.abs() < 1e-6 && (norm - 1.0).abs() < 1e-5, "row {i}");
        }
        // Pearson's r of rows 0 and 1 from the raw values.
        let (a, b) = (raw.row(0), raw.row(1));
        let (ma, mb) = (
            a.iter().map(|&x| x as f64).sum::<f64>() / 7.0,
            b.iter().map(|&x| x as f64).sum::<f64>() / 7.0,
        );
        let ca: Vec<f32> = a.iter().map(|&x| (x as f64 - ma) as f32).collect();
        let cb: Vec<f32> = b.iter().map(|&x| (x as f64 - mb) as f32).collect();
        let r = cosine(&ca, &cb);
        let d2: f64 = t
            .row(0)
            .iter()
            .zip(t.row(1))
            .map(|(&x, &y)| (x as f64 - y as f64).powi(2))
            .sum();
        assert!((d2 - 2.0 * (1.0 - r)).abs() < 1e-5);
    }

    #[test]
    fn rows_without_a_direction_are_refused_by_number() {
        let mut p = Points::new(4, 3, vec![1., 2., 3., 1., 0., 0., 0., 0., 0., 5., 5., 5.]);
        let err = Metric::Cosine
            .apply(&mut p.clone())
            .unwrap_err()
            .to_string();
        assert!(err.contains("row 2") && err.contains("all zeros"), "{err}");
        let err = Metric::Correlation.apply(&mut p).unwrap_err().to_string();
        // Row 2 (zeros) is constant too, and comes first.
        assert!(err.contains("row 2") && err.contains("constant"), "{err}");
        let mut e = random(5, 3, 3);
        let before = e.data.clone();
        Metric::Euclidean.apply(&mut e).unwrap();
        assert_eq!(e.data, before);
        // The inner product ranks the rows as they are, zeros included.
        Metric::InnerProduct.apply(&mut p).unwrap();
        assert_eq!(p.data[6..9], [0.0; 3]);
    }
}
