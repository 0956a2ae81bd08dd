//! # sgtsne
//!
//! t-SNE at the million-point scale in the style of SG-t-SNE-Π (Pitsianis, Iliopoulos,
//! Floros, Sun 2019): sparse kNN attraction, FFT-accelerated interpolation for the
//! repulsion, and interchangeable CPU / GPU / hybrid backends.
//!
//! The pipeline, one module per stage:
//!
//! | stage | module | in → out |
//! |---|---|---|
//! | load | [`io`] | file → [`Points`] or a sparse graph |
//! | prepare | [`prep`] | centring, PCA to 50 dims |
//! | kNN | [`knn`] | points → [`knn::Neighbors`] |
//! | affinities | [`affinity`] | neighbours or graph → symmetric P (CSR) |
//! | layout of P | [`sparse`] | CSR → CSB |
//! | attraction | [`attract`] | P, Y → F_attr |
//! | repulsion | [`repulse`] | Y → F_rep, Z |
//! | optimise | [`optim`] | gradient descent with momentum and gains |
//! | orchestration | [`backend`], [`embed`] | the whole run, with a [`report::Report`] |
//! | parameters | [`params`] | every parameter of a run, its default and range check |
//! | new points into a map | [`transform`] | model + new points → their coordinates |
//! | grid-size sweeps | [`sweep`] | (n × grid) → error and time tables, heat maps |
//! | clustering | [`gmm`] | points or an embedding → a Gaussian mixture, labels |
//! | generated data | [`gen`] | seeded Gaussian mixture or deformed real images → [`Points`] + labels |
//!
//! The library never reads argv and never prints: progress goes through
//! [`progress::Progress`], results through return values.

pub mod affinity;
pub mod attract;
pub mod backend;
pub mod csr_points;
pub mod demo;
pub mod embed;
pub mod error;
pub mod gen;
pub mod gmm;
pub mod gpu;
pub mod init;
pub mod io;
pub mod kernel;
pub mod knn;
pub mod optim;
pub mod ordered;
pub mod params;
pub mod points;
pub mod prep;
pub mod progress;
pub mod quality;
pub mod report;
pub mod repulse;
pub mod sparse;
pub mod sweep;
#[cfg(test)]
mod test_data;
pub mod trace;
pub mod transform;
pub mod view;

pub use csr_points::CsrPoints;
pub use error::{Error, Result};
pub use points::Points;
