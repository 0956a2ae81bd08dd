//! Deformed images at any size ("infinite MNIST", Loosli, Canu & Bottou 2007): row i is a
//! randomly deformed copy of source image i mod n_src, projected on the source set's top
//! principal axes, labelled as its source.
//!
//! - **PCA of the originals:** [`Pca::fit`] on the n_src source images (intensities in [0, 1]);
//!   every row, original or deformed, is centred by that mean and projected on those axes, so
//!   the originals' rows are exactly their PCA scores and the deformed copies live in the
//!   same coordinates.
//! - **Rows:** row i < n_src is source image i itself unless
//!   [`DigitsParams::deform_originals`] (the convention of infinite MNIST, whose first
//!   70,000 images are MNIST's own); any other row is a deformation ([`Deformer`]) drawn from
//!   a ChaCha generator keyed by (seed, i) alone — the output depends neither on the thread
//!   count nor on n (a run of n rows is the first n rows of any longer run).
//! - **Memory and time:** chunks of [`CHUNK`] rows in parallel, each deformed into an
//!   f32 pixel buffer and projected by one GEMM (faer, f32) of a fixed shape — the last chunk
//!   is padded — so a row's value does not depend on where the chunks end; at most one
//!   CHUNK × s² buffer per thread, never n × s².

use std::path::Path;

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use rand::{rngs::StdRng, SeedableRng};
use rayon::prelude::*;

use super::deform::{DeformParams, Deformer};
use crate::io::{self, image_side, IoError};
use crate::prep::Pca;
use crate::progress::Progress;
use crate::{Error, Points, Result};

/// Rows deformed and projected together: one GEMM of CHUNK × s² by s² × dim. At s = 28 the
/// pixel buffer is 0.8 MB per thread.
pub const CHUNK: usize = 256;

/// Square source images and their labels.
///
/// # Invariants
/// - `images` holds n ≥ 1 rows of s² pixels, s ≥ 2 (`side`), finite
/// - `labels.len() == n`
#[derive(Clone, Debug)]
pub struct ImageSet {
    images: Points,
    side: usize,
    labels: Vec<u32>,
}

impl ImageSet {
    /// Images (one s × s image per row, intensities in [0, 1], 0 the background) and their
    /// labels. Errors ([`Error::Data`]): no images, rows that are not square images, a label
    /// count other than the image count.
    pub fn new(images: Points, labels: Vec<u32>) -> Result<Self> {
        if images.n == 0 {
            return Err(Error::Data("no source images".into()));
        }
        let side = image_side(images.d).ok_or_else(|| {
            Error::Data(format!(
                "rows of {} pixels are not square images of at least 2 × 2",
                images.d
            ))
        })?;
        if labels.len() != images.n {
            return Err(Error::Data(format!(
                "{} labels for {} images",
                labels.len(),
                images.n
            )));
        }
        Ok(ImageSet {
            images,
            side,
            labels,
        })
    }

    /// Reads the images ([`io::read_images`]: `.npy`, `uint8` or floats, square) and their
    /// labels ([`io::read_labels`]). Labels that are all non-negative integers keep their
    /// values (digits stay 0–9); others become their codes. Errors name the file at fault.
    pub fn read(images: &Path, labels: &Path) -> Result<Self> {
        let pixels = io::read_images(images)?;
        let l = io::read_labels(labels)?;
        if l.len() != pixels.n {
            return Err(IoError::Format {
                path: labels.into(),
                at: None,
                reason: format!(
                    "{} labels for the {} images of {}",
                    l.len(),
                    pixels.n,
                    images.display()
                ),
            }
            .into());
        }
        let values: Option<Vec<u32>> = l.names.iter().map(|s| s.parse().ok()).collect();
        let labels = match values {
            Some(v) => l.codes.iter().map(|&c| v[c as usize]).collect(),
            None => l.codes,
        };
        ImageSet::new(pixels, labels)
    }

    /// Number of images.
    pub fn len(&self) -> usize {
        self.images.n
    }

