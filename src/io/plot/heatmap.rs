//! PNG heat map of a table of values (the grid-size sweep: n on one axis, grid size on the
//! other), coloured on a log scale with matplotlib's viridis, each cell labelled with its
//! value, a colour bar with decade ticks. Same canvas, font and atomic write as the scatter
//! plot.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{msg, register_shipped_font, FONT, HEIGHT, WIDTH};
use crate::io::error::IoError;
use crate::io::write::write_atomic_path;

/// A table to draw: `values[r * columns.len() + c]` is row `r`, column `c`; NaN or a value
/// ≤ 0 is a missing cell (grey). Row 0 is drawn at the bottom.
pub struct HeatMap<'a> {
    pub title: &'a str,
    /// One line under the title (what was measured, how).
    pub caption: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    /// What the colours mean, beside the colour bar.
    pub colour_label: &'a str,
    pub columns: &'a [String],
    pub rows: &'a [String],
    pub values: &'a [f64],
    /// Each cell's text (lines separated by `\n`), or empty.
    pub cell_text: &'a [String],
}

/// matplotlib's viridis at 9 evenly spaced stops.
const VIRIDIS: [(u8, u8, u8); 9] = [
    (68, 1, 84),
    (71, 44, 122),
    (59, 81, 139),
    (44, 113, 142),
    (33, 144, 141),
    (39, 173, 129),
    (92, 200, 99),
    (170, 220, 50),
    (253, 231, 37),
];

/// Viridis at `t ∈ [0, 1]`, interpolated between the stops.
fn viridis(t: f64) -> RGBColor {
    let x = t.clamp(0.0, 1.0) * (VIRIDIS.len() - 1) as f64;
    let k = (x.floor() as usize).min(VIRIDIS.len() - 2);
    let f = x - k as f64;
    let (a, b) = (VIRIDIS[k], VIRIDIS[k + 1]);
    let mix = |u: u8, v: u8| (u as f64 + f * (v as f64 - u as f64)).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Pixel boxes of the parts of the canvas.
const TITLE_H: i32 = 90;
const LEFT: i32 = 150;
const BOTTOM: i32 = 110;
const BAR_W: i32 = 36;
const BAR_GAP: i32 = 30;
const RIGHT: i32 = 190;

/// Writes `map` to the `.png` at `path`, atomically.
pub fn heatmap_png(path: &Path, map: &HeatMap) -> Result<(), IoError> {
    let invalid = |reason: String| IoError::Invalid {
        path: path.into(),
        reason,
    };
    if crate::io::error::extension(path) != "png" {
        return Err(crate::io::error::unknown_extension(path, "a plot", ".png"));
    }
    let cells = map.columns.len() * map.rows.len();
    if cells == 0 || map.values.len() != cells || map.cell_text.len() != cells {
        return Err(invalid(format!(
            "a {} × {} heat map needs {cells} values and texts, got {} and {}",
            map.rows.len(),
            map.columns.len(),
            map.values.len(),
            map.cell_text.len()
        )));
    }
    register_shipped_font().map_err(invalid)?;
    write_atomic_path(path, ".png", |tmp| {
        let root = BitMapBackend::new(tmp, (WIDTH, HEIGHT)).into_drawing_area();
        draw(&root, map)
            .and_then(|()| root.present().map_err(msg))
            .map_err(|e| IoError::Write {
                path: path.into(),
                source: std::io::Error::other(e),
            })
    })
}

/// The log10 range the colours span: whole decades around the finite positive values.
fn log_range(values: &[f64]) -> (f64, f64) {
    let logs = values
        .iter()
        .filter(|v| **v > 0.0 && v.is_finite())
        .map(|v| v.log10());
    let (lo, hi) = logs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let (lo, hi) = (lo.floor(), hi.ceil());
    if hi > lo {
        (lo, hi)
    } else {
        (lo, lo + 1.0)
    }
}

/// Colour-bar ticks (log10 values) between `lo` and `hi`: every decade, with 2 and 5 in
/// between when the bar spans at most two decades.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut t = Vec::new();
    let mut d = lo;
    while d <= hi + 1e-9 {
        t.push(d);
        if hi - lo <= 2.0 && d < hi {
            t.extend([d + 2f64.log10(), d + 5f64.log10()]);
        }
        d += 1.0;
    }
    t
}

