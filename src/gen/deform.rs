//! Random smooth deformations of square images, sampled bilinearly.
//!
//! A deformation is a sampling map: output pixel p (column x, row y; pixel centres on the
//! integers, image centre $c = ((s-1)/2, (s-1)/2)$) takes the source's value at
//!
//! $$q(p) = c + A^{-1}(p - c - t) + u(p), \qquad A = \sigma\, R(\theta)\, H(k),\quad
//! H(k) = \begin{pmatrix} 1 & k \\ 0 & 1 \end{pmatrix},$$
//!
//! that is, the source sheared by k, rotated by θ and scaled by σ about its centre, shifted by
//! t, and then displaced by a smooth elastic field u — Simard, Steinkraus & Platt (2003),
//! "Best practices for convolutional neural networks applied to visual document analysis",
//! §2: new(p) = old(p + u(p)), read with bilinear interpolation. θ, σ, k and each component of
//! t are uniform in the ranges of [`DeformParams`], as the affine part of "infinite MNIST"
//! (Loosli, Canu & Bottou 2007) draws them.
//!
//! The elastic field: Simard et al. smooth a per-pixel random field with a Gaussian (O(s²·σ)
//! per image); here a coarse lattice of random control displacements is interpolated by the
//! uniform cubic B-spline (a free-form deformation, Rueckert et al. 1999) — smooth (C²) on
//! the scale of the lattice spacing, and O(s²) per image, as 10M images want. With g lattice
//! intervals over the image (spacing h = (s − 1)/g ≈ [`DeformParams::elastic_spacing_px`]),
//! (g + 3)² control values per component, each uniform in ±a:
//! $u(x, y) = \sum_{i,j} B_i(x/h)\, B_j(y/h)\, C_{ij}$. Averaged over positions
//! $E[u^2] = \tfrac{a^2}{3} \left(\int_0^1 \sum_k B_k^2\right)^2 = \tfrac{a^2}{3}
//! (151/315)^2$, so $a = \sqrt{3} \cdot \tfrac{315}{151} \cdot α$ gives an RMS displacement of
//! α = [`DeformParams::elastic_px`] per axis.
//!
//! Outside the source image the value is 0 (the background).

use rand::Rng;

use crate::{Error, Result};

/// $\int_0^1 \sum_k B_k(u)^2\,du$ for the uniform cubic B-spline basis: the mean squared
/// weight along one axis.
const SPLINE_MEAN_SQUARE: f32 = 151.0 / 315.0;

/// Ranges of the random deformation. The defaults are moderate: a deformed MNIST digit stays
/// the same digit to the eye.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeformParams {
    /// Largest rotation in degrees; θ is uniform in ±this. Default 12.
    pub rotation_deg: f32,
    /// Smallest scale factor σ (> 0); σ is uniform in [`scale_min`, `scale_max`]. Default 0.9.
    ///
    /// [`scale_min`]: DeformParams::scale_min
    /// [`scale_max`]: DeformParams::scale_max
    pub scale_min: f32,
    /// Largest scale factor σ (≥ `scale_min`). Default 1.1.
    pub scale_max: f32,
    /// Largest shear k (x += k·y); k is uniform in ±this. Default 0.15.
    pub shear: f32,
    /// Largest shift in pixels; each component of t is uniform in ±this. Default 1.5.
    pub shift_px: f32,
    /// RMS of the elastic displacement, per axis, in pixels (0: none). Default 1.
    pub elastic_px: f32,
    /// Spacing of the elastic field's control lattice in pixels (> 0): the scale on which the
    /// field varies, as the Gaussian's σ does in Simard et al. Default 7 (4 intervals over a
    /// 28-pixel image).
    pub elastic_spacing_px: f32,
}

impl Default for DeformParams {
    fn default() -> Self {
        DeformParams {
            rotation_deg: 12.0,
            scale_min: 0.9,
            scale_max: 1.1,
            shear: 0.15,
            shift_px: 1.5,
            elastic_px: 1.0,
            elastic_spacing_px: 7.0,
        }
    }
}

