//! [`ViewError`]: what makes an embedding or its columns unfit for a map.

/// Errors of building a map; each says what is wrong and where (rows and columns 1-based),
/// since the same message reaches the command line and Python.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ViewError {
    /// The embedding has no points.
    #[error("the embedding has no points")]
    Empty,
    /// A map shows 1, 2 or 3 coordinates per point.
    #[error("the embedding has {dims} columns; a map shows 1, 2 or 3")]
    Dims { dims: usize },
    /// The flat coordinates are not a whole number of rows.
    #[error("the embedding's {len} values are not a whole number of rows of {dims}")]
    Ragged { len: usize, dims: usize },
    /// A coordinate is NaN or infinite.
    #[error("the embedding's value at row {row}, column {col} (1-based) is {value}, not finite")]
    NotFinite { row: usize, col: usize, value: f32 },
    /// A label or metadata column does not have one value per point.
    #[error("column `{name}` has {len} values for {n} points")]
    Length { name: String, len: usize, n: usize },
    /// Two columns share a name, so the page could not tell them apart.
    #[error("two columns are named `{name}`")]
    DuplicateName { name: String },
    /// The map's server could not listen.
    #[error("cannot serve the map on {addr}: {reason}")]
    Serve { addr: String, reason: String },
}
