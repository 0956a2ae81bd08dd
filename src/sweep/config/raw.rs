//! The configuration file as TOML has it, before validation.

use std::path::PathBuf;

use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    pub(super) name: Option<String>,
    pub(super) dims: usize,
    pub(super) backend: String,
    pub(super) perplexity: Option<f64>,
    pub(super) seed: Option<u64>,
    pub(super) data: RawData,
    pub(super) grid: RawGrid,
    pub(super) optimise: RawOptimise,
    pub(super) measure: Option<RawMeasure>,
    pub(super) output: Option<RawOutput>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawData {
    pub(super) gen: Option<RawGen>,
    pub(super) file: Option<PathBuf>,
    pub(super) n: Vec<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGen {
    pub(super) n: usize,
    pub(super) dim: usize,
    pub(super) clusters: usize,
    pub(super) seed: Option<u64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawSizes {
    List(Vec<usize>),
    Range {
        from: usize,
        to: usize,
        count: usize,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGrid {
    pub(super) fixed: Option<RawSizes>,
    pub(super) spacing: Option<Vec<f64>>,
    pub(super) near_field: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOptimise {
    pub(super) iters: usize,
    pub(super) exaggeration_iters: usize,
    pub(super) sample_every: usize,
    pub(super) trajectory: Option<String>,
    pub(super) reference_spacing: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMeasure {
    pub(super) targets: Option<usize>,
    pub(super) repeats: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOutput {
    pub(super) dir: Option<PathBuf>,
}