impl DeformParams {
    /// No deformation: the sampling map is the identity and every image is copied exactly.
    pub const NONE: DeformParams = DeformParams {
        rotation_deg: 0.0,
        scale_min: 1.0,
        scale_max: 1.0,
        shear: 0.0,
        shift_px: 0.0,
        elastic_px: 0.0,
        elastic_spacing_px: 7.0,
    };

    /// Every range scaled by `strength` about "no deformation": the largest rotation, shear,
    /// shift and the elastic RMS times `strength`, the scale range 1 − strength·(1 −
    /// `scale_min`) … 1 + strength·(`scale_max` − 1). 0 gives [`DeformParams::NONE`]'s
    /// identity, 1 these parameters. The result may be invalid (a negative `strength`, a
    /// scale range reaching 0): [`DeformParams::validate`] says so.
    pub fn scaled(&self, strength: f32) -> DeformParams {
        DeformParams {
            rotation_deg: strength * self.rotation_deg,
            scale_min: 1.0 - strength * (1.0 - self.scale_min),
            scale_max: 1.0 + strength * (self.scale_max - 1.0),
            shear: strength * self.shear,
            shift_px: strength * self.shift_px,
            elastic_px: strength * self.elastic_px,
            elastic_spacing_px: self.elastic_spacing_px,
        }
    }

    /// Checks the ranges: every value finite, the amplitudes ≥ 0, 0 < `scale_min` ≤
    /// `scale_max`, `elastic_spacing_px` > 0.
    pub fn validate(&self) -> Result<()> {
        let amplitudes = [
            ("rotation_deg", self.rotation_deg),
            ("shear", self.shear),
            ("shift_px", self.shift_px),
            ("elastic_px", self.elastic_px),
        ];
        for (name, v) in amplitudes {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::param(
                    name,
                    format!("must be finite and ≥ 0 (got {v})"),
                ));
            }
        }
        let (lo, hi) = (self.scale_min, self.scale_max);
        if !(lo.is_finite() && hi.is_finite() && lo > 0.0 && lo <= hi) {
            return Err(Error::param(
                "scale_min",
                format!("the scale range must satisfy 0 < min ≤ max (got {lo} … {hi})"),
            ));
        }
        let h = self.elastic_spacing_px;
        if !(h.is_finite() && h > 0.0) {
            return Err(Error::param(
                "elastic_spacing_px",
                format!("must be finite and > 0 (got {h})"),
            ));
        }
        Ok(())
    }
}

/// Draws and applies random deformations of s × s images (see the module doc).
///
/// # Invariants
/// - `side ≥ 2`, `params` valid ([`DeformParams::validate`])
/// - `basis.len() == side`; each entry's four control nodes lie in `0..nodes`
#[derive(Clone, Debug)]
pub struct Deformer {
    side: usize,
    params: DeformParams,
    /// Control nodes per axis of the elastic lattice: intervals + 3.
    nodes: usize,
    /// Per pixel coordinate: the first of its four control nodes and their B-spline weights.
    basis: Vec<(usize, [f32; 4])>,
    /// Half-width a of the control values' uniform distribution.
    amplitude: f32,
}

/// Per-thread scratch of a [`Deformer`]; make one with [`Deformer::workspace`].
#[derive(Clone, Debug)]
pub struct Workspace {
    /// The source with a zero border: 1 pixel before, 2 after, on each axis.
    padded: Vec<f32>,
    /// Control values, 2 components × nodes × nodes.
    control: Vec<f32>,
    /// Control values interpolated along x: 2 components × nodes × side.
    along_x: Vec<f32>,
    /// The sampling map q: source coordinates of each output pixel, row-major.
    qx: Vec<f32>,
    qy: Vec<f32>,
}

