//! The placement itself: neighbours, affinities, median start, and the optimisation of the
//! new points against the fixed reference.
//!
//! The gradient of new point i's own $\mathrm{KL}(P_i \,\|\, Q_i)$, with
//! $q_{j|i} = w_{ij} / \psi_i$, $\psi_i = \sum_j w_{ij}$ over the n reference points and the
//! kernel of [`crate::kernel`] ($\partial \ln w / \partial y_i = -2 w^{1/α} (y_i - y_j)$), is
//!
//! $$\nabla_i = 2 \Big[ \sum_j p_{j|i}\, w_{ij}^{1/α} (y_i - y_j)
//!            - \frac{y_i \varphi_0(y_i) - \varphi(y_i)}{\psi(y_i)} \Big],$$
//!
//! with $\varphi_0 = \sum_j G_2(y, y_j)$, $\varphi = \sum_j G_2(y, y_j)\, y_j$ and
//! $G_2 = w^{1 + 1/α}$. Each new point is normalised by its own ψ: a point's place does not
//! depend on how many others come with it, nor on them (new points neither attract nor
//! repel each other, as in openTSNE). Since the reference does not move, ψ, φ₀ and φ are
//! fixed fields: they are interpolated onto a grid once (S2G of the reference, one FFT
//! convolution per channel, [`crate::repulse`]), and each iteration only reads them at the new
//! points (G2S), so an iteration costs O(m) for m new points, not O(m·n).

use std::time::Instant;

use serde::Serialize;

use super::Model;
use crate::affinity::{conditional_probabilities, PerplexityParams};
use crate::backend::{BackendKind, Resolved};
use crate::kernel::Kernel;
use crate::knn::{self, Neighbors};
use crate::progress::Progress;
use crate::repulse::fftnd::Planners;
use crate::repulse::g2g::cpu::{channels, Convolver};
use crate::repulse::g2s::cpu::gather;
use crate::repulse::grid::{Grid, Ladder};
use crate::repulse::s2g::cpu::Scatter;
use crate::repulse::GridSpec;
use crate::{Error, Points, Result};

/// Parameters of [`transform`]. The defaults are those of openTSNE's
/// `TSNEEmbedding.transform` (openTSNE 1.0; in its source `early_exaggeration_iter=0`, so of
/// its two momenta only `final_momentum=0.8` acts): a small perplexity, since a new point
/// should sit with its closest reference points rather than among a wide neighbourhood, and
/// a short, gentle optimisation that refines the median start without tearing it away.
#[derive(Clone, Debug, Serialize)]
pub struct TransformParams {
    /// Perplexity of $p_{j|i}$ over the ⌈3·perplexity⌉ nearest reference points (default 5).
    pub perplexity: f64,
    /// Reference neighbours whose median position starts each new point (default 25).
    pub init_neighbors: usize,
    /// Gradient steps (default 250; 0 keeps the median start).
    pub iters: usize,
    /// Step size (default 0.1).
    pub learning_rate: f64,
    /// Factor on the attraction throughout (default 1.5).
    pub exaggeration: f64,
    /// Momentum (default 0.8).
    pub momentum: f64,
    /// Each point's gradient is scaled down to at most this norm (default 0.25), so that a
    /// point started in a poor place moves steadily instead of jumping.
    pub max_grad_norm: f64,
    /// Where the neighbour search and the descent run: `cpu`, `gpu` (or `hybrid`, the
    /// same here: there is no host attraction to overlap), `auto` (gpu when usable;
    /// default). The fixed fields are made on the host either way (once, in f64).
    pub backend: BackendKind,
}

impl Default for TransformParams {
    fn default() -> Self {
        TransformParams {
            perplexity: 5.0,
            init_neighbors: 25,
            iters: 250,
            learning_rate: 0.1,
            exaggeration: 1.5,
            momentum: 0.8,
            max_grad_norm: 0.25,
            backend: BackendKind::Auto,
        }
    }
}

