//! PNG scatter plot of an embedding, coloured by labels, and the animated GIF of a run's
//! snapshots drawn the same way ([`animate_gif`]).
//!
//! One look at the plot is how a scientist judges a run, so it must stay readable from a
//! thousand points to a million: the marker size and opacity shrink as n grows (dense regions
//! then show as darker ink rather than a solid blob), and points are drawn in a fixed random
//! order so that no class systematically hides another. Colours are matplotlib's tab10 (up to
//! 10 classes) or tab20 (more, cycling beyond 20). The font is the shipped DejaVu Sans
//! (`src/io/DejaVuSans.ttf`, licence in `src/io/DejaVuSans.LICENSE`), so no system fonts are needed.
//!
//! - 2-D: y1 against y2.
//! - 3-D: the first two coordinates, said so under the title.
//! - 1-D: the coordinate on x; on y the label (one row per class, jittered) or, without
//!   labels, a random jitter.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::register_font;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

mod animate;
mod curve;
mod heatmap;
mod style;

pub use animate::animate_gif;
pub use curve::{curve_png, Curves};
pub use heatmap::{heatmap_png, HeatMap};

use super::error::IoError;
use super::labels::Labels;
use super::write::write_atomic_path;
use style::{colour, equal_aspect, grouped, marker, padded, short};

/// Image size in pixels.
const WIDTH: u32 = 1200;
const HEIGHT: u32 = 1000;
/// Height of the title band and width of the legend panel.
const TITLE_H: u32 = 80;
const LEGEND_W: u32 = 250;
/// Margin around the chart and height of the x-axis label band, in pixels.
const MARGIN: u32 = 20;
const X_LABEL_H: u32 = 50;
/// Legend entries shown before "+N more".
const LEGEND_MAX: usize = 20;
/// Seed of the drawing order and the 1-D jitter: the same input gives the same picture.
const SEED: u64 = 0x5e75e;
/// The family name the shipped font is registered under.
const FONT: &str = "sans-serif";

/// Registers the shipped font once per process (later calls reuse the first outcome).
fn register_shipped_font() -> Result<(), String> {
    static LOADED: OnceLock<bool> = OnceLock::new();
    let ok = *LOADED.get_or_init(|| {
        register_font(FONT, FontStyle::Normal, include_bytes!("../DejaVuSans.ttf")).is_ok()
    });
    ok.then_some(())
        .ok_or_else(|| "the shipped font DejaVuSans.ttf could not be loaded".into())
}

