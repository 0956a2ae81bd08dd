//! Sparse layouts of P.
#[derive(Debug, thiserror::Error)]
pub enum SparseError {
    #[error("sparse invariant violated: {what}")]
    Invariant { what: String },
}
