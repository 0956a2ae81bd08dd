//! HYB on the device: the GPU sibling of [`Hyb`], the layout the GPU attraction reads
//! ([`crate::attract::gpu`]).

use std::ops::Range;

use cudarc::driver::CudaSlice;

use super::Hyb;
use crate::gpu::comm::Ranks;
use crate::gpu::memory::{alloc_uninit, copy_peer, ensure_fits};
use crate::gpu::{Gpu, GpuError};

/// P in HYB, resident on the device, with the layout and invariants of [`Hyb`]: ELL slot s
/// of row i at s · n + i (padding (i, 0)), COO sorted by row. Empty COO arrays hold one
/// padding element (the kernels read none of it; cudarc refuses zero-length allocations on
/// some paths).
pub struct HybGpu {
    pub(crate) gpu: &'static Gpu,
    pub(crate) n: usize,
    /// The whole P's number of the first row ([`Hyb::row0`]).
    pub(crate) row0: usize,
    /// ELL width K.
    pub(crate) width: usize,
    pub(crate) coo_len: usize,
    pub(crate) ell_cols: CudaSlice<i32>,
    pub(crate) ell_vals: CudaSlice<f32>,
    pub(crate) coo_rows: CudaSlice<i32>,
    pub(crate) coo_cols: CudaSlice<i32>,
    pub(crate) coo_vals: CudaSlice<f32>,
}

impl HybGpu {
    /// Uploads `hyb`.
    pub fn new(gpu: &'static Gpu, hyb: &Hyb) -> Result<Self, GpuError> {
        let s = &gpu.stream;
        let pad_i = |v: &[i32]| if v.is_empty() { vec![0] } else { v.to_vec() };
        let pad_f = |v: &[f32]| if v.is_empty() { vec![0.0] } else { v.to_vec() };
        Ok(HybGpu {
            gpu,
            n: hyb.n,
            row0: hyb.row0,
            width: hyb.k,
            coo_len: hyb.coo_vals.len(),
            ell_cols: s.clone_htod(&pad_i(&hyb.ell_cols))?,
            ell_vals: s.clone_htod(&pad_f(&hyb.ell_vals))?,
            coo_rows: s.clone_htod(&pad_i(&hyb.coo_rows))?,
            coo_cols: s.clone_htod(&pad_i(&hyb.coo_cols))?,
            coo_vals: s.clone_htod(&pad_f(&hyb.coo_vals))?,
        })
    }

    /// The device holding it.
    pub fn gpu(&self) -> &'static Gpu {
        self.gpu
    }

    /// Number of rows.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The whole P's number of the first row ([`Hyb::row0`]; 0 for the whole P).
    pub fn row0(&self) -> usize {
        self.row0
    }

    /// The ELL width K.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Entries in the COO part.
    pub fn coo_len(&self) -> usize {
        self.coo_len
    }

    /// The arrays downloaded, as a host [`Hyb`] (for tests and inspection).
    pub fn to_host(&self) -> Result<Hyb, GpuError> {
        let s = &self.gpu.stream;
        let (ell, m) = (self.n * self.width, self.coo_len);
        Ok(Hyb {
            n: self.n,
            row0: self.row0,
            k: self.width,
            ell_cols: s.clone_dtoh(&self.ell_cols.slice(..ell))?,
            ell_vals: s.clone_dtoh(&self.ell_vals.slice(..ell))?,
            coo_rows: s.clone_dtoh(&self.coo_rows.slice(..m))?,
            coo_cols: s.clone_dtoh(&self.coo_cols.slice(..m))?,
            coo_vals: s.clone_dtoh(&self.coo_vals.slice(..m))?,
        })
    }
}

/// Where a row block of a device-resident P lies in it: the rows, the ELL width and the COO
/// entries; what a GPU allocates to receive the block ([`HybGpu::for_block`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockShape {
    /// The rows, in the whole P's numbering.
    pub rows: Range<usize>,
    /// The ELL width K (the whole's).
    pub width: usize,
    /// The block's COO entries in the whole's arrays.
    pub coo: Range<usize>,
}

impl HybGpu {
    /// The shapes of the row blocks `blocks` of this (whole) P: where each block's COO
    /// entries start, found by bisection in the sorted COO row numbers on the device (downloading
    /// them all took 1.1 s at 10M points).
    pub fn block_shapes(&self, blocks: &[Range<usize>]) -> Result<Vec<BlockShape>, GpuError> {
        let rows = self.coo_rows.slice(..self.coo_len);
        let at = |r: usize| first_at_least(&self.gpu.stream, &rows, r);
        blocks
            .iter()
            .map(|b| {
                Ok(BlockShape {
                    rows: b.clone(),
                    width: self.width,
                    coo: at(b.start)?..at(b.end)?,
                })
            })
            .collect()
    }

    /// Unfilled buffers of the block `shape` on `gpu`, for [`HybGpu::recv_block`].
    pub fn for_block(gpu: &'static Gpu, shape: &BlockShape) -> Result<Self, GpuError> {
        let (nb, k, m) = (shape.rows.len(), shape.width, shape.coo.len());
        Ok(HybGpu {
            gpu,
            n: nb,
            row0: shape.rows.start,
            width: k,
            coo_len: m,
            ell_cols: alloc_uninit(gpu, nb * k)?,
            ell_vals: alloc_uninit(gpu, nb * k)?,
            coo_rows: alloc_uninit(gpu, m)?,
            coo_cols: alloc_uninit(gpu, m)?,
            coo_vals: alloc_uninit(gpu, m)?,
        })
    }

