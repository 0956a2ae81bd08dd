//! The values of the command line's options that are not plain numbers or paths: the
//! choices (`ValueEnum`), and the values parsed from text (`FromStr`: `auto` or a number,
//! a method or a file), each mapped onto the library's types by the command that reads it.

use std::path::PathBuf;
use std::str::FromStr;

use clap::ValueEnum;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KlAffinities {
    Knn,
    Exact,
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
pub enum NearFieldArg {
    Auto,
    On,
    Off,
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

impl From<BackendArg> for sgtsne::backend::BackendKind {
    fn from(arg: BackendArg) -> Self {
        use sgtsne::backend::BackendKind;
        match arg {
            BackendArg::Auto => BackendKind::Auto,
            BackendArg::Cpu => BackendKind::Cpu,
            BackendArg::Gpu => BackendKind::Gpu,
            BackendArg::Hybrid => BackendKind::Hybrid,
        }
    }
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

/// The value of a count that must be at least 1 (`--gpus`): 0 is refused here, naming the
/// flag, rather than read further on as one or as the default.
pub fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("expected a whole number of 1 or more, got `{s}`")),
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

impl<T> NoneOr<T> {
    /// The value, `None` for `none`.
    pub fn into_option(self) -> Option<T> {
        match self {
            NoneOr::None => None,
            NoneOr::Value(v) => Some(v),
        }
    }
}
