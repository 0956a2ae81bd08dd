//! The sweep's configuration, a TOML file (`configs/sweep-*.toml`): what to embed, at which
//! sizes, over which grids, and how to measure. Every error names the file and the key.
//!
//! ```toml
//! name = "sweep-2d"          # output file stem (default: the config's file stem)
//! dims = 2                   # 1, 2 or 3
//! backend = "gpu"            # cpu, gpu or auto
//! perplexity = 30            # default 30
//! seed = 0                   # subsamples, targets, initialisation (default 0)
//!
//! [data]
//! gen = { n = 1300000, dim = 50, clusters = 40, seed = 0 }   # or: file = "points.npy"
//! n = [50000, 100000, 200000, 400000, 800000, 1300000]      # subsample sizes
//!
//! [grid]
//! fixed = [64, 128, 256, 512, 1024, 2048]     # or { from = 64, to = 2048, count = 6 }
//! spacing = [1.0, 0.5, 0.35, 0.25]             # adaptive grids (--grid auto) with these h
//! near_field = false         # every grid with the near field (--near-field on)
//!
//! [optimise]
//! iters = 1000
//! exaggeration_iters = 250
//! sample_every = 150         # measure at 400, 550, …, 1000
//! trajectory = "per-grid"    # or "shared", with reference_spacing = 0.25
//!
//! [measure]
//! targets = 2000             # target points of the exact reference
//! repeats = 3                # timed repulsions per sample (medians)
//!
//! [output]
//! dir = "benches/sweeps"     # relative to the working directory; --out overrides it
//! ```

use std::path::{Path, PathBuf};

mod raw;

use raw::{RawConfig, RawMeasure, RawSizes};

use crate::backend::BackendKind;
use crate::gen::MixtureParams;
use crate::repulse::grid::max_nodes_per_axis;
use crate::repulse::{fft_friendly, GridSpec};

/// A configuration that cannot be used, with the file and key to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read the sweep configuration {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Not TOML, an unknown key, a missing key or a value of the wrong type (the message
    /// has the line, the column and the key).
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// A value out of its range.
    #[error("{path}: `{key}` {reason}")]
    Invalid {
        path: PathBuf,
        key: String,
        reason: String,
    },
}

/// Where the points come from.
#[derive(Clone, Debug)]
pub enum DataSource {
    /// `sgtsne gen`'s Gaussian mixture, made in memory.
    Gen(MixtureParams),
    /// A points file (any format `sgtsne embed` reads).
    File(PathBuf),
}

/// How the embeddings the grids are measured on are made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Trajectory {
    /// One optimisation per (n, grid), with that grid, measured with that grid: what a user
    /// of the grid would get.
    PerGrid,
    /// One optimisation per n with the `reference` grid; every grid is measured on the same
    /// embeddings (cheaper by the number of grids, and the grids are compared on equal Y).
    Shared { reference: GridSpec },
}

/// A validated sweep configuration.
#[derive(Clone, Debug)]
pub struct SweepConfig {
    /// Stem of the output files.
    pub name: String,
    /// Embedding dimension.
    pub dims: usize,
    /// Where to run (`auto`, `cpu` or `gpu`).
    pub backend: BackendKind,
    /// Perplexity of P.
    pub perplexity: f64,
    /// Seed of the subsamples, the targets and the initialisation.
    pub seed: u64,
    /// The points.
    pub data: DataSource,
    /// Subsample sizes, ascending.
    pub sizes: Vec<usize>,
    /// Grids, fixed ones first (ascending), then adaptive ones (by decreasing h).
    pub grids: Vec<GridSpec>,
    /// Every grid (and the trajectory's) with the near field ([`crate::repulse::near`]).
    pub near_field: bool,
    /// Iterations of each optimisation.
    pub iters: usize,
    /// Iterations of early exaggeration.
    pub exaggeration_iters: usize,
    /// Measure every this many iterations after early exaggeration.
    pub sample_every: usize,
    /// One optimisation per grid or one shared.
    pub trajectory: Trajectory,
    /// Target points of the exact reference (at most n).
    pub targets: usize,
    /// Timed repulsions per sample.
    pub repeats: usize,
    /// Output directory, if the file names one.
    pub out_dir: Option<PathBuf>,
}

