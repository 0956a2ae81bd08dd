//! The raw command line (clap). Values are parsed and range-checked here; everything that
//! needs the data is checked by the library.
//!
//! Every numeric option takes `allow_negative_numbers`: without it clap reads the `-1` of
//! `--lambda -1` as an unknown flag, and the user learns nothing about the value; with it
//! the value reaches its range check, which names the parameter and its range.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use super::arg_values::at_least_one;
pub use super::arg_values::{
    AffinitiesArg, AutoOr, BackendArg, ClustersOnArg, GridArg, IndexTypeArg, InitArg, KlAffinities,
    KnnArg, MetricArg, NearFieldArg, NoneOr, OnInterruptArg, OrderArg, PrecisionArg, RepulsionArg,
};
pub use super::embed_args::EmbedArgs;
pub use super::search_args::SearchArgs;

/// t-SNE at the million-point scale: sparse kNN attraction, FFT-interpolated repulsion.
#[derive(Debug, Parser)]
#[command(name = "sgtsne", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Embed points (.npy, .csv, .tsv, .fvecs) or a graph (.mtx) in 1, 2 or 3 dimensions.
    Embed(Box<EmbedArgs>),
    /// Show the version, the CPU threads and whether a CUDA device is usable (and why not);
    /// with a FILE, what it holds (for an .h5ad: X, obsm, obsp, layers and obs columns).
    Info(InfoArgs),
    /// Generate data for scale tests: a seeded Gaussian mixture with uneven cluster sizes, or
    /// randomly deformed copies of real images (--deform-images).
    Gen(GenArgs),
    /// Measure the repulsion's error and time over (n × grid size) from a TOML config and
    /// write a CSV, heat maps and the error-model fit.
    Sweep(SweepArgs),
    /// Find every point's k nearest neighbours, as `embed` would, and write them (.npz) for
    /// reuse (`embed --knn-from`) or other tools; approximate methods estimate their recall.
    Knn(Box<KnnArgs>),
    /// Place new points into a map saved by `embed --save-model`: the same metric and PCA,
    /// affinities to their nearest reference points, started at their neighbours' median
    /// and optimised against the fixed reference (openTSNE's transform; CPU).
    Transform(Box<TransformArgs>),
    /// Cluster points or an embedding with a Gaussian mixture fitted by EM (scikit-learn's
    /// GaussianMixture): K given, or chosen by BIC with `-k auto`.
    Gmm(Box<super::gmm_args::GmmArgs>),
    /// Score an embedding of the points, by any tool: KL(P‖Q) with P as `embed` builds it
    /// (exact kNN) and the exact Z.
    Kl(KlArgs),
    /// Write an interactive map of an embedding: one self-contained HTML page (WebGL; opens
    /// from disk, no network) to pan, zoom, colour by labels and metadata, hover, search,
    /// lasso and export; or serve it on 127.0.0.1 for maps too large for one file.
    View(Box<super::view_cmd::ViewArgs>),
    /// Print a completion script for a shell to standard output, e.g.
    /// `sgtsne completions bash > ~/.local/share/bash-completion/completions/sgtsne`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) to standard output, e.g. `sgtsne man | man -l -`.
    Man,
    /// Print the command-line reference (Markdown) to standard output: the page
    /// docs/reference/cli.md is its output, regenerated with
    /// `sgtsne reference > docs/reference/cli.md`.
    #[command(hide = true)]
    Reference,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// A points file to describe (.h5ad, .npy, .csv, .tsv, .txt, .fvecs).
    pub file: Option<PathBuf>,
    /// Also read the points as `embed` would (with --use-rep for an .h5ad) and say how long
    /// that took and how much memory it needed.
    #[arg(long, requires = "file")]
    pub read: bool,
    /// The matrix of an .h5ad to read with --read: `X` or an obsm key [default: X_pca when
    /// present, else X].
    #[arg(long, value_name = "KEY", requires = "read")]
    pub use_rep: Option<String>,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The sweep's configuration (TOML; see configs/sweep-2d.toml).
    #[arg(long, value_name = "CONFIG.toml")]
    pub config: PathBuf,
    /// Output directory, created if missing [default: the config's output.dir, else .].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Worker threads for the CPU stages (default: all cores).
    #[arg(long, allow_negative_numbers = true)]
    pub threads: Option<usize>,
    /// No progress lines on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct KlArgs {
    /// The points that were embedded (.npy, .csv, .tsv, .fvecs), as `embed` reads them.
    pub points: PathBuf,
    /// Their embedding, n rows of 1–3 coordinates (.npy, .csv, .tsv).
    pub embedding: PathBuf,
    /// Perplexity u of P; k = ⌈3u⌉ neighbours.
    #[arg(long, allow_negative_numbers = true, default_value_t = 30.0)]
    pub perplexity: f64,
    /// Reduce the points to this many principal components first when they have more
    /// (`none`: never), as `embed` does.
    #[arg(long, allow_negative_numbers = true, default_value = "50")]
    pub pca: NoneOr<usize>,
    /// P over each point's ⌈3u⌉ nearest neighbours (`knn`), or over every pair (`exact`,
    /// as `embed --affinities exact`: the reference score of exact t-SNE).
    #[arg(long, value_enum, default_value_t = KlAffinities::Knn)]
    pub affinities: KlAffinities,
    /// Degrees of freedom α of the embedding's kernel, as `embed --dof` made it: Q is
    /// scored with w = (1 + d²/α)^(−α).
    #[arg(
        long,
        default_value_t = 1.0,
        value_name = "α",
        allow_negative_numbers = true
    )]
    pub dof: f64,
    /// Worker threads (default: all cores).
    #[arg(long, allow_negative_numbers = true)]
    pub threads: Option<usize>,
}

