//! The look of the plot: palette, marker size and opacity by n, axis ranges, text helpers.

use std::ops::Range;

use plotters::style::RGBColor;

/// Longest label name shown in the legend, in characters.
pub(super) const NAME_MAX: usize = 24;

/// matplotlib's tab10 palette.
const TAB10: [u32; 10] = [
    0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22,
    0x17becf,
];
/// matplotlib's tab20 palette.
const TAB20: [u32; 20] = [
    0x1f77b4, 0xaec7e8, 0xff7f0e, 0xffbb78, 0x2ca02c, 0x98df8a, 0xd62728, 0xff9896, 0x9467bd,
    0xc5b0d5, 0x8c564b, 0xc49c94, 0xe377c2, 0xf7b6d2, 0x7f7f7f, 0xc7c7c7, 0xbcbd22, 0xdbdb8d,
    0x17becf, 0x9edae5,
];

/// The colour of class `code` among `classes`.
pub(super) fn colour(code: usize, classes: usize) -> RGBColor {
    let hex = if classes <= TAB10.len() {
        TAB10[code % TAB10.len()]
    } else {
        TAB20[code % TAB20.len()]
    };
    RGBColor((hex >> 16) as u8, (hex >> 8) as u8, hex as u8)
}

/// Marker radius in pixels (0 = one pixel) and opacity for n points on a ~1000 px canvas.
pub(super) fn marker(n: usize) -> (u32, f64) {
    match n {
        0..=2_000 => (3, 0.85),
        2_001..=20_000 => (2, 0.7),
        20_001..=200_000 => (1, 0.5),
        _ => (0, (0.5 * (200_000.0 / n as f64).sqrt()).max(0.15)),
    }
}

/// Widens the shorter of `xr`, `yr` (about its centre) so that one data unit spans as many
/// pixels along x (`px` pixels wide) as along y (`py` pixels high).
pub(super) fn equal_aspect(
    xr: Range<f64>,
    yr: Range<f64>,
    px: f64,
    py: f64,
) -> (Range<f64>, Range<f64>) {
    let per_px = ((xr.end - xr.start) / px).max((yr.end - yr.start) / py);
    let around = |r: Range<f64>, pixels: f64| {
        let c = 0.5 * (r.start + r.end);
        c - 0.5 * per_px * pixels..c + 0.5 * per_px * pixels
    };
    (around(xr, px), around(yr, py))
}

/// `n` with thousands separators: 1234567 → "1,234,567".
pub(super) fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (k, ch) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `s` shortened to `NAME_MAX` characters with an ellipsis.
pub(super) fn short(s: &str) -> String {
    if s.chars().count() <= NAME_MAX {
        s.to_string()
    } else {
        s.chars().take(NAME_MAX - 1).chain(['…']).collect()
    }
}

/// `lo..hi` widened by 4 % on each side (±1 around a single value).
pub(super) fn padded(lo: f64, hi: f64) -> Range<f64> {
    let span = hi - lo;
    if span > 0.0 {
        lo - 0.04 * span..hi + 0.04 * span
    } else {
        lo - 1.0..hi + 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palette_and_markers() {
        assert_eq!(colour(0, 10), RGBColor(0x1f, 0x77, 0xb4));
        assert_eq!(colour(1, 11), RGBColor(0xae, 0xc7, 0xe8));
        assert_eq!(colour(21, 30), colour(1, 30));
        assert_eq!(marker(100), (3, 0.85));
        assert_eq!(marker(1_000_000).0, 0);
        assert!(marker(1_000_000).1 >= 0.15);
        assert_eq!(short("abc"), "abc");
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        let (xr, yr) = equal_aspect(0.0..10.0, 0.0..1.0, 100.0, 50.0);
        assert_eq!((xr, yr), (0.0..10.0, -2.0..3.0));
        assert_eq!(short(&"x".repeat(30)).chars().count(), NAME_MAX);
    }
}
