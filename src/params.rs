//! Every parameter of a run ([`EmbedParams`]) and the choices it names, with their defaults
//! (DESIGN §1) and range checks. Kept apart from the pipeline so that the stages and
//! backends that read parameters do not depend on the orchestration.

use serde::{Serialize, Serializer};

use crate::backend::BackendKind;
use crate::init::InitKind;
use crate::kernel::Kernel;
use crate::knn::ivf::IvfParams;
use crate::optim::stability::AUTO_COARSE_DELAY;
use crate::optim::{AutoIters, OptimParams};
use crate::repulse::grid::MAX_TOTAL_NODES;
use crate::repulse::{GridSpec, RepulsionSpec};
pub use crate::repulse::{Precision, RepulsionMethod};
use crate::{Error, Result};

/// Above this many points `--knn auto` on the CPU uses the approximate kNN
/// ([`crate::knn::ivf_cpu`]) instead of the exact blocked GEMM, which grows as n². Measured
/// on the 2-core development machine (k = 90, deformed MNIST digits, d = 50,
/// `scripts/bench/cpu_knn.sh`): 300k exact 19.5 s, approx 15.6 s at recall 0.981; 1M exact
/// 177.6 s, approx 73.8 s at recall 0.973. HNSW took 52 s at 70k there (recall 0.996).
pub const AUTO_EXACT_MAX: usize = 500_000;

/// From this many points `--knn auto` on the GPU uses the approximate kNN (IVF,
/// [`crate::knn::ivf`]) instead of the exact sweep. Measured on the H100 (k = 90, d = 50,
/// `scripts/bench/knn_scale.sh sizes`): kNN exact 0.32 s against approx 0.38 s at 250k,
/// 0.91 against 0.68 s at 500k, 2.77 against 1.30 s at 1M (recall 0.994); at 1.3M deformed
/// MNIST digits (recall 0.974) the embedding's 10-NN accuracy was 0.940 against 0.942 exact
/// and its KL lower (5.508 against 5.518).
pub const AUTO_APPROX_GPU_MIN: usize = 500_000;

/// The default most neighbours per point ([`EmbedParams::max_neighbors`]): perplexity up to
/// 333 gets its customary ⌈3u⌉; beyond, the note of the cap says what was cut. At 1.3M
/// points, 1000 neighbours hold 10 GB of kNN graph and P.
pub const MAX_NEIGHBORS: usize = 1000;

/// Nodes a point of the adaptive grid's budget under `--iters auto`
/// ([`EmbedParams::auto_grid_budget`]) when the repulsion runs on the GPU, where the near
/// field's direct sums cost little beside the G2G's transforms. Optimisation seconds at 2 /
/// 4 / 8 nodes a point and without a budget (one H100, medians of 3,
/// `scripts/bench/auto_budget.sh`): MNIST 0.24 / 0.26 / 0.28 / 0.49, 250k deformed digits
/// 0.93 / 1.02 / 1.23 / 2.34, 500k 1.78 / 2.15 / 2.11 / 3.86, KL and accuracy alike.
pub const AUTO_NODES_PER_POINT_DEVICE: usize = 2;

/// [`AUTO_NODES_PER_POINT_DEVICE`] on the host, whose near field costs more a pair:
/// MNIST's optimisation on 2 threads took 16.2 / 17.5 / 22.4 s at 4 / 8 / 16 nodes a
/// point, 19.6 s without a budget (medians of 2).
pub const AUTO_NODES_PER_POINT_HOST: usize = 4;

/// Nodes a point of a 3-D grid's budget on the GPU ([`EmbedParams::auto_grid_budget`]), at
/// any iteration count, where the near field is on by default: below the 160³ cap a coarser
/// grid's transforms cost less than the wider direct sums it leaves the near field. MNIST
/// 70k in 3-D (one H100, `--iters 1000`): 1.30–1.31 s wall at 4 a point (63³ nodes)
/// against 3.97–4.00 s at the cap (G2G 2.95 of its 3.45 s of optimisation), 2 a point (48³)
/// alike, KL 2.546 all, force error 2.2e-3 (64³) against 5.4e-3 (160³) at iteration 1000. At
/// 1.3M deformed digits 2 a point (125³) took 9.57 s against 9.38 s at the cap, the near
/// field's 3.50 s outweighing the G2G's 1.33 s saved: 4 a point leaves such a run at the
/// cap.
pub const SOLID_NODES_PER_POINT_DEVICE: usize = 4;

