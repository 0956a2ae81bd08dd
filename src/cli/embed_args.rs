//! The arguments of `sgtsne embed`, the command with the most flags: its input, outputs,
//! affinities, optimisation and repulsion (the neighbour search's flags are
//! `SearchArgs`, shared with `knn`).

use std::path::PathBuf;

use clap::Args;

use super::arg_values::{
    at_least_one, AffinitiesArg, AutoOr, BackendArg, ClustersOnArg, GridArg, InitArg, NearFieldArg,
    NoneOr, OnInterruptArg, PerplexityArg, PrecisionArg, RepulsionArg,
};
use super::search_args::SearchArgs;

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
    /// Write an interactive map of the embedding (one self-contained .html, as `sgtsne
    /// view` writes), coloured by the labels (or the --clusters).
    #[arg(long, value_name = "MAP.html")]
    pub view: Option<PathBuf>,
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
    /// al. 2019); large α approaches SNE. Every backend takes any α.
    #[arg(
        long,
        default_value_t = 1.0,
        value_name = "α",
        allow_negative_numbers = true
    )]
    pub dof: f64,
    /// Gradient-descent iterations, the early phase included; fewer than
    /// --early-exaggeration-iters shorten the early phase to all of them (with a note).
    /// `auto`: run until the map has settled (--auto-stability, --auto-kl-drop) or its KL
    /// is flat (--auto-kl-flat), at most --iters-cap, with momentum 0.9 and the coarse step
    /// (--coarse-boost 3); the summary and the report say why it stopped. Large data sets
    /// need more than the default: the summary warns when a run stopped while its map was
    /// still changing.
    #[arg(
        long,
        default_value = "1000",
        value_name = "N|auto",
        allow_negative_numbers = true
    )]
    pub iters: AutoOr<usize>,
    /// With --iters auto, the most iterations.
    #[arg(long, value_name = "N", allow_negative_numbers = true, default_value_t = sgtsne::optim::AutoIters::default().cap)]
    pub iters_cap: usize,
    /// With --iters auto, the fraction of the 10 nearest neighbours in the map of 2000
    /// sampled points that must stay the same over the last tenth of the run for it to
    /// stop; nearer 1 runs longer.
    #[arg(long, value_name = "F", allow_negative_numbers = true, default_value_t = sgtsne::optim::AutoIters::default().stability)]
    pub auto_stability: f64,
    /// With --iters auto, the largest relative fall of the KL over the last tenth of the run
    /// at which it may stop; smaller runs longer.
    #[arg(long, value_name = "F", allow_negative_numbers = true, default_value_t = sgtsne::optim::AutoIters::default().kl_drop)]
    pub auto_kl_drop: f64,
    /// With --iters auto, stop also once the KL fell by at most this fraction over the last
    /// tenth of the run (never more than --auto-kl-drop) while 85 % of the sampled
    /// neighbourhoods stayed: at a million points and more the KL flattens while the
    /// neighbourhoods still reshuffle a little; smaller runs longer.
    #[arg(long, value_name = "F", allow_negative_numbers = true, default_value_t = sgtsne::optim::AutoIters::default().kl_flat)]
    pub auto_kl_flat: f64,
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
    /// Momentum after the early phase [default: 0.8; 0.9 with --iters auto, which
    /// converges in fewer iterations].
    #[arg(long, value_name = "M", allow_negative_numbers = true)]
    pub momentum: Option<f32>,
    /// The coarse step after the early phase [default: 0, off; 3 with --iters auto]: each
    /// point's gradient plus β times the mean gradient of its --coarse-cell of the map, so
    /// that regions which move together move (1 + β) times as fast. A converged map comes
    /// in far fewer iterations (1.3M points: 1800 against 4550); give it with a fixed
    /// --iters to converge further in the same count.
    #[arg(long, value_name = "β", allow_negative_numbers = true)]
    pub coarse_boost: Option<f32>,
    /// The side of --coarse-boost's cells, in embedding units (8 to 40 measured alike).
    #[arg(
        long,
        value_name = "H",
        default_value_t = 20.0,
        allow_negative_numbers = true
    )]
    pub coarse_cell: f32,
    /// Iterations after the early phase before --coarse-boost's step begins [default: 0;
    /// 150 with --iters auto below 2^20 points]: just after the early phase the map expands out of its
    /// clusters, and a coarse step there mixes the edges of neighbouring clusters (a lower
    /// 10-NN accuracy). Raise it if the classes of a converged map look frayed.
    #[arg(long, value_name = "N")]
    pub coarse_delay: Option<usize>,
    /// Learning rate: `auto` = max(n / early exaggeration, 50), or a number.
    #[arg(long, default_value = "auto", allow_negative_numbers = true)]
    pub learning_rate: AutoOr<f32>,
    /// The longest step a point may take in one iteration, in embedding units, or `none`
    /// (openTSNE's max_step_norm): keeps a rare point from flying off the bulk, which
    /// would stretch the repulsion's grid (more nodes, or a coarser grid at its cap).
    #[arg(
        long,
        default_value = "5",
        value_name = "S|none",
        allow_negative_numbers = true
    )]
    pub max_step_norm: NoneOr<f32>,
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
    /// [default: auto; in 3-D auto with h = 0.6 on the GPU (with the near field where
    /// capped), 50 nodes on the CPU].
    #[arg(long, allow_negative_numbers = true)]
    pub grid: Option<GridArg>,
    /// Grid spacing h of `--grid auto`, in embedding units.
    #[arg(long, allow_negative_numbers = true, value_name = "H")]
    pub grid_spacing: Option<f64>,
    /// An adaptive grid whose spacing holds the relative repulsive-force error under E:
    /// h = (E / C)^(1/4), C fitted per dimension from the grid-size sweeps.
    #[arg(long, allow_negative_numbers = true, value_name = "E", conflicts_with_all = ["grid", "grid_spacing"])]
    pub grid_error: Option<f64>,
    /// The most nodes of an adaptive repulsion grid, in all: past them its spacing grows
    /// instead, and with the near field on (--near-field on) the force error holds. Default
    /// 4,194,304 (2048² in 2-D, 160³ in 3-D), or where that is fewer: in 3-D on the GPU 4 a
    /// point (so 63³ for 70k points), and under --iters auto in 1-D and 2-D 2 a point on the
    /// GPU and 4 on the CPU, the near field on in both (a wide, sparse map on a grid of fixed
    /// spacing costs more in transforms than the direct sums that a coarser one needs).
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub grid_max_nodes: Option<usize>,
    /// The FFT repulsion's near field: where the grid is coarser than asked (capped at its
    /// node limit; a fixed grid always) it carries the smooth long-range part of the kernel,
    /// and the pairs within a few grid spacings are summed directly (P3M's split), which
    /// holds the force error near 5e-3 on a coarse grid (Cauchy kernel; one GPU, or the
    /// CPU). `auto`: on in 3-D on the gpu and hybrid backends on one GPU, and with the
    /// node budget of --iters auto (see --grid-max-nodes). It costs time at scale
    /// (3-D: +30 % at 1.3M points, 2.7× at 10M), saves it below (3-D at 70k points: its
    /// node budget with it, 1.3 s against 4.0 s at 160³), and left KL and accuracy unchanged
    /// in the runs measured; `off` for speed at scale.
    #[arg(long, value_enum, default_value_t = NearFieldArg::Auto)]
    pub near_field: NearFieldArg,
    /// Repulsion: `fft` (interpolation on a grid) or `exact` (O(n²), for reference).
    #[arg(long, value_enum, default_value_t = RepulsionArg::Fft)]
    pub repulsion: RepulsionArg,
    /// Where to compute: `auto` (GPU when usable, else CPU), `cpu`, `gpu`, `hybrid` (CPU
    /// attraction and GPU repulsion at the same time).
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// GPUs for `--backend gpu`'s optimisation, spread over them through NCCL (default:
    /// every GPU the host shows from 1M points up, one below; CUDA_VISIBLE_DEVICES chooses
    /// which). The approximate kNN's sweep splits over them too (its refinement over two);
    /// the rest of the search and the affinities run on the first.
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = at_least_one)]
    pub gpus: Option<usize>,
    /// Precision of the FFT repulsion's grids: `f32`, or `f64` as the reference thesis did.
    /// Meant for `--backend hybrid`, where the repulsion is hidden behind the CPU attraction;
    /// on cpu and gpu f64 costs repulsion time.
    #[arg(long, value_enum, default_value_t = PrecisionArg::F32)]
    pub precision: PrecisionArg,
    /// Worker threads for the CPU stages (default: all cores).
    #[arg(long, allow_negative_numbers = true)]
    pub threads: Option<usize>,
    /// Seed for every random choice; equal seeds give equal results on the cpu backend, and
    /// on gpu and hybrid with --deterministic.
    #[arg(long, allow_negative_numbers = true, default_value_t = 0)]
    pub seed: u64,
    /// Repeat gpu and hybrid runs bit for bit: the device sums its forces in fixed point
    /// instead of float atomics, whose order varies (cpu runs always repeat). Without it, two
    /// runs with one seed on one GPU part in their last bits at the first iteration, and the
    /// descent carries the difference on: same picture, points moved, KL within about 1e-3.
    #[arg(long)]
    pub deterministic: bool,
    /// λ of SG-t-SNE's graph rescaling (--graph; with --affinities, asks for the rescaling)
    /// [default: 1].
    #[arg(long, allow_negative_numbers = true)]
    pub lambda: Option<f64>,
    /// No progress bars and no summary on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}