/// A tick's text: 1e-3, 2e-3, … or plain numbers between 0.01 and 1000.
fn tick_text(log: f64) -> String {
    let v = 10f64.powf(log);
    if (1e-2..1e4).contains(&v) {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{v:.0e}")
    }
}

/// Draws the heat map: cells, their values, axes with the grids' and sizes' labels, the
/// colour bar. One function, long: plotters' drawing calls share one coordinate system,
/// and split up they would pass it around without making any step clearer.
fn draw(
    root: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    map: &HeatMap,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(msg)?;
    let (w, h) = (WIDTH as i32, HEIGHT as i32);
    let grey = RGBColor(90, 90, 90);
    root.draw(&Text::new(
        map.title.to_string(),
        (24, 14),
        (FONT, 28).into_font().color(&BLACK),
    ))
    .map_err(msg)?;
    root.draw(&Text::new(
        map.caption.to_string(),
        (24, 52),
        (FONT, 16).into_font().color(&grey),
    ))
    .map_err(msg)?;

    let (x0, x1) = (LEFT, w - RIGHT);
    let (y0, y1) = (TITLE_H, h - BOTTOM);
    let (nc, nr) = (map.columns.len() as i32, map.rows.len() as i32);
    let cw = (x1 - x0) as f64 / nc as f64;
    let ch = (y1 - y0) as f64 / nr as f64;
    let (lo, hi) = log_range(map.values);
    let shade = |v: f64| (v.log10() - lo) / (hi - lo);
    let text = |size: f64, h: HPos, colour: &RGBColor| {
        (FONT, size)
            .into_font()
            .color(colour)
            .pos(Pos::new(h, VPos::Center))
    };
    let centred = |size: f64, colour: &RGBColor| text(size, HPos::Center, colour);
    let text_size = (ch / 4.0).clamp(11.0, 17.0).min(cw / 6.0).max(10.0);
    for r in 0..nr {
        for c in 0..nc {
            let k = (r * nc + c) as usize;
            let v = map.values[k];
            let (cx0, cx1) = (
                x0 + (c as f64 * cw) as i32,
                x0 + ((c + 1) as f64 * cw) as i32,
            );
            let (cy0, cy1) = (
                y1 - ((r + 1) as f64 * ch) as i32,
                y1 - (r as f64 * ch) as i32,
            );
            let missing = !(v > 0.0 && v.is_finite());
            let t = if missing { 0.0 } else { shade(v) };
            let fill = if missing {
                RGBColor(210, 210, 210)
            } else {
                viridis(t)
            };
            root.draw(&Rectangle::new([(cx0, cy0), (cx1, cy1)], fill.filled()))
                .map_err(msg)?;
            root.draw(&Rectangle::new(
                [(cx0, cy0), (cx1, cy1)],
                WHITE.stroke_width(1),
            ))
            .map_err(msg)?;
            let ink = if !missing && t < 0.6 { WHITE } else { BLACK };
            let lines: Vec<&str> = map.cell_text[k].lines().collect();
            let line_h = text_size + 3.0;
            for (j, line) in lines.iter().enumerate() {
                let dy = (j as f64 - (lines.len() - 1) as f64 / 2.0) * line_h;
                root.draw(&Text::new(
                    line.to_string(),
                    ((cx0 + cx1) / 2, (cy0 + cy1) / 2 + dy as i32),
                    centred(text_size, &ink),
                ))
                .map_err(msg)?;
            }
        }
    }
    root.draw(&Rectangle::new([(x0, y0), (x1, y1)], BLACK.stroke_width(1)))
        .map_err(msg)?;

    // Axis labels: one per column and row, then the axis titles.
    for (c, label) in map.columns.iter().enumerate() {
        let x = x0 + ((c as f64 + 0.5) * cw) as i32;
        root.draw(&Text::new(
            label.clone(),
            (x, y1 + 18),
            centred(15.0, &BLACK),
        ))
        .map_err(msg)?;
    }
    for (r, label) in map.rows.iter().enumerate() {
        let y = y1 - ((r as f64 + 0.5) * ch) as i32;
        root.draw(&Text::new(
            label.clone(),
            (x0 - 10, y),
            text(15.0, HPos::Right, &BLACK),
        ))
        .map_err(msg)?;
    }
    root.draw(&Text::new(
        map.x_label.to_string(),
        ((x0 + x1) / 2, y1 + 60),
        centred(17.0, &BLACK),
    ))
    .map_err(msg)?;
    root.draw(&Text::new(
        map.y_label.to_string(),
        (26, (y0 + y1) / 2),
        centred(17.0, &BLACK).transform(FontTransform::Rotate270),
    ))
    .map_err(msg)?;

    // Colour bar, bottom = lo.
    let bx0 = x1 + BAR_GAP;
    let steps = (y1 - y0).max(1);
    for s in 0..steps {
        let t = s as f64 / (steps - 1).max(1) as f64;
        let y = y1 - s;
        root.draw(&Rectangle::new(
            [(bx0, y - 1), (bx0 + BAR_W, y)],
            viridis(t).filled(),
        ))
        .map_err(msg)?;
    }
    root.draw(&Rectangle::new(
        [(bx0, y0), (bx0 + BAR_W, y1)],
        BLACK.stroke_width(1),
    ))
    .map_err(msg)?;
    let left = text(14.0, HPos::Left, &BLACK);
    for tick in ticks(lo, hi) {
        let y = y1 - (((tick - lo) / (hi - lo)) * (y1 - y0) as f64) as i32;
        root.draw(&PathElement::new(
            vec![(bx0 + BAR_W, y), (bx0 + BAR_W + 5, y)],
            BLACK.stroke_width(1),
        ))
        .map_err(msg)?;
        root.draw(&Text::new(
            tick_text(tick),
            (bx0 + BAR_W + 8, y),
            left.clone(),
        ))
        .map_err(msg)?;
    }
    root.draw(&Text::new(
        map.colour_label.to_string(),
        (w - 22, (y0 + y1) / 2),
        centred(16.0, &BLACK).transform(FontTransform::Rotate270),
    ))
    .map_err(msg)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_a_table_and_rejects_bad_shapes() {
        let dir = tempfile::tempdir().unwrap();
        let columns: Vec<String> = ["32", "64", "auto h=0.5"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let rows: Vec<String> = ["1,000", "2,000"].iter().map(|s| s.to_string()).collect();
        let values = [3e-2, 2e-3, 1e-4, f64::NAN, 4e-3, 2e-4];
        let text: Vec<String> = values.iter().map(|v| format!("{v:.1e}\nline 2")).collect();
        let map = HeatMap {
            title: "test",
            caption: "caption",
            x_label: "grid",
            y_label: "n",
            colour_label: "error",
            columns: &columns,
            rows: &rows,
            values: &values,
            cell_text: &text,
        };
        let p = dir.path().join("h.png");
        heatmap_png(&p, &map).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        let short = HeatMap {
            values: &values[..5],
            ..map
        };
        assert!(heatmap_png(&dir.path().join("bad.png"), &short).is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert_eq!(ticks(-4.0, -2.0).len(), 7);
        assert_eq!(tick_text(-3.0), "1e-3");
        assert_eq!(tick_text(1.0), "10");
        assert_eq!(log_range(&[2e-4, 3e-2]), (-4.0, -1.0));
    }
}
