//! The model file of `embed --save-model`: what placing new points into a map needs.
//!
//! Layout: the 8-byte magic [`MAGIC`], the format version [`VERSION`] (u32, little-endian),
//! then the [`Model`] encoded by bincode 2 (serde, standard configuration). The magic tells
//! a model from any other file before a byte of it is decoded, and the version lets a later
//! layout refuse an older file by name instead of misreading it. Every shape is checked
//! after decoding ([`Model::check`]), so a file that decodes but does not add up is refused
//! as firmly as a truncated one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::embed::{Embedding, Reference};
use crate::io::{self, IoError};
use crate::prep::{Metric, Pca};
use crate::{Error, Points, Result};

/// The first bytes of every model file.
pub const MAGIC: &[u8; 8] = b"SGTSNEMD";

/// The layout version this build writes and reads.
pub const VERSION: u32 = 1;

/// Bytes before the encoded model: the magic and the version.
const HEADER: usize = MAGIC.len() + 4;

/// Why a model file cannot be used; each message names the file.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// Missing, unreadable or unwritable.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The file does not start with [`MAGIC`].
    #[error("{}: not an sgtsne model (no `SGTSNEMD` header); make one with `sgtsne embed ... --save-model`", path.display())]
    NotAModel { path: PathBuf },
    /// Written by a build of another layout version.
    #[error("{}: model format version {found}, but this sgtsne reads version {expected}; save the model again with this version", path.display())]
    Version {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    /// Truncated, or its contents do not decode or do not add up.
    #[error("{}: damaged model: {reason}", path.display())]
    Damaged { path: PathBuf, reason: String },
}

/// A map new points can be placed into.
///
/// # Invariants (checked on load)
/// - `points.len() == n · d`, `y.len() == n · dims`, `dims ∈ 1..=3`, `n ≥ 2`
/// - with a PCA: `pca.d == d_in`, `pca.m == d` and its own invariants' lengths; without:
///   `d == d_in`
/// - `perplexity ≥ 1` and `dof > 0`, both finite; every value finite
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Model {
    /// The metric whose row transform the reference points had (`--metric`).
    pub metric: Metric,
    /// Features of the input points (new points must have as many).
    pub d_in: usize,
    /// The PCA that reduced them, if one ran.
    pub pca: Option<Pca>,
    /// Reference points.
    pub n: usize,
    /// Features of the reference points as stored (after PCA).
    pub d: usize,
    /// The reference points after the metric's transform and PCA, n × d, input order (the
    /// caller's buffer itself when the run read it in place and changed nothing).
    pub points: crate::points::PointData,
    /// Embedding dimension.
    pub dims: usize,
    /// The reference embedding, n × dims, input order.
    pub y: Vec<f32>,
    /// The reference run's perplexity (the largest, for multiscale).
    pub perplexity: f64,
    /// The kernel's degrees of freedom.
    pub dof: f64,
}

impl Model {
    /// The model of a finished run; `Error::Param` when the run did not keep its reference
    /// ([`crate::embed::EmbedParams::keep_reference`]).
    pub fn of(emb: &Embedding) -> Result<Model> {
        let Some(Reference { points, pca, d_in }) = &emb.reference else {
            return Err(Error::param(
                "save-model",
                "the run kept no reference points (set `keep_reference`)",
            ));
        };
        let params = &emb.report.params;
        Ok(Model {
            metric: params.metric,
            d_in: *d_in,
            pca: pca.clone(),
            n: points.n,
            d: points.d,
            points: points.data.clone(),
            dims: emb.dims,
            y: emb.y.clone(),
            perplexity: params.perplexity,
            dof: params.kernel.dof,
        })
    }

    /// The reference points as [`Points`].
    pub fn reference(&self) -> Points {
        Points {
            n: self.n,
            d: self.d,
            data: self.points.clone(),
        }
    }