impl SweepConfig {
    /// Reads and validates the TOML file at `path`.
    pub fn from_file(path: &Path) -> Result<SweepConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.into(),
            source,
        })?;
        let stem = path
            .file_stem()
            .map_or("sweep".into(), |s| s.to_string_lossy().into_owned());
        SweepConfig::parse(&text, path, &stem)
    }

    /// Parses and validates `text`; `path` names it in errors, `stem` is the default name.
    /// One function, long: the checks go field by field in the file's order, each with its
    /// own message, and read best as one list.
    pub fn parse(text: &str, path: &Path, stem: &str) -> Result<SweepConfig, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.into(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let bad = |key: &str, reason: String| ConfigError::Invalid {
            path: path.into(),
            key: key.into(),
            reason,
        };
        let dims = raw.dims;
        if !(1..=3).contains(&dims) {
            return Err(bad("dims", format!("is {dims}; need 1, 2 or 3")));
        }
        let backend = match raw.backend.as_str() {
            "auto" => BackendKind::Auto,
            "cpu" => BackendKind::Cpu,
            "gpu" => BackendKind::Gpu,
            other => {
                return Err(bad(
                    "backend",
                    format!("is \"{other}\"; need \"cpu\", \"gpu\" or \"auto\""),
                ))
            }
        };
        let perplexity = raw.perplexity.unwrap_or(30.0);
        if !(perplexity >= 1.0 && perplexity.is_finite()) {
            return Err(bad("perplexity", format!("is {perplexity}; need ≥ 1")));
        }
        let k = (3.0 * perplexity).ceil() as usize;

        let data = match (raw.data.gen, raw.data.file) {
            (Some(g), None) => {
                if g.n == 0 || g.dim == 0 || g.clusters == 0 || g.clusters > g.n {
                    return Err(bad(
                        "data.gen",
                        format!(
                            "needs n, dim, clusters > 0 and clusters ≤ n (got n = {}, dim = {}, \
                             clusters = {})",
                            g.n, g.dim, g.clusters
                        ),
                    ));
                }
                DataSource::Gen(MixtureParams {
                    n: g.n,
                    dim: g.dim,
                    clusters: g.clusters,
                    seed: g.seed.unwrap_or(0),
                })
            }
            (None, Some(f)) => DataSource::File(f),
            _ => return Err(bad("data", "needs exactly one of `gen` and `file`".into())),
        };
        let mut sizes = raw.data.n;
        sizes.sort_unstable();
        sizes.dedup();
        match sizes.first() {
            None => return Err(bad("data.n", "is empty; list the subsample sizes".into())),
            Some(&small) if small <= k => {
                return Err(bad(
                    "data.n",
                    format!("has {small}; perplexity {perplexity} needs more than {k} points"),
                ))
            }
            _ => {}
        }
        if let DataSource::Gen(g) = &data {
            let big = *sizes.last().expect("not empty");
            if big > g.n {
                return Err(bad(
                    "data.n",
                    format!("has {big}, more than data.gen's {} points", g.n),
                ));
            }
        }

        let cap = max_nodes_per_axis(dims);
        let fixed = match raw.grid.fixed {
            None => Vec::new(),
            Some(RawSizes::List(v)) => v,
            Some(RawSizes::Range { from, to, count }) => {
                // Checked before the sizes are listed: `count` sizes them, and more than the
                // range holds would only repeat.
                if from < 1 || to < from || to > cap || count < 1 || count > to - from + 1 {
                    return Err(bad(
                        "grid.fixed",
                        format!(
                            "range needs 1 ≤ from ≤ to ≤ {cap} and 1 ≤ count ≤ to − from + 1 \
                             (got {from}, {to}, {count})"
                        ),
                    ));
                }
                geometric(from, to, count)
            }
        };
        let mut fixed = fixed;
        fixed.sort_unstable();
        fixed.dedup();
        let mut grids: Vec<GridSpec> = Vec::new();
        for &p in &fixed {
            let spec = GridSpec::Fixed(p);
            if !(MIN_FIXED..=cap).contains(&p) {
                return Err(bad(
                    "grid.fixed",
                    format!("has {p}; need {MIN_FIXED} ..= {cap} nodes per axis in {dims}-D"),
                ));
            }
            grids.push(spec);
        }
        let near_field = raw.grid.near_field.unwrap_or(false);
        let mut spacing = raw.grid.spacing.unwrap_or_default();
        if let Some(h) = spacing.iter().find(|h| !(h.is_finite() && **h > 0.0)) {
            return Err(bad("grid.spacing", format!("has {h}; need h > 0")));
        }
        spacing.sort_by(|a, b| b.total_cmp(a));
        spacing.dedup();
        grids.extend(spacing.iter().map(|&h| GridSpec::Auto { h }));
        if grids.is_empty() {
            return Err(bad(
                "grid",
                "names no grid: give `fixed`, `spacing` or both".into(),
            ));
        }

        let o = raw.optimise;
        if o.iters == 0 {
            return Err(bad("optimise.iters", "is 0; need at least 1".into()));
        }
        if o.exaggeration_iters > o.iters {
            return Err(bad(
                "optimise.exaggeration_iters",
                format!(
                    "is {}, more than the {} iterations",
                    o.exaggeration_iters, o.iters
                ),
            ));
        }
        if o.sample_every == 0 || o.exaggeration_iters + o.sample_every > o.iters {
            return Err(bad(
                "optimise.sample_every",
                format!(
                    "is {}; need ≥ 1 and exaggeration_iters + sample_every ≤ iters ({} + {} > {} \
                     leaves nothing to measure)",
                    o.sample_every, o.exaggeration_iters, o.sample_every, o.iters
                ),
            ));
        }
        let samples = (o.iters - o.exaggeration_iters) / o.sample_every;
        if samples > MAX_SAMPLES {
            return Err(bad(
                "optimise.sample_every",
                format!(
                    "measures {samples} times ({} iterations after {}, every {}); at most \
                     {MAX_SAMPLES}",
                    o.iters - o.exaggeration_iters,
                    o.exaggeration_iters,
                    o.sample_every
                ),
            ));
        }
        let trajectory = match (
            o.trajectory.as_deref().unwrap_or("per-grid"),
            o.reference_spacing,
        ) {
            ("per-grid", None) => Trajectory::PerGrid,
            ("per-grid", Some(_)) => {
                return Err(bad(
                    "optimise.reference_spacing",
                    "applies to trajectory = \"shared\" only".into(),
                ))
            }
            ("shared", h) => {
                let h = h.unwrap_or(REFERENCE_SPACING);
                if !(h.is_finite() && h > 0.0) {
                    return Err(bad(
                        "optimise.reference_spacing",
                        format!("is {h}; need h > 0"),
                    ));
                }
                Trajectory::Shared {
                    reference: GridSpec::Auto { h },
                }
            }
            (other, _) => {
                return Err(bad(
                    "optimise.trajectory",
                    format!("is \"{other}\"; need \"per-grid\" or \"shared\""),
                ))
            }
        };

        let m = raw.measure.unwrap_or(RawMeasure {
            targets: None,
            repeats: None,
        });
        let targets = m.targets.unwrap_or(DEFAULT_TARGETS);
        if targets == 0 {
            return Err(bad("measure.targets", "is 0; need at least 1".into()));
        }
        let repeats = m.repeats.unwrap_or(DEFAULT_REPEATS);
        if repeats == 0 {
            return Err(bad("measure.repeats", "is 0; need at least 1".into()));
        }
        let name = raw.name.unwrap_or_else(|| stem.to_string());
        if name.is_empty() || name.contains(['/', '\\']) {
            return Err(bad("name", format!("is \"{name}\"; need a file stem")));
        }
        Ok(SweepConfig {
            name,
            dims,
            backend,
            perplexity,
            seed: raw.seed.unwrap_or(0),
            data,
            sizes,
            grids,
            near_field,
            iters: o.iters,
            exaggeration_iters: o.exaggeration_iters,
            sample_every: o.sample_every,
            trajectory,
            targets,
            repeats,
            out_dir: raw.output.and_then(|o| o.dir),
        })
    }

    /// The iterations after which the grids are measured.
    pub fn sample_iterations(&self) -> Vec<usize> {
        (self.exaggeration_iters + self.sample_every..=self.iters)
            .step_by(self.sample_every)
            .collect()
    }
}