/// Points from which `--iters auto` leaves the grid without a budget (2²⁰): the budget was
/// measured up to 500k points, and denser maps give the near field more pairs a point,
/// while a grid at its [`MAX_TOTAL_NODES`] cap already has fewer nodes than 4 a point.
pub const AUTO_BUDGET_POINTS: usize = 1 << 20;

/// The perplexity whose k = ⌈3·perplexity⌉ is `k`: k / 3, stepped down past any rounding
/// that would make 3 · (k / 3) exceed k. A search for exactly k neighbours (`sgtsne knn -k`,
/// the Python package's `knn`) runs with it and `max_neighbors` = k.
pub fn perplexity_for(k: usize) -> f64 {
    let mut u = k as f64 / 3.0;
    while (3.0 * u).ceil() as usize > k {
        u = f64::from_bits(u.to_bits() - 1);
    }
    u
}

/// Which pairs the affinities P cover.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AffinityMethod {
    /// Each point's k = ⌈3·perplexity⌉ nearest neighbours (the default).
    #[default]
    Knn,
    /// Every pair: the calibration over all n − 1 other points
    /// ([`crate::affinity::exact`]); memory grows as n².
    Exact,
}

/// The kNN method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KnnMethod {
    /// On the GPU: exact below [`AUTO_APPROX_GPU_MIN`] points, approx from there; on the
    /// CPU: exact up to [`AUTO_EXACT_MAX`] points, approx above.
    Auto,
    /// Blocked GEMM and bounded selection.
    Exact,
    /// Approximate, `hnsw_rs` (on the host).
    Hnsw,
    /// Approximate, IVF cells probed per block of points and refined by neighbours of
    /// neighbours: the tensor-core sweep on the GPU ([`crate::knn::gpu::ivf`]), blocked
    /// GEMM tiles on the host ([`crate::knn::ivf_cpu`]).
    Approx,
}

impl KnnMethod {
    /// The method that runs for n points when the kNN runs on the GPU (`on_gpu`) or the
    /// host: `Auto` resolved.
    pub fn resolve(self, n: usize, on_gpu: bool) -> KnnMethod {
        match self {
            KnnMethod::Auto if on_gpu && n >= AUTO_APPROX_GPU_MIN => KnnMethod::Approx,
            KnnMethod::Auto if on_gpu || n <= AUTO_EXACT_MAX => KnnMethod::Exact,
            KnnMethod::Auto => KnnMethod::Approx,
            m => m,
        }
    }
}

/// How the pipeline numbers the points internally; the embedding comes out in input order
/// either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PointOrder {
    /// Number the points by the cells of the approximate kNN ([`KnnMethod::Approx`] on the
    /// GPU): its k-means cells in a locality order of their centroids, which the kNN sorts
    /// the points into anyway, so the order costs nothing and gathers P's neighbours into
    /// nearby rows. `--order auto` on gpu with the approximate kNN.
    Cells,
    /// Renumber the points (after PCA, before the kNN) in the leaf order of a PCA tree, so
    /// that close points get close numbers: P's non-zeros gather near the diagonal (fewer,
    /// denser CSB blocks; nearby `y_j` reads in the GPU attraction) and consecutive points
    /// spread onto and gather from nearby grid nodes (S2G, G2S). Graph inputs keep their order.
    Locality,
    /// Keep the input's order (the layout of the input file decides the locality).
    Input,
}

impl PointOrder {
    /// The order `--order auto` takes on `backend` with the kNN `knn` (resolved, see
    /// [`EmbedParams::order`]), or with the neighbours `given` (`--knn-from`): the
    /// approximate kNN's cells on gpu, where its search sorts the points into them anyway;
    /// a PCA tree's otherwise. The tree costs 0.01 s at 70k points and 0.26–0.30 s at
    /// 1.3M on 16 cores and shortens the GPU's exact kNN and attraction by more (one H200,
    /// deformed digits: 250k 1.21–1.24 s against 1.33–1.40 s in the input's order, 1.3M
    /// with `--knn exact` 5.31–5.38 against 6.00–6.13 s; `benches/RESULTS.md`). Given
    /// neighbours leave no search to number the points by its cells: in the input's order
    /// the attraction's gathers of y scatter (10M points on one H200: the optimisation
    /// 30.0 s against 14.9 s in a PCA tree's order).
    pub fn default_for(backend: BackendKind, knn: KnnMethod, given: bool) -> Self {
        match (backend, knn) {
            (BackendKind::Gpu, KnnMethod::Approx) if !given => PointOrder::Cells,
            _ => PointOrder::Locality,
        }
    }
}