    /// Always false: an image set holds at least one image.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Side s of the images, in pixels.
    pub fn side(&self) -> usize {
        self.side
    }

    /// The images, one per row (s² pixels, row-major).
    pub fn images(&self) -> &Points {
        &self.images
    }

    /// The label of each image.
    pub fn labels(&self) -> &[u32] {
        &self.labels
    }
}

/// How the rows are made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DigitsParams {
    /// Principal components kept: the dimension of each row (1 ≤ dim ≤ s²). Default 50.
    pub dim: usize,
    /// Ranges of the random deformations. Default [`DeformParams::default`].
    pub deform: DeformParams,
    /// Deform the first n_src rows too, instead of copying the originals. Default false.
    pub deform_originals: bool,
}

impl Default for DigitsParams {
    fn default() -> Self {
        DigitsParams {
            dim: 50,
            deform: DeformParams::default(),
            deform_originals: false,
        }
    }
}

/// A generator of deformed images in PCA coordinates: the source set, its PCA and a
/// [`Deformer`] (see the module doc).
#[derive(Clone, Debug)]
pub struct DeformedDigits {
    source: ImageSet,
    pca: Pca,
    /// The PCA mean as f32, s² values.
    mean: Vec<f32>,
    /// The PCA axes as f32, row-major dim × s² (= column-major s² × dim).
    axes: Vec<f32>,
    deformer: Deformer,
    deform_originals: bool,
}

impl DeformedDigits {
    /// Fits the PCA of `source` (O(n_src · s⁴); seconds for MNIST) and prepares the
    /// deformations. Errors: `dim` outside 1..=s², invalid deformation ranges
    /// ([`Error::Param`]).
    pub fn fit(source: ImageSet, params: &DigitsParams) -> Result<Self> {
        let pixels = source.images.d;
        if params.dim == 0 || params.dim > pixels {
            return Err(Error::param(
                "dim",
                format!(
                    "{} principal components asked of {s} × {s} = {pixels}-pixel images \
                     (1 to {pixels})",
                    params.dim,
                    s = source.side
                ),
            ));
        }
        let deformer = Deformer::new(source.side, params.deform)?;
        let pca = Pca::fit(&source.images, params.dim)?;
        Ok(DeformedDigits {
            mean: pca.mean.iter().map(|&v| v as f32).collect(),
            axes: pca.axes.iter().map(|&v| v as f32).collect(),
            pca,
            source,
            deformer,
            deform_originals: params.deform_originals,
        })
    }

    /// The PCA of the source images.
    pub fn pca(&self) -> &Pca {
        &self.pca
    }

    /// The source images.
    pub fn source(&self) -> &ImageSet {
        &self.source
    }

    /// Rows 0..n (n × dim) and their labels. `progress` gets a stage "deform" of n rows.
    /// Errors: n = 0 ([`Error::Param`]), an output too large to allocate ([`Error::Data`]).
    pub fn generate(
        &self,
        n: usize,
        seed: u64,
        progress: &dyn Progress,
    ) -> Result<(Points, Vec<u32>)> {
        if n == 0 {
            return Err(Error::param("n", "must be at least 1"));
        }
        let m = self.pca.m;
        let mut data = try_zeros::<f32>(n, m)?;
        let mut labels = try_zeros::<u32>(n, 1)?;
        let d = self.source.images.d;
        progress.begin("deform", n as u64);
        data.par_chunks_mut(CHUNK * m)
            .zip(labels.par_chunks_mut(CHUNK))
            .enumerate()
            .for_each_init(
                || {
                    let pixels = vec![0f32; CHUNK * d];
                    (pixels, vec![0f32; CHUNK * m], self.deformer.workspace())
                },
                |(pixels, scores, ws), (c, (out, labs))| {
                    self.fill_chunk(c * CHUNK, seed, pixels, labs, ws);
                    self.project(pixels, scores);
                    out.copy_from_slice(&scores[..out.len()]);
                    progress.advance(labs.len() as u64);
                },
            );
        progress.end();
        Ok((Points::new(n, m, data), labels))
    }