    /// This P (or block) on `to`, copied there peer to peer and freed here (itself when it
    /// is on `to` already): how the affinity stage hands each GPU of a run over several its
    /// block ([`crate::affinity::gpu::affinities_device`]).
    pub fn moved_to(self, to: &'static Gpu) -> Result<Self, GpuError> {
        if std::ptr::eq(self.gpu, to) {
            return Ok(self);
        }
        let shape = BlockShape {
            rows: self.row0..self.row0 + self.n,
            width: self.width,
            coo: 0..self.coo_len,
        };
        let (ell, m) = ((self.n * self.width).max(1), self.coo_len.max(1));
        let what = format!("GPU {}'s block of P", to.device.context.ordinal());
        ensure_fits(to, &what, ell * 8 + m * 12)?;
        let mut moved = Self::for_block(to, &shape)?;
        let from = self.gpu;
        whole(to, &mut moved.ell_cols, from, &self.ell_cols)?;
        whole(to, &mut moved.ell_vals, from, &self.ell_vals)?;
        whole(to, &mut moved.coo_rows, from, &self.coo_rows)?;
        whole(to, &mut moved.coo_cols, from, &self.coo_cols)?;
        whole(to, &mut moved.coo_vals, from, &self.coo_vals)?;
        Ok(moved)
    }

    /// The block `shape` of this (whole) P copied on its own device: the ELL slots' runs of
    /// the block's rows, and its COO slice.
    pub fn row_block(&self, shape: &BlockShape) -> Result<Self, GpuError> {
        let mut block = Self::for_block(self.gpu, shape)?;
        let s = &self.gpu.stream;
        let (n, nb, lo) = (self.n, shape.rows.len(), shape.rows.start);
        for slot in 0..shape.width {
            let (from, to) = (
                slot * n + lo..slot * n + lo + nb,
                slot * nb..(slot + 1) * nb,
            );
            s.memcpy_dtod(
                &self.ell_cols.slice(from.clone()),
                &mut block.ell_cols.slice_mut(to.clone()),
            )?;
            s.memcpy_dtod(
                &self.ell_vals.slice(from),
                &mut block.ell_vals.slice_mut(to),
            )?;
        }
        if !shape.coo.is_empty() {
            let (c, m) = (shape.coo.clone(), shape.coo.len());
            s.memcpy_dtod(
                &self.coo_rows.slice(c.clone()),
                &mut block.coo_rows.slice_mut(..m),
            )?;
            s.memcpy_dtod(
                &self.coo_cols.slice(c.clone()),
                &mut block.coo_cols.slice_mut(..m),
            )?;
            s.memcpy_dtod(&self.coo_vals.slice(c), &mut block.coo_vals.slice_mut(..m))?;
        }
        Ok(block)
    }

    /// Sends the block `shape` of this (whole) P to rank `peer`, which receives it with
    /// [`HybGpu::recv_block`] (messages in the same order: each ELL slot's run of columns and
    /// values, then the COO slice), GPU to GPU.
    pub fn send_block(
        &self,
        shape: &BlockShape,
        ranks: &Ranks,
        peer: usize,
    ) -> Result<(), GpuError> {
        let (n, nb, lo) = (self.n, shape.rows.len(), shape.rows.start);
        for slot in 0..shape.width {
            let from = slot * n + lo..slot * n + lo + nb;
            ranks.send(&self.ell_cols.slice(from.clone()), peer)?;
            ranks.send(&self.ell_vals.slice(from), peer)?;
        }
        if !shape.coo.is_empty() {
            ranks.send(&self.coo_rows.slice(shape.coo.clone()), peer)?;
            ranks.send(&self.coo_cols.slice(shape.coo.clone()), peer)?;
            ranks.send(&self.coo_vals.slice(shape.coo.clone()), peer)?;
        }
        Ok(())
    }

    /// Receives from rank `from` the block this one was made for ([`HybGpu::for_block`],
    /// [`HybGpu::send_block`]).
    pub fn recv_block(&mut self, ranks: &Ranks, from: usize) -> Result<(), GpuError> {
        let (nb, m) = (self.n, self.coo_len);
        for slot in 0..self.width {
            let to = slot * nb..(slot + 1) * nb;
            ranks.recv(&mut self.ell_cols.slice_mut(to.clone()), from)?;
            ranks.recv(&mut self.ell_vals.slice_mut(to), from)?;
        }
        if m > 0 {
            ranks.recv(&mut self.coo_rows.slice_mut(..m), from)?;
            ranks.recv(&mut self.coo_cols.slice_mut(..m), from)?;
            ranks.recv(&mut self.coo_vals.slice_mut(..m), from)?;
        }
        Ok(())
    }
}

/// [`copy_peer`] of a whole buffer (equal lengths) from `from`'s device to `to`'s.
fn whole<T: cudarc::driver::DeviceRepr>(
    to: &Gpu,
    dst: &mut CudaSlice<T>,
    from: &Gpu,
    src: &CudaSlice<T>,
) -> Result<(), GpuError> {
    copy_peer(to, &mut dst.slice_mut(..), from, &src.slice(..))
}

/// The number of entries of the ascending device array `sorted` below `target` (its
/// partition point), by bisection: one 4-byte read per halving, about 30 round trips for
/// billions of entries.
fn first_at_least(
    s: &std::sync::Arc<cudarc::driver::CudaStream>,
    sorted: &cudarc::driver::CudaView<'_, i32>,
    target: usize,
) -> Result<usize, GpuError> {
    let (mut lo, mut hi) = (0, sorted.len());
    let mut value = [0i32];
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        s.memcpy_dtoh(&sorted.slice(mid..mid + 1), &mut value)?;
        if (value[0] as i64) < target as i64 {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}
