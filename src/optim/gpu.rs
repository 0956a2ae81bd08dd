//! The optimiser step on the device (`kernels/optim.cu`): the same rule as
//! [`super::schedule::step`] and [`super::schedule::recentre`], fused so that Y, the
//! update and the gains never leave the GPU.

use cudarc::driver::CudaSlice;

use super::schedule::Phase;
use super::OptimParams;
use crate::gpu::comm::Ranks;
use crate::gpu::kernels::optim::{OptimCoarseSums, OptimRecentre, OptimStep};
use crate::gpu::{Gpu, GpuError};

/// Device state of the descent: update and gains per coordinate, and the column sums
/// used for re-centring (exact sums, [`crate::gpu::sum`], so that the mean does not depend
/// on the order the blocks add in).
pub struct OptimizerGpu {
    n: usize,
    dims: usize,
    update: CudaSlice<f32>,
    gains: CudaSlice<f32>,
    sums: CudaSlice<u64>,
    /// The coarse step's cells ([`super::coarse`]), made by the first step that takes one;
    /// a one-word stand-in until then (the step kernel reads it only when boosting).
    records: CudaSlice<i64>,
}

impl OptimizerGpu {
    /// Zero update, unit gains, for n points in `dims` dimensions.
    pub fn new(gpu: &Gpu, n: usize, dims: usize) -> Result<Self, GpuError> {
        Ok(OptimizerGpu {
            n,
            dims,
            update: gpu.stream.alloc_zeros(n * dims)?,
            gains: crate::gpu::memory::filled(gpu, n * dims, 1f32)?,
            sums: gpu.stream.alloc_zeros(dims * crate::gpu::sum::WORDS)?,
            records: gpu.stream.alloc_zeros(1)?,
        })
    }

    /// One step from g = α·F_attr − F_rep, then re-centring; all on `gpu.stream`.
    pub fn step(
        &mut self,
        gpu: &Gpu,
        y: &mut CudaSlice<f32>,
        attr: &CudaSlice<f32>,
        rep: &CudaSlice<f32>,
        phase: Phase,
        params: &OptimParams,
    ) -> Result<(), GpuError> {
        self.step_ranks(
            gpu,
            y,
            (attr, rep),
            phase,
            params,
            (&Ranks::single(), self.n),
        )
    }

