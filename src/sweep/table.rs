//! The sweep's outputs: the CSV of every measurement, heat maps of the means per (n, grid),
//! and the error-model fit. Every file is written atomically.

use std::path::{Path, PathBuf};

use super::config::{DataSource, SweepConfig, Trajectory};
use super::fit::fit_error_model;
use super::SweepRow;
use crate::io::plot::{heatmap_png, HeatMap};
use crate::io::{write_atomic, IoError};
use crate::repulse::GridSpec;
use crate::Result;

/// How a grid is named in the CSV and on the charts: `90` (fixed, nodes per axis) or
/// `auto h=0.35` (adaptive, spacing).
pub fn grid_label(spec: GridSpec) -> String {
    match spec {
        GridSpec::Fixed(p) => p.to_string(),
        GridSpec::Auto { h } => format!("auto h={h}"),
    }
}

/// A grid's column label on the charts: `90`, or `h=0.35` for an adaptive grid.
fn chart_label(spec: GridSpec) -> String {
    match spec {
        GridSpec::Fixed(p) => p.to_string(),
        GridSpec::Auto { h } => format!("h={h}"),
    }
}

const HEADER: &str = "dims,n,trajectory,grid,iteration,nodes,spacing,extent,force_error,z_error,\
                      s2g_ms,g2g_ms,g2s_ms,near_ms,phi2force_ms,repulse_ms";

fn write_csv(path: &Path, rows: &[SweepRow]) -> Result<(), IoError> {
    write_atomic(path, |w| {
        writeln!(w, "{HEADER}")?;
        for r in rows {
            let t = &r.times;
            let ms = |s: f64| s * 1e3;
            writeln!(
                w,
                "{},{},{},{},{},{},{:.6},{:.3},{:.4e},{:.4e},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4}",
                r.dims,
                r.n,
                grid_label(r.trajectory),
                grid_label(r.grid),
                r.iteration,
                r.nodes,
                r.spacing,
                r.extent,
                r.force_error,
                r.z_error,
                ms(t.s2g),
                ms(t.g2g),
                ms(t.g2s),
                ms(t.near),
                ms(t.phi2force),
                ms(t.total())
            )?;
        }
        Ok(())
    })
}

/// Means over the iterations of each (n, grid): row-major sizes × grids.
struct Means {
    force_error: Vec<f64>,
    total_ms: Vec<f64>,
    s2g_ms: Vec<f64>,
    g2g_ms: Vec<f64>,
    nodes: Vec<f64>,
}

fn means(cfg: &SweepConfig, rows: &[SweepRow]) -> Means {
    let cells = cfg.sizes.len() * cfg.grids.len();
    let mut sums = vec![[0.0f64; 5]; cells];
    let mut counts = vec![0usize; cells];
    for r in rows {
        let (Some(i), Some(j)) = (
            cfg.sizes.iter().position(|&n| n == r.n),
            cfg.grids.iter().position(|&g| g == r.grid),
        ) else {
            continue;
        };
        let k = i * cfg.grids.len() + j;
        let t = &r.times;
        let v = [
            r.force_error,
            t.total() * 1e3,
            t.s2g * 1e3,
            t.g2g * 1e3,
            r.nodes as f64,
        ];
        for (s, x) in sums[k].iter_mut().zip(v) {
            *s += x;
        }
        counts[k] += 1;
    }
    let column = |q: usize| -> Vec<f64> {
        sums.iter()
            .zip(&counts)
            .map(|(s, &c)| if c > 0 { s[q] / c as f64 } else { f64::NAN })
            .collect()
    };
    Means {
        force_error: column(0),
        total_ms: column(1),
        s2g_ms: column(2),
        g2g_ms: column(3),
        nodes: column(4),
    }
}

/// One heat map: file suffix, what it shows, colour-bar label, values, cell formatter.
type MapSpec<'a> = (
    &'a str,
    &'a str,
    &'a str,
    &'a [f64],
    &'a dyn Fn(f64) -> String,
);

/// `12.3 ms`, `0.45 ms`, `123 ms`: three significant digits at most.
fn ms_text(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0} ms")
    } else if v >= 10.0 {
        format!("{v:.1} ms")
    } else {
        format!("{v:.2} ms")
    }
}

