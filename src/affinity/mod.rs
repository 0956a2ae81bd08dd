//! Affinities P (DESIGN §1.4).
#[derive(Debug, thiserror::Error)]
pub enum AffinityError {
    #[error("perplexity calibration failed at point {point}")]
    PerplexityNotReached { point: usize },
}