/// The uniform cubic B-spline weights at u ∈ [0, 1].
fn cubic_bspline(u: f32) -> [f32; 4] {
    let v = 1.0 - u;
    [
        v * v * v / 6.0,
        (3.0 * u * u * u - 6.0 * u * u + 4.0) / 6.0,
        (-3.0 * u * u * u + 3.0 * u * u + 3.0 * u + 1.0) / 6.0,
        u * u * u / 6.0,
    ]
}

/// Uniform in ±`max` (exactly 0 when `max` is 0).
fn symmetric(rng: &mut impl Rng, max: f32) -> f32 {
    max * (2.0 * rng.random::<f32>() - 1.0)
}

impl Deformer {
    /// A deformer for `side` × `side` images. Errors: `side < 2`, invalid `params`
    /// ([`Error::Param`]).
    pub fn new(side: usize, params: DeformParams) -> Result<Self> {
        params.validate()?;
        if side < 2 {
            return Err(Error::param(
                "side",
                format!("images must be at least 2 × 2 pixels (got {side} × {side})"),
            ));
        }
        let span = (side - 1) as f32;
        let intervals = ((span / params.elastic_spacing_px).round() as usize).clamp(1, side - 1);
        let h = span / intervals as f32;
        let basis = (0..side)
            .map(|x| {
                let t = x as f32 / h;
                let j = (t.floor() as usize).min(intervals - 1);
                (j, cubic_bspline(t - j as f32))
            })
            .collect();
        let amplitude = 3f32.sqrt() / SPLINE_MEAN_SQUARE * params.elastic_px;
        Ok(Deformer {
            side,
            params,
            nodes: intervals + 3,
            basis,
            amplitude,
        })
    }

    /// Side of the images, in pixels.
    pub fn side(&self) -> usize {
        self.side
    }

    /// The ranges deformations are drawn from.
    pub fn params(&self) -> &DeformParams {
        &self.params
    }

    /// Scratch for [`Deformer::deform`], one per thread.
    pub fn workspace(&self) -> Workspace {
        let (s, g) = (self.side, self.nodes);
        Workspace {
            padded: vec![0.0; (s + 3) * (s + 3)],
            control: vec![0.0; 2 * g * g],
            along_x: vec![0.0; 2 * g * s],
            qx: vec![0.0; s * s],
            qy: vec![0.0; s * s],
        }
    }

    /// Draws a deformation from `rng` and writes the deformed `src` to `out` (both s² pixels,
    /// row-major). The draws are a fixed sequence — θ, σ, k, t, then the control values — so
    /// the same `rng` state gives the same image.
    ///
    /// # Panics
    /// If `src` or `out` does not hold s² pixels, or `ws` is another deformer's.
    pub fn deform(&self, src: &[f32], rng: &mut impl Rng, out: &mut [f32], ws: &mut Workspace) {
        let (s2, g) = (self.side * self.side, self.nodes);
        assert!(
            src.len() == s2 && out.len() == s2,
            "Deformer::deform: images of {s2} pixels expected"
        );
        assert!(
            ws.qx.len() == s2 && ws.control.len() == 2 * g * g,
            "Deformer::deform: a workspace of another deformer"
        );
        self.draw_map(rng, ws);
        self.sample(src, ws, out);
    }

