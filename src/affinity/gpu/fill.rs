//! Steps 5 (on the device) and 6 of the symmetrisation: the COO offsets, the exclusive scan
//! of each row's overflow max(len − K, 0) (tile sums, their scan, the scan inside each
//! tile), so that the COO part is sorted by row; then rows written into ELL and COO (the
//! scheme: [`super`]), all of P at once or one row block at a time.

use std::ops::Range;

use cudarc::driver::{CudaSlice, LaunchConfig};

use super::{lap, warp_rows, Counted, WARP_BLOCK};
use crate::gpu::kernels::affinity::{
    AffinityFill, AffinityScanApply, AffinityScanSums, AffinityScanTiles, SCAN_ITEMS,
};
use crate::gpu::memory::{alloc_uninit, ensure_fits};
use crate::gpu::{Gpu, GpuError};
use crate::sparse::HybGpu;

/// Where each row's COO entries start in the whole P's COO part.
pub(crate) struct Offsets {
    /// n offsets, ascending (each row's overflow scanned).
    coo_off: CudaSlice<i64>,
    /// Entries of the whole COO part.
    coo_len: usize,
}

impl Offsets {
    /// Entries of the whole COO part.
    pub(crate) fn coo_len(&self) -> usize {
        self.coo_len
    }
}

/// Step 5's COO offsets of every row of `counted`.
pub(crate) fn offsets(gpu: &Gpu, counted: &Counted) -> Result<Offsets, GpuError> {
    let s = &gpu.stream;
    let Counted {
        n,
        width,
        ref own_count,
        ref extra,
        ..
    } = *counted;
    let tiles = n.div_ceil(WARP_BLOCK as usize * SCAN_ITEMS);
    ensure_fits(gpu, "COO offsets", n * 8 + tiles * 8 + 8)?;
    let mut coo_off = alloc_uninit::<i64>(gpu, n)?;
    let mut tile_sums = alloc_uninit::<i64>(gpu, tiles + 1)?;
    let tiles_cfg = LaunchConfig {
        grid_dim: (tiles as u32, 1, 1),
        block_dim: (WARP_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    AffinityScanTiles {
        tiles,
        n,
        width,
        own_count,
        extra,
        tile_sums: &mut tile_sums,
    }
    .launch(gpu, s, tiles_cfg)?;
    let one_block = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1024, 1, 1),
        shared_mem_bytes: 0,
    };
    AffinityScanSums {
        tiles,
        tile_sums: &mut tile_sums,
    }
    .launch(gpu, s, one_block)?;
    AffinityScanApply {
        tiles,
        n,
        width,
        own_count,
        extra,
        tile_sums: &tile_sums,
        coo_off: &mut coo_off,
    }
    .launch(gpu, s, tiles_cfg)?;
    let coo_len = s.clone_dtoh(&tile_sums.slice(tiles..tiles + 1))?[0] as usize;
    lap(gpu, "hyb: COO offsets");
    Ok(Offsets { coo_off, coo_len })
}

/// The rows `rows` of P in HYB on the device: the whole P for 0..n, else a row block as
/// [`HybGpu::row_block`] would cut it from the whole (`row0` its first row; columns and COO
/// rows in the whole P's numbers). Every row's entries are read for a block, since entries
/// appended to its rows come from any row.
pub(crate) fn fill_rows(
    gpu: &'static Gpu,
    counted: &Counted,
    offsets: &Offsets,
    rows: Range<usize>,
) -> Result<HybGpu, GpuError> {
    let s = &gpu.stream;
    let Counted {
        n,
        k,
        width,
        ref sidx,
        ref own,
        ref rank,
        ref own_count,
        ref extra,
        ..
    } = *counted;
    let Offsets {
        ref coo_off,
        coo_len: whole_coo,
    } = *offsets;
    assert!(
        rows.start <= rows.end && rows.end <= n,
        "rows {rows:?} of {n}"
    );
    let at = |r: usize| -> Result<usize, GpuError> {
        Ok(match r {
            r if r == n => whole_coo,
            r => s.clone_dtoh(&coo_off.slice(r..r + 1))?[0] as usize,
        })
    };
    let coo = at(rows.start)?..at(rows.end)?;
    let (nb, coo_len) = (rows.len(), coo.len());
    ensure_fits(gpu, "HYB layout of P", nb * width * 8 + coo_len * 12)?;
    // The fill writes every ELL slot (entries, then padding up to K) and exactly coo_len COO
    // entries; the tests poison them to check this.
    let mut hyb = HybGpu {
        gpu,
        n: nb,
        row0: rows.start,
        width,
        coo_len,
        ell_cols: alloc_uninit(gpu, nb * width)?,
        ell_vals: alloc_uninit(gpu, nb * width)?,
        coo_rows: alloc_uninit(gpu, coo_len)?,
        coo_cols: alloc_uninit(gpu, coo_len)?,
        coo_vals: alloc_uninit(gpu, coo_len)?,
    };
    #[cfg(test)]
    if !super::profile::QUIET.load(std::sync::atomic::Ordering::Relaxed) {
        use crate::gpu::memory::poison;
        poison(gpu, &mut hyb.ell_cols)?;
        poison(gpu, &mut hyb.ell_vals)?;
        poison(gpu, &mut hyb.coo_rows)?;
        poison(gpu, &mut hyb.coo_cols)?;
        poison(gpu, &mut hyb.coo_vals)?;
    }
    lap(gpu, "hyb: alloc");
    AffinityFill {
        coo_len,
        n,
        k,
        width,
        lo: rows.start,
        rows: nb,
        coo0: coo.start as i64,
        sidx,
        own,
        rank,
        own_count,
        extra,
        coo_off,
        ell_cols: &mut hyb.ell_cols,
        ell_vals: &mut hyb.ell_vals,
        coo_rows: &mut hyb.coo_rows,
        coo_cols: &mut hyb.coo_cols,
        coo_vals: &mut hyb.coo_vals,
    }
    .launch(gpu, s, warp_rows(n, 0))?;
    lap(gpu, "hyb: fill");
    Ok(hyb)
}
