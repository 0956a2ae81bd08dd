//! The raw command line (clap). Values are parsed and range-checked here; everything that
//! needs the data is checked by the library.
//!
//! Every numeric option takes `allow_negative_numbers`: without it clap reads the `-1` of
//! `--lambda -1` as an unknown flag, and the user learns nothing about the value; with it
//! the value reaches its range check, which names the parameter and its range.

use std::path::PathBuf;
use std::str::FromStr;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    /// Print a completion script for a shell to standard output, e.g.
    /// `sgtsne completions bash > ~/.local/share/bash-completion/completions/sgtsne`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) to standard output, e.g. `sgtsne man | man -l -`.
    Man,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KlAffinities {
    Knn,
    Exact,
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
#[command(group(clap::ArgGroup::new("source").args(["input", "demo", "graph"])))]
pub struct EmbedArgs {
    /// Points to embed: .npy (f32/f64/integers, C or Fortran order), .csv, .tsv, .fvecs, or
    /// an AnnData .h5ad (its obsm['X_pca'] when present, else X, dense or sparse; see
    /// --use-rep).
    pub input: Option<PathBuf>,
    /// Embed the built-in digits data set (1,797 × 64, labelled) instead of a file.
    #[arg(long)]
    pub demo: bool,
    /// SG-t-SNE mode: embed the nodes of a sparse weighted graph (Matrix Market .mtx).
    #[arg(long, value_name = "G.mtx")]
    pub graph: Option<PathBuf>,
    /// The affinities P: `knn` (each point's ⌈3·perplexity⌉ nearest neighbours, the
    /// default), `exact` (every pair, calibrated over all n − 1 other points; memory grows
    /// as n², so for up to some tens of thousands of points), or a file P.mtx (n × n, used
    /// as given in place of the points: symmetrised and normalised if it is not, with a note;
    /// not λ-rescaled unless --lambda is given, which rescales it as a --graph).
    #[arg(long, value_name = "knn|exact|P.mtx")]
    pub affinities: Option<AffinitiesArg>,
    /// Write the embedding: .npy (float32), .csv, .tsv, `-` (CSV on standard output), or
    /// .h5ad (a copy of an .h5ad input with the embedding added as obsm['X_tsne'], see --key;
    /// a new AnnData file otherwise).
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Labels of the points (.npy or a one-column .csv): colour the plot, measure accuracy.
    /// For an .h5ad input, `obs:COLUMN` takes an obs column (categorical, string or
    /// integer), e.g. `--labels obs:cell_type`.
    #[arg(long, value_name = "LABELS")]
    pub labels: Option<PathBuf>,
    /// The matrix of an .h5ad input to embed: `X`, or an obsm key such as `X_pca` (scanpy's
    /// use_rep) [default: X_pca when the file has it, else X].
    #[arg(long, value_name = "KEY")]
    pub use_rep: Option<String>,
    /// The obsm key the embedding gets in an .h5ad output.
    #[arg(long, value_name = "NAME", default_value = "X_tsne")]
    pub key: String,
    /// Add the embedding to the .h5ad input itself (atomically: an edited copy replaces it).
    #[arg(long, conflicts_with = "output")]
    pub in_place: bool,
    /// Write a PNG scatter plot of the embedding.
    #[arg(long, value_name = "OUT.png")]
    pub plot: Option<PathBuf>,
    /// Fit a Gaussian mixture of K components to the embedding (or --clusters-on data), as
    /// `sgtsne gmm -k K` with its defaults (five starts on the embedding, the best kept):
    /// --plot is coloured by cluster when no --labels are given, and the report holds the
    /// cluster sizes (with labels, the adjusted Rand index too).
    #[arg(long, value_name = "K")]
    pub clusters: Option<usize>,
    /// What --clusters fits: `embedding` or `data` (the points as the kNN sees them: after
    /// the metric's transform and PCA).
    /// [default: embedding]
    #[arg(long, value_enum, requires = "clusters")]
    pub clusters_on: Option<ClustersOnArg>,
    /// Write the --clusters labels as a 1-D .npy of uint32, in input order.
    #[arg(long, value_name = "OUT.npy", requires = "clusters")]
    pub clusters_out: Option<PathBuf>,
    /// Write a JSON report: parameters, seconds per stage, KL history, memory.
    #[arg(long, value_name = "OUT.json")]
    pub report: Option<PathBuf>,
    /// Write the embedding every N iterations, and after the last, into --snapshots DIR
    /// (.npy in input order, named by iteration so that they sort: iter_0050.npy, …).
    #[arg(long, value_name = "N", requires = "snapshots")]
    pub snapshot_every: Option<usize>,
    /// The directory of --snapshot-every's files, made if missing (its parent must exist);
    /// files of the same names are replaced.
    #[arg(long, value_name = "DIR", requires = "snapshot_every")]
    pub snapshots: Option<PathBuf>,
    /// Save what `sgtsne transform` needs to place new points into this map (.sgtsne): the
    /// points after --metric's transform and PCA, the PCA basis, the embedding and the
    /// parameters. Dense points only.
    #[arg(long, value_name = "OUT.sgtsne")]
    pub save_model: Option<PathBuf>,
    /// Draw the snapshots as an animated GIF, one frame each, with the colours of --plot on
    /// axes fixed for the whole run.
    #[arg(long, value_name = "OUT.gif", requires = "snapshots")]
    pub animate: Option<PathBuf>,
    /// What a first Ctrl-C (SIGINT) during the optimisation does, once the current
    /// iteration ends: discard the run and write nothing (exit status 130), or save the
    /// embedding as it is to every requested output, the report marking the iteration. A
    /// second Ctrl-C, or one before the optimisation, ends the run at once.
    #[arg(long, value_enum, default_value_t = OnInterruptArg::Discard)]
    pub on_interrupt: OnInterruptArg,
    /// Embedding dimension.
    #[arg(long, allow_negative_numbers = true, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=3))]
    pub dims: u8,
    /// Perplexity: the effective number of neighbours (k = ⌈3·perplexity⌉ are computed), or
    /// several, comma-separated (`30,300`), for multiscale affinities: the Gaussians of each
    /// perplexity averaged (Lee et al. 2015), k from the largest.
    #[arg(
        long,
        default_value = "30",
        value_name = "U[,U…]",
        allow_hyphen_values = true
    )]
    pub perplexity: PerplexityArg,
    /// The most neighbours per point: caps k = ⌈3·perplexity⌉ (a note says when it does).
    #[arg(long, allow_negative_numbers = true, default_value_t = sgtsne::embed::MAX_NEIGHBORS, value_name = "K")]
    pub max_neighbors: usize,
    /// Degrees of freedom α of the embedding's Student-t kernel, w = (1 + d²/α)^(−α): 1 is
    /// t-SNE's; below 1 heavier tails pull clusters apart and reveal finer ones (Kobak et
    /// al. 2019); large α approaches SNE. α ≠ 1 runs on the cpu backend.
    #[arg(
        long,
        default_value_t = 1.0,
        value_name = "α",
        allow_negative_numbers = true
    )]
    pub dof: f64,
    /// Gradient-descent iterations, the early phase included; fewer than
    /// --early-exaggeration-iters shorten the early phase to all of them (with a note).
    #[arg(long, allow_negative_numbers = true, default_value_t = 1000)]
    pub iters: usize,
    /// Exaggeration factor of the early phase (openTSNE's early_exaggeration) [default: 12].
    /// Formerly --exaggeration, which now sets the factor after the early phase.
    #[arg(long, value_name = "E", allow_negative_numbers = true)]
    pub early_exaggeration: Option<f32>,
    /// Iterations of the early phase, which runs with --early-exaggeration and
    /// --early-momentum [default: 250]. `--exaggeration-iters` is its former name, still
    /// accepted (with a note).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub early_exaggeration_iters: Option<usize>,
    /// The former name of --early-exaggeration-iters, kept so that scripts still run.
    #[arg(
        long,
        value_name = "N",
        hide = true,
        allow_negative_numbers = true,
        conflicts_with = "early_exaggeration_iters"
    )]
    pub exaggeration_iters: Option<usize>,
    /// Exaggeration factor after the early phase (openTSNE's exaggeration) [default: 1,
    /// plain t-SNE]; above 1 it favours global structure over local detail, e.g. 4 for a
    /// million points or more. Formerly this flag set the early factor, now
    /// --early-exaggeration: given without it, a note says so.
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub exaggeration: Option<f32>,
    /// Momentum of the early phase.
    #[arg(
        long,
        value_name = "M",
        default_value_t = 0.5,
        allow_negative_numbers = true
    )]
    pub early_momentum: f32,
    /// Momentum after the early phase.
    #[arg(
        long,
        value_name = "M",
        default_value_t = 0.8,
        allow_negative_numbers = true
    )]
    pub momentum: f32,
    /// Learning rate: `auto` = max(n / early exaggeration, 50), or a number.
    #[arg(long, default_value = "auto", allow_negative_numbers = true)]
    pub learning_rate: AutoOr<f32>,
    #[command(flatten)]
    pub search: SearchArgs,
    /// Neighbours computed elsewhere, used instead of a search: an .npz with n × k arrays
    /// `indices` and `distances` (what `sgtsne knn` writes), `INDICES.npy,DISTANCES.npy`,
    /// or an .h5ad's obsp['distances'] (scanpy's neighbours). Distances are plain (not
    /// squared); fewer than ⌈3·perplexity⌉ neighbours per point lower the perplexity.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["graph", "affinities"])]
    pub knn_from: Option<PathBuf>,
    /// Initial embedding: `pca` (scaled to std 1e-4), `random`, or a file (.npy, .csv,
    /// .tsv) of n rows × --dims columns in input order, used as given after centring (see
    /// --init-rescale).
    #[arg(long, default_value = "pca", value_name = "pca|random|FILE")]
    pub init: InitArg,
    /// Scale an --init FILE to std 1e-4 on its first axis, the customary start for early
    /// exaggeration.
    #[arg(long)]
    pub init_rescale: bool,
    /// Repulsion grid: `auto` (spacing fixed, nodes grow with the embedding), `fixed` (the
    /// dimension's fixed default, chosen by the grid-size sweep) or nodes per axis
    /// [default: auto in 1-D and 2-D, 50 in 3-D].
    #[arg(long, allow_negative_numbers = true)]
    pub grid: Option<GridArg>,
    /// Grid spacing h of `--grid auto`, in embedding units.
    #[arg(long, allow_negative_numbers = true, value_name = "H")]
    pub grid_spacing: Option<f64>,
    /// An adaptive grid whose spacing holds the relative repulsive-force error under E:
    /// h = (E / C)^(1/4), C fitted per dimension from the grid-size sweeps.
    #[arg(long, allow_negative_numbers = true, value_name = "E", conflicts_with_all = ["grid", "grid_spacing"])]
    pub grid_error: Option<f64>,
    /// Repulsion: `fft` (interpolation on a grid) or `exact` (O(n²), for reference).
    #[arg(long, value_enum, default_value_t = RepulsionArg::Fft)]
    pub repulsion: RepulsionArg,
    /// Where to compute: `auto` (GPU when usable, else CPU), `cpu`, `gpu`, `hybrid` (CPU
    /// attraction and GPU repulsion at the same time).
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Precision of the FFT repulsion's grids: `f32`, or `f64` as the reference thesis did.
    /// Meant for `--backend hybrid`, where the repulsion is hidden behind the CPU attraction;
    /// on cpu and gpu f64 costs repulsion time.
    #[arg(long, value_enum, default_value_t = PrecisionArg::F32)]
    pub precision: PrecisionArg,
    /// Worker threads for the CPU stages (default: all cores).
    #[arg(long, allow_negative_numbers = true)]
    pub threads: Option<usize>,
    /// Seed for every random choice; equal seeds give equal results.
    #[arg(long, allow_negative_numbers = true, default_value_t = 0)]
    pub seed: u64,
    /// λ of SG-t-SNE's graph rescaling (--graph; with --affinities, asks for the rescaling)
    /// [default: 1].
    #[arg(long, allow_negative_numbers = true)]
    pub lambda: Option<f64>,
    /// No progress bars and no summary on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

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
    /// input, whose PCA centres); its kNN runs on the host on every backend, and the
    /// affinities are the kNN's.
    #[arg(long, value_enum, default_value_t = MetricArg::Euclidean)]
    pub metric: MetricArg,
    /// Cells each point's approximate neighbours are searched in, its own included (`--knn
    /// approx`): more is slower and finds more of the true neighbours.
    #[arg(long, allow_negative_numbers = true, default_value_t = 64)]
    pub knn_probes: usize,
    /// Refinement rounds of the approximate kNN: each looks for better neighbours among
    /// the neighbours' neighbours (`--knn approx`; 0: none).
    #[arg(long, allow_negative_numbers = true, default_value_t = 2)]
    pub knn_refine: usize,
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
    /// points get close numbers: faster CPU attraction), `cells` (the approximate kNN's
    /// cells, free with `--knn approx` on the GPU), `input`, or `auto` (locality on cpu and
    /// hybrid; on gpu cells with the approximate kNN, else input). The output is in input
    /// order either way.
    #[arg(long, value_enum, default_value_t = OrderArg::Auto)]
    pub order: OrderArg,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnInterruptArg {
    /// Write nothing.
    Discard,
    /// Write the embedding of the iteration reached.
    Save,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum IndexTypeArg {
    I64,
    U32,
}

/// `--affinities`: a method over the points, or a file that replaces them.
#[derive(Clone, Debug)]
pub enum AffinitiesArg {
    Knn,
    Exact,
    File(PathBuf),
}

impl AffinitiesArg {
    /// The P file, when one was given.
    pub fn file(&self) -> Option<&std::path::Path> {
        match self {
            AffinitiesArg::File(p) => Some(p),
            _ => None,
        }
    }
}

impl FromStr for AffinitiesArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "knn" => AffinitiesArg::Knn,
            "exact" => AffinitiesArg::Exact,
            _ => AffinitiesArg::File(PathBuf::from(s)),
        })
    }
}

