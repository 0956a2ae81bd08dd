//! The snapshots of a run as an animated GIF: each frame drawn as [`super::scatter_png`]
//! draws a plot (same colours, markers, legend), on axes fixed for the whole animation so
//! that motion on screen is motion in the embedding. Encoded by the `gif` crate through
//! plotters' GIF backend, which quantises each frame to its own 256-colour palette.
//!
//! The frames are read from their files twice, once for the axes' range and once to draw,
//! so that memory holds one frame at a time whatever the number of snapshots.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::{
    draw, drawing_failed, invalid, msg, register_shipped_font, Extent, Scene, HEIGHT, WIDTH,
};
use crate::io::error::{extension, unknown_extension, IoError};
use crate::io::labels::Labels;
use crate::io::read::read_points;
use crate::io::write::write_atomic_path;

/// How long each frame shows, in milliseconds.
const FRAME_MS: u32 = 200;

/// Writes the embeddings in `frames` ((iteration, `.npy` file of n × `dims`), in order) as
/// an animated `.gif` at `path`, atomically; each frame is titled `title` and its iteration.
/// `labels`, when given, must have n entries. A frame that cannot be read or plotted is an
/// error naming its file, and nothing is written.
pub fn animate_gif(
    path: &Path,
    frames: &[(usize, PathBuf)],
    dims: usize,
    labels: Option<&Labels>,
    title: &str,
) -> Result<(), IoError> {
    if extension(path) != "gif" {
        return Err(unknown_extension(path, "an animation", ".gif"));
    }
    if frames.is_empty() {
        return Err(invalid(path, "no snapshots to animate".into()));
    }
    let scene = |file: &Path| -> Result<Scene, IoError> {
        let y = read_points(file)?;
        if y.d != dims {
            return Err(invalid(file, format!("{} columns, expected {dims}", y.d)));
        }
        Scene::new(file, &y.data, dims, labels)
    };
    // Pass 1: the axes hold every frame.
    let mut extent: Extent = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for (_, file) in frames {
        let (a, b, c, d) = scene(file)?.extent();
        extent = (
            extent.0.min(a),
            extent.1.max(b),
            extent.2.min(c),
            extent.3.max(d),
        );
    }
    register_shipped_font().map_err(|reason| invalid(path, reason))?;
    // Pass 2: one frame per snapshot.
    write_atomic_path(path, ".gif", |tmp| {
        let backend = BitMapBackend::gif(tmp, (WIDTH, HEIGHT), FRAME_MS)
            .map_err(|e| drawing_failed(path, msg(e)))?;
        let root = backend.into_drawing_area();
        for (iter, file) in frames {
            let scene = scene(file)?;
            draw(
                &root,
                &scene,
                extent,
                labels,
                &format!("{title} · iteration {iter}"),
            )
            .and_then(|()| root.present().map_err(msg))
            .map_err(|e| drawing_failed(path, e))?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::write_embedding;

    /// The logical screen size (bytes 6..10) and the number of image descriptors (frames).
    fn gif_size_and_frames(bytes: &[u8]) -> ((u16, u16), usize) {
        let mut frames = 0;
        let mut decoder = gif::DecodeOptions::new();
        decoder.set_color_output(gif::ColorOutput::Indexed);
        let mut d = decoder.read_info(bytes).unwrap();
        while d.read_next_frame().unwrap().is_some() {
            frames += 1;
        }
        (
            (
                u16::from_le_bytes([bytes[6], bytes[7]]),
                u16::from_le_bytes([bytes[8], bytes[9]]),
            ),
            frames,
        )
    }

    #[test]
    fn one_frame_per_snapshot_and_bad_frames_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let frames: Vec<(usize, PathBuf)> = (1..=3)
            .map(|k| {
                let file = dir.path().join(format!("iter_{k}.npy"));
                // Three points spreading out, two classes.
                let s = k as f32;
                write_embedding(&file, &[-s, 0.0, s, 0.0, 0.0, s], 2).unwrap();
                (10 * k, file)
            })
            .collect();
        let labels = Labels::from_ints(&[0, 1, 1]);
        let out = dir.path().join("a.gif");
        animate_gif(&out, &frames, 2, Some(&labels), "t").unwrap();
        let bytes = std::fs::read(&out).unwrap();
        assert_eq!(&bytes[..6], b"GIF89a");
        let (size, count) = gif_size_and_frames(&bytes);
        assert_eq!(size, (WIDTH as u16, HEIGHT as u16));
        assert_eq!(count, 3);

        let bad = dir.path().join("b.gif");
        let e = animate_gif(&bad, &frames, 3, None, "t").unwrap_err();
        assert!(
            e.to_string().contains("iter_1.npy: 2 columns, expected 3"),
            "{e}"
        );
        let e = animate_gif(&bad, &[], 2, None, "t").unwrap_err();
        assert!(e.to_string().contains("no snapshots to animate"), "{e}");
        let e = animate_gif(&dir.path().join("a.png"), &frames, 2, None, "t").unwrap_err();
        assert!(matches!(e, IoError::UnknownExtension { .. }), "{e}");
        // Only the frames and the one animation: no temporary files.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);
    }
}
