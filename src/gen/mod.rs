//! `sgtsne gen`: data for scale work, produced where it is used (large inputs do not travel
//! well). Two sources, both seeded and independent of the thread count:
//!
//! - [`mixture`]: a Gaussian mixture with uneven cluster sizes — fast, but easy for t-SNE
//!   (10-NN accuracy 1.0 at any size), so it says little about the quality of an embedding.
//! - [`digits`]: real images at any size, "infinite MNIST" style (Loosli, Canu & Bottou
//!   2007): each row a randomly deformed copy of a source image ([`deform`]: rotation, scale,
//!   shear, shift and a smooth elastic field as in Simard, Steinkraus & Platt 2003, sampled
//!   bilinearly), projected on the source set's principal axes, with the image's label.

pub mod deform;
pub mod digits;
pub mod mixture;

pub use deform::{DeformParams, Deformer};
pub use digits::{DeformedDigits, DigitsParams, ImageSet};
pub use mixture::{gaussian_mixture, MixtureParams};
