//! The two floating-point types a mixture can be fitted in (`--precision f64|f32`).

/// `f64` (the default, and what scikit-learn computes in) or `f32` (half the memory and
/// about twice the GEMM rate; log-likelihood sums are still accumulated in `f64`).
pub trait Real:
    faer::traits::RealField
    + num_traits::Float
    + crate::gpu::linalg::Dense
    + Copy
    + Send
    + Sync
    + std::fmt::Debug
    + 'static
{
    /// The type's name as `--precision` spells it.
    const NAME: &'static str;
    /// `x` rounded to this type.
    fn of(x: f64) -> Self;
    /// The value as `f64` (exact).
    fn f64(self) -> f64;
}

impl Real for f64 {
    const NAME: &'static str = "f64";
    fn of(x: f64) -> Self {
        x
    }
    fn f64(self) -> f64 {
        self
    }
}

impl Real for f32 {
    const NAME: &'static str = "f32";
    fn of(x: f64) -> Self {
        x as f32
    }
    fn f64(self) -> f64 {
        self as f64
    }
}