    /// Writes the model to `path` atomically (nothing is left behind on failure).
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        let bytes = self.encode(path)?;
        io::write_atomic(path, |w| w.write_all(&bytes))?;
        Ok(())
    }

    /// The model's bytes as [`Model::save`] writes them and [`Model::decode`] reads them
    /// (the Python package pickles a fitted map with them); `path` names them in errors.
    pub fn encode(&self, path: &Path) -> Result<Vec<u8>, ModelError> {
        let body =
            bincode::serde::encode_to_vec(self, bincode::config::standard()).map_err(|e| {
                ModelError::Damaged {
                    path: path.into(),
                    reason: format!("cannot encode: {e}"),
                }
            })?;
        let mut bytes = Vec::with_capacity(MAGIC.len() + 4 + body.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        bytes.extend_from_slice(&body);
        Ok(bytes)
    }

    /// Reads and checks the model at `path`.
    pub fn load(path: &Path) -> Result<Model, ModelError> {
        let bytes = std::fs::read(path).map_err(|e| IoError::read(path, e))?;
        Model::decode(&bytes, path)
    }

    /// [`Model::load`] from bytes already read; `path` names them in errors.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<Model, ModelError> {
        let damaged = |reason: String| ModelError::Damaged {
            path: path.into(),
            reason,
        };
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(ModelError::NotAModel { path: path.into() });
        }
        if bytes.len() < HEADER {
            return Err(damaged(format!(
                "truncated: {} bytes, the header alone has {HEADER}",
                bytes.len()
            )));
        }
        let found = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
        if found != VERSION {
            return Err(ModelError::Version {
                path: path.into(),
                found,
                expected: VERSION,
            });
        }
        let (model, used): (Model, usize) =
            bincode::serde::decode_from_slice(&bytes[HEADER..], bincode::config::standard())
                .map_err(|e| match e {
                    bincode::error::DecodeError::UnexpectedEnd { .. } => {
                        damaged("truncated: it ends before the model does".into())
                    }
                    e => damaged(format!("cannot decode: {e}")),
                })?;
        if HEADER + used != bytes.len() {
            return Err(damaged(format!(
                "{} bytes follow the model",
                bytes.len() - HEADER - used
            )));
        }
        model.check().map_err(damaged)?;
        Ok(model)
    }

    /// The invariants listed on [`Model`], as a reason when one fails.
    fn check(&self) -> std::result::Result<(), String> {
        // Checked products: the counts are the file's, and a product that wrapped could
        // match a short array.
        let lengths = [
            (
                "reference points",
                self.points.len(),
                self.n.checked_mul(self.d),
            ),
            ("embedding", self.y.len(), self.n.checked_mul(self.dims)),
        ];
        for (what, len, want) in lengths {
            if want != Some(len) {
                let want = want.map_or("more than memory holds".into(), |w| w.to_string());
                return Err(format!("the {what} hold {len} values, expected {want}"));
            }
        }
        match &self.pca {
            Some(b)
                if b.d != self.d_in
                    || b.m != self.d
                    || b.mean.len() != b.d
                    || b.m.checked_mul(b.d) != Some(b.axes.len())
                    || b.variances.len() != b.m =>
            {
                return Err(format!(
                    "the PCA basis is {} × {} with {} means, expected {} × {}",
                    b.m,
                    b.d,
                    b.mean.len(),
                    self.d,
                    self.d_in
                ))
            }
            None if self.d != self.d_in => {
                return Err(format!(
                    "{} input features but {} stored, and no PCA basis",
                    self.d_in, self.d
                ))
            }
            _ => {}
        }
        if !(1..=3).contains(&self.dims) || self.n < 2 || self.d == 0 {
            return Err(format!(
                "{} points of {} features in {} dimensions",
                self.n, self.d, self.dims
            ));
        }
        let finite = self.perplexity.is_finite() && self.dof.is_finite();
        if !(finite && self.perplexity >= 1.0 && self.dof > 0.0) {
            return Err(format!(
                "perplexity {} and dof {}",
                self.perplexity, self.dof
            ));
        }
        let basis = self.pca.iter().flat_map(|b| b.mean.iter().chain(&b.axes));
        if self.points.iter().chain(&self.y).any(|v| !v.is_finite())
            || basis.copied().any(|v: f64| !v.is_finite())
        {
            return Err("non-finite values".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::{embed, EmbedParams, Input};
    use crate::points::SharedValues;
    use std::sync::Arc;

    /// A caller's buffer read in place is the map's reference itself when neither a PCA
    /// nor the metric changed it (no copy of the points is kept), and a copy otherwise.
    #[test]
    fn a_callers_points_are_the_reference_without_a_copy() {
        let (n, d) = (300, 5);
        let values: Vec<f32> = (0..n * d)
            .map(|i| ((i * 7919) % 1013) as f32 / 101.3 + (i / d % 3) as f32 * 20.0)
            .collect();
        let original = values.clone();
        let caller: Arc<Vec<f32>> = Arc::new(values);
        let run = |metric| {
            let params = EmbedParams {
                backend: crate::backend::BackendKind::Cpu,
                keep_reference: true,
                metric,
                perplexity: 10.0,
                optim: crate::optim::OptimParams {
                    iters: 20,
                    ..Default::default()
                },
                ..EmbedParams::default()
            };
            let points = Points::shared(n, d, caller.clone() as SharedValues);
            let emb = embed(
                Input::Points(points),
                "x",
                None,
                &params,
                &crate::progress::Silent,
            )
            .unwrap();
            Model::of(&emb).unwrap()
        };
        let plain = run(crate::prep::Metric::Euclidean);
        assert!(plain.points.is_shared());
        assert_eq!(plain.points.as_ptr(), caller.as_ptr());
        let cosine = run(crate::prep::Metric::Cosine);
        assert!(!cosine.points.is_shared());
        assert_eq!(*caller, original, "the caller's values untouched");
    }
}
