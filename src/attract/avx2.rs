//! The CSB attraction's inner loop in explicit AVX2 + FMA: eight entries of one row per step,
//! their neighbours' coordinates fetched by gathers, one vector division for the eight edge
//! weights. The portable loop issues one scalar division and two dependent loads per entry;
//! on P of 2·10⁸ non-zeros that, not memory, bounds the pass (the attraction scales linearly
//! from 4 to 16 cores on a host that streams 95 GB/s). The compiler does not vectorise the
//! portable loop itself: the gathers stop it.

use std::arch::x86_64::*;

/// Whether this CPU runs [`row`] (AVX2 and FMA; checked once per process).
pub(crate) fn available() -> bool {
    static WIDE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WIDE.get_or_init(|| is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
}

/// Entries per vector step.
pub(crate) const WIDTH: usize = 8;

/// $\sum_e p_e w_e (y_i - y_{c_e})$ over the entries of one row: `cols` their local columns
/// in the block, `values` their p, `yi` the row's point, `y_cols` the block column's points
/// (row-major, `D` per point), `inv_dof` the kernel's 1/α. The last `cols.len() % 8` entries
/// take one masked step: their lanes beyond the row load p = 0 and coordinate 0, so they add
/// exactly 0. (Left to the portable loop, the 3.5 entries a run of a high-dimensional
/// mixture's P ends with on average cost about as much as the rest of the run.)
///
/// # Safety
/// The CPU must support AVX2 and FMA ([`available`]), the row must hold at least 8 entries,
/// and every entry's local column `c` must satisfy `(c + 1) · D ≤ y_cols.len()` (the
/// [`crate::sparse::Csb`] invariant: every block coordinate maps to a point of the block
/// column).
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn row<const D: usize>(
    cols: &[u16],
    values: &[f32],
    yi: &[f32; D],
    y_cols: &[f32],
    inv_dof: f32,
) -> [f32; D] {
    debug_assert!(cols.len() == values.len() && cols.len() >= WIDTH);
    let one = _mm256_set1_ps(1.0);
    let inv = _mm256_set1_ps(inv_dof);
    let yi: [__m256; D] = std::array::from_fn(|a| _mm256_set1_ps(yi[a]));
    let mut acc = [_mm256_setzero_ps(); D];
    let all = _mm256_set1_epi32(-1);
    let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let mut e = 0;
    while e < cols.len() {
        let rest = cols.len() - e;
        // SAFETY: full steps (e + 8 ≤ cols.len() = values.len()) load 8 lanes unaligned. The
        // last, short one loads the row's last 8 columns (the caller passes rows of 8 or more)
        // and moves its `rest` to the first lanes, and loads only its values below `rest` (the
        // others read as 0): each entry keeps the lane it would have in a full step.
        let (col, p, mask) = unsafe {
            if rest >= WIDTH {
                (
                    _mm256_cvtepu16_epi32(_mm_loadu_si128(cols.as_ptr().add(e).cast())),
                    _mm256_loadu_ps(values.as_ptr().add(e)),
                    all,
                )
            } else {
                let last = _mm_loadu_si128(cols.as_ptr().add(cols.len() - WIDTH).cast());
                // (The permutation reads an index's low 3 bits: the lanes at `rest` and
                // beyond take some column of the row, read by no gather.)
                let from = _mm256_add_epi32(lanes, _mm256_set1_epi32((WIDTH - rest) as i32));
                let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(rest as i32), lanes);
                (
                    _mm256_permutevar8x32_epi32(_mm256_cvtepu16_epi32(last), from),
                    _mm256_maskload_ps(values.as_ptr().add(e), mask),
                    mask,
                )
            }
        };
        // SAFETY: as `gather_coordinates` requires: the caller's guarantee on the columns,
        // lanes off `mask` read nothing.
        let yj: [__m256; D] = unsafe { gather_coordinates::<D>(y_cols, col, mask) };
        let mut diff = [_mm256_setzero_ps(); D];
        let mut d2 = _mm256_setzero_ps();
        for a in 0..D {
            diff[a] = _mm256_sub_ps(yi[a], yj[a]);
            d2 = _mm256_fmadd_ps(diff[a], diff[a], d2);
        }
        let w = _mm256_div_ps(one, _mm256_fmadd_ps(d2, inv, one));
        let pw = _mm256_mul_ps(p, w);
        for a in 0..D {
            acc[a] = _mm256_fmadd_ps(pw, diff[a], acc[a]);
        }
        e += WIDTH;
    }
    std::array::from_fn(|a| {
        let mut lanes = [0f32; WIDTH];
        // SAFETY: `lanes` holds 8 floats: an unaligned 8-lane store.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc[a]) };
        lanes.iter().sum()
    })
}