/// A drawing error as text (plotters' error types are generic over the backend).
fn msg(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Writes a scatter plot of the embedding `y` (n × `dims`, row-major, `dims` in 1..=3) to
/// the `.png` at `path`, atomically; `labels`, when given, must have n entries.
pub fn scatter_png(
    path: &Path,
    y: &[f32],
    dims: usize,
    labels: Option<&Labels>,
    title: &str,
) -> Result<(), IoError> {
    if super::error::extension(path) != "png" {
        return Err(super::error::unknown_extension(path, "a plot", ".png"));
    }
    let scene = Scene::new(path, y, dims, labels)?;
    let extent = scene.extent();
    register_shipped_font().map_err(|reason| invalid(path, reason))?;

    // Render into a temporary .png beside `path`, then rename it.
    write_atomic_path(path, ".png", |tmp| {
        let root = BitMapBackend::new(tmp, (WIDTH, HEIGHT)).into_drawing_area();
        draw(&root, &scene, extent, labels, title)
            .and_then(|()| root.present().map_err(msg))
            .map_err(|e| drawing_failed(path, e))
    })
}

fn invalid(path: &Path, reason: String) -> IoError {
    IoError::Invalid {
        path: path.into(),
        reason,
    }
}

fn drawing_failed(path: &Path, e: String) -> IoError {
    IoError::Write {
        path: path.into(),
        source: std::io::Error::other(e),
    }
}

/// The data ranges the axes span: x from `.0` to `.1`, y from `.2` to `.3`.
type Extent = (f64, f64, f64, f64);

/// What one picture shows of an embedding: where each point goes, the order points are
/// drawn in, and the line under the title.
struct Scene {
    dims: usize,
    xy: Vec<(f64, f64)>,
    order: Vec<usize>,
    caption: String,
}

impl Scene {
    /// The scene of `y` (n × `dims`) with `labels`; errors name `path`. Seeded: the same n
    /// gives the same 1-D jitter and drawing order, so that the frames of an animation
    /// differ only where the points moved.
    fn new(path: &Path, y: &[f32], dims: usize, labels: Option<&Labels>) -> Result<Self, IoError> {
        if !(1..=3).contains(&dims) || !y.len().is_multiple_of(dims) {
            return Err(invalid(
                path,
                format!("cannot plot {} values as {dims}-D points", y.len()),
            ));
        }
        let n = y.len() / dims;
        if n == 0 {
            return Err(invalid(path, "no points to plot".into()));
        }
        if let Some(k) = y.iter().position(|v| !v.is_finite()) {
            return Err(invalid(
                path,
                format!(
                    "point {} (1-based) has a non-finite coordinate {}",
                    k / dims + 1,
                    y[k]
                ),
            ));
        }
        if let Some(l) = labels {
            if l.codes.len() != n {
                return Err(invalid(
                    path,
                    format!("{} labels for {n} points", l.codes.len()),
                ));
            }
            if let Some(i) = l.codes.iter().position(|&c| c as usize >= l.names.len()) {
                return Err(invalid(
                    path,
                    format!("label code of point {} is out of range", i + 1),
                ));
            }
        }
        let mut rng = StdRng::seed_from_u64(SEED);
        let xy: Vec<(f64, f64)> = match (dims, labels) {
            (1, Some(l)) => (0..n)
                .map(|i| {
                    (
                        f64::from(y[i]),
                        f64::from(l.codes[i]) + rng.random_range(-0.35..0.35),
                    )
                })
                .collect(),
            (1, None) => (0..n)
                .map(|i| (f64::from(y[i]), rng.random_range(0.0..1.0)))
                .collect(),
            _ => y
                .chunks_exact(dims)
                .map(|p| (f64::from(p[0]), f64::from(p[1])))
                .collect(),
        };
        let caption = match (dims, labels) {
            (1, Some(_)) => format!(
                "n = {} · 1-D embedding; vertical: label, jittered",
                grouped(n)
            ),
            (1, None) => format!(
                "n = {} · 1-D embedding; vertical: random jitter",
                grouped(n)
            ),
            (3, _) => format!(
                "n = {} · 3-D embedding, first two coordinates shown",
                grouped(n)
            ),
            _ => format!("n = {} · 2-D embedding", grouped(n)),
        };
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(&mut rng);
        Ok(Scene {
            dims,
            xy,
            order,
            caption,
        })
    }

    /// The smallest ranges holding every point.
    fn extent(&self) -> Extent {
        self.xy.iter().fold(
            (
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::INFINITY,
                f64::NEG_INFINITY,
            ),
            |(a, b, c, d), &(x, y)| (a.min(x), b.max(x), c.min(y), d.max(y)),
        )
    }
}

/// Draws title, axes spanning `extent` (padded), points and legend on `root`. One
/// function, long: the parts share plotters' chart and coordinate state, in drawing order.
fn draw(
    root: &DrawingArea<BitMapBackend<'_>, Shift>,
    scene: &Scene,
    extent: Extent,
    labels: Option<&Labels>,
    title: &str,
) -> Result<(), String> {
    let Scene {
        dims,
        ref xy,
        ref order,
        ref caption,
    } = *scene;
    root.fill(&WHITE).map_err(msg)?;
    let (head, body) = root.split_vertically(TITLE_H);
    head.draw(&Text::new(
        title.to_string(),
        (24, 14),
        (FONT, 28).into_font().color(&BLACK),
    ))
    .map_err(msg)?;
    let grey = RGBColor(90, 90, 90);
    head.draw(&Text::new(
        caption.to_string(),
        (24, 50),
        (FONT, 17).into_font().color(&grey),
    ))
    .map_err(msg)?;
    let (plot_area, legend_area) = match labels {
        Some(_) => {
            let (p, l) = body.split_horizontally(WIDTH - LEGEND_W);
            (p, Some(l))
        }
        None => (body, None),
    };

    let (x_lo, x_hi, y_lo, y_hi) = extent;
    let y_label_w = if dims == 1 && labels.is_some() {
        110
    } else {
        70
    };
    let (xr, yr) = match (dims, labels) {
        (1, Some(l)) => (padded(x_lo, x_hi), -0.5..l.names.len() as f64 - 0.5),
        (1, None) => (padded(x_lo, x_hi), -0.1..1.1),
        _ => {
            // Equal units on both axes, so clusters keep their shape.
            let (w, h) = plot_area.dim_in_pixel();
            let px = (f64::from(w) - f64::from(2 * MARGIN + y_label_w)).max(1.0);
            let py = (f64::from(h) - f64::from(2 * MARGIN + X_LABEL_H)).max(1.0);
            equal_aspect(padded(x_lo, x_hi), padded(y_lo, y_hi), px, py)
        }
    };
    let mut chart = ChartBuilder::on(&plot_area)
        .margin(MARGIN)
        .x_label_area_size(X_LABEL_H)
        .y_label_area_size(y_label_w)
        .build_cartesian_2d(xr.clone(), yr.clone())
        .map_err(msg)?;
    let names = labels.map(|l| &l.names);
    let y_label = |v: &f64| match (dims, names) {
        (1, Some(names)) if (v - v.round()).abs() < 1e-9 && *v >= 0.0 => names
            .get(v.round() as usize)
            .map(|s| short(s))
            .unwrap_or_default(),
        (1, _) => String::new(),
        _ => format!("{v}"),
    };
    let y_desc = if dims == 1 { "" } else { "y2" };
    // 1-D: one tick per class (up to the legend's cap), none for the jitter.
    let y_ticks = match (dims, names) {
        (1, Some(names)) => names.len().min(LEGEND_MAX),
        (1, None) => 0,
        _ => 10,
    };
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("y1")
        .y_desc(y_desc)
        .y_label_formatter(&y_label)
        .y_labels(y_ticks)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .draw()
        .map_err(msg)?;

    // The axis box: a frame around the whole plotting area.
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [(xr.start, yr.end), (xr.end, yr.start)],
            BLACK.stroke_width(1),
        )))
        .map_err(msg)?;

    let (radius, alpha) = marker(xy.len());
    let classes = labels.map_or(1, |l| l.names.len());
    let style = |i: usize| {
        let code = labels.map_or(0, |l| l.codes[i] as usize);
        colour(code, classes).mix(alpha)
    };
    if radius == 0 {
        chart
            .draw_series(order.iter().map(|&i| Pixel::new(xy[i], style(i))))
            .map_err(msg)?;
    } else {
        chart
            .draw_series(
                order
                    .iter()
                    .map(|&i| Circle::new(xy[i], radius, style(i).filled())),
            )
            .map_err(msg)?;
    }

    if let (Some(area), Some(l)) = (legend_area, labels) {
        draw_legend(&area, l)?;
    }
    Ok(())
}

