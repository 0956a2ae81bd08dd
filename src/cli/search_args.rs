//! How neighbours are found: the flags `embed` and `knn` share, in a module of their own so
//! that both commands' arguments take them without going through each other.

use clap::Args;

use super::arg_values::{AutoOr, KnnArg, MetricArg, NoneOr, OrderArg};

/// How neighbours are found: the flags `embed` and `knn` share, so that one command line
/// finds the same neighbours in both.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// kNN method: `exact`; `approx` (IVF cells probed per block and refined, on the GPU
    /// or the host, its recall measured on a sample every run); `hnsw` (on the host); `auto`: on gpu and
    /// hybrid exact below 500k points, approx from there; on cpu exact up to 500k, approx above.
    #[arg(long, value_enum, default_value_t = KnnArg::Auto)]
    pub knn: KnnArg,
    /// Distance between points: `euclidean`; `cosine` (1 − cos: Euclidean distance on rows
    /// scaled to unit length, then PCA and kNN as usual); `correlation` (1 − Pearson's r:
    /// rows centred on their own mean, then as cosine). A row of zeros (for correlation, a
    /// constant row) is refused with its number. `inner-product`: largest x · y first
    /// (maximum inner product search), ranked by 2(c − x · y), c the largest squared row
    /// norm; no centring, and the PCA is uncentred (a truncated SVD; refused for sparse
    /// input, whose PCA centres); every kNN method ranks by it, on the device on gpu and
    /// hybrid as on the host, and the affinities are the kNN's.
    #[arg(long, value_enum, default_value_t = MetricArg::Euclidean)]
    pub metric: MetricArg,
    /// The nearest cells each point's approximate neighbours are searched in, its own
    /// included (`--knn approx`; the spread rule may add or skip some): more is slower and
    /// finds more of the true neighbours.
    #[arg(long, allow_negative_numbers = true, default_value_t = 64)]
    pub knn_probes: usize,
    /// The approximate kNN's spread rule (`--knn approx`, squared distance): a point's
    /// search also takes the cells whose mean squared distance to it is within (1 + this)
    /// of the least, and skips cells of the nearest that are 16 times as far. It widens
    /// the search where the points fill many dimensions (their neighbours spread over
    /// many cells) and changes little near a low-dimensional manifold; 0: off.
    #[arg(long, allow_negative_numbers = true, default_value_t = 0.5)]
    pub knn_spread: f64,
    /// The most cells the spread rule lets a point's search take: `auto` (3 × --knn-probes)
    /// or a number.
    #[arg(long, allow_negative_numbers = true, default_value = "auto")]
    pub knn_max_probes: AutoOr<usize>,
    /// Refinement rounds of the approximate kNN: each looks for better neighbours among
    /// the neighbours' neighbours (`--knn approx`; 0: none).
    #[arg(long, allow_negative_numbers = true, default_value_t = 2)]
    pub knn_refine: usize,
    /// The refinement runs only when the recall sample's recall after the sweep is below
    /// this (0: never, above 1: always): past it the rounds gain little for their time.
    #[arg(long, allow_negative_numbers = true, default_value_t = 0.98)]
    pub knn_refine_below: f64,
    /// Neighbours of a point, and of each of them, a refinement round looks at (fan² new
    /// candidates per point): more is slower and finds more.
    #[arg(long, allow_negative_numbers = true, default_value_t = 16)]
    pub knn_fan: usize,
    /// k-means cells of the approximate kNN: `auto` (about √n / 2) or a number.
    #[arg(long, allow_negative_numbers = true, default_value = "auto")]
    pub knn_lists: AutoOr<usize>,
    /// Reduce to this many principal components first when the input has more; `none`
    /// keeps all features.
    #[arg(long, allow_negative_numbers = true, default_value = "50")]
    pub pca: NoneOr<usize>,
    /// Internal numbering of the points: `locality` (a PCA-tree leaf order, so that close
    /// points get close numbers: a faster attraction, and a faster exact kNN on the GPU),
    /// `cells` (the approximate kNN's cells, free with `--knn approx` on the GPU), `input`,
    /// or `auto` (cells on gpu with the approximate kNN, else locality). The output is in
    /// input order either way.
    #[arg(long, value_enum, default_value_t = OrderArg::Auto)]
    pub order: OrderArg,
}