/// The coordinates of the 8 points `col` (lanes where `mask` is set; 0 elsewhere), one
/// vector per axis, lanes in `col`'s order. In 2-D a point's two floats come as one 64-bit
/// element, 8 loads for 8 points where two 32-bit gathers make 16, and are then split into
/// the two axes (the pass 3–7 % faster on 2 cores, `benches/stages.rs`); in 1-D and 3-D one
/// 32-bit gather per axis.
///
/// # Safety
/// AVX2 and FMA ([`available`]); every lane `l` where `mask` is set must satisfy
/// `(col_l + 1) · D ≤ y_cols.len()`, with `col_l < 2¹⁶`.
#[target_feature(enable = "avx2,fma")]
unsafe fn gather_coordinates<const D: usize>(
    y_cols: &[f32],
    col: __m256i,
    mask: __m256i,
) -> [__m256; D] {
    if D == 2 {
        // SAFETY: lane l where `mask` is set reads the 8 bytes at y_cols[2 col_l ..
        // 2 col_l + 2], inside y_cols by the caller's guarantee (scale 8: one point).
        let (lo, hi) = unsafe {
            let base = y_cols.as_ptr().cast::<i64>();
            let zero = _mm256_setzero_si256();
            let (c_lo, c_hi) = (
                _mm256_castsi256_si128(col),
                _mm256_extracti128_si256::<1>(col),
            );
            let (m_lo, m_hi) = (
                _mm256_cvtepi32_epi64(_mm256_castsi256_si128(mask)),
                _mm256_cvtepi32_epi64(_mm256_extracti128_si256::<1>(mask)),
            );
            (
                _mm256_castsi256_ps(_mm256_mask_i32gather_epi64::<8>(zero, base, c_lo, m_lo)),
                _mm256_castsi256_ps(_mm256_mask_i32gather_epi64::<8>(zero, base, c_hi, m_hi)),
            )
        };
        // lo = x0 y0 x1 y1 | x2 y2 x3 y3, hi = x4 y4 x5 y5 | x6 y6 x7 y7: the shuffles give
        // x0 x1 x4 x5 | x2 x3 x6 x7 (and the y's alike), the permutation puts them in order.
        let order = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
        let xs = _mm256_shuffle_ps::<0b10_00_10_00>(lo, hi);
        let ys = _mm256_shuffle_ps::<0b11_01_11_01>(lo, hi);
        let mut out = [_mm256_setzero_ps(); D];
        for (a, o) in out.iter_mut().enumerate() {
            *o = _mm256_permutevar8x32_ps(if a == 0 { xs } else { ys }, order);
        }
        return out;
    }
    let at = _mm256_mullo_epi32(col, _mm256_set1_epi32(D as i32));
    let mut out = [_mm256_setzero_ps(); D];
    for (a, o) in out.iter_mut().enumerate() {
        // SAFETY: lane l, where `mask` is set, reads y_cols[col_l · D + a], within y_cols by
        // the caller's guarantee (a < D); the offsets fit i32 (col < 2¹⁶, D ≤ 3). Lanes off
        // the mask read nothing and give 0.
        *o = unsafe {
            _mm256_mask_i32gather_ps::<4>(
                _mm256_setzero_ps(),
                y_cols.as_ptr().add(a),
                at,
                _mm256_castsi256_ps(mask),
            )
        };
    }
    out
}
