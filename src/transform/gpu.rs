//! The descent of `sgtsne transform` on the GPU (`kernels/transform.cu`): the twin of the
//! host's, one thread per new point and one launch per step. The reference, its fixed
//! fields (made once on the host in f64: an S2G and one convolution, a few MB) and the
//! neighbours go to the device once; Y comes back once at the end.

use super::place::{Problem, TransformParams};
use crate::gpu::kernels::repulse::GridGeom;
use crate::gpu::kernels::transform::TransformStep;
use crate::gpu::Gpu;
use crate::progress::Progress;
use crate::Result;

/// `params.iters` steps of every new point of `y` (m × `dims`, updated in place) against
/// the `problem`'s reference, as `Problem::descend` takes them on the host.
pub(super) fn descend(
    problem: &Problem<'_>,
    y: &mut [f32],
    dims: usize,
    params: &TransformParams,
    progress: &dyn Progress,
) -> Result<()> {
    let gpu = Gpu::get()?;
    let s = &gpu.stream;
    let (m, k) = (y.len() / dims, problem.first.k);
    let grid = &problem.fields.grid;
    let nbr: Vec<i32> = problem.first.indices.iter().map(|&j| j as i32).collect();
    let nbr = s.clone_htod(&nbr)?;
    let p = s.clone_htod(problem.p)?;
    let ref_y = s.clone_htod(problem.reference_y)?;
    let fields = s.clone_htod(&problem.fields.values)?;
    let mut y_dev = s.clone_htod(y)?;
    let mut velocity = s.alloc_zeros::<f64>(m * dims)?;
    let (len, n, geom) = (
        grid.len(),
        problem.reference_y.len() / dims,
        GridGeom::of(grid),
    );
    progress.begin("transform", params.iters as u64);
    for _ in 0..params.iters {
        TransformStep {
            dims,
            len,
            n,
            m,
            k,
            y: &mut y_dev,
            velocity: &mut velocity,
            nbr: &nbr,
            p: &p,
            ref_y: &ref_y,
            fields: &fields,
            geom,
            dof: problem.kernel.dof,
            exaggeration: params.exaggeration,
            learning_rate: params.learning_rate,
            momentum: params.momentum,
            max_grad_norm: params.max_grad_norm,
        }
        .launch(gpu, s, gpu.config(m))?;
        progress.advance(1);
    }
    s.memcpy_dtoh(&y_dev, y)?;
    progress.end();
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::backend::BackendKind;
    use crate::prep::Metric;
    use crate::progress::Silent;
    use crate::transform::{transform, Model, TransformParams};
    use crate::Points;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    crate::gpu::gpu_test! {
        /// The GPU places new points where the host does, in 1-D, 2-D and 3-D and for a
        /// heavy-tailed kernel: reference points in ten clusters whose map is their first
        /// coordinates spread out, new points drawn from the same clusters; after 250 steps
        /// the two placements differ by float rounding only (mean under 1e-3 of the map's
        /// extent, every point under 5e-2).
        fn gpu_transform_equals_cpu_transform(_gpu) {
            let seed = rand::random();
            let mut rng = StdRng::seed_from_u64(seed);
            let (n, m, d) = (3000, 500, 8);
            let centres: Vec<f32> = (0..10 * d).map(|_| rng.random_range(-10.0..10.0)).collect();
            let mut draw = |rows: usize| {
                let mut data = Vec::with_capacity(rows * d);
                for i in 0..rows {
                    let c = (i * 7 + rng.random_range(0..3)) % 10;
                    data.extend((0..d).map(|a| centres[c * d + a] + rng.random_range(-1.0..1.0)));
                }
                Points::new(rows, d, data)
            };
            let reference = draw(n);
            let new = draw(m);
            for (dims, dof) in [(1, 1.0), (2, 1.0), (2, 0.5), (3, 1.0)] {
                let y: Vec<f32> = reference
                    .data
                    .chunks_exact(d)
                    .flat_map(|r| r[..dims].iter().map(|v| 3.0 * v))
                    .collect();
                let model = Model {
                    metric: Metric::Euclidean,
                    d_in: d,
                    pca: None,
                    n,
                    d,
                    points: reference.data.clone(),
                    dims,
                    y,
                    perplexity: 30.0,
                    dof,
                };
                let place = |backend| {
                    let params = TransformParams {
                        backend,
                        ..TransformParams::default()
                    };
                    transform(&model, new.clone(), &params, &Silent).unwrap()
                };
                let cpu = place(BackendKind::Cpu);
                let dev = place(BackendKind::Gpu);
                assert_eq!(dev.report.backend.kind, BackendKind::Gpu);
                let extent = 60.0;
                let diffs: Vec<f64> = cpu
                    .y
                    .iter()
                    .zip(&dev.y)
                    .map(|(a, b)| (a - b).abs() as f64 / extent)
                    .collect();
                let mean = diffs.iter().sum::<f64>() / diffs.len() as f64;
                let worst = diffs.iter().cloned().fold(0.0, f64::max);
                assert!(mean < 1e-3, "seed {seed} {dims}-D dof {dof}: mean {mean}");
                assert!(worst < 5e-2, "seed {seed} {dims}-D dof {dof}: worst {worst}");
            }
        }
    }
}