/// Writes `<name>.csv`, `<name>-error.png`, `-time.png`, `-s2g.png`, `-g2g.png` and
/// `<name>-fit.json` under `dir`; `device` names where it ran (for the captions). Returns
/// the paths written. Long, as a list of the outputs is: each is a few lines of its own.
pub fn write_outputs(
    cfg: &SweepConfig,
    rows: &[SweepRow],
    dir: &Path,
    device: &str,
) -> Result<Vec<PathBuf>> {
    let file = |suffix: &str| dir.join(format!("{}{suffix}", cfg.name));
    let mut written = Vec::new();
    let csv = file(".csv");
    write_csv(&csv, rows)?;
    written.push(csv);

    let m = means(cfg, rows);
    let columns: Vec<String> = cfg.grids.iter().map(|&g| chart_label(g)).collect();
    let sizes: Vec<String> = cfg.sizes.iter().map(|n| n.to_string()).collect();
    let samples = cfg.sample_iterations();
    let data = match &cfg.data {
        DataSource::Gen(g) => format!("gen {} × {}", g.n, g.dim),
        DataSource::File(p) => p.file_name().map_or(p.display().to_string(), |f| {
            f.to_string_lossy().into_owned()
        }),
    };
    let mode = match cfg.trajectory {
        Trajectory::PerGrid => "one optimisation per grid".to_string(),
        Trajectory::Shared { reference } => {
            format!(
                "all grids measured on one run with {}",
                grid_label(reference)
            )
        }
    };
    let caption = format!(
        "{data} · {device} · {mode} · mean of iterations {}–{} of {} · {} targets",
        samples.first().copied().unwrap_or(0),
        samples.last().copied().unwrap_or(0),
        cfg.iters,
        cfg.targets
    );
    let x_label = "grid: fixed nodes per axis  |  adaptive (--grid auto) spacing h, mean nodes p";
    let auto = |j: usize| matches!(cfg.grids[j], GridSpec::Auto { .. });
    let texts = |values: &[f64], fmt: &dyn Fn(f64) -> String| -> Vec<String> {
        values
            .iter()
            .enumerate()
            .map(|(k, &v)| {
                let j = k % cfg.grids.len();
                let mut s = if v.is_finite() { fmt(v) } else { String::new() };
                if auto(j) && m.nodes[k].is_finite() {
                    s += &format!("\np {:.0}", m.nodes[k]);
                }
                s
            })
            .collect()
    };
    let maps: [MapSpec; 4] = [
        (
            "-error.png",
            "relative repulsive-force error",
            "mean ‖F_exact − F_fft‖ / ‖F_exact‖ (log scale)",
            &m.force_error,
            &|v| format!("{v:.1e}"),
        ),
        (
            "-time.png",
            "repulsion time per evaluation",
            "S2G + G2G + G2S + Phi2Force, ms (log scale)",
            &m.total_ms,
            &ms_text,
        ),
        (
            "-s2g.png",
            "S2G time per evaluation",
            "S2G, ms (log scale)",
            &m.s2g_ms,
            &ms_text,
        ),
        (
            "-g2g.png",
            "G2G time per evaluation",
            "G2G, ms (log scale)",
            &m.g2g_ms,
            &ms_text,
        ),
    ];
    for (suffix, what, colour_label, values, fmt) in maps {
        let path = file(suffix);
        let title = format!("{}: {what}, {}-D", cfg.name, cfg.dims);
        let cell_text = texts(values, fmt);
        heatmap_png(
            &path,
            &HeatMap {
                title: &title,
                caption: &caption,
                x_label,
                y_label: "n (points)",
                colour_label,
                columns: &columns,
                rows: &sizes,
                values,
                cell_text: &cell_text,
            },
        )?;
        written.push(path);
    }

    let fit = file("-fit.json");
    let model = fit_error_model(rows);
    write_atomic(&fit, |w| {
        serde_json::to_writer_pretty(&mut *w, &model).map_err(std::io::Error::other)?;
        writeln!(w)
    })?;
    written.push(fit);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_times() {
        assert_eq!(grid_label(GridSpec::Fixed(90)), "90");
        assert_eq!(grid_label(GridSpec::Auto { h: 0.35 }), "auto h=0.35");
        assert_eq!(ms_text(0.456), "0.46 ms");
        assert_eq!(ms_text(12.34), "12.3 ms");
        assert_eq!(ms_text(345.6), "346 ms");
    }
}
