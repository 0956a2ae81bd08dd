//! The error model behind `--grid-error`: cubic Lagrange interpolation of a smooth kernel
//! errs as h⁴ (Linderman et al. 2019, §3), so the relative force error of a grid of spacing
//! h is about C·h⁴ with C depending on the dimension; fitted here from a sweep's rows.

use serde::Serialize;

use super::SweepRow;

/// Rows whose error is inside this range enter the fit: above it the grid is too coarse for
/// the asymptotic h⁴ regime (the error grows more slowly), below it the f32 rounding of the
/// grid sums takes over (measured on the H100: the error stops falling at 1.5e-5 in 2-D and
/// at 4e-5 … 3e-4 in 1-D, growing with n).
const FIT_RANGE: (f64, f64) = (1e-3, 2e-2);

/// The fitted model for one dimension.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ErrorFit {
    pub dims: usize,
    /// Rows used.
    pub samples: usize,
    /// Free least-squares slope of log error against log h (≈ 4 if the model holds).
    pub exponent: f64,
    /// Median of error / h⁴.
    pub c_median: f64,
    /// Largest error / h⁴: a spacing chosen from it held the error under the target on
    /// every measured embedding.
    pub c_bound: f64,
}

/// Fits error ≈ C·h⁴ to the rows of one dimension (the first row's); `None` when fewer than
/// three rows fall in the fitting range.
pub fn fit_error_model(rows: &[SweepRow]) -> Option<ErrorFit> {
    let dims = rows.first()?.dims;
    let used: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| r.dims == dims && r.spacing > 0.0)
        .filter(|r| (FIT_RANGE.0..=FIT_RANGE.1).contains(&r.force_error))
        .map(|r| (r.spacing.ln(), r.force_error.ln()))
        .collect();
    if used.len() < 3 {
        return None;
    }
    let m = used.len() as f64;
    let (mx, my) = used
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x / m, b + y / m));
    let sxy: f64 = used.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = used.iter().map(|(x, _)| (x - mx).powi(2)).sum();
    let mut c: Vec<f64> = used.iter().map(|(x, y)| (y - 4.0 * x).exp()).collect();
    c.sort_by(f64::total_cmp);
    let quantile = |q: f64| c[((c.len() - 1) as f64 * q).round() as usize];
    Some(ErrorFit {
        dims,
        samples: used.len(),
        exponent: if sxx > 0.0 { sxy / sxx } else { f64::NAN },
        c_median: quantile(0.5),
        c_bound: quantile(1.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repulse::GridSpec;

    fn row(h: f64, err: f64) -> SweepRow {
        SweepRow {
            dims: 2,
            n: 100,
            trajectory: GridSpec::Fixed(32),
            grid: GridSpec::Fixed(32),
            iteration: 1,
            nodes: 32,
            spacing: h,
            extent: 10.0,
            force_error: err,
            z_error: 0.0,
            times: Default::default(),
        }
    }

    #[test]
    fn recovers_a_quartic_law() {
        let rows: Vec<SweepRow> = [0.35, 0.4, 0.5, 0.6, 0.7, 2.0]
            .iter()
            .map(|&h| row(h, 0.08 * h.powi(4)))
            .collect();
        let fit = fit_error_model(&rows).unwrap();
        // h = 2 errs 1.3: outside the range, left out.
        assert_eq!(fit.samples, 5);
        assert!((fit.exponent - 4.0).abs() < 1e-9, "{fit:?}");
        assert!((fit.c_median - 0.08).abs() < 1e-12 && (fit.c_bound - 0.08).abs() < 1e-12);
        assert!(fit_error_model(&rows[..2]).is_none());
    }
}
