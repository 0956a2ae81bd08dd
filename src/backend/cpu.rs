//! The CPU backend's gradient: CSB attraction and a [`Repulse`] implementation.

use std::time::Instant;

use rayon::prelude::*;

use crate::attract::Attract;
use crate::kernel::Kernel;
use crate::optim::{Gradient, GradientInfo};
use crate::repulse::Repulse;
use crate::sparse::{Csb, P};
use crate::Result;

/// $g = α F_{attr} − F_{rep}$ on the host.
pub struct CpuGradient<'p> {
    attract: &'p Csb,
    /// The attraction's kernel; the repulsion holds its own copy.
    kernel: Kernel,
    repulse: Box<dyn Repulse>,
    /// Σ p ln p, the constant part of KL(P‖Q).
    p_log_p: f64,
    f_attr: Vec<f32>,
    f_rep: Vec<f32>,
}

impl<'p> CpuGradient<'p> {
    /// The gradient of P (in CSB: [`P::into_csb`]) with the repulsion `repulse`, for
    /// t-SNE's Cauchy kernel.
    pub fn new(p: &'p P, repulse: Box<dyn Repulse>) -> Result<Self> {
        Self::with_kernel(p, repulse, Kernel::CAUCHY)
    }

    /// The same for the heavy-tailed `kernel`, which `repulse` must have been built with.
    pub fn with_kernel(p: &'p P, repulse: Box<dyn Repulse>, kernel: Kernel) -> Result<Self> {
        Ok(CpuGradient {
            attract: p.csb()?,
            kernel,
            repulse,
            p_log_p: p.p_log_p(),
            f_attr: Vec::new(),
            f_rep: Vec::new(),
        })
    }
}

impl Gradient for CpuGradient<'_> {
    fn gradient(
        &mut self,
        y: &[f32],
        dims: usize,
        exaggeration: f32,
        grad: &mut [f32],
        with_kl: bool,
    ) -> Result<GradientInfo> {
        self.f_attr.resize(y.len(), 0.0);
        self.f_rep.resize(y.len(), 0.0);
        let t = Instant::now();
        let p_log_w = self
            .attract
            .attract_with(self.kernel, y, dims, &mut self.f_attr, with_kl)?;
        let attract_seconds = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let rep = self.repulse.repulse(y, dims, &mut self.f_rep)?;
        let repulse_seconds = t.elapsed().as_secs_f64();
        combine(grad, &self.f_attr, &self.f_rep, exaggeration);
        Ok(GradientInfo {
            z: rep.z,
            kl: kl(self.p_log_p, p_log_w, rep.z),
            attract_seconds,
            repulse_seconds,
            repulse_split: rep.times,
            grid: rep.grid,
        })
    }
}

/// g = α F_attr − F_rep, in parallel over the pool.
pub(crate) fn combine(grad: &mut [f32], f_attr: &[f32], f_rep: &[f32], exaggeration: f32) {
    grad.par_chunks_mut(4096)
        .zip(f_attr.par_chunks(4096).zip(f_rep.par_chunks(4096)))
        .for_each(|(g, (a, r))| {
            for ((g, &a), &r) in g.iter_mut().zip(a).zip(r) {
                *g = exaggeration * a - r;
            }
        });
}

/// KL(P‖Q) = Σ p ln p − Σ p ln w + ln Z (Q = w / Z; DESIGN §2), when Σ p ln w was computed.
pub(crate) fn kl(p_log_p: f64, p_log_w: Option<f64>, z: f64) -> Option<f64> {
    p_log_w.map(|plw| p_log_p - plw + z.ln())
}