/// Every parameter of a run. Defaults are DESIGN §1's.
#[derive(Clone, Debug, Serialize)]
pub struct EmbedParams {
    /// Embedding dimension s ∈ {1, 2, 3} (default 2).
    pub dims: usize,
    /// Perplexity u (default 30); k = ⌈3u⌉ neighbours (at most `max_neighbors`). With
    /// `multiscale`, the largest of the scales.
    pub perplexity: f64,
    /// Multiscale perplexity (Lee et al. 2015; openTSNE's `Multiscale`): the scales, in
    /// ascending order, the last equal to `perplexity`, whose Gaussian conditionals over the
    /// same k neighbours are averaged before symmetrisation. Empty for one scale.
    pub multiscale: Vec<f64>,
    /// Which pairs P covers (`--affinities knn|exact`).
    pub affinities: AffinityMethod,
    /// The embedding's kernel (`--dof`): Student's t of α degrees of freedom, default 1
    /// (t-SNE's Cauchy kernel); α < 1 for heavier tails ([`Kernel`]).
    pub kernel: Kernel,
    /// The most neighbours per point (default [`MAX_NEIGHBORS`]): k = min(⌈3u⌉, this).
    /// Memory and attraction time grow with k; a perplexity of 300 already asks for 900.
    pub max_neighbors: usize,
    /// kNN method (default auto).
    pub knn: KnnMethod,
    /// The distance between points (default Euclidean; cosine and correlation transform
    /// the rows first, [`crate::prep::Metric`]).
    pub metric: crate::prep::Metric,
    /// Reduce to this many principal components first when d is larger (default 50).
    pub pca: Option<usize>,
    /// Settings of the approximate kNN (cells, probes).
    pub ivf: IvfParams,
    /// Internal numbering of the points; `None` = [`PointOrder::default_for`] the backend
    /// and kNN (resolved in the report): [`PointOrder::Cells`] on gpu with the approximate
    /// kNN (free), [`PointOrder::Locality`] otherwise, whose order speeds the CPU's CSB
    /// attraction and the GPU's exact kNN and attraction.
    pub order: Option<PointOrder>,
    /// Initialisation (default PCA; graphs always start random).
    pub init: InitKind,
    /// The initial embedding of [`InitKind::Given`]: n × dims, row-major, in input order
    /// (not in the report).
    #[serde(skip)]
    pub init_y: Option<std::sync::Arc<[f32]>>,
    /// With [`InitKind::Given`]: scale it to the customary std 1e-4 on its first axis.
    pub init_rescale: bool,
    /// Neighbours computed elsewhere (`--knn-from`), in input numbering, used instead of a
    /// search (not in the report; its `knn.method` is `given`). Fewer than
    /// k = ⌈3·perplexity⌉ per point lower the perplexity, with a note.
    #[serde(skip)]
    pub knn_given: Option<std::sync::Arc<crate::knn::Neighbors>>,
    /// Keep what placing new points needs ([`Embedding::reference`](crate::embed::Embedding)):
    /// the prepared points and the PCA basis (default off; not in the report). Dense points
    /// only. With PCA the basis is fitted on the host whatever the backend, since the GPU's
    /// and the wide data's PCA do not keep it.
    #[serde(skip)]
    pub keep_reference: bool,
    /// Repulsion grid; `None` = [`GridSpec::default_for`] the dimension (resolved in the
    /// report).
    #[serde(serialize_with = "grid_text")]
    pub grid: Option<GridSpec>,
    /// Repulsion method (default fft).
    pub repulsion: RepulsionMethod,
    /// The FFT repulsion's near field ([`crate::repulse::near`]); `None` = on in 3-D with
    /// the Cauchy kernel on one GPU (gpu and hybrid backends), where the grid is capped
    /// ([`EmbedParams::repulsion_spec`] resolves it).
    pub near_field: Option<bool>,
    /// The most nodes of the adaptive repulsion grid (`--grid-max-nodes`; `None`:
    /// [`MAX_TOTAL_NODES`], or under `--iters auto` the budget of
    /// [`EmbedParams::auto_grid_budget`]; resolved in the report).
    pub grid_max_nodes: Option<usize>,
    /// Iterations after the early phase before the coarse step begins (`--coarse-delay`;
    /// `None`: [`EmbedParams::auto_coarse_delay`] for the run's size), resolved into
    /// `optim.coarse_delay` as the run starts.
    pub coarse_delay: Option<usize>,
    /// Precision of the FFT repulsion's grids (default f32).
    pub precision: Precision,
    /// Backend (default auto).
    pub backend: BackendKind,
    /// GPUs of the gpu backend's optimisation (`None`: all the host shows from
    /// [`crate::backend::multi::AUTO_MIN_POINTS`] points up, one below; resolved when the
    /// backend is gpu).
    pub gpus: Option<usize>,
    /// Seed of every random choice (default 0).
    pub seed: u64,
    /// λ of SG-t-SNE's rescaling in graph mode (default 1).
    pub lambda: f64,
    /// Learning rate; `None` = auto, max(n / early exaggeration, 50).
    pub learning_rate: Option<f32>,
    /// Iterations, exaggeration and momentum of both phases, gains (learning rate resolved
    /// at run time; an early phase longer than the run shortened, with a note).
    pub optim: OptimParams,
    /// `--iters auto`: the run stops once its map has settled ([`AutoIters`]), and
    /// `optim.iters` is the cap; `None` (default): exactly `optim.iters` iterations.
    pub auto_iters: Option<AutoIters>,
}

