//! `--gpus N`: the gpu backend's optimisation spread over the GPUs of one host.
//!
//! # Design
//!
//! - **Processes and threads.** One process; one host thread, one CUDA context (the
//!   device's primary one, [`Gpu::device`]) and one stream per GPU; the GPUs are the ranks
//!   of one NCCL communicator ([`crate::gpu::comm`]), which moves data between them over
//!   NVLink or PCIe without the host. `CUDA_VISIBLE_DEVICES` chooses the GPUs, as the driver
//!   applies it. NVLink multicast stays off (`NCCL_NVLS_ENABLE=0`, which nothing here needs):
//!   the command line sets it unless the environment does ([`comm::set_nccl_defaults`]).
//! - **Points.** The n points are split into contiguous row blocks of ⌈n / N⌉ rows
//!   ([`Partition`]), the last one shorter (padded where the blocks travel). The affinity
//!   stage's order is kept (the locality order of the scale issue, when it runs, already
//!   makes a block compact in the embedding).
//! - **kNN and P.** The approximate kNN's sweep, most of the search at scale, is split by
//!   query blocks over the GPUs, each taking 1024 blocks at a time from one queue, and each
//!   refinement round by rows over two of them ([`crate::knn::gpu::ivf`],
//!   `IvfParams::gpus`; points and graphs travel GPU to GPU); its cells and the affinities
//!   run on GPU 0 as in a one-GPU run, the recall sample's exact search on the last GPU as
//!   it joins the sweep. GPU 0 fills P's HYB whole and
//!   cuts the GPUs' row blocks from it where twice P fits there (10M points: about 13 GB);
//!   else it fills one GPU's row block at a time and moves each block to its GPU, peer to
//!   peer, before making the next
//!   ([`crate::affinity::gpu::affinities_device`]; columns and COO rows keep whole-P
//!   numbers), so that it never holds the whole P (about 60 GB at 50M points). Peer copies
//!   need each device's memory pool opened to the others, which the first copy between two
//!   devices does ([`crate::gpu::memory::copy_peer`]: 395 GB/s against 38 between two
//!   H100). A whole P on GPU 0 (a library caller's) is cut there and sent over NCCL
//!   ([`crate::sparse::HybGpu::send_block`]); a P made on the host (graph mode) is cut
//!   there and uploaded ([`Hyb::row_block`]).
//! - **Per iteration**, on every GPU: the attraction of its rows against every point (each
//!   GPU holds all of Y: 80 MB at 10M points in 2-D); the FFT repulsion of its points on a
//!   grid placed from the box of all points (the same on every GPU, as Y is), its charges
//!   all-reduced (a few MB), the convolution of the whole grid for a share of its parity
//!   patterns on every GPU, the parts of the potentials all-reduced (a few MB; each GPU
//!   convolving every pattern took as long on four GPUs as on one, 1 ms per iteration at
//!   10M points), the potentials and forces of its points, Z all-reduced before the forces
//!   divide by it; the update of its points, whose re-centring adds the column sums
//!   of every GPU; then an all-gather of the blocks into every GPU's Y. Everything is
//!   queued on the GPU's one stream, so the host never waits for a collective; as on one
//!   GPU it waits only for the grid's box and, every `kl_every` iterations, the KL. (The
//!   repulsion on a second stream beside the attraction gained nothing at equal priority
//!   and lost at the highest: at 10M points on four H200 the optimisation took 7.72 and
//!   8.51 s against 7.6–7.8 s in one stream; `benches/RESULTS.md`.)
//! - **Sums.** Z, Σ p ln w and the re-centring's column sums are exact sums
//!   ([`crate::gpu::sum`]) whose words add as integers: the same on any number of GPUs.
//!   What differs from one GPU is the grid: each GPU's charges are float sums of its own
//!   points, then added across GPUs, as are the potentials of each GPU's patterns, so the
//!   forces differ from a one-GPU run's in their last bits; with `--deterministic` a run
//!   repeats bit for bit for a given number of GPUs (NCCL sums in a fixed order), not
//!   across numbers.
//! - **Communicators.** Made on a side thread when the command line names `--gpus N`
//!   ([`comm::make_ahead`]: NCCL's kernels loaded on GPU 0 beside the run's start, the
//!   communicators made once the other GPUs are up, beside the kNN's sweep at 10M points),
//!   else joined by every rank's thread once its buffers are made. What that set-up costs
//!   the sweep is in [`comm::make_ahead`]'s doc.
//! - **Failures.** Every buffer is made before the first collective, so a GPU short of
//!   memory fails alone, with its own message. After that no host wait blocks: the ranks
//!   meet between iterations and poll their queues ([`watch::Watch`]), and when one fails the
//!   others return and abort their communicators, ending any collective the failed one
//!   will never join; a GPU that stops answering ends the run after [`watch::TIMEOUT`].
//! - **One GPU.** With N = 1 this is the same code without a communicator (the
//!   collectives are copies or nothing); the one-GPU backend
//!   ([`crate::backend::gpu::optimize_device_observed`]) stays the default there, and the
//!   tests hold the two to the same embedding.