    /// Step 1: the sampling map q into `ws.qx`, `ws.qy`.
    fn draw_map(&self, rng: &mut impl Rng, ws: &mut Workspace) {
        let p = &self.params;
        let theta = symmetric(rng, p.rotation_deg.to_radians());
        let sigma = p.scale_min + (p.scale_max - p.scale_min) * rng.random::<f32>();
        let k = symmetric(rng, p.shear);
        let (tx, ty) = (symmetric(rng, p.shift_px), symmetric(rng, p.shift_px));
        for v in ws.control.iter_mut() {
            *v = symmetric(rng, self.amplitude);
        }
        // A⁻¹ = H(k)⁻¹ R(−θ) / σ = [[cos θ + k sin θ, sin θ − k cos θ], [−sin θ, cos θ]] / σ.
        let (sin, cos) = theta.sin_cos();
        let a = [
            (cos + k * sin) / sigma,
            (sin - k * cos) / sigma,
            -sin / sigma,
            cos / sigma,
        ];

        // The elastic field, separably: along x for every control row, then along y per pixel.
        let (s, g) = (self.side, self.nodes);
        for (ctrl, rows) in ws
            .control
            .chunks_exact(g * g)
            .zip(ws.along_x.chunks_exact_mut(g * s))
        {
            for (crow, row) in ctrl.chunks_exact(g).zip(rows.chunks_exact_mut(s)) {
                for (v, &(j, w)) in row.iter_mut().zip(&self.basis) {
                    *v = w[0] * crow[j]
                        + w[1] * crow[j + 1]
                        + w[2] * crow[j + 2]
                        + w[3] * crow[j + 3];
                }
            }
        }
        let (ux_rows, uy_rows) = ws.along_x.split_at(g * s);
        let centre = (s as f32 - 1.0) / 2.0;
        let rows = ws.qx.chunks_exact_mut(s).zip(ws.qy.chunks_exact_mut(s));
        for (y, ((qx, qy), &(j, w))) in rows.zip(&self.basis).enumerate() {
            // The field's row y, along y from the four control rows j..j + 4: first into
            // qx and qy, then the affine part is added.
            spline_row(&w, &ux_rows[j * s..(j + 4) * s], qx);
            spline_row(&w, &uy_rows[j * s..(j + 4) * s], qy);
            let dy = y as f32 - centre - ty;
            for (x, (qx, qy)) in qx.iter_mut().zip(qy.iter_mut()).enumerate() {
                let dx = x as f32 - centre - tx;
                *qx += centre + a[0] * dx + a[1] * dy;
                *qy += centre + a[2] * dx + a[3] * dy;
            }
        }
    }

    /// Step 2: `src` read at the map's points, bilinearly, into `out`.
    fn sample(&self, src: &[f32], ws: &mut Workspace, out: &mut [f32]) {
        let s = self.side;
        let stride = s + 3;
        for (prow, srow) in ws.padded[stride..]
            .chunks_exact_mut(stride)
            .zip(src.chunks_exact(s))
        {
            prow[1..=s].copy_from_slice(srow);
        }
        let last = s as f32 + 1.0;
        let p = &ws.padded;
        for ((o, &x), &y) in out.iter_mut().zip(&ws.qx).zip(&ws.qy) {
            // Shifted by the 1-pixel border and clamped to [0, s + 1], every tap lies in the
            // padded image, and a point beyond the border reads only border zeros. The
            // coordinates are ≥ 0 there, so truncation is the floor.
            let (x, y) = ((x + 1.0).clamp(0.0, last), (y + 1.0).clamp(0.0, last));
            let (x0, y0) = (x as usize, y as usize);
            let (fx, fy) = (x - x0 as f32, y - y0 as f32);
            let i = y0 * stride + x0;
            let taps = &p[i..i + stride + 2];
            let top = (1.0 - fx) * taps[0] + fx * taps[1];
            let bottom = (1.0 - fx) * taps[stride] + fx * taps[stride + 1];
            *o = (1.0 - fy) * top + fy * bottom;
        }
    }
}

