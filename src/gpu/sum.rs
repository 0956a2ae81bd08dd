//! Exact sums on the device (`ExactSum` in `kernels/common.cuh`): the scalar sums of a run
//! (Z, Σ p ln w, the column sums for centring and re-centring, P's normalisation) whose
//! value does not depend on the order their terms are added in, so that a GPU run repeats
//! bit for bit whatever order its blocks and atomics take.
//!
//! A float or double `atomicAdd` of block partials gives a sum whose last bits follow the
//! order the blocks finish in. Instead each term is rounded once to a multiple of 2⁻⁴⁰ and
//! kept as integers (hi = ⌊v·2⁸⌋ and lo = the rest in units of 2⁻⁴⁰), whose sums are exact in
//! any order (a fixed-point accumulator in the manner of the "deterministic atomics" of
//! molecular dynamics codes, e.g. AMBER's SPFP). Totals are exact up to ±2⁵⁵ ≈ 3.6·10¹⁶
//! (Z of about 190M points); a term that is not finite or beyond that range raises a flag
//! and the sum reads as NaN, as a double sum would have become.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use super::GpuError;

/// Device words of one sum (`EXACT_WORDS`): hi, lo and the flag.
pub const WORDS: usize = 3;

/// The value of one sum's [`WORDS`] words, as the device's `exact_value` computes it.
pub fn value(words: &[u64]) -> f64 {
    if words[2] != 0 {
        return f64::NAN;
    }
    words[0] as i64 as f64 / 256.0 + words[1] as f64 * (-40f64).exp2()
}

/// The values of the sums in `sums` (a multiple of [`WORDS`] words), copied to the host
/// after the work queued on `stream`.
pub fn read(stream: &Arc<CudaStream>, sums: &CudaSlice<u64>) -> Result<Vec<f64>, GpuError> {
    let words = stream.clone_dtoh(sums)?;
    Ok(words.chunks_exact(WORDS).map(value).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host's reading of the words: hi in units of 2⁻⁸ as two's complement, lo in units
    /// of 2⁻⁴⁰, the flag as NaN.
    #[test]
    fn words_read_as_the_device_writes_them() {
        // -1.5 = hi ⌊-384⌋ = -384, lo 0; 0.25 + 2⁻⁴⁰ = hi 64, lo 1.
        assert_eq!(value(&[(-384i64) as u64, 0, 0]), -1.5);
        assert_eq!(value(&[64, 1, 0]), 0.25 + (-40f64).exp2());
        // -0.001: hi ⌊-0.256⌋ = -1, lo = 0.744 · 2³² rounded.
        let lo = ((1.0 - 0.256) * 4294967296.0f64).round() as u64;
        assert!((value(&[u64::MAX, lo, 0]) + 0.001).abs() < 1e-12);
        assert!(value(&[0, 0, 1]).is_nan());
    }
}
