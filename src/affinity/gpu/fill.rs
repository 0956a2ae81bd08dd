//! Steps 5 (on the device) and 6 of the symmetrisation: the COO offsets, the exclusive scan
//! of each row's overflow max(len − K, 0) (tile sums, their scan, the scan inside each
//! tile), so that the COO part is sorted by row; then every row written into ELL and COO
//! (the scheme: [`super`]).

use cudarc::driver::LaunchConfig;

use super::{lap, warp_rows, Counted, WARP_BLOCK};
use crate::gpu::kernels::affinity::{
    AffinityFill, AffinityScanApply, AffinityScanSums, AffinityScanTiles, SCAN_ITEMS,
};
use crate::gpu::memory::{alloc_uninit, ensure_fits};
use crate::gpu::{Gpu, GpuError};
use crate::sparse::HybGpu;

/// P in HYB on the device from the rows `counted`.
pub(crate) fn fill(gpu: &'static Gpu, counted: Counted) -> Result<HybGpu, GpuError> {
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
    } = counted;
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

    ensure_fits(gpu, "HYB layout of P", n * width * 8 + coo_len * 12)?;
    // The fill writes every ELL slot (entries, then padding up to K) and exactly coo_len COO
    // entries; the tests poison them to check this.
    let mut hyb = HybGpu {
        gpu,
        n,
        row0: 0,
        width,
        coo_len,
        ell_cols: alloc_uninit(gpu, n * width)?,
        ell_vals: alloc_uninit(gpu, n * width)?,
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
        sidx,
        own,
        rank,
        own_count,
        extra,
        coo_off: &coo_off,
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
