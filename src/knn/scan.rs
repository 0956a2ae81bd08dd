//! Threshold scans of a distance tile into per-point selectors ([`TopK`]).
//!
//! A tile is column-major, `rows × cols`: entry (r, c) at `tile[c * rows + r]` is the
//! squared distance between column point c and row point r. Two scans read it, both with
//! contiguous loads:
//!
//! - [`columns`]: each column is one point's distances to all rows; one scalar threshold.
//! - [`rows`]: each row is one point's distances to all columns; 16 rows at a time, each
//!   with its own threshold, compared against 16 consecutive entries of a column (one
//!   vector), so no transpose is needed.
//!
//! Almost every entry is rejected by one compare; only entries at or below a threshold go
//! to [`TopK::offer`]. With `wide` (and a CPU with AVX2) the compares are explicit AVX2
//! (AVX-512 intrinsics would need Rust 1.89, above the crate's MSRV, and measured no faster
//! here: the scans are bound by reading the tile); otherwise portable loops.

use super::select::TopK;

/// Whether this CPU runs the AVX2 scans (checked once per process).
pub(crate) fn wide_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static AVX2: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AVX2.get_or_init(|| is_x86_feature_detected!("avx2"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Offers column c of `tile` (`rows` entries, row r labelled `row_base + r`) to `tops[c]`.
pub(crate) fn columns(tile: &[f32], rows: usize, row_base: u32, tops: &mut [TopK], wide: bool) {
    for (col, top) in tile.chunks_exact(rows).zip(tops) {
        #[cfg(target_arch = "x86_64")]
        if wide && wide_available() {
            // SAFETY: the CPU supports AVX2 (checked just above).
            unsafe { avx2::column(col, row_base, top) };
            continue;
        }
        let _ = wide;
        column_portable(col, row_base, top);
    }
}

/// Offers row r of `tile` (entries labelled `col_base + c`) to `tops[r]`.
pub(crate) fn rows(tile: &[f32], rows: usize, col_base: u32, tops: &mut [TopK], wide: bool) {
    debug_assert_eq!(tops.len(), rows);
    let groups = rows / 16 * 16;
    #[cfg(target_arch = "x86_64")]
    if wide && wide_available() {
        for r0 in (0..groups).step_by(16) {
            // SAFETY: the CPU supports AVX2 (checked just above).
            unsafe { avx2::rows16(tile, rows, r0, col_base, &mut tops[r0..r0 + 16]) };
        }
        rows_portable(tile, rows, groups, col_base, &mut tops[groups..]);
        return;
    }
    let _ = wide;
    rows_portable(tile, rows, 0, col_base, tops);
}

/// Portable column scan: 16 entries per test, no branch inside a chunk.
#[inline(always)]
fn column_portable(col: &[f32], base: u32, top: &mut TopK) {
    const W: usize = 16;
    let chunks = col.chunks_exact(W);
    let rest = chunks.remainder();
    let tail0 = col.len() - rest.len();
    for (c, chunk) in chunks.enumerate() {
        let thr = top.threshold();
        let mut m = [f32::INFINITY; 4];
        for q in chunk.chunks_exact(4) {
            for l in 0..4 {
                m[l] = if q[l] < m[l] { q[l] } else { m[l] };
            }
        }
        if m[0].min(m[1]).min(m[2].min(m[3])) <= thr {
            let b = base + (c * W) as u32;
            for (j, &v) in chunk.iter().enumerate() {
                top.offer(v, b + j as u32);
            }
        }
    }
    for (j, &v) in rest.iter().enumerate() {
        top.offer(v, base + (tail0 + j) as u32);
    }
}

/// Portable row scan of rows `r_from..rows` (`tops[0]` is row `r_from`), 16 rows a pass.
fn rows_portable(tile: &[f32], rows: usize, r_from: usize, col_base: u32, tops: &mut [TopK]) {
    let cols = tile.len().checked_div(rows).unwrap_or(0);
    let mut r0 = r_from;
    while r0 < rows {
        let g = 16.min(rows - r0);
        let tg = &mut tops[r0 - r_from..r0 - r_from + g];
        let mut thr = [f32::NEG_INFINITY; 16];
        for (t, top) in thr.iter_mut().zip(tg.iter()) {
            *t = top.threshold();
        }
        for c in 0..cols {
            let seg = &tile[c * rows + r0..c * rows + r0 + g];
            let mut hit = false;
            for (v, t) in seg.iter().zip(&thr) {
                hit |= v <= t;
            }
            if hit {
                for (l, &v) in seg.iter().enumerate() {
                    tg[l].offer(v, col_base + c as u32);
                    thr[l] = tg[l].threshold();
                }
            }
        }
        r0 += g;
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{column_portable, TopK};
    use std::arch::x86_64::*;

    /// 8-lane `a <= b` as a bit mask.
    ///
    /// # Safety
    /// The CPU must support AVX (it is called only from the AVX2 functions below).
    #[inline(always)]
    unsafe fn le_mask(a: __m256, b: __m256) -> u32 {
        _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(a, b)) as u32
    }

    /// Column scan, 32 entries per step: four compares into one mask test.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn column(col: &[f32], base: u32, top: &mut TopK) {
        const W: usize = 32;
        let main = col.len() / W * W;
        let p = col.as_ptr();
        let mut c = 0;
        while c < main {
            let thr = _mm256_set1_ps(top.threshold());
            // SAFETY: c + 32 <= col.len(); unaligned loads.
            let mut mask = unsafe {
                le_mask(_mm256_loadu_ps(p.add(c)), thr)
                    | le_mask(_mm256_loadu_ps(p.add(c + 8)), thr) << 8
                    | le_mask(_mm256_loadu_ps(p.add(c + 16)), thr) << 16
                    | le_mask(_mm256_loadu_ps(p.add(c + 24)), thr) << 24
            };
            while mask != 0 {
                let j = c + mask.trailing_zeros() as usize;
                top.offer(col[j], base + j as u32);
                mask &= mask - 1;
            }
            c += W;
        }
        column_portable(&col[main..], base + main as u32, top);
    }

    /// Row scan of rows `r0..r0 + 16`: two vectors of 8 thresholds against 16 consecutive
    /// entries of each column.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn rows16(
        tile: &[f32],
        rows: usize,
        r0: usize,
        col_base: u32,
        tops: &mut [TopK],
    ) {
        assert!(r0 + 16 <= rows && tops.len() == 16);
        let cols = tile.len() / rows;
        let mut thr = [0f32; 16];
        for (t, top) in thr.iter_mut().zip(tops.iter()) {
            *t = top.threshold();
        }
        let p = tile.as_ptr();
        // SAFETY (all loads below): thr has 16 entries; c * rows + r0 + 16 <= tile.len().
        let (mut t0, mut t1) = unsafe {
            (
                _mm256_loadu_ps(thr.as_ptr()),
                _mm256_loadu_ps(thr.as_ptr().add(8)),
            )
        };
        for c in 0..cols {
            let o = c * rows + r0;
            let mut mask = unsafe {
                le_mask(_mm256_loadu_ps(p.add(o)), t0)
                    | le_mask(_mm256_loadu_ps(p.add(o + 8)), t1) << 8
            };
            if mask != 0 {
                while mask != 0 {
                    let l = mask.trailing_zeros() as usize;
                    tops[l].offer(tile[o + l], col_base + c as u32);
                    thr[l] = tops[l].threshold();
                    mask &= mask - 1;
                }
                unsafe {
                    t0 = _mm256_loadu_ps(thr.as_ptr());
                    t1 = _mm256_loadu_ps(thr.as_ptr().add(8));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    #[test]
    fn wide_and_portable_scans_agree_with_a_plain_loop() {
        let mut rng = StdRng::seed_from_u64(4);
        for (rows, cols, keep) in [(37usize, 5usize, 3usize), (512, 300, 20), (130, 70, 90)] {
            let tile: Vec<f32> = (0..rows * cols)
                .map(|_| rng.random_range(0..1000) as f32)
                .collect();
            for wide in [false, true] {
                let mut tc: Vec<TopK> = (0..cols).map(|_| TopK::new(keep, 2 * keep + 1)).collect();
                columns(&tile, rows, 100, &mut tc, wide);
                let mut tr: Vec<TopK> = (0..rows).map(|_| TopK::new(keep, 2 * keep + 1)).collect();
                super::rows(&tile, rows, 7, &mut tr, wide);
                for (c, t) in tc.iter_mut().enumerate() {
                    let mut want: Vec<(f32, u32)> = (0..rows)
                        .map(|r| (tile[c * rows + r], 100 + r as u32))
                        .collect();
                    want.sort_by(super::super::by_dist_then_index);
                    want.truncate(keep);
                    assert_eq!(t.sorted(), &want[..], "column {c} wide={wide}");
                }
                for (r, t) in tr.iter_mut().enumerate() {
                    let mut want: Vec<(f32, u32)> = (0..cols)
                        .map(|c| (tile[c * rows + r], 7 + c as u32))
                        .collect();
                    want.sort_by(super::super::by_dist_then_index);
                    want.truncate(keep);
                    assert_eq!(t.sorted(), &want[..], "row {r} wide={wide}");
                }
            }
        }
    }
}
