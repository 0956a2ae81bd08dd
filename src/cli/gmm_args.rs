//! The arguments of `sgtsne gmm`.

use std::path::PathBuf;
use std::str::FromStr;

use clap::{Args, ValueEnum};

use super::arg_values::{AutoOr, NoneOr};

#[derive(Debug, Args)]
pub struct GmmArgs {
    /// Samples (.npy, .csv, .tsv, .fvecs, or an .h5ad, see --use-rep), or an embedding.
    pub input: PathBuf,
    /// Components, or `auto`: the K of lowest BIC in --k-range.
    #[arg(short, long, value_name = "K|auto")]
    pub k: AutoOr<usize>,
    /// The K tried by `-k auto`, inclusive: LOW..HIGH.
    #[arg(long, default_value = "2..30", value_name = "LOW..HIGH")]
    pub k_range: KRange,
    /// Write each sample's component (0-based) as a 1-D .npy of uint32.
    #[arg(short, long, value_name = "LABELS.npy")]
    pub output: PathBuf,
    #[command(flatten)]
    pub fit: FitArgs,
    /// Reduce to this many principal components first when the input has more (as
    /// `embed --pca`); `none` (the default) fits the features as they are.
    #[arg(long, allow_negative_numbers = true, default_value = "none")]
    pub pca: NoneOr<usize>,
    /// The matrix of an .h5ad input: `X` or an obsm key [default: X_pca when present, else X].
    #[arg(long, value_name = "KEY")]
    pub use_rep: Option<String>,
    /// Known labels of the samples (.npy, .csv, or `obs:COLUMN` of an .h5ad input): the
    /// summary and the report give the clusters' adjusted Rand index against them.
    #[arg(long, value_name = "LABELS|obs:COLUMN")]
    pub labels: Option<PathBuf>,
    /// Write the responsibilities p(component | sample), n × K, as .npy (in --precision).
    #[arg(long, value_name = "P.npy")]
    pub proba: Option<PathBuf>,
    /// Write the model: .json (weights, means, covariances as scikit-learn's
    /// `GaussianMixture` holds them, the initial model and the log-likelihood of every
    /// iteration) or .npz (the same arrays).
    #[arg(long, value_name = "MODEL.json|.npz")]
    pub model: Option<PathBuf>,
    /// With `-k auto`: write every K's BIC, AIC and log-likelihood as CSV [default: beside
    /// -o, `<stem>.bic.csv`].
    #[arg(long, value_name = "OUT.csv")]
    pub bic_csv: Option<PathBuf>,
    /// With `-k auto`: draw BIC and AIC against K [default: beside -o, `<stem>.bic.png`].
    #[arg(long, value_name = "OUT.png")]
    pub bic_plot: Option<PathBuf>,
    /// Where to compute: `gpu` (cuBLAS and cuSOLVER on the first GPU), `cpu` (all cores), or
    /// `auto`: the GPU when one is usable and the samples hold at least 2^20 values (e.g.
    /// 21,000 × 50), else the CPU.
    #[arg(long, value_enum, default_value_t = GmmBackendArg::Auto)]
    pub backend: GmmBackendArg,
    /// Worker threads (default: all cores); the result is the same for any number.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Write a JSON report: the parameters, `mean_log_likelihood` (natural log, per sample,
    /// as scikit-learn's `score`), BIC, cluster sizes, iterations, notes and seconds.
    #[arg(long, value_name = "OUT.json")]
    pub report: Option<PathBuf>,
    /// No progress bar and no summary on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// How the mixture is fitted.
#[derive(Clone, Debug, Args)]
pub struct FitArgs {
    /// The covariances' form: `full` (a d × d matrix per component), `diag` or `spherical`.
    #[arg(long, value_enum, default_value_t = CovarianceArg::Full)]
    pub covariance: CovarianceArg,
    /// The initial responsibilities: `kmeans++` (k-means seeded by k-means++, each sample
    /// wholly in its cluster) or `random`.
    #[arg(long, value_enum, default_value_t = GmmInitArg::KmeansPlusPlus)]
    pub init: GmmInitArg,
    /// EM iterations at most.
    #[arg(long, allow_negative_numbers = true, default_value_t = 100)]
    pub iters: usize,
    /// Stop when the mean log-likelihood per sample changes by less than this.
    #[arg(long, allow_negative_numbers = true, default_value_t = 1e-3)]
    pub tol: f64,
    /// Fits from seeds S, S+1, …; the highest log-likelihood is kept.
    #[arg(long, allow_negative_numbers = true, default_value_t = 1)]
    pub restarts: usize,
    /// Added to each covariance's diagonal (scikit-learn's reg_covar).
    #[arg(long, allow_negative_numbers = true, default_value_t = 1e-6)]
    pub reg: f64,
    /// `f64` (as scikit-learn) or `f32` (half the memory, about twice as fast).
    #[arg(long, value_enum, default_value_t = PrecisionArg::F64)]
    pub precision: PrecisionArg,
    /// Seed of the initialisation.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum CovarianceArg {
    Full,
    Diag,
    Spherical,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum GmmInitArg {
    #[value(name = "kmeans++")]
    KmeansPlusPlus,
    Random,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PrecisionArg {
    F64,
    F32,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum GmmBackendArg {
    Auto,
    Cpu,
    Gpu,
}

/// `LOW..HIGH`, inclusive.
#[derive(Clone, Copy, Debug)]
pub struct KRange {
    pub low: usize,
    pub high: usize,
}

impl FromStr for KRange {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("expected LOW..HIGH with 1 ≤ LOW ≤ HIGH, e.g. 2..30, got `{s}`");
        let (a, b) = s.split_once("..").ok_or_else(bad)?;
        let b = b.strip_prefix('=').unwrap_or(b);
        let (low, high) = (
            a.trim().parse().map_err(|_| bad())?,
            b.trim().parse().map_err(|_| bad())?,
        );
        if low == 0 || low > high {
            return Err(bad());
        }
        Ok(KRange { low, high })
    }
}
