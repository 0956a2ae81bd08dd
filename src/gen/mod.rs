//! `sgtsne gen`: data for scale work, produced where it is used (large inputs do not travel
//! well), seeded and independent of the thread count.
//!
//! - [`mixture`]: a Gaussian mixture with uneven cluster sizes.

pub mod mixture;

pub use mixture::{gaussian_mixture, MixtureParams};
