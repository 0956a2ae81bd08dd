//! A dense point set: n rows of d features, row-major, `f32`.

/// n points in d dimensions, stored row-major (`data[i * d + j]` is feature j of point i).
///
/// # Invariants
/// - `data.len() == n * d`
/// - every value is finite (checked by the readers in [`crate::io`])
#[derive(Clone, Debug, PartialEq)]
pub struct Points {
    /// Number of points (rows).
    pub n: usize,
    /// Number of features (columns).
    pub d: usize,
    /// Row-major values, `n * d` of them.
    pub data: Vec<f32>,
}

impl Points {
    /// Wraps row-major data; `data.len()` must equal `n * d`.
    pub fn new(n: usize, d: usize, data: Vec<f32>) -> Self {
        assert_eq!(data.len(), n * d, "Points::new: data length is not n * d");
        Points { n, d, data }
    }

    /// The features of point `i`.
    #[inline]
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.d..(i + 1) * self.d]
    }
}