impl TransformParams {
    /// Range checks: every number finite, perplexity ≥ 1, rates and factors ≥ 0, momentum
    /// below 1, at least one starting neighbour.
    pub fn validate(&self) -> Result<()> {
        let checks: [(&'static str, f64, bool); 5] = [
            ("perplexity", self.perplexity, self.perplexity >= 1.0),
            (
                "learning-rate",
                self.learning_rate,
                self.learning_rate >= 0.0,
            ),
            ("exaggeration", self.exaggeration, self.exaggeration >= 0.0),
            (
                "momentum",
                self.momentum,
                (0.0..1.0).contains(&self.momentum),
            ),
            (
                "max-grad-norm",
                self.max_grad_norm,
                self.max_grad_norm > 0.0,
            ),
        ];
        for (name, v, ok) in checks {
            if !(ok && v.is_finite()) {
                return Err(Error::param(name, format!("out of range: {v}")));
            }
        }
        if self.init_neighbors == 0 {
            return Err(Error::param("init-neighbors", "must be at least 1"));
        }
        Ok(())
    }
}

/// Seconds per stage of [`transform`].
#[derive(Clone, Debug, Default, Serialize)]
pub struct TransformSeconds {
    pub prepare: f64,
    pub knn: f64,
    pub affinities: f64,
    pub init: f64,
    pub fields: f64,
    pub optimise: f64,
    pub total: f64,
}

/// What a [`transform`] did.
#[derive(Clone, Debug, Serialize)]
pub struct TransformReport {
    pub version: &'static str,
    /// Where it ran, and why `auto` chose it.
    pub backend: Resolved,
    /// New points placed.
    pub n_new: usize,
    /// Reference points of the map.
    pub n_reference: usize,
    /// Reference neighbours per new point in P.
    pub k: usize,
    /// Grid nodes per axis of the fixed fields.
    pub grid_nodes: usize,
    pub params: TransformParams,
    pub seconds: TransformSeconds,
    /// Mean distance the optimisation moved a point from its median start.
    pub mean_shift: f64,
    /// Filled by the caller when labels are given: the fraction of new points whose label
    /// is the majority of their 10 nearest reference points' in the map.
    pub knn_accuracy: Option<f64>,
    pub notes: Vec<String>,
}

/// The result of [`transform`].
pub struct Placed {
    /// Row-major m × dims coordinates of the new points.
    pub y: Vec<f32>,
    pub dims: usize,
    pub report: TransformReport,
}

/// Places the rows of `new` (the reference's input features) into `model`'s map.
///
/// Errors: another feature count than the reference's input, rows the metric refuses,
/// non-finite values, parameters out of range.
pub fn transform(
    model: &Model,
    mut new: Points,
    params: &TransformParams,
    progress: &dyn Progress,
) -> Result<Placed> {
    let start = Instant::now();
    params.validate()?;
    let backend = params.backend.resolve()?;
    let on_device = backend.kind.on_device();
    let mut seconds = TransformSeconds::default();
    if new.d != model.d_in {
        return Err(Error::Data(format!(
            "the new points have {} features, but the model's reference points had {}",
            new.d, model.d_in
        )));
    }
    let mut notes = Vec::new();

    // Step 1: the reference's row transform and PCA projection.
    let t = Instant::now();
    model.metric.apply(&mut new)?;
    let new = match &model.pca {
        Some(pca) => pca.transform(&new)?,
        None => new,
    };
    seconds.prepare = t.elapsed().as_secs_f64();

    // Step 2: exact neighbours among the reference points, enough for P and the start.
    let t = Instant::now();
    let reference = model.reference();
    let n = reference.n;
    let key = knn::Key::new(model.metric, &reference);
    let (nb, k) = reference_neighbors(
        &reference,
        &new,
        params,
        (on_device, key),
        &mut notes,
        progress,
    )?;
    seconds.knn = t.elapsed().as_secs_f64();

    // Step 3: p_{j|i} over the k nearest, each row summing to 1.
    let t = Instant::now();
    let (first, p) = affinities(&nb, k, params, &mut notes)?;
    seconds.affinities = t.elapsed().as_secs_f64();

    // Step 4: the median of the nearest reference positions, axis by axis.
    let t = Instant::now();
    let dims = model.dims;
    let init_k = params.init_neighbors.min(n);
    let mut y = median_start(&nb, init_k, &model.y, dims);
    let y0 = y.clone();
    seconds.init = t.elapsed().as_secs_f64();

    // Step 5: the fixed fields of the reference, then the descent.
    let t = Instant::now();
    let kernel = Kernel::new(model.dof)?;
    let fields = Fields::of(&model.y, dims, kernel)?;
    seconds.fields = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let problem = Problem {
        first: &first,
        p: &p,
        reference_y: &model.y,
        kernel,
        fields: &fields,
    };
    if on_device {
        super::gpu::descend(&problem, &mut y, dims, params, progress)?;
    } else {
        match dims {
            1 => problem.descend::<1>(&mut y, params, progress),
            2 => problem.descend::<2>(&mut y, params, progress),
            _ => problem.descend::<3>(&mut y, params, progress),
        }
    }
    seconds.optimise = t.elapsed().as_secs_f64();
    let mean_shift = y
        .chunks_exact(dims)
        .zip(y0.chunks_exact(dims))
        .map(|(a, b)| (knn::sq_dist(a, b) as f64).sqrt())
        .sum::<f64>()
        / new.n.max(1) as f64;
    seconds.total = start.elapsed().as_secs_f64();
    Ok(Placed {
        y,
        dims,
        report: TransformReport {
            version: env!("CARGO_PKG_VERSION"),
            backend,
            n_new: new.n,
            n_reference: n,
            k,
            grid_nodes: fields.grid.p,
            params: params.clone(),
            seconds,
            mean_shift,
            knn_accuracy: None,
            notes,
        },
    })
}

/// Step 2 of [`transform`]: the exact neighbours of the `new` points among the
/// `reference` points (on the GPU when `on_device`), as many as P (k = ⌈3·perplexity⌉,
/// capped at the reference's size with a note) and the median start (`init_neighbors`)
/// need, whichever is more; and k.
fn reference_neighbors(
    reference: &Points,
    new: &Points,
    params: &TransformParams,
    (on_device, key): (bool, knn::Key),
    notes: &mut Vec<String>,
    progress: &dyn Progress,
) -> Result<(Neighbors, usize)> {
    let n = reference.n;
    let k_wanted = (3.0 * params.perplexity).ceil() as usize;
    let k = k_wanted.min(n);
    if k < k_wanted {
        notes.push(format!(
            "k capped at the {n} reference points (⌈3·perplexity⌉ = {k_wanted})"
        ));
    }
    let k_all = k.max(params.init_neighbors.min(n));
    let nb = if on_device {
        knn::gpu::query_gpu(reference, new, k_all, key, progress)?
    } else {
        knn::query(reference, new, k_all, key, progress)?
    };
    Ok((nb, k))
}

/// Step 3 of [`transform`]: p_{j|i} over each new point's `k` nearest reference points
/// (the first `k` columns of `nb`), each row summing to 1, at a perplexity those k can
/// carry (lowered, with a note, when `params.perplexity` is more).
fn affinities(
    nb: &Neighbors,
    k: usize,
    params: &TransformParams,
    notes: &mut Vec<String>,
) -> Result<(Neighbors, Vec<f32>)> {
    let first = first_columns(nb, k);
    let perplexity = params.perplexity.min(k as f64 - 1.0).max(1.0);
    if perplexity < params.perplexity {
        notes.push(format!(
            "perplexity lowered to {perplexity}: {k} neighbours cannot carry more"
        ));
    }
    let p = conditional_probabilities(
        &first,
        &PerplexityParams {
            perplexity,
            ..Default::default()
        },
    )?;
    Ok((first, p))
}

/// The first `k` columns of `nb` (its nearest `k`, as rows are sorted by distance).
fn first_columns(nb: &Neighbors, k: usize) -> Neighbors {
    let pick = |v: &[u32]| -> Vec<u32> {
        v.chunks_exact(nb.k)
            .flat_map(|r| &r[..k])
            .copied()
            .collect()
    };
    Neighbors {
        n: nb.n,
        k,
        indices: pick(&nb.indices),
        distances: nb
            .distances
            .chunks_exact(nb.k)
            .flat_map(|r| &r[..k])
            .copied()
            .collect(),
    }
}

/// Each new point at the per-axis median of its `k` nearest reference points' positions
/// (openTSNE's `initialization="median"`): robust to a neighbour that sits in another
/// cluster of the map, which a mean would be pulled towards.
fn median_start(nb: &Neighbors, k: usize, ref_y: &[f32], dims: usize) -> Vec<f32> {
    let mut y = vec![0f32; nb.n * dims];
    let mut axis = Vec::with_capacity(k);
    for (out, row) in y.chunks_exact_mut(dims).zip(nb.indices.chunks_exact(nb.k)) {
        for (a, o) in out.iter_mut().enumerate() {
            axis.clear();
            axis.extend(row[..k].iter().map(|&j| ref_y[j as usize * dims + a]));
            axis.sort_unstable_by(f32::total_cmp);
            let h = axis.len() / 2;
            *o = if axis.len() % 2 == 1 {
                axis[h]
            } else {
                0.5 * (axis[h - 1] + axis[h])
            };
        }
    }
    y
}

/// The reference's fields on a grid: per node, ψ, φ₀, φ¹ … φ^dims (interleaved), with the
/// φ^a about the grid's centre.
pub(super) struct Fields {
    pub(super) grid: Grid,
    pub(super) values: Vec<f64>,
}

/// Margin around the reference's box, as a fraction of its extent, where new points still
/// read interpolated fields; beyond it they read the edge's (the attraction brings them
/// back).
const MARGIN: f64 = 0.1;

impl Fields {
    fn of(ref_y: &[f32], dims: usize, kernel: Kernel) -> Result<Fields> {
        let mut lo = [0f64; 3];
        let mut hi = [0f64; 3];
        for a in 0..dims {
            let (l, h) = ref_y
                .iter()
                .skip(a)
                .step_by(dims)
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
                    (l.min(v as f64), h.max(v as f64))
                });
            let pad = MARGIN * (h - l) + 1.0;
            (lo[a], hi[a]) = (l - pad, h + pad);
        }
        let spec = GridSpec::default_for(dims, false).for_kernel(kernel);
        let grid = Grid::fit_box(lo, hi, dims, spec, Ladder::Fine)?;
        let len = grid.len();
        let nch = channels(dims);
        let mut charges = vec![0f64; nch * len];
        match dims {
            1 => Scatter::new().run::<1>(ref_y, &grid, &mut charges),
            2 => Scatter::new().run::<2>(ref_y, &grid, &mut charges),
            _ => Scatter::new().run::<3>(ref_y, &grid, &mut charges),
        }
        let mut conv = Convolver::new(&mut Planners::default(), grid.p, dims, grid.h, kernel);
        let mut phi = vec![0f64; nch * len];
        conv.convolve(&charges, &mut phi);
        let mut psi = vec![0f64; len];
        conv.convolve_g1(&charges, &mut psi);
        let mut values = Vec::with_capacity((nch + 1) * len);
        for (s, f) in psi.iter().zip(phi.chunks_exact(nch)) {
            values.push(*s);
            values.extend_from_slice(f);
        }
        Ok(Fields { grid, values })
    }

    /// `y` moved inside the grid's interpolation range (grid coordinates 1.5 ..= p − 2.5).
    fn clamp_into(&self, y: &[f32], out: &mut [f32]) {
        let g = &self.grid;
        let dims = g.dims;
        for (o, (i, &v)) in out.iter_mut().zip(y.iter().enumerate()) {
            let a = i % dims;
            let lo = g.origin[a] + 1.5 * g.h;
            let hi = g.origin[a] + (g.p as f64 - 2.5) * g.h;
            *o = (v as f64).clamp(lo, hi) as f32;
        }
    }
}