/// `out[x] = Σ_k w[k] · rows[k][x]` over four consecutive rows of `out.len()` values.
fn spline_row(w: &[f32; 4], rows: &[f32], out: &mut [f32]) {
    let s = out.len();
    let (r0, rest) = rows.split_at(s);
    let (r1, rest) = rest.split_at(s);
    let (r2, r3) = rest.split_at(s);
    for ((((o, &a), &b), &c), &d) in out.iter_mut().zip(r0).zip(r1).zip(r2).zip(r3) {
        *o = w[0] * a + w[1] * b + w[2] * c + w[3] * d;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rand::{rngs::StdRng, SeedableRng};

    /// A digit-like s × s image: a ring and a slanted bar, strokes ≈ s/10 wide with soft
    /// edges, intensities in [0, 1].
    pub(crate) fn strokes(s: usize, variant: usize) -> Vec<f32> {
        let c = (s as f32 - 1.0) / 2.0;
        let r = s as f32 * (0.22 + 0.02 * (variant % 4) as f32);
        let w = s as f32 / 10.0;
        let slope = 0.3 + 0.2 * (variant % 3) as f32;
        let mut im = vec![0f32; s * s];
        for y in 0..s {
            for x in 0..s {
                let (dx, dy) = (x as f32 - c, y as f32 - c);
                let ring = ((dx * dx + dy * dy).sqrt() - r).abs();
                let bar = (dx - slope * dy - r).abs() / (1.0 + slope * slope).sqrt();
                let d = ring.min(if dy.abs() < 1.3 * r { bar } else { f32::MAX });
                im[y * s + x] = (1.5 - d / w).clamp(0.0, 1.0);
            }
        }
        im
    }

    fn correlation(a: &[f32], b: &[f32]) -> f64 {
        let n = a.len() as f64;
        let (ma, mb) = (
            a.iter().map(|&v| v as f64).sum::<f64>() / n,
            b.iter().map(|&v| v as f64).sum::<f64>() / n,
        );
        let (mut ab, mut aa, mut bb) = (0.0, 0.0, 0.0);
        for (&x, &y) in a.iter().zip(b) {
            let (x, y) = (x as f64 - ma, y as f64 - mb);
            ab += x * y;
            aa += x * x;
            bb += y * y;
        }
        ab / (aa * bb).sqrt()
    }

    fn random_image(s: usize, rng: &mut StdRng) -> Vec<f32> {
        (0..s * s).map(|_| rng.random::<f32>()).collect()
    }

    #[test]
    fn no_deformation_is_the_identity() {
        let mut rng = StdRng::seed_from_u64(1);
        for s in [2usize, 8, 28, 31] {
            let d = Deformer::new(s, DeformParams::NONE).unwrap();
            let mut ws = d.workspace();
            let src = random_image(s, &mut rng);
            let mut out = vec![f32::NAN; s * s];
            d.deform(&src, &mut rng, &mut out, &mut ws);
            assert_eq!(out, src, "side {s}");
        }
    }

    #[test]
    fn bilinear_reads_a_linear_image_exactly_inside() {
        // f(x, y) = 0.01 x − 0.02 y + 0.5 is reproduced wherever q lies inside the image.
        let s = 20;
        let f = |x: f32, y: f32| 0.01 * x - 0.02 * y + 0.5;
        let src: Vec<f32> = (0..s * s)
            .map(|i| f((i % s) as f32, (i / s) as f32))
            .collect();
        let d = Deformer::new(s, DeformParams::default()).unwrap();
        let mut ws = d.workspace();
        let mut out = vec![0f32; s * s];
        let mut rng = StdRng::seed_from_u64(2);
        let mut inside = 0;
        for _ in 0..20 {
            d.deform(&src, &mut rng, &mut out, &mut ws);
            for (k, &o) in out.iter().enumerate() {
                let (x, y) = (ws.qx[k], ws.qy[k]);
                let max = (s - 1) as f32;
                if (0.0..=max).contains(&x) && (0.0..=max).contains(&y) {
                    inside += 1;
                    assert!((o - f(x, y)).abs() < 1e-5, "pixel {k}: {o} vs {}", f(x, y));
                } else if !(-1.0..=max + 1.0).contains(&x) || !(-1.0..=max + 1.0).contains(&y) {
                    assert_eq!(o, 0.0, "pixel {k} maps outside to ({x}, {y})");
                }
            }
        }
        assert!(inside > 20 * s * s / 2, "{inside}");
    }

    #[test]
    fn rotation_alone_keeps_distances_to_the_centre() {
        let s = 28;
        let params = DeformParams {
            rotation_deg: 30.0,
            ..DeformParams::NONE
        };
        let d = Deformer::new(s, params).unwrap();
        let mut ws = d.workspace();
        let mut rng = StdRng::seed_from_u64(3);
        let c = (s as f32 - 1.0) / 2.0;
        let mut moved = 0f32;
        for _ in 0..10 {
            d.draw_map(&mut rng, &mut ws);
            for k in 0..s * s {
                let (px, py) = ((k % s) as f32 - c, (k / s) as f32 - c);
                let (qx, qy) = (ws.qx[k] - c, ws.qy[k] - c);
                let (rp, rq) = ((px * px + py * py).sqrt(), (qx * qx + qy * qy).sqrt());
                assert!((rp - rq).abs() < 1e-4, "pixel {k}: radius {rp} → {rq}");
                // the angle turned stays within ±30°
                let turn = (px * qy - py * qx).atan2(px * qx + py * qy).abs();
                assert!(turn <= 30f32.to_radians() + 1e-4, "{turn}");
                moved = moved.max((px - qx).abs() + (py - qy).abs());
            }
        }
        assert!(moved > 1.0, "no rotation drawn");
    }

    #[test]
    fn elastic_field_has_the_asked_rms() {
        let s = 28;
        for alpha in [0.5f32, 2.0] {
            let params = DeformParams {
                elastic_px: alpha,
                ..DeformParams::NONE
            };
            let d = Deformer::new(s, params).unwrap();
            let mut ws = d.workspace();
            let mut rng = StdRng::seed_from_u64(4);
            let (mut sum, mut count) = (0f64, 0usize);
            for _ in 0..400 {
                d.draw_map(&mut rng, &mut ws);
                for k in 0..s * s {
                    let ux = (ws.qx[k] - (k % s) as f32) as f64;
                    let uy = (ws.qy[k] - (k / s) as f32) as f64;
                    sum += ux * ux + uy * uy;
                    count += 2;
                }
            }
            let rms = (sum / count as f64).sqrt();
            assert!(
                (rms - alpha as f64).abs() < 0.1 * alpha as f64,
                "α {alpha}: rms {rms}"
            );
        }
    }

    #[test]
    fn a_deformed_image_stays_close_to_its_source_and_differs() {
        let s = 28;
        let d = Deformer::new(s, DeformParams::default()).unwrap();
        let mut ws = d.workspace();
        let mut rng = StdRng::seed_from_u64(5);
        let mut out = vec![0f32; s * s];
        let mut sum = 0.0;
        let draws = 200;
        for v in 0..draws {
            let src = strokes(s, v);
            d.deform(&src, &mut rng, &mut out, &mut ws);
            let r = correlation(&src, &out);
            assert!(r > 0.2 && r < 0.995, "draw {v}: correlation {r}");
            assert!(out.iter().all(|v| (0.0..=1.0).contains(v)));
            sum += r;
        }
        let mean = sum / draws as f64;
        // 0.80 with the default ranges
        assert!(mean > 0.7 && mean < 0.95, "mean correlation {mean}");
    }

    #[test]
    fn bad_parameters_and_sides_are_errors() {
        let bad = [
            DeformParams {
                rotation_deg: -1.0,
                ..DeformParams::default()
            },
            DeformParams {
                shear: f32::NAN,
                ..DeformParams::default()
            },
            DeformParams {
                scale_min: 0.0,
                ..DeformParams::default()
            },
            DeformParams {
                scale_min: 1.2,
                scale_max: 1.1,
                ..DeformParams::default()
            },
            DeformParams {
                elastic_spacing_px: 0.0,
                ..DeformParams::default()
            },
            DeformParams {
                elastic_px: f32::INFINITY,
                ..DeformParams::default()
            },
        ];
        for p in bad {
            assert!(
                matches!(Deformer::new(28, p), Err(Error::Param { .. })),
                "{p:?}"
            );
        }
        assert!(Deformer::new(1, DeformParams::default()).is_err());
        assert!(Deformer::new(2, DeformParams::default()).is_ok());
    }
}
