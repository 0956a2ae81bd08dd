//! A line chart of one or more curves over the same x (e.g. the BIC and AIC of a mixture
//! against its number of components), with one x marked.

use std::path::Path;

use plotters::prelude::*;

use super::{msg, register_shipped_font, style::colour, FONT};
use crate::io::error::IoError;
use crate::io::write::write_atomic_path;

/// Image size in pixels.
const WIDTH: u32 = 1000;
const HEIGHT: u32 = 700;

/// What [`curve_png`] draws.
pub struct Curves<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    /// Named series of (x, y) points, drawn in order with tab10 colours.
    pub series: Vec<(&'a str, Vec<(f64, f64)>)>,
    /// An x to mark with a dashed vertical line, and its caption.
    pub mark: Option<(f64, String)>,
}

/// Writes `curves` to the `.png` at `path`, atomically.
pub fn curve_png(path: &Path, curves: &Curves) -> Result<(), IoError> {
    let invalid = |reason: String| IoError::Invalid {
        path: path.into(),
        reason,
    };
    if crate::io::error::extension(path) != "png" {
        return Err(crate::io::error::unknown_extension(path, "a plot", ".png"));
    }
    let points = curves.series.iter().flat_map(|(_, p)| p.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in points {
        if !(x.is_finite() && y.is_finite()) {
            return Err(invalid(format!("cannot plot the point ({x}, {y})")));
        }
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    if x0 > x1 {
        return Err(invalid("no points to plot".into()));
    }
    let pad = |lo: f64, hi: f64| {
        let p = if hi > lo { 0.05 * (hi - lo) } else { 1.0 };
        (lo - p)..(hi + p)
    };
    let (xr, yr) = (pad(x0, x1), pad(y0, y1));
    register_shipped_font().map_err(invalid)?;
    write_atomic_path(path, ".png", |tmp| {
        let root = BitMapBackend::new(tmp, (WIDTH, HEIGHT)).into_drawing_area();
        draw(&root, curves, xr, yr)
            .and_then(|()| root.present().map_err(msg))
            .map_err(|e| IoError::Write {
                path: path.into(),
                source: std::io::Error::other(e),
            })
    })
}

fn draw(
    root: &DrawingArea<BitMapBackend, plotters::coord::Shift>,
    curves: &Curves,
    xr: std::ops::Range<f64>,
    yr: std::ops::Range<f64>,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(msg)?;
    let mut chart = ChartBuilder::on(root)
        .caption(curves.title, (FONT, 26))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(110)
        .build_cartesian_2d(xr, yr.clone())
        .map_err(msg)?;
    chart
        .configure_mesh()
        .x_desc(curves.x_label)
        .x_label_formatter(&|x| number(*x))
        .y_label_formatter(&|y| number(*y))
        .y_desc(curves.y_label)
        .label_style((FONT, 16))
        .axis_desc_style((FONT, 18))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(msg)?;
    let n = curves.series.len();
    for (i, (name, pts)) in curves.series.iter().enumerate() {
        let c = colour(i, n);
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
            .map_err(msg)?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
            .map_err(msg)?;
    }
    if let Some((x, caption)) = &curves.mark {
        let dashes = 40;
        let step = (yr.end - yr.start) / dashes as f64;
        let grey = RGBColor(80, 80, 80);
        chart
            .draw_series((0..dashes).step_by(2).map(|t| {
                let y = yr.start + t as f64 * step;
                PathElement::new(vec![(*x, y), (*x, y + step)], grey.stroke_width(1))
            }))
            .map_err(msg)?
            .label(caption.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey));
    }
    chart
        .configure_series_labels()
        .label_font((FONT, 16))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(msg)?;
    Ok(())
}

/// A tick's text: whole numbers without decimals, others with up to four significant digits.
fn number(v: f64) -> String {
    if v == v.round() && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}")
    }
}