pub mod partition;
mod rank;
pub mod watch;

pub use partition::Partition;

use std::sync::Mutex;

use crate::gpu::comm::{self, nccl_present, Ranks};
use crate::gpu::{device_count, Gpu};
use crate::kernel::Kernel;
use crate::optim::{GpuSeconds, Observer, OptimParams, OptimReport};
use crate::progress::Progress;
use crate::repulse::{RepulsionMethod, RepulsionSpec};
use crate::sparse::{Hyb, HybGpu, Layout, P};
use crate::{Error, Result};

/// Below this many points `--gpus` left unset uses one GPU: the collectives' fixed cost
/// per iteration outweighs the split there.
pub const AUTO_MIN_POINTS: usize = 1_000_000;

/// The GPUs a gpu run of n points uses: `requested` (refused beyond the GPUs the process
/// sees), or by default all of them from [`AUTO_MIN_POINTS`] points up and one below.
pub fn resolve_gpus(requested: Option<usize>, n: usize) -> Result<usize> {
    let visible = || device_count().map_err(|reason| Error::GpuUnavailable { reason });
    match requested {
        Some(0) => Err(Error::param("gpus", "must be at least 1")),
        Some(1) => Ok(1),
        Some(k) => {
            let have = visible()?;
            if k > have {
                return Err(Error::param(
                    "gpus",
                    format!(
                        "{k} GPUs asked for, but this host shows {have} (CUDA_VISIBLE_DEVICES \
                         chooses which); use --gpus {have} or fewer"
                    ),
                ));
            }
            Ok(k)
        }
        None if n < AUTO_MIN_POINTS => Ok(1),
        None => Ok(visible()?.max(1)),
    }
}

/// [`resolve_gpus`], then what a run over that many GPUs cannot do refused at once (before
/// the kNN and the affinities run): too few points to share, the exact repulsion.
pub fn plan_gpus(requested: Option<usize>, n: usize, method: RepulsionMethod) -> Result<usize> {
    let world = resolve_gpus(requested, n)?;
    check(world, n, method)?;
    Ok(world)
}

/// The partition of n points over `world` GPUs, if such a run can be made.
fn check(world: usize, n: usize, method: RepulsionMethod) -> Result<Partition> {
    if world > 1 && method != RepulsionMethod::Fft {
        return Err(Error::param(
            "gpus",
            "only the FFT repulsion runs over several GPUs; use --gpus 1 with --repulsion exact",
        ));
    }
    Partition::new(n, world)
}

