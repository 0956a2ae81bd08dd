//! Square grey-level images (`.npy`, one image per row), the source of
//! [`gen::digits`](crate::gen::digits).
//!
//! n × s² pixels, each row an s × s image stored row by row (MNIST: 70000 × 784). Intensities
//! come out in [0, 1] with 0 the background: `uint8` is divided by 255, floats are taken as
//! they are (meant to lie in [0, 1] already). A stack of shape (n, s, s) must be reshaped to
//! (n, s²) first: the `.npy` reader takes 1-D and 2-D arrays.

use std::path::Path;

use rayon::prelude::*;

use super::error::{extension, unknown_extension, IoError};
use super::npy::{self, Num};
use crate::Points;

/// The side s of a square image of `pixels` = s² pixels, s ≥ 2; `None` when `pixels` is not
/// such a square.
pub fn image_side(pixels: usize) -> Option<usize> {
    let s = (pixels as f64).sqrt().round() as usize;
    (s >= 2 && s.checked_mul(s) == Some(pixels)).then_some(s)
}

/// Reads n square images from an `.npy` file of `uint8` (scaled by 1/255) or floats (as they
/// are): n × s² points with intensities in [0, 1].
///
/// Errors name the file: another extension or dtype, rows that are not s × s images (s ≥ 2),
/// and whatever [`read_points`](super::read_points) refuses (no data, non-finite values, …).
pub fn read_images(path: &Path) -> Result<Points, IoError> {
    if extension(path) != "npy" {
        return Err(unknown_extension(path, "images", ".npy"));
    }
    let (mut images, num) = npy::read_points_npy_as(path, |num, dtype| match num {
        // `|b1` (bool) decodes as U8 too; only real bytes are 0–255 intensities.
        Num::U8 if dtype.ends_with("u1") => Ok(()),
        Num::F16 | Num::F32 | Num::F64 => Ok(()),
        _ => Err("images must be uint8 (0–255) or floats (0–1)"),
    })?;
    if image_side(images.d).is_none() {
        return Err(IoError::format(
            path,
            None,
            format!(
                "rows of {} pixels are not square images of at least 2 × 2 (28 × 28 = 784 are)",
                images.d
            ),
        ));
    }
    if num == Num::U8 {
        images.data.par_iter_mut().for_each(|v| *v /= 255.0);
    }
    Ok(images)
}

#[cfg(test)]
mod tests {
    use super::super::npy::tests::npy_file;
    use super::*;

    #[test]
    fn sides_of_squares_only() {
        assert_eq!(image_side(784), Some(28));
        assert_eq!(image_side(4), Some(2));
        for bad in [0, 1, 2, 3, 5, 783, 785] {
            assert_eq!(image_side(bad), None, "{bad}");
        }
    }

    #[test]
    fn bytes_are_scaled_floats_kept_and_the_rest_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("u8.npy");
        std::fs::write(
            &p,
            npy_file("|u1", false, "(2, 4)", &[0, 255, 51, 1, 2, 3, 4, 5]),
        )
        .unwrap();
        let im = read_images(&p).unwrap();
        assert_eq!((im.n, im.d), (2, 4));
        assert_eq!(&im.data[..3], &[0.0, 1.0, 0.2]);

        let p = dir.path().join("f4.npy");
        let data: Vec<u8> = [0.5f32, 0.25, 0.0, 1.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        std::fs::write(&p, npy_file("<f4", false, "(1, 4)", &data)).unwrap();
        assert_eq!(read_images(&p).unwrap().data, [0.5, 0.25, 0.0, 1.0]);

        for (descr, data) in [("<i2", vec![0u8; 8]), ("|b1", vec![0u8; 4])] {
            let p = dir.path().join("bad.npy");
            std::fs::write(&p, npy_file(descr, false, "(1, 4)", &data)).unwrap();
            let e = read_images(&p).unwrap_err();
            assert!(matches!(e, IoError::Dtype { .. }), "{descr}: {e}");
            let m = e.to_string();
            assert!(m.starts_with(&p.display().to_string()), "{m}");
            assert!(m.contains("uint8 (0–255) or floats"), "{m}");
        }
    }

    #[test]
    fn rows_must_be_square_images() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.npy");
        std::fs::write(&p, npy_file("|u1", false, "(2, 3)", &[0; 6])).unwrap();
        let e = read_images(&p).unwrap_err();
        assert!(
            e.to_string()
                .contains("x.npy: rows of 3 pixels are not square images"),
            "{e}"
        );
        let e = read_images(&dir.path().join("x.csv")).unwrap_err();
        assert!(matches!(e, IoError::UnknownExtension { .. }), "{e}");
        let e = read_images(&dir.path().join("missing.npy")).unwrap_err();
        assert!(matches!(e, IoError::NotFound { .. }), "{e}");
    }
}