    /// [`OptimizerGpu::step`] of one GPU's rows in a run over several: the column sums of
    /// every rank's rows are added up (`ranks`, exact sums, so the mean is the same on
    /// every GPU and for any number of them) and the mean taken over the `total` points;
    /// so are the coarse step's cells (integers: the same words on every GPU).
    pub fn step_ranks(
        &mut self,
        gpu: &Gpu,
        y: &mut CudaSlice<f32>,
        (attr, rep): (&CudaSlice<f32>, &CudaSlice<f32>),
        phase: Phase,
        params: &OptimParams,
        (ranks, total): (&Ranks, usize),
    ) -> Result<(), GpuError> {
        let (n, dims) = (self.n, self.dims);
        let s = &gpu.stream;
        s.memset_zeros(&mut self.sums)?;
        let cells = super::coarse::cells_per_axis(dims);
        let inv_cell = 1.0 / params.coarse_cell;
        if phase.boost > 0.0 {
            let len = cells.pow(dims as u32) * (dims + 1);
            if self.records.len() != len {
                self.records = s.alloc_zeros(len)?;
            } else {
                s.memset_zeros(&mut self.records)?;
            }
            OptimCoarseSums {
                dims,
                n,
                alpha: phase.exaggeration,
                eta: params.learning_rate,
                inv_cell,
                cells,
                attr,
                rep,
                y: &*y,
                records: &mut self.records,
                n_records: len,
            }
            .launch(gpu, s, gpu.config(n))?;
            ranks.sum(&mut self.records)?;
        }
        OptimStep {
            dims,
            n,
            alpha: phase.exaggeration,
            momentum: phase.momentum,
            eta: params.learning_rate,
            min_gain: params.min_gain,
            max_step: params.max_step_norm.unwrap_or(f32::INFINITY),
            attr,
            rep,
            y: &mut *y,
            update: &mut self.update,
            gains: &mut self.gains,
            sums: &mut self.sums,
            boost: phase.boost,
            inv_cell,
            cells,
            records: &self.records,
            n_records: self.records.len(),
        }
        .launch(gpu, s, gpu.config(n))?;
        ranks.sum(&mut self.sums)?;
        OptimRecentre {
            dims,
            n,
            total,
            y,
            sums: &self.sums,
        }
        .launch(gpu, s, gpu.config(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optim::schedule;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    crate::gpu::gpu_test! {
        /// Five device steps equal five host steps (same gains rule, momentum, re-centring).
        fn device_steps_equal_host_steps(gpu) {
            let seed = rand::random();
            let mut rng = StdRng::seed_from_u64(seed);
            // Without and with the coarse step (cells of 0.25: tens of points a cell at the
            // start, the edge cells once Y has grown).
            for (dims, coarse_boost) in (1..=3).flat_map(|d| [(d, 0.0), (d, 3.0)]) {
                let n = 10_007;
                let params = OptimParams {
                    learning_rate: 7.0,
                    coarse_boost,
                    coarse_cell: 0.25,
                    ..Default::default()
                };
                let mut coarse = crate::optim::coarse::CoarseCells::new();
                let mut y: Vec<f32> = (0..n * dims).map(|_| rng.random_range(-1.0..1.0)).collect();
                let mut y_dev = gpu.stream.clone_htod(&y).unwrap();
                let mut opt = OptimizerGpu::new(gpu, n, dims).unwrap();
                let (mut update, mut gains) = (vec![0f32; n * dims], vec![1f32; n * dims]);
                let mut grad = vec![0f32; n * dims];
                for iter in [0, 1, 2, 300, 301] {
                    let phase = params.phase(iter);
                    let attr: Vec<f32> =
                        (0..n * dims).map(|_| rng.random_range(-1.0..1.0)).collect();
                    // A gradient within rounding of zero could take the other branch of
                    // the gains' rule on the device, which forms α·attr − rep in one
                    // fused multiply-add: every entry is kept at least 1e-3 from zero.
                    let rep: Vec<f32> = (0..n * dims)
                        .map(|t| {
                            let r = rng.random_range(-1.0..1.0);
                            let g = phase.exaggeration * attr[t] - r;
                            if g.abs() < 1e-3 { r + 2e-3 } else { r }
                        })
                        .collect();
                    for t in 0..n * dims {
                        grad[t] = phase.exaggeration * attr[t] - rep[t];
                    }
                    schedule::step(
                        &mut y,
                        &grad,
                        (&mut update, &mut gains, &mut coarse),
                        dims,
                        phase,
                        &params,
                    );
                    schedule::recentre(&mut y, dims);
                    let a = gpu.stream.clone_htod(&attr).unwrap();
                    let r = gpu.stream.clone_htod(&rep).unwrap();
                    opt.step(gpu, &mut y_dev, &a, &r, phase, &params).unwrap();
                }
                let got = gpu.stream.clone_dtoh(&y_dev).unwrap();
                // Y grows to hundreds in five steps at η = 7, so compare relative to its scale:
                // fused multiply-adds and the order of the mean's sum differ by a few ulps.
                // A last update within rounding of zero (about one coordinate in 10^7) can
                // still take the gains' other branch: at most two coordinates may differ
                // more, where a wrong kernel moves thousands.
                let scale = y.iter().fold(0f32, |m, v| m.max(v.abs()));
                let far: Vec<(usize, f32)> = y
                    .iter()
                    .zip(&got)
                    .map(|(a, b)| (a - b).abs())
                    .enumerate()
                    .filter(|&(_, d)| d > 1e-5 * scale)
                    .collect();
                assert!(
                    far.len() <= 2,
                    "seed {seed}, dims {dims}, boost {coarse_boost}: |Δy| beyond {} at {} \
                     coordinates, the first (coordinate, |Δy|) {:?}",
                    1e-5 * scale,
                    far.len(),
                    &far[..far.len().min(5)]
                );
            }
        }
    }
}