    /// Rows `first..first + labs.len()`, centred, into the leading rows of `pixels`, and their
    /// labels into `labs`.
    fn fill_chunk(
        &self,
        first: usize,
        seed: u64,
        pixels: &mut [f32],
        labs: &mut [u32],
        ws: &mut super::deform::Workspace,
    ) {
        let src = &self.source;
        let d = src.images.d;
        for (r, (px, lab)) in pixels.chunks_exact_mut(d).zip(labs).enumerate() {
            let i = first + r;
            let k = i % src.len();
            *lab = src.labels[k];
            let image = src.images.row(k);
            if i < src.len() && !self.deform_originals {
                px.copy_from_slice(image);
            } else {
                self.deformer.deform(image, &mut row_rng(seed, i), px, ws);
            }
            for (p, mu) in px.iter_mut().zip(&self.mean) {
                *p -= mu;
            }
        }
    }

    /// `scores` (CHUNK × dim, row-major) = `pixels` (CHUNK × s², row-major, centred) · V.
    /// Always the full CHUNK rows: one GEMM shape for every chunk.
    fn project(&self, pixels: &[f32], scores: &mut [f32]) {
        let (d, m) = (self.source.images.d, self.pca.m);
        let v = MatRef::from_column_major_slice(&self.axes, d, m);
        let x = MatRef::from_row_major_slice(pixels, CHUNK, d);
        // scores row-major CHUNK × m = column-major m × CHUNK = Vᵀ Xᵀ
        matmul(
            MatMut::from_column_major_slice_mut(scores, m, CHUNK),
            Accum::Replace,
            v.transpose(),
            x.transpose(),
            1.0f32,
            Par::Seq,
        );
    }
}

/// The generator of row i's deformation: ChaCha keyed by the seed and the row number.
fn row_rng(seed: u64, i: usize) -> StdRng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&(i as u64).to_le_bytes());
    StdRng::from_seed(key)
}