/// The legend panel: a colour dot and name per class, at most [`LEGEND_MAX`], then "+N more".
fn draw_legend(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    labels: &Labels,
) -> Result<(), String> {
    let text = (FONT, 17).into_font().color(&BLACK);
    let mut counts = vec![0usize; labels.names.len()];
    for &c in &labels.codes {
        counts[c as usize] += 1;
    }
    area.draw(&Text::new(
        format!("labels ({})", labels.names.len()),
        (10, 24),
        (FONT, 19).into_font().color(&BLACK),
    ))
    .map_err(msg)?;
    let row_h = 30;
    let top = 62;
    let shown = labels.names.len().min(LEGEND_MAX);
    for (k, name) in labels.names.iter().take(shown).enumerate() {
        let y = top + row_h * k as i32;
        area.draw(&Circle::new(
            (20, y),
            7,
            colour(k, labels.names.len()).filled(),
        ))
        .map_err(msg)?;
        area.draw(&Text::new(
            format!("{} ({})", short(name), counts[k]),
            (34, y - 9),
            text.clone(),
        ))
        .map_err(msg)?;
    }
    if labels.names.len() > shown {
        area.draw(&Text::new(
            format!("+{} more", labels.names.len() - shown),
            (34, top + row_h * shown as i32 - 9),
            text,
        ))
        .map_err(msg)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

    /// k Gaussian-ish clusters of `per` points in `dims` dimensions, with their labels.
    fn clusters(k: usize, per: usize, dims: usize, seed: u64) -> (Vec<f32>, Vec<i128>) {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut y = Vec::new();
        let mut labels = Vec::new();
        for c in 0..k {
            let angle = c as f32 / k as f32 * std::f32::consts::TAU;
            let centre = [10.0 * angle.cos(), 10.0 * angle.sin(), c as f32];
            for _ in 0..per {
                for centre_j in centre.iter().take(dims) {
                    let g: f32 = (0..4).map(|_| rng.random_range(-1.0f32..1.0)).sum();
                    y.push(centre_j + 0.8 * g);
                }
                labels.push(c as i128);
            }
        }
        (y, labels)
    }

    fn assert_png(path: &Path) {
        let bytes = std::fs::read(path).unwrap();
        assert_eq!(bytes[..8], PNG_SIGNATURE, "{}", path.display());
        assert!(
            bytes.len() > 10_000,
            "{}: only {} bytes",
            path.display(),
            bytes.len()
        );
        // IHDR: width and height as big-endian u32 at bytes 16..24.
        let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
        let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
        assert_eq!((w, h), (WIDTH, HEIGHT));
    }

    #[test]
    fn plots_dims_1_2_3_with_and_without_labels() {
        let dir = tempfile::tempdir().unwrap();
        for dims in 1..=3 {
            let (y, l) = clusters(4, 150, dims, dims as u64);
            let labels = Labels::from_ints(&l);
            for with in [false, true] {
                let p = dir.path().join(format!("d{dims}_{with}.png"));
                scatter_png(&p, &y, dims, with.then_some(&labels), "test plot").unwrap();
                assert_png(&p);
            }
        }
        // Only the plots are left: no temporary files.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 6);
    }

    #[test]
    fn many_classes_and_many_points() {
        let dir = tempfile::tempdir().unwrap();
        let (y, l) = clusters(37, 10, 2, 7);
        let names: Vec<String> = l
            .iter()
            .map(|c| format!("a rather long class name {c}"))
            .collect();
        let p = dir.path().join("many.png");
        scatter_png(&p, &y, 2, Some(&Labels::from_strings(&names)), "37 classes").unwrap();
        assert_png(&p);
        let (y, _) = clusters(10, 30_000, 2, 8);
        let p = dir.path().join("big.png");
        scatter_png(&p, &y, 2, None, "300k points").unwrap();
        assert_png(&p);
    }

    #[test]
    fn bad_input_is_an_error_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p.png");
        let l = Labels::from_ints(&[0, 1]);
        let cases: [(&[f32], usize, Option<&Labels>, &str); 6] = [
            (
                &[1.0, 2.0, 3.0],
                2,
                None,
                "cannot plot 3 values as 2-D points",
            ),
            (&[1.0; 8], 4, None, "cannot plot 8 values as 4-D points"),
            (&[], 2, None, "no points to plot"),
            (
                &[1.0, f32::NAN, 0.0, 0.0],
                2,
                None,
                "point 1 (1-based) has a non-finite coordinate NaN",
            ),
            (&[1.0, 2.0], 2, Some(&l), "2 labels for 1 points"),
            (
                &[1.0, 2.0],
                1,
                Some(&Labels {
                    codes: vec![0, 5],
                    names: vec!["a".into()],
                }),
                "label code of point 2 is out of range",
            ),
        ];
        for (y, dims, labels, want) in cases {
            let e = scatter_png(&p, y, dims, labels, "t").unwrap_err();
            assert!(
                e.to_string().starts_with(&format!("{}: ", p.display())),
                "{e}"
            );
            assert!(e.to_string().contains(want), "{e}");
        }
        let e = scatter_png(&dir.path().join("p.jpg"), &[0.0, 0.0], 2, None, "t").unwrap_err();
        assert!(matches!(e, IoError::UnknownExtension { .. }), "{e}");
        let e = scatter_png(&dir.path().join("no/p.png"), &[0.0, 0.0], 2, None, "t").unwrap_err();
        assert!(matches!(e, IoError::NoOutputDir { .. }), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
