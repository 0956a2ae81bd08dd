//! P and its layouts for the attraction's SpMV-like product (DESIGN §2.1), behind one type,
//! [`P`].
//!
//! The canonical form is CSR ([`crate::affinity::Affinities`]); the CPU converts it once
//! to [`Csb`] (compressed sparse blocks, Buluç et al. 2009), whose β×β blocks keep the
//! gathered coordinates y_j of one block column in cache while a block row is processed;
//! the GPU reads [`HybGpu`] (ELL + COO, Bell & Garland 2009), built on the device by the GPU
//! affinity stage or uploaded from [`Hyb`].

pub mod csb;
pub mod hyb;
mod p;

pub use csb::Csb;
pub use hyb::gpu::{BlockShape, HybGpu};
pub use hyb::Hyb;
pub use p::{Layout, P};

/// Errors of the sparse layouts.
#[derive(Debug, thiserror::Error)]
pub enum SparseError {
    /// A layout invariant does not hold.
    #[error("sparse invariant violated: {what}")]
    Invariant { what: String },
}