/// The optimisation of [`crate::backend::gpu::optimize_device_observed`] over `world`
/// GPUs (devices 0 … world − 1): `y` (n × dims, host) is the initial embedding and receives
/// the final one; P is cut into the GPUs' row blocks (from GPU 0, where the affinity stage
/// leaves it, GPU to GPU; from the host otherwise); `observer` sees Y in the same order,
/// downloaded from GPU 0 at the iterations it asks for. Returns the report and the seconds
/// of the set-up (the blocks placed, every buffer made, the GPUs joined: the run's
/// `layout` stage). The communicators are aborted on side threads as it returns: a caller
/// that ends the process next waits for them first ([`comm::wait_ended`]; `embed`'s result
/// does when dropped).
#[allow(clippy::too_many_arguments)]
pub fn optimize_multi(
    world: usize,
    p: P,
    kernel: Kernel,
    repulsion: &RepulsionSpec,
    y: &mut [f32],
    dims: usize,
    params: &OptimParams,
    progress: &dyn Progress,
    observer: Option<&mut dyn Observer<[f32]>>,
) -> Result<(OptimReport, f64)> {
    params.validate()?;
    let n = p.n();
    let part = check(world, n, repulsion.method)?;
    if y.len() != n * dims {
        return Err(Error::param(
            "y",
            format!("holds {} values, not n · dims = {}", y.len(), n * dims),
        ));
    }
    // Every GPU set up (and its failure reported) before any thread starts.
    for rank in 0..world {
        Gpu::device(rank)?;
    }
    // The communicators made while the input loaded, or an identity to join by.
    let mut ahead: Vec<Option<Ranks>> = match world {
        1 => vec![None],
        _ => match comm::take_ahead(world) {
            Some(ranks) => ranks.into_iter().map(Some).collect(),
            None => (0..world).map(|_| None).collect(),
        },
    };
    let id = match world {
        1 => None,
        _ if ahead[0].is_some() => None,
        _ if !nccl_present() => {
            return Err(Error::GpuUnavailable {
                reason: "NCCL (libnccl.so) not found, which a run over several GPUs needs: \
                         install it (e.g. `pip install nvidia-nccl-cu13`, then put the \
                         directory holding libnccl.so on LD_LIBRARY_PATH), or use --gpus 1"
                    .into(),
            })
        }
        _ => Some(Ranks::new_id()?),
    };
    let p_log_p = p.p_log_p();
    let host;
    let (blocks, whole) = match p.into_layout() {
        Layout::Hyb(whole) => {
            let rows: Vec<_> = (0..world).map(|r| part.rows(r)).collect();
            (
                rank::Blocks::Device(whole.block_shapes(&rows)?),
                Some(whole),
            )
        }
        Layout::HybBlocks(placed) => {
            placed_right(&placed, &part)?;
            let placed = placed.into_iter().map(|b| Mutex::new(Some(b))).collect();
            (rank::Blocks::Placed(placed), None)
        }
        Layout::Csr(csr) => {
            host = Hyb::from_csr(&csr, None)?;
            (rank::Blocks::Host(&host), None)
        }
        Layout::Csb(_) => {
            return Err(Error::param(
                "p",
                "P in CSB (the CPU's layout) cannot go to the GPUs",
            ))
        }
    };
    let y = std::sync::RwLock::new(y);
    let watch = watch::Watch::new(world, watch::TIMEOUT);
    let shared = rank::Shared {
        part,
        p: blocks,
        p_log_p,
        kernel,
        repulsion,
        y: &y,
        dims,
        params,
        watch: &watch,
        id,
    };
    let lead = rank::Lead {
        whole,
        progress,
        observer,
    };
    crate::trace::event(|| "optimise: P's blocks and Y ready for the GPUs".into());
    let (first, others) = std::thread::scope(|scope| {
        let mut made = ahead.drain(..);
        let own = made.next().flatten();
        let others: Vec<_> = (1..world)
            .zip(made)
            .map(|(r, ranks)| {
                let shared = &shared;
                std::thread::Builder::new()
                    .name(format!("gpu{r}"))
                    .spawn_scoped(scope, move || rank::run(shared, r, ranks, None))
            })
            .collect();
        let first = rank::run(&shared, 0, own, Some(lead));
        let others: Vec<Result<(OptimReport, f64)>> = others
            .into_iter()
            .map(|h| match h {
                Ok(h) => h.join().unwrap_or_else(|_| {
                    watch.fail();
                    Err(rank::panicked())
                }),
                Err(e) => Err(Error::param("gpus", format!("cannot start a thread: {e}"))),
            })
            .collect();
        (first, others)
    });
    let mut results = std::iter::once(first).chain(others).collect::<Vec<_>>();
    let culprit = watch.first_failed().unwrap_or(0);
    if results.iter().any(|r| r.is_err()) {
        let pick = if results[culprit].is_err() {
            culprit
        } else {
            results.iter().position(|r| r.is_err()).unwrap_or(0)
        };
        return results.swap_remove(pick);
    }
    let shares: Vec<GpuSeconds> = results
        .iter()
        .flatten()
        .map(|(r, _)| GpuSeconds {
            attract_seconds: r.attract_seconds,
            repulse_seconds: r.repulse_seconds,
            update_seconds: r.update_seconds,
            exchange_seconds: r.exchange_seconds,
        })
        .collect();
    let (mut report, setup) = results.swap_remove(0)?;
    if world > 1 {
        report.per_gpu = Some(shares);
    }
    Ok((report, setup))
}

/// Refuses P's row blocks unless block r holds the partition's rows r and lives on GPU r.
fn placed_right(placed: &[HybGpu], part: &Partition) -> Result<()> {
    let ok = placed.len() == part.world()
        && placed.iter().enumerate().all(|(r, b)| {
            let rows = part.rows(r);
            b.row0() == rows.start
                && b.n() == rows.len()
                && Gpu::device(r).is_ok_and(|g| std::ptr::eq(g, b.gpu()))
        });
    match ok {
        true => Ok(()),
        false => Err(Error::param(
            "p",
            format!(
                "P's {} row blocks are not the {} GPUs' partition of its {} rows",
                placed.len(),
                part.world(),
                part.n()
            ),
        )),
    }
}

#[cfg(test)]
mod tests;
