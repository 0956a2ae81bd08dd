//! The settings of the approximate kNN, their defaults and their checks.

use super::Probing;
use crate::{Error, Result};

/// Settings of the approximate kNN.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct IvfParams {
    /// k-means cells; 0 = [`IvfParams::lists_for`] n.
    pub lists: usize,
    /// Cells probed per query, its own included. More: higher recall, proportionally more
    /// work. Default 64.
    pub probes: usize,
    /// The spread rule's ε ([`Probing`]): a block also probes the cells whose mean squared
    /// distance to it is within (1 + ε) of the least, up to [`IvfParams::max_probes`], and
    /// skips those of its `probes` nearest beyond [`FAR`] times the least; 0: the nearest
    /// `probes` cells alone. Default 0.5.
    ///
    /// [`FAR`]: super::FAR
    pub spread: f64,
    /// The most cells the spread rule lets a block probe; 0: 3 · `probes`.
    pub max_probes: usize,
    /// Lloyd iterations of the k-means. Default 10.
    pub kmeans_iters: usize,
    /// Points of the k-means sample per cell (FAISS uses 39 to 256). Default 64.
    pub sample_per_list: usize,
    /// Rounds of refinement by neighbours of neighbours after the sweep
    /// (`crate::knn::gpu::refine`). Default 2.
    pub refine: usize,
    /// The refinement runs only when the recall sample's recall after the sweep is below
    /// this ([`IvfParams::rounds_after`]); 0: never, above 1: always. Default 0.98: past it the
    /// rounds add little (the 1.3M mixture on the CPU: 0.9853 → 0.9886 for 6.7 s of its
    /// 29 s search on 16 cores).
    pub refine_below: f64,
    /// Neighbours of a row, and of each of them, that a refinement round looks at (fan²
    /// candidates per row; at most k). Default 16.
    pub fan: usize,
    /// Seed of the k-means sample and start.
    pub seed: u64,
    /// GPUs the sweep's query blocks are split over (devices 0 .. gpus; the refinement's
    /// rows over two of them at most; the GPU method only). Default 1.
    pub gpus: usize,
}

impl Default for IvfParams {
    fn default() -> Self {
        IvfParams {
            lists: 0,
            probes: 64,
            spread: 0.5,
            max_probes: 0,
            kmeans_iters: 10,
            sample_per_list: 64,
            refine: 2,
            refine_below: 0.98,
            fan: 16,
            seed: 0,
            gpus: 1,
        }
    }
}

impl IvfParams {
    /// Cells for n points: about √n / 2 (cells of 2√n points, 6300 at 10M), at least 1 and at
    /// most n / 64, so that a cell holds a few query blocks and the candidates of a query
    /// (`probes` cells, ≈ 128 √n points at 64 probes) grow as √n: the sweep costs
    /// O(n^1.5 d) against the exact O(n² d).
    pub fn lists_for(&self, n: usize) -> usize {
        if self.lists > 0 {
            return self.lists.min(n).max(1);
        }
        let auto = ((n as f64).sqrt() / 2.0).round() as usize;
        auto.min(n / 64).max(1)
    }

    /// How each query block chooses its cells ([`Cells::block_probes`]), for lists of k.
    ///
    /// [`Cells::block_probes`]: super::Cells::block_probes
    pub fn probing(&self, k: usize) -> Probing {
        Probing {
            probes: self.probes,
            max_probes: match self.max_probes {
                0 => 3 * self.probes,
                m => m.max(self.probes),
            },
            spread: self.spread,
            min_points: 2 * (k + 1),
        }
    }

    /// The refinement rounds to run after a sweep whose sample recall is `recall_sweep`
    /// (NaN without a sample: the rounds asked for).
    pub fn rounds_after(&self, recall_sweep: f64) -> usize {
        if recall_sweep >= self.refine_below {
            0
        } else {
            self.refine
        }
    }

    /// Checks the settings against n and k.
    pub fn check(&self, n: usize, k: usize) -> Result<()> {
        if self.probes == 0 {
            return Err(Error::param("knn-probes", "must be at least 1"));
        }
        if self.max_probes > 0 && self.max_probes < self.probes {
            return Err(Error::param(
                "knn-max-probes",
                format!(
                    "must be at least --knn-probes ({}), got {}",
                    self.probes, self.max_probes
                ),
            ));
        }
        if !(self.spread >= 0.0 && self.spread.is_finite()) {
            return Err(Error::param(
                "knn-spread",
                format!(
                    "must be 0 or more (0: the nearest cells alone), got {}",
                    self.spread
                ),
            ));
        }
        if !(self.refine_below >= 0.0 && self.refine_below.is_finite()) {
            return Err(Error::param(
                "knn-refine-below",
                format!(
                    "must be a recall of 0 or more (0: never refine, above 1: always), got {}",
                    self.refine_below
                ),
            ));
        }
        if self.kmeans_iters == 0 {
            return Err(Error::param("kmeans iterations", "must be at least 1"));
        }
        if self.sample_per_list == 0 {
            return Err(Error::param(
                "kmeans sample",
                "must be at least 1 point per cell",
            ));
        }
        if self.fan == 0 && self.refine > 0 {
            return Err(Error::param("knn-fan", "must be at least 1"));
        }
        if k >= n {
            return Err(Error::param(
                "k",
                format!("{k} neighbours need at least {} points, got {n}", k + 1),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rounds run below `refine_below` and without a sample (NaN), none at or above it;
    /// a bound that is not a recall is refused by its flag's name.
    #[test]
    fn refinement_runs_below_its_bound() {
        let params = IvfParams::default();
        assert_eq!(params.rounds_after(0.97), 2);
        assert_eq!(params.rounds_after(f64::NAN), 2);
        assert_eq!(params.rounds_after(0.98), 0);
        let never = IvfParams {
            refine_below: 0.0,
            ..IvfParams::default()
        };
        assert_eq!(never.rounds_after(0.1), 0);
        for bad in [-0.5, f64::NAN, f64::INFINITY] {
            let params = IvfParams {
                refine_below: bad,
                ..IvfParams::default()
            };
            let err = params.check(1000, 10).unwrap_err().to_string();
            assert!(err.contains("knn-refine-below"), "{err}");
        }
    }

    #[test]
    fn lists_grow_as_the_root_of_n() {
        let p = IvfParams::default();
        assert_eq!(p.lists_for(10), 1);
        assert_eq!(p.lists_for(10_000_000), 1581);
        assert!(p.lists_for(70_000) <= 70_000 / 64);
        assert_eq!(IvfParams { lists: 5, ..p }.lists_for(3), 3);
    }
}