/// What the descent reads.
pub(super) struct Problem<'a> {
    pub(super) first: &'a Neighbors,
    pub(super) p: &'a [f32],
    pub(super) reference_y: &'a [f32],
    pub(super) kernel: Kernel,
    pub(super) fields: &'a Fields,
}

impl Problem<'_> {
    /// Gradient descent with momentum on every new point at once (each moves on its own
    /// gradient, see the module doc), per-point gradients clipped to `max_grad_norm`.
    fn descend<const D: usize>(
        &self,
        y: &mut [f32],
        params: &TransformParams,
        progress: &dyn Progress,
    ) {
        let m = y.len() / D;
        let k = self.first.k;
        let grid = &self.fields.grid;
        let mut at = vec![0f32; y.len()];
        let mut vals = vec![0f64; m * (D + 2)];
        let mut velocity = vec![0f64; y.len()];
        progress.begin("transform", params.iters as u64);
        for _ in 0..params.iters {
            self.fields.clamp_into(y, &mut at);
            gather::<f64, D>(&at, grid, self.kernel, &self.fields.values, &mut vals);
            use rayon::prelude::*;
            y.par_chunks_exact_mut(D)
                .zip(velocity.par_chunks_exact_mut(D))
                .zip(at.par_chunks_exact(D).zip(vals.par_chunks_exact(D + 2)))
                .enumerate()
                .for_each(|(i, ((yi, vi), (ai, f)))| {
                    let mut grad = [0f64; D];
                    // Attraction to the reference neighbours.
                    let nbrs = &self.first.indices[i * k..(i + 1) * k];
                    for (&j, &pij) in nbrs.iter().zip(&self.p[i * k..(i + 1) * k]) {
                        let yj = &self.reference_y[j as usize * D..(j as usize + 1) * D];
                        let mut d2 = 0.0;
                        let mut diff = [0f64; D];
                        for a in 0..D {
                            diff[a] = yi[a] as f64 - yj[a] as f64;
                            d2 += diff[a] * diff[a];
                        }
                        let w = params.exaggeration * pij as f64 * self.kernel.edge(d2);
                        for a in 0..D {
                            grad[a] += w * diff[a];
                        }
                    }
                    // Repulsion from the reference, from the fields at the (clamped) point.
                    let psi = f[0].max(f64::MIN_POSITIVE);
                    for a in 0..D {
                        let c = ai[a] as f64 - grid.centre[a];
                        grad[a] = 2.0 * (grad[a] - (c * f[1] - f[2 + a]) / psi);
                    }
                    let norm = grad.iter().map(|g| g * g).sum::<f64>().sqrt();
                    let scale = if norm > params.max_grad_norm {
                        params.max_grad_norm / norm
                    } else {
                        1.0
                    };
                    for a in 0..D {
                        vi[a] = params.momentum * vi[a] - params.learning_rate * scale * grad[a];
                        yi[a] = (yi[a] as f64 + vi[a]) as f32;
                    }
                });
            progress.advance(1);
        }
        progress.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// The repulsion read from the interpolated fields, (y φ₀ − φ)/ψ, matches the exact
    /// Σ_j q_{j|i} w^{1/α} (y − y_j) at points inside the map (relative L2 error below 2 %,
    /// 5 % in 3-D, whose default grid is a coarse fixed one), and ψ the exact Σ_j w within 1 %, for the Cauchy and a heavy-tailed kernel, in 1-D to 3-D.
    #[test]
    fn fields_match_exact_sums() {
        let mut rng = StdRng::seed_from_u64(3);
        for dims in 1..=3 {
            for dof in [1.0, 0.5] {
                let kernel = Kernel::new(dof).unwrap();
                let n = 400;
                let y: Vec<f32> = (0..n * dims).map(|_| rng.random::<f32>() * 20.0).collect();
                let f = Fields::of(&y, dims, kernel).unwrap();
                let m = 30;
                let at: Vec<f32> = (0..m * dims).map(|_| rng.random::<f32>() * 20.0).collect();
                let mut vals = vec![0f64; m * (dims + 2)];
                match dims {
                    1 => gather::<f64, 1>(&at, &f.grid, kernel, &f.values, &mut vals),
                    2 => gather::<f64, 2>(&at, &f.grid, kernel, &f.values, &mut vals),
                    _ => gather::<f64, 3>(&at, &f.grid, kernel, &f.values, &mut vals),
                };
                let (mut err, mut norm) = (0.0, 0.0);
                for (x, v) in at.chunks_exact(dims).zip(vals.chunks_exact(dims + 2)) {
                    let psi: f64 = y
                        .chunks_exact(dims)
                        .map(|yj| kernel.g1(knn::sq_dist(x, yj) as f64))
                        .sum();
                    assert!(
                        (v[0] - psi).abs() < 1e-2 * psi,
                        "dims {dims}, dof {dof}: ψ {} vs {psi}",
                        v[0]
                    );
                    for a in 0..dims {
                        let want: f64 = y
                            .chunks_exact(dims)
                            .map(|yj| kernel.g2(knn::sq_dist(x, yj) as f64) * (x[a] - yj[a]) as f64)
                            .sum::<f64>()
                            / psi;
                        let c = x[a] as f64 - f.grid.centre[a];
                        let got = (c * v[1] - v[2 + a]) / v[0];
                        err += (got - want).powi(2);
                        norm += want * want;
                    }
                }
                let rel = (err / norm).sqrt();
                let bound = if dims == 3 { 5e-2 } else { 2e-2 };
                assert!(rel < bound, "dims {dims}, dof {dof}: relative error {rel}");
            }
        }
    }
}