/// One perplexity or several (multiscale), as given: ascending, without repeats (their
/// range is the library's check, which names the parameter).
#[derive(Clone, Debug)]
pub struct PerplexityArg(pub Vec<f64>);

impl FromStr for PerplexityArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut scales = Vec::new();
        for part in s.split(',') {
            let u: f64 = part.trim().parse().map_err(|_| {
                format!("`{part}` is not a number (expected e.g. 30, or 30,300 for multiscale)")
            })?;
            scales.push(u);
        }
        scales.sort_by(f64::total_cmp);
        scales.dedup();
        Ok(PerplexityArg(scales))
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum KnnArg {
    Auto,
    Exact,
    Hnsw,
    Approx,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum MetricArg {
    Euclidean,
    Cosine,
    Correlation,
    InnerProduct,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ClustersOnArg {
    Embedding,
    Data,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum OrderArg {
    Auto,
    Locality,
    Cells,
    Input,
}

#[derive(Clone, Debug)]
pub enum InitArg {
    Pca,
    Random,
    File(PathBuf),
}

impl FromStr for InitArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "pca" => InitArg::Pca,
            "random" => InitArg::Random,
            "" => return Err("expected `pca`, `random` or a file".into()),
            path => InitArg::File(PathBuf::from(path)),
        })
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum RepulsionArg {
    Fft,
    Exact,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum PrecisionArg {
    F32,
    F64,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum BackendArg {
    Auto,
    Cpu,
    Gpu,
    Hybrid,
}

/// The value of `--grid`.
#[derive(Clone, Copy, Debug)]
pub enum GridArg {
    Auto,
    Fixed,
    Nodes(usize),
}

impl FromStr for GridArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(GridArg::Auto),
            "fixed" => Ok(GridArg::Fixed),
            _ => s.parse().map(GridArg::Nodes).map_err(|_| {
                format!("expected `auto`, `fixed` or a number of nodes per axis, got `{s}`")
            }),
        }
    }
}

/// `auto` or a value.
#[derive(Clone, Copy, Debug)]
pub enum AutoOr<T> {
    Auto,
    Value(T),
}

impl<T: FromStr> FromStr for AutoOr<T> {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.eq_ignore_ascii_case("auto") {
            return Ok(AutoOr::Auto);
        }
        s.parse()
            .map(AutoOr::Value)
            .map_err(|_| format!("expected `auto` or a number, got `{s}`"))
    }
}

/// `none` or a value.
#[derive(Clone, Copy, Debug)]
pub enum NoneOr<T> {
    None,
    Value(T),
}

impl<T: FromStr> FromStr for NoneOr<T> {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.eq_ignore_ascii_case("none") {
            return Ok(NoneOr::None);
        }
        s.parse()
            .map(NoneOr::Value)
            .map_err(|_| format!("expected `none` or a number, got `{s}`"))
    }
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
    /// Where to compute: the placement runs on the CPU; `gpu` and `hybrid` are refused.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// No progress bar and no summary.
    #[arg(short, long)]
    pub quiet: bool,
}