/// Most measurements along one optimisation: each measures every grid, so more is a slip of
/// the keyboard (an `iters` with extra digits), and the list of sample iterations would be
/// sized by it.
const MAX_SAMPLES: usize = 1000;
/// Fewest nodes per axis of a swept fixed grid (as `sgtsne embed --grid N`).
const MIN_FIXED: usize = 8;
/// The shared trajectory's spacing when the file names none: fine enough (error ≈ 4e-4 in
/// 2-D) that the embeddings are those of an accurate optimisation.
const REFERENCE_SPACING: f64 = 0.25;
/// Target points when the file names none.
const DEFAULT_TARGETS: usize = 1000;
/// Timed repulsions per sample when the file names none.
const DEFAULT_REPEATS: usize = 3;

/// `count` sizes from `from` to `to` in geometric progression, each rounded up to an
/// FFT-friendly size (2^a3^b5^c7^d), duplicates dropped.
fn geometric(from: usize, to: usize, count: usize) -> Vec<usize> {
    if count == 1 {
        return vec![fft_friendly(from)];
    }
    let ratio = (to as f64 / from as f64).powf(1.0 / (count - 1) as f64);
    let mut v: Vec<usize> = (0..count)
        .map(|k| fft_friendly((from as f64 * ratio.powi(k as i32)).round() as usize))
        .collect();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<SweepConfig, ConfigError> {
        SweepConfig::parse(text, Path::new("s.toml"), "s")
    }

    const BASE: &str = r#"
dims = 2
backend = "cpu"
[data]
gen = { n = 5000, dim = 10, clusters = 4 }
n = [2000, 1000]
[grid]
fixed = { from = 30, to = 240, count = 4 }
spacing = [0.25, 0.5]
[optimise]
iters = 400
exaggeration_iters = 100
sample_every = 150
"#;

    #[test]
    fn parses_ranges_defaults_and_samples() {
        let c = parse(BASE).unwrap();
        assert_eq!(c.name, "s");
        assert_eq!(c.sizes, vec![1000, 2000]);
        assert_eq!(
            c.grids,
            vec![
                GridSpec::Fixed(30),
                GridSpec::Fixed(60),
                GridSpec::Fixed(120),
                GridSpec::Fixed(240),
                GridSpec::Auto { h: 0.5 },
                GridSpec::Auto { h: 0.25 },
            ]
        );
        assert_eq!(c.sample_iterations(), vec![250, 400]);
        assert_eq!(c.trajectory, Trajectory::PerGrid);
        assert_eq!((c.targets, c.repeats, c.perplexity), (1000, 3, 30.0));
        let shared = BASE.replace(
            "sample_every = 150",
            "sample_every = 150\ntrajectory = \"shared\"",
        );
        assert_eq!(
            parse(&shared).unwrap().trajectory,
            Trajectory::Shared {
                reference: GridSpec::Auto { h: 0.25 }
            }
        );
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            ("dims = 2", "dims = 4", "`dims`"),
            ("backend = \"cpu\"", "backend = \"tpu\"", "`backend`"),
            ("n = [2000, 1000]", "n = [2000, 9000]", "`data.n`"),
            ("n = [2000, 1000]", "n = [50]", "`data.n`"),
            (
                "spacing = [0.25, 0.5]",
                "spacing = [0.25, -1.0]",
                "`grid.spacing`",
            ),
            ("from = 30", "from = 3", "`grid.fixed`"),
            (
                "exaggeration_iters = 100",
                "exaggeration_iters = 500",
                "`optimise.exaggeration_iters`",
            ),
            (
                "sample_every = 150",
                "sample_every = 0",
                "`optimise.sample_every`",
            ),
            (
                "sample_every = 150",
                "sample_every = 150\ntrajectory = \"x\"",
                "`optimise.trajectory`",
            ),
            (
                "sample_every = 150",
                "sample_every = 150\nreference_spacing = 0.3",
                "`optimise.reference_spacing`",
            ),
            (
                "n = [2000, 1000]",
                "n = [2000, 1000]\nfile = \"a.npy\"",
                "`data`",
            ),
            ("iters = 400", "iters = \"many\"", "iters"),
            ("dims = 2", "dims = 2\ncolour = 1", "colour"),
        ];
        for (from, to, key) in cases {
            let text = BASE.replace(from, to);
            assert_ne!(text, BASE, "{from}");
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.starts_with("s.toml: ") && e.contains(key), "{key}: {e}");
        }
    }

    /// Every configuration shipped in `configs/` parses.
    #[test]
    fn shipped_configs_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let c = SweepConfig::from_file(&path).unwrap();
                assert!(!c.grids.is_empty() && !c.sample_iterations().is_empty());
                seen += 1;
            }
        }
        assert!(seen >= 4, "{seen} configs");
    }
}