impl Default for EmbedParams {
    fn default() -> Self {
        EmbedParams {
            dims: 2,
            perplexity: 30.0,
            multiscale: Vec::new(),
            affinities: AffinityMethod::Knn,
            kernel: Kernel::CAUCHY,
            max_neighbors: MAX_NEIGHBORS,
            knn: KnnMethod::Auto,
            metric: crate::prep::Metric::Euclidean,
            pca: Some(50),
            ivf: IvfParams::default(),
            order: None,
            init: InitKind::Pca,
            init_y: None,
            init_rescale: false,
            knn_given: None,
            keep_reference: false,
            grid: None,
            repulsion: RepulsionMethod::Fft,
            near_field: None,
            grid_max_nodes: None,
            coarse_delay: None,
            precision: Precision::F32,
            backend: BackendKind::Auto,
            gpus: None,
            seed: 0,
            lambda: 1.0,
            learning_rate: None,
            optim: OptimParams::default(),
            auto_iters: None,
        }
    }
}

fn grid_text<S: Serializer>(grid: &Option<GridSpec>, s: S) -> Result<S::Ok, S::Error> {
    match grid {
        None => s.serialize_str("default"),
        Some(GridSpec::Fixed(n)) => s.serialize_str(&n.to_string()),
        Some(GridSpec::Auto { h }) => s.serialize_str(&format!("auto (h = {h})")),
    }
}

impl EmbedParams {
    /// k = ⌈3u⌉ (DESIGN §1.3), at most `max_neighbors`.
    pub fn k(&self) -> usize {
        self.k_wanted().min(self.max_neighbors)
    }

    /// The points' dimension after the PCA, for points of `d` dimensions (the kNN's).
    pub fn reduced_dim(&self, d: usize) -> usize {
        self.pca.map_or(d, |m| m.min(d))
    }

    /// Whether the PCA drops features of points of `d` dimensions (it runs only then).
    pub fn reduces(&self, d: usize) -> bool {
        self.reduced_dim(d) < d
    }

    /// ⌈3u⌉ for the largest perplexity, before the `max_neighbors` cap.
    pub fn k_wanted(&self) -> usize {
        (3.0 * self.perplexity).ceil() as usize
    }

    /// The perplexities P is calibrated at: the multiscale list, or the one perplexity.
    pub fn scales(&self) -> Vec<f64> {
        if self.multiscale.is_empty() {
            vec![self.perplexity]
        } else {
            self.multiscale.clone()
        }
    }

