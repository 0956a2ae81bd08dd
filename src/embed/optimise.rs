//! Stages 5 and 7, the optimisation (DESIGN §1.5, §1.7): P laid out for the backend that
//! reads it, then gradient descent on the host, on the device, or on both at once, with an
//! observer that sees Y in input order whichever numbering the run uses inside.

use super::EmbedParams;
use crate::backend::gpu::{optimize_device_observed, Downloaded};
use crate::backend::{cpu::CpuGradient, hybrid::optimize_hybrid, multi, BackendKind};
use crate::gpu::Gpu;
use crate::optim::{self, Observer, OptimParams, OptimReport, Stop};
use crate::progress::Progress;
use crate::report::StageSeconds;
use crate::sparse::{Csb, P};
use crate::Result;

/// Shows Y in input order to an observer of the optimisation, which runs in the internal
/// numbering (`order`: row r is input point `order[r]`; `None`: the input's), by the
/// inverse permutation, made at the first observation and kept for the next ones.
pub(super) struct InputOrder<'a> {
    inner: &'a mut dyn Observer<[f32]>,
    order: Option<&'a [u32]>,
    dims: usize,
    /// The position of each input point, once made.
    inverse: Option<Vec<u32>>,
}

impl<'a> InputOrder<'a> {
    pub(super) fn new(
        inner: &'a mut dyn Observer<[f32]>,
        order: Option<&'a [u32]>,
        dims: usize,
    ) -> Self {
        InputOrder {
            inner,
            order,
            dims,
            inverse: None,
        }
    }
}

impl Observer<[f32]> for InputOrder<'_> {
    fn wants(&self, iter: usize) -> bool {
        self.inner.wants(iter)
    }

    fn observe(&mut self, iter: usize, y: &[f32]) -> Result<()> {
        match self.order {
            Some(order) => {
                let inverse = self
                    .inverse
                    .get_or_insert_with(|| crate::points::inverse_permutation(order));
                let y = crate::points::gather_rows(y, inverse, self.dims);
                self.inner.observe(iter, &y)
            }
            None => self.inner.observe(iter, y),
        }
    }

    fn stop(&self, iter: usize) -> Option<Stop> {
        self.inner.stop(iter)
    }

    fn kl(&mut self, iter: usize, kl: f64) {
        self.inner.kl(iter, kl)
    }
}

/// Stages 5 and 7: the learning rate settled (`auto`: max(n / early exaggeration, 50),
/// Belkina et al. 2019; kept in `params` for the report), P in the layout the backend reads
/// (CSB on the host for cpu and hybrid, HYB on the device for gpu), then the backend's
/// optimiser: on the host with the repulsion on the CPU (cpu) or on the GPU at the same time
/// as the attraction (hybrid), or on the device, where Y goes up once and comes back once
/// (gpu), unless `observer` asks to see it; over several GPUs
/// ([`crate::backend::multi`], `--gpus`), P is cut into their row blocks instead.
pub(super) fn optimise(
    p: P,
    y: &mut [f32],
    params: &mut EmbedParams,
    backend: BackendKind,
    seconds: &mut StageSeconds,
    progress: &dyn Progress,
    observer: Option<&mut dyn Observer<[f32]>>,
) -> Result<OptimReport> {
    let lr = params
        .learning_rate
        .unwrap_or_else(|| OptimParams::auto_learning_rate(p.n(), params.optim.early_exaggeration));
    params.learning_rate = Some(lr);
    params.optim.learning_rate = lr;
    let gpus = match backend {
        BackendKind::Gpu => params.gpus.unwrap_or(1),
        _ => 1,
    };
    let (dims, repulsion) = (params.dims, params.repulsion_spec());
    if gpus > 1 {
        // The layout (P cut into the GPUs' blocks) is the multi-GPU optimisation's set-up.
        let t = seconds.start("optimise");
        let (report, setup) = multi::optimize_multi(
            gpus,
            p,
            params.kernel,
            &repulsion,
            y,
            dims,
            &params.optim,
            progress,
            observer,
        )?;
        seconds.layout = setup;
        seconds.optimise = t.elapsed().as_secs_f64() - setup;
        return Ok(report);
    }
    let t = seconds.start("layout");
    let p = match backend {
        BackendKind::Gpu => p.into_hyb(Gpu::get()?)?,
        _ => {
            let beta = Csb::default_beta(p.n(), rayon::current_num_threads());
            p.into_csb(beta)?
        }
    };
    seconds.layout = t.elapsed().as_secs_f64();
    let t = seconds.start("optimise");
    let report = match backend {
        BackendKind::Gpu => {
            let gpu = Gpu::get()?;
            let mut repulse = repulsion.device(gpu, gpu.stream.clone())?;
            let mut y_dev = gpu.stream.clone_htod(&*y)?;
            let mut downloaded = observer.map(|inner| Downloaded::new(gpu, inner));
            let report = optimize_device_observed(
                gpu,
                &p,
                params.kernel,
                &mut repulse,
                &mut y_dev,
                dims,
                &params.optim,
                progress,
                downloaded.as_mut().map(|o| o as _),
            )?;
            crate::gpu::memory::dtoh_staged(gpu, &y_dev.slice(..), y)?;
            report
        }
        BackendKind::Hybrid => {
            let gpu = Gpu::get()?;
            let stream = gpu.device.context.new_stream()?;
            let repulse = repulsion.device(gpu, stream.clone())?;
            optimize_hybrid(
                gpu,
                stream,
                &p,
                params.kernel,
                repulse,
                y,
                dims,
                &params.optim,
                progress,
                observer,
            )?
        }
        _ => {
            let mut gradient = CpuGradient::with_kernel(&p, repulsion.host(), params.kernel)?;
            optim::optimize_observed(&mut gradient, y, dims, &params.optim, progress, observer)?
        }
    };
    seconds.optimise = t.elapsed().as_secs_f64();
    Ok(report)
}
