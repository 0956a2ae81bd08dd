//! Sparse layouts of P for the attraction SpMV-like product (DESIGN §2.1).
//!
//! The canonical form is CSR ([`crate::affinity::Affinities`]); the CPU converts it once
//! to [`Csb`] (compressed sparse blocks, Buluç et al. 2009), whose β×β blocks keep the
//! gathered coordinates y_j of one block column in cache while a block row is processed.

pub mod csb;
pub mod hyb;

pub use csb::Csb;
pub use hyb::Hyb;

/// Errors of the sparse layouts.
#[derive(Debug, thiserror::Error)]
pub enum SparseError {
    /// A layout invariant does not hold.
    #[error("sparse invariant violated: {what}")]
    Invariant { what: String },
}