    /// The repulsion these parameters ask for, with the grid resolved
    /// ([`GridSpec::default_for`] the dimension and backend when none was given).
    pub fn repulsion_spec(&self) -> RepulsionSpec {
        RepulsionSpec {
            method: self.repulsion,
            kernel: self.kernel,
            grid: self
                .grid
                .unwrap_or_else(|| GridSpec::default_for(self.dims, self.backend.on_device())),
            precision: self.precision,
            deterministic: self.optim.deterministic,
            near_field: self
                .near_field
                .unwrap_or_else(|| self.near_field_default(self.backend.on_device())),
            max_nodes: self.grid_max_nodes.unwrap_or(MAX_TOTAL_NODES),
        }
    }

    /// The node budget of the adaptive grid of a run of `n` points whose repulsion runs
    /// `on_device` or on the host, where the near field keeps the force error while the grid
    /// is coarser than its spacing asks (the Cauchy kernel's FFT repulsion on one GPU or the
    /// host, the near field not turned off, an adaptive grid), and where the budget is
    /// below [`MAX_TOTAL_NODES`]; `None` elsewhere. Call it with the backend's GPUs resolved.
    ///
    /// - In 1-D and 2-D, `--iters auto`'s schedule ([`OptimParams::grid_budget`]) below
    ///   [`AUTO_BUDGET_POINTS`]: [`AUTO_NODES_PER_POINT_DEVICE`] or
    ///   [`AUTO_NODES_PER_POINT_HOST`] a point. A run that converges makes a wider map than
    ///   1000 iterations do, and a grid of fixed spacing grows with it. MNIST 70k under
    ///   `--iters auto` ended on 1440² nodes against 720² at 1000 iterations, 30 nodes a
    ///   point, and the G2G over them cost 2.4× an iteration (`benches/RESULTS.md`,
    ///   convergence). Such a map is sparse: at spacing 0.7 the near field's cutoff (2
    ///   units) holds 13 neighbours a point, a few microseconds of direct sums, where halving
    ///   the nodes per axis saves three quarters of the G2G.
    /// - In 3-D on the device, at any iteration count: [`SOLID_NODES_PER_POINT_DEVICE`] a
    ///   point, where the near field is on by default ([`EmbedParams::near_field_default`]).
    ///   A 3-D grid of spacing 0.6 over a map 100–200 units wide would need 160³ nodes or
    ///   more; its transforms streamed most of an iteration's bytes.
    pub fn auto_grid_budget(&self, n: usize, on_device: bool) -> Option<usize> {
        let grid_auto = matches!(
            self.grid
                .unwrap_or_else(|| GridSpec::default_for(self.dims, self.backend.on_device())),
            GridSpec::Auto { .. }
        );
        let served = grid_auto
            && self.near_field != Some(false)
            && self.gpus.unwrap_or(1) <= 1
            && self.kernel.is_cauchy()
            && self.repulsion == RepulsionMethod::Fft;
        let auto_schedule = self.auto_iters.is_some() && self.optim.grid_budget;
        let per_point = match (self.dims, on_device) {
            (3, true) => SOLID_NODES_PER_POINT_DEVICE,
            (1 | 2, true) if auto_schedule => AUTO_NODES_PER_POINT_DEVICE,
            (1 | 2, false) if auto_schedule => AUTO_NODES_PER_POINT_HOST,
            _ => return None,
        };
        let budget = n.saturating_mul(per_point);
        (served && (self.dims == 3 || n < AUTO_BUDGET_POINTS) && budget < MAX_TOTAL_NODES)
            .then_some(budget)
    }

    /// The coarse step's delay for a run of `n` points where none is given:
    /// [`AUTO_COARSE_DELAY`] iterations under `--iters auto` below [`AUTO_BUDGET_POINTS`],
    /// else none. Begun at once, the coarse step cost the 10-NN accuracy of 70k to 500k
    /// points against 1000 iterations, and raised that of 1.3M and 10M, whose iteration
    /// counts the delay would be measured against first.
    pub fn auto_coarse_delay(&self, n: usize) -> usize {
        match self.auto_iters.is_some() && n < AUTO_BUDGET_POINTS {
            true => AUTO_COARSE_DELAY,
            false => 0,
        }
    }

    /// Whether `--near-field auto` may turn the near field on for a run of this kind, before
    /// its size is known: [`EmbedParams::near_field_default`] on the GPU, or a budget of
    /// `--iters auto` ([`EmbedParams::auto_grid_budget`]) for some size.
    pub fn near_field_possible(&self) -> bool {
        self.near_field.unwrap_or_else(|| {
            self.near_field_default(true) || self.auto_grid_budget(1, true).is_some()
        })
    }