/// n × width zeros, or an error when that much memory cannot be had.
fn try_zeros<T: Clone + Default>(n: usize, width: usize) -> Result<Vec<T>> {
    let too_big = || {
        Error::Data(format!(
            "cannot allocate the output: {n} rows × {width} values of {} bytes",
            std::mem::size_of::<T>()
        ))
    };
    let len = n.checked_mul(width).ok_or_else(too_big)?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| too_big())?;
    v.resize(len, T::default());
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prep::pca;
    use crate::progress::Silent;
    use rand::Rng;

    /// `n` random s × s "images" in [0, 1] and labels 0..10.
    fn random_set(n: usize, s: usize, seed: u64) -> ImageSet {
        let mut rng = StdRng::seed_from_u64(seed);
        let data = (0..n * s * s)
            .map(|_| rng.random_range(0..=255u8) as f32 / 255.0)
            .collect();
        let labels = (0..n).map(|i| (i % 10) as u32).collect();
        ImageSet::new(Points::new(n, s * s, data), labels).unwrap()
    }

    /// `n` smooth 28 × 28 images: each three Gaussian blobs (σ = 3 px) at random places.
    fn blob_set(n: usize, seed: u64) -> ImageSet {
        let s = 28;
        let mut rng = StdRng::seed_from_u64(seed);
        let mut data = vec![0f32; n * s * s];
        for im in data.chunks_exact_mut(s * s) {
            for _ in 0..3 {
                let (cx, cy) = (rng.random_range(6.0..21.0), rng.random_range(6.0..21.0));
                for (k, v) in im.iter_mut().enumerate() {
                    let (dx, dy) = ((k % s) as f32 - cx, (k / s) as f32 - cy);
                    *v = (*v + (-(dx * dx + dy * dy) / 18.0).exp()).min(1.0);
                }
            }
        }
        ImageSet::new(Points::new(n, s * s, data), (0..n as u32).collect()).unwrap()
    }

    fn close(a: &[f32], b: &[f32], tol: f32) -> bool {
        a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= tol * x.abs().max(1.0))
    }

    #[test]
    fn originals_are_their_pca_scores() {
        let set = random_set(200, 8, 1);
        let want = pca(set.images(), 10).unwrap();
        let params = DigitsParams {
            dim: 10,
            ..DigitsParams::default()
        };
        let g = DeformedDigits::fit(set.clone(), &params).unwrap();
        let (rows, labels) = g.generate(200, 0, &Silent).unwrap();
        assert_eq!((rows.n, rows.d), (200, 10));
        assert!(close(&rows.data, &want.data, 1e-4));
        assert_eq!(labels, set.labels());

        // Deformed by the identity, every copy of an image is its PCA score too.
        let params = DigitsParams {
            dim: 10,
            deform: DeformParams::NONE,
            deform_originals: true,
        };
        let g = DeformedDigits::fit(set.clone(), &params).unwrap();
        let (rows, labels) = g.generate(450, 7, &Silent).unwrap();
        for (i, &label) in labels.iter().enumerate() {
            assert!(close(rows.row(i), want.row(i % 200), 1e-4), "row {i}");
            assert_eq!(label, set.labels()[i % 200]);
        }
    }

    #[test]
    fn deformed_rows_are_near_their_source_in_pca_space() {
        let k = 30;
        let g = DeformedDigits::fit(blob_set(k, 4), &DigitsParams::default()).unwrap();
        let (rows, labels) = g.generate(k * 20, 3, &Silent).unwrap();
        let dist = |a: &[f32], b: &[f32]| -> f32 {
            a.iter()
                .zip(b)
                .map(|(x, y)| (x - y) * (x - y))
                .sum::<f32>()
                .sqrt()
        };
        let mut nearest_own = 0;
        for (i, &label) in labels.iter().enumerate().skip(k) {
            let own = i % k;
            assert_eq!(label, own as u32);
            let d_own = dist(rows.row(i), rows.row(own));
            assert!(d_own > 1e-3, "row {i} equals its source");
            if (0..k)
                .filter(|&j| j != own)
                .all(|j| d_own < dist(rows.row(i), rows.row(j)))
            {
                nearest_own += 1;
            }
        }
        // Most copies are nearer their own source than any other image (87% here; 2.5 times
        // the default deformation brings it to 29%).
        let copies = rows.n - k;
        assert!(nearest_own * 5 > copies * 4, "{nearest_own} of {copies}");
    }

    #[test]
    fn rows_depend_on_seed_and_row_only() {
        let set = random_set(30, 8, 2);
        let params = DigitsParams {
            dim: 6,
            ..DigitsParams::default()
        };
        let g = DeformedDigits::fit(set, &params).unwrap();
        let n = 2 * CHUNK + 37;
        let (a, la) = g.generate(n, 5, &Silent).unwrap();
        let pool = |t| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .unwrap()
        };
        let (b, lb) = pool(1).install(|| g.generate(n, 5, &Silent).unwrap());
        let (c, _) = pool(3).install(|| g.generate(n, 5, &Silent).unwrap());
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(la, lb);
        // A shorter run is a prefix of a longer one, bit for bit (chunk ends elsewhere).
        let (p, _) = g.generate(CHUNK + 5, 5, &Silent).unwrap();
        assert_eq!(p.data[..], a.data[..p.data.len()]);
        // Another seed: the same originals, other deformations.
        let (o, lo) = g.generate(n, 6, &Silent).unwrap();
        assert_eq!(lo, la);
        assert_eq!(o.data[..30 * 6], a.data[..30 * 6]);
        for i in 30..n {
            assert_ne!(o.row(i), a.row(i), "row {i}");
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        let im = |n, d| Points::new(n, d, vec![0.5; n * d]);
        assert!(matches!(
            ImageSet::new(im(3, 10), vec![0; 3]),
            Err(Error::Data(_))
        ));
        assert!(matches!(
            ImageSet::new(im(3, 1), vec![0; 3]),
            Err(Error::Data(_))
        ));
        assert!(matches!(
            ImageSet::new(im(0, 4), vec![]),
            Err(Error::Data(_))
        ));
        let e = ImageSet::new(im(3, 9), vec![0; 2]).unwrap_err();
        assert_eq!(e.to_string(), "2 labels for 3 images");

        let set = random_set(20, 4, 3);
        for dim in [0, 17] {
            let params = DigitsParams {
                dim,
                ..DigitsParams::default()
            };
            let e = DeformedDigits::fit(set.clone(), &params).unwrap_err();
            assert!(matches!(e, Error::Param { name: "dim", .. }), "{e}");
        }
        let params = DigitsParams {
            dim: 16,
            deform: DeformParams {
                scale_min: -1.0,
                ..DeformParams::default()
            },
            ..DigitsParams::default()
        };
        assert!(DeformedDigits::fit(set.clone(), &params).is_err());
        let g = DeformedDigits::fit(
            set,
            &DigitsParams {
                dim: 16,
                ..DigitsParams::default()
            },
        )
        .unwrap();
        assert!(matches!(
            g.generate(0, 0, &Silent),
            Err(Error::Param { .. })
        ));
        assert!(matches!(
            g.generate(usize::MAX / 2, 0, &Silent),
            Err(Error::Data(_))
        ));
    }

    #[test]
    fn files_with_problems_are_named() {
        use crate::io::npy_test_file as npy_file;
        let dir = tempfile::tempdir().unwrap();
        let images = dir.path().join("im.npy");
        std::fs::write(&images, npy_file("|u1", false, "(3, 4)", &[9; 12])).unwrap();
        let labels = dir.path().join("lab.npy");
        std::fs::write(&labels, npy_file("|u1", false, "(2,)", &[7, 3])).unwrap();
        let e = ImageSet::read(&images, &labels).unwrap_err().to_string();
        assert!(e.starts_with(&labels.display().to_string()), "{e}");
        assert!(e.contains("2 labels for the 3 images of"), "{e}");

        std::fs::write(&labels, npy_file("|u1", false, "(3,)", &[7, 3, 7])).unwrap();
        let set = ImageSet::read(&images, &labels).unwrap();
        assert_eq!(set.labels(), [7, 3, 7]);
        assert_eq!(set.side(), 2);
        assert_eq!(set.images().data[0], 9.0 / 255.0);

        std::fs::write(&images, npy_file("|u1", false, "(3, 5)", &[9; 15])).unwrap();
        let e = ImageSet::read(&images, &labels).unwrap_err().to_string();
        assert!(e.starts_with(&images.display().to_string()), "{e}");
        assert!(e.contains("not square"), "{e}");
    }

    /// The real data set, where it is at hand: deformed digits stay close to their source.
    #[test]
    #[ignore = "needs MNIST in SGTSNE_DATA_DIR; run with --ignored"]
    fn mnist_deformed_digits_resemble_their_source() {
        let data_file = crate::test_data::data_file;
        let (Some(images), Some(labels)) = (
            data_file("mnist70k_784_u8.npy"),
            data_file("mnist70k_labels_u8.npy"),
        ) else {
            return;
        };
        let set = ImageSet::read(&images, &labels).unwrap();
        assert_eq!((set.len(), set.side()), (70_000, 28));
        let d = Deformer::new(28, DeformParams::default()).unwrap();
        let mut ws = d.workspace();
        let mut out = vec![0f32; 784];
        let mut sum = 0.0;
        for k in 0..1000 {
            let src = set.images().row(k * 70);
            d.deform(src, &mut row_rng(0, k), &mut out, &mut ws);
            let dot: f32 = src.iter().zip(&out).map(|(a, b)| a * b).sum();
            let norm = |v: &[f32]| v.iter().map(|a| a * a).sum::<f32>().sqrt();
            sum += dot / (norm(src) * norm(&out));
        }
        let mean = sum / 1000.0;
        // 0.63 with the default ranges (thin strokes: a shift of one pixel costs much)
        assert!(mean > 0.5 && mean < 0.85, "mean cosine {mean}");
    }
}