#[derive(Debug, Args)]
pub struct GenArgs {
    /// Number of points.
    #[arg(long, allow_negative_numbers = true, default_value_t = 1_300_000)]
    pub n: usize,
    /// Dimension of each point; with --deform-images, the number of principal components
    /// kept.
    #[arg(long, allow_negative_numbers = true, default_value_t = 50)]
    pub dim: usize,
    /// Number of clusters of the Gaussian mixture [default: 40]. Not with --deform-images.
    #[arg(long, allow_negative_numbers = true, conflicts_with = "deform_images")]
    pub clusters: Option<usize>,
    /// Real images instead of a mixture ("infinite MNIST"): row i is a randomly deformed copy
    /// (rotation, scale, shear, shift, smooth elastic field) of image i mod n_images of this
    /// .npy (n_images × s² pixels: square s × s images, uint8 0–255 or floats 0–1),
    /// projected on the images' first --dim principal components. Rows 0..n_images are the
    /// images themselves unless --deform-all.
    #[arg(long, value_name = "IMAGES.npy", requires = "image_labels")]
    pub deform_images: Option<PathBuf>,
    /// The label of each image of --deform-images (.npy or a one-column .csv); each row gets
    /// its image's label.
    #[arg(long, value_name = "LABELS", requires = "deform_images")]
    pub image_labels: Option<PathBuf>,
    /// With --deform-images: deform the first n_images rows too instead of copying the
    /// originals.
    #[arg(long, requires = "deform_images")]
    pub deform_all: bool,
    /// With --deform-images: scale every deformation range by this factor (0: exact copies;
    /// 1: rotation ±12°, scale 0.9–1.1, shear ±0.15, shift ±1.5 px, elastic field of RMS
    /// 1 px varying over 7 px).
    #[arg(
        long,
        allow_negative_numbers = true,
        default_value_t = 1.0,
        value_name = "F",
        requires = "deform_images"
    )]
    pub deform_strength: f32,
    /// Seed: the same seed gives the same output, on any number of threads.
    #[arg(long, allow_negative_numbers = true, default_value_t = 0)]
    pub seed: u64,
    /// Where to write the points (.npy or .csv).
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Where to write each point's label (.npy): its cluster, or its image's label.
    #[arg(long, value_name = "LABELS.npy")]
    pub labels: Option<PathBuf>,
    /// Worker threads (default: all cores).
    #[arg(long, allow_negative_numbers = true)]
    pub threads: Option<usize>,
    /// No progress bar or summary on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct KnnArgs {
    /// Points (.npy, .csv, .tsv, .fvecs, or an .h5ad, see --use-rep).
    pub input: PathBuf,
    /// Neighbours per point (`embed` uses ⌈3·perplexity⌉: 90 for perplexity 30).
    #[arg(short, long, allow_negative_numbers = true, default_value_t = 90)]
    pub k: usize,
    /// Where to write them: an .npz holding `indices` (n × k) and `distances` (n × k,
    /// float64, not squared), as numpy.savez would. For `--metric inner-product` the
    /// distances are √(2(c − x · y)), c the largest squared norm of the points searched
    /// (after PCA): what `embed --knn-from` reads back.
    #[arg(short, long, value_name = "OUT.npz")]
    pub output: PathBuf,
    /// The integer type of the indices: `i64` (numpy's default) or `u32` (half the size).
    #[arg(long, value_enum, default_value_t = IndexTypeArg::I64)]
    pub index_type: IndexTypeArg,
    #[command(flatten)]
    pub search: SearchArgs,
    /// The matrix of an .h5ad input: `X` or an obsm key [default: X_pca when present, else X].
    #[arg(long, value_name = "KEY")]
    pub use_rep: Option<String>,
    /// Where to compute: `auto` (GPU when usable, else CPU), `cpu`, `gpu` (`hybrid` searches
    /// as `gpu` does).
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// GPUs the approximate search's sweep is split over on the gpu backend, as `embed
    /// --gpus` splits it (default: every GPU the host shows from 1M points up, one below;
    /// CUDA_VISIBLE_DEVICES chooses which).
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = at_least_one)]
    pub gpus: Option<usize>,
    /// Seed of the approximate methods and of the recall sample.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Worker threads for the CPU stages (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Write a JSON report of the search (method, k, recall estimate, seconds).
    #[arg(long, value_name = "OUT.json")]
    pub report: Option<PathBuf>,
    /// No progress bars and no summary on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct TransformArgs {
    /// The map, from `sgtsne embed ... --save-model MODEL.sgtsne`.
    pub model: PathBuf,
    /// New points with the reference's features: any points file `embed` reads.
    pub input: PathBuf,
    /// Write the new points' embedding: .npy (float32), .csv, .tsv, `-` (CSV on standard
    /// output) or .h5ad.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Labels of the new points (.npy or a one-column .csv): with --reference-labels, the
    /// report measures how often a new point's 10 nearest reference points in the map agree.
    #[arg(long, value_name = "LABELS", requires = "reference_labels")]
    pub labels: Option<PathBuf>,
    /// Labels of the reference points, in the order they were embedded.
    #[arg(long, value_name = "LABELS", requires = "labels")]
    pub reference_labels: Option<PathBuf>,
    /// Write a JSON report: parameters, seconds per stage, accuracy.
    #[arg(long, value_name = "OUT.json")]
    pub report: Option<PathBuf>,
    /// Perplexity of the new points' affinities to the reference.
    #[arg(long, default_value_t = 5.0)]
    pub perplexity: f64,
    /// Reference neighbours whose median position starts each new point.
    #[arg(long, default_value_t = 25)]
    pub init_neighbors: usize,
    /// Gradient steps (0 keeps the median start).
    #[arg(long, default_value_t = 250)]
    pub iters: usize,
    /// Step size.
    #[arg(long, default_value_t = 0.1)]
    pub learning_rate: f64,
    /// Factor on the attraction to the reference neighbours.
    #[arg(long, default_value_t = 1.5)]
    pub exaggeration: f64,
    /// Where to compute: `auto` (GPU when usable, else CPU), `cpu`, `gpu` (`hybrid` runs as
    /// `gpu`: the neighbour search and the descent on the device).
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// No progress bar and no summary.
    #[arg(short, long)]
    pub quiet: bool,
}