    /// Whether `--near-field auto` turns the near field on for a run whose repulsion runs
    /// `on_device`: in 3-D with the Cauchy kernel's FFT repulsion on one GPU, where the
    /// default grid is capped at scale.
    pub fn near_field_default(&self, on_device: bool) -> bool {
        self.dims == 3
            && on_device
            && self.gpus.unwrap_or(1) <= 1
            && self.kernel.is_cauchy()
            && self.repulsion == RepulsionMethod::Fft
    }

    /// Range checks that need no data, each naming its parameter.
    pub fn validate(&self) -> Result<()> {
        if let Some(rule) = &self.auto_iters {
            rule.validate()?;
        }
        if !(1..=3).contains(&self.dims) {
            return Err(Error::param(
                "dims",
                format!("must be 1, 2 or 3, got {}", self.dims),
            ));
        }
        for &u in self.scales().iter().chain([&self.perplexity]) {
            if !(u >= 1.0 && u.is_finite()) {
                return Err(Error::param(
                    "perplexity",
                    format!("must be at least 1, got {u}"),
                ));
            }
        }
        Kernel::new(self.kernel.dof)?;
        if !self.multiscale.is_empty()
            && (self.multiscale.windows(2).any(|w| w[0] >= w[1])
                || self.multiscale.last() != Some(&self.perplexity))
        {
            return Err(Error::param(
                "perplexity",
                "multiscale perplexities must ascend and end with `perplexity`",
            ));
        }
        if self.affinities == AffinityMethod::Knn && (self.k() as f64) <= self.perplexity {
            return Err(Error::param(
                "max-neighbors",
                format!(
                    "{} neighbours cannot carry perplexity {} (k must exceed it, and ⌈3u⌉ = {} \
                     is customary); raise --max-neighbors",
                    self.k(),
                    self.perplexity,
                    self.k_wanted()
                ),
            ));
        }
        if self.pca == Some(0) {
            return Err(Error::param(
                "pca",
                "must be a positive number of components or `none`",
            ));
        }
        if let Some(GridSpec::Fixed(n)) = self.grid {
            if n < 8 {
                return Err(Error::param(
                    "grid",
                    format!("needs at least 8 nodes per axis, got {n}"),
                ));
            }
        }
        if let Some(GridSpec::Auto { h }) = self.grid {
            if !(h > 0.0 && h.is_finite()) {
                return Err(Error::param(
                    "grid",
                    format!("spacing h must be positive, got {h}"),
                ));
            }
        }
        if self.near_field == Some(true) && !self.kernel.is_cauchy() {
            return Err(Error::param(
                "near-field",
                format!(
                    "splits the Cauchy kernel only, not --dof {}; use --near-field off",
                    self.kernel.dof
                ),
            ));
        }
        if let Some(lr) = self.learning_rate {
            if !(lr > 0.0 && lr.is_finite()) {
                return Err(Error::param(
                    "learning-rate",
                    format!("must be positive, got {lr}"),
                ));
            }
        }
        // Checked here as well as by the graph's rescaling, so that a bad λ is refused
        // before the graph is read (and not ignored in point mode, where it has no use).
        if !(self.lambda > 0.0 && self.lambda.is_finite()) {
            return Err(Error::param(
                "lambda",
                format!("must be positive, got {}", self.lambda),
            ));
        }
        if self.precision == Precision::F64 && self.repulsion == RepulsionMethod::Exact {
            return Err(Error::param(
                "precision",
                "f64 applies to the FFT repulsion's grids; the exact repulsion already sums \
                 in f64",
            ));
        }
        self.optim.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--iters auto` delays the coarse step below 2²⁰ points and nowhere else.
    #[test]
    fn auto_iters_delay_the_coarse_step_below_a_million_points() {
        assert_eq!(EmbedParams::default().auto_coarse_delay(70_000), 0);
        let auto = EmbedParams {
            auto_iters: Some(AutoIters::default()),
            ..Default::default()
        };
        assert_eq!(auto.auto_coarse_delay(70_000), AUTO_COARSE_DELAY);
        assert_eq!(
            auto.auto_coarse_delay(AUTO_BUDGET_POINTS - 1),
            AUTO_COARSE_DELAY
        );
        assert_eq!(auto.auto_coarse_delay(AUTO_BUDGET_POINTS), 0);
    }

    /// `--iters auto` gives a grid budget of 2 nodes a point on the GPU and 4 on the host, in
    /// 1-D and 2-D below 2²⁰ points and 2²² nodes, where the near field can keep the
    /// accuracy; none for a rule alone or at a fixed count (3-D on the device has its own,
    /// at any count), over several GPUs, with the near field off, a fixed grid, another
    /// kernel or the exact repulsion.
    #[test]
    fn auto_iters_budget_where_the_near_field_can_serve() {
        let mut auto = EmbedParams {
            auto_iters: Some(AutoIters::default()),
            ..Default::default()
        };
        assert_eq!(auto.auto_grid_budget(70_000, true), None, "a rule alone");
        crate::optim::stability::auto_schedule(&mut auto.optim);
        assert_eq!(auto.auto_grid_budget(70_000, true), Some(140_000));
        assert_eq!(auto.auto_grid_budget(70_000, false), Some(280_000));
        assert_eq!(
            auto.auto_grid_budget((1 << 20) - 1, true),
            Some((1 << 21) - 2)
        );
        assert_eq!(
            auto.auto_grid_budget((1 << 20) - 1, false),
            Some((1 << 22) - 4)
        );
        assert_eq!(auto.auto_grid_budget(1 << 20, true), None);
        assert_eq!(auto.auto_grid_budget(1 << 20, false), None);
        assert!(auto.near_field_possible());
        let one_d = EmbedParams {
            dims: 1,
            ..auto.clone()
        };
        assert_eq!(one_d.auto_grid_budget(1000, true), Some(2000));
        // 3-D on the device: its own budget at any iteration count; none on the host.
        let solid = EmbedParams {
            dims: 3,
            grid: Some(GridSpec::default_for(3, true)),
            ..Default::default()
        };
        assert_eq!(
            solid.auto_grid_budget(70_000, true),
            Some(70_000 * SOLID_NODES_PER_POINT_DEVICE)
        );
        assert_eq!(solid.auto_grid_budget(70_000, false), None);
        assert_eq!(solid.auto_grid_budget(1 << 22, true), None, "past the cap");
        assert!(solid.near_field_possible());
        let none = [
            EmbedParams::default(),
            EmbedParams {
                gpus: Some(2),
                ..auto.clone()
            },
            EmbedParams {
                near_field: Some(false),
                ..auto.clone()
            },
            EmbedParams {
                grid: Some(GridSpec::Fixed(256)),
                ..auto.clone()
            },
            EmbedParams {
                kernel: Kernel { dof: 0.5 },
                ..auto.clone()
            },
            EmbedParams {
                repulsion: RepulsionMethod::Exact,
                ..auto.clone()
            },
        ];
        for p in none {
            assert_eq!(p.auto_grid_budget(70_000, true), None, "{p:?}");
        }
        assert!(!EmbedParams::default().near_field_possible());
    }

    /// `--order auto`: the approximate kNN's cells on gpu, free there; a PCA tree's
    /// everywhere else, the GPU's exact kNN and given neighbours included.
    #[test]
    fn auto_order_is_the_cells_or_a_pca_tree() {
        use BackendKind::{Cpu, Gpu, Hybrid};
        use KnnMethod::{Approx, Exact, Hnsw};
        assert_eq!(
            PointOrder::default_for(Gpu, Approx, false),
            PointOrder::Cells
        );
        for (backend, knn, given) in [
            (Gpu, Exact, false),
            (Gpu, Hnsw, false),
            (Gpu, Approx, true),
            (Cpu, Approx, false),
            (Cpu, Exact, false),
            (Hybrid, Approx, false),
        ] {
            let order = PointOrder::default_for(backend, knn, given);
            assert_eq!(
                order,
                PointOrder::Locality,
                "{backend:?}, {knn:?}, given {given}"
            );
        }
    }

    #[test]
    fn perplexity_gives_back_k() {
        for k in 3..2000 {
            let params = EmbedParams {
                perplexity: perplexity_for(k),
                max_neighbors: k,
                ..EmbedParams::default()
            };
            assert_eq!(params.k(), k);
        }
    }
}
