//! P cut into tiles for the 2-D attraction on the GPU (`kernels/attract_tiles.cu`, which
//! says why and how the tiles are laid out), built on the device from HYB.
//!
//! Rows (a GPU's rows of P) go in row blocks of up to [`MAX_ROWS`], columns (the points of Y)
//! in blocks of [`COLS`]; a tile is a (row block, column block) pair with entries, and one
//! block of threads per row block runs through its tiles with each tile's Y in shared memory.
//! The build walks HYB twice: once to count the entries of each (tile, warp group), and,
//! after an exclusive scan of the counts on the host, once to write them, each warp group's
//! rows in order (so that the attraction's warps find the runs of a row together).

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaSlice, LaunchConfig};

use crate::gpu::kernels::attract_tiles::{
    TilesCooStart, TilesCount, TilesFill, COLS, COL_BITS, MAX_ROWS, THREADS,
};
use crate::gpu::kernels::KernelId;
use crate::gpu::memory::{alloc_uninit, ensure_fits};
use crate::gpu::GpuError;

use super::gpu::HybGpu;

/// Rows per warp group: a row block's rows are shared out to the 32 warps of its block of
/// threads, at least this many each.
const MIN_GROUP: usize = 32;

/// Points from which a 2-D attraction reads tiles instead of HYB (a GPU's block of P in a
/// run over several counts all the points, whose Y it gathers). Below, Y (8 bytes a point)
/// fits in L2 and HYB's gathers hit there: 1.3M deformed digits took 1.91 s of attraction in
/// tiles against 1.02 s in HYB, the 10M mixture 12.1 against 15.0 ms per evaluation (H100).
pub const TILES_FROM: usize = 5_000_000;

/// Whether a 2-D attraction over `points` points reads P in tiles ([`TILES_FROM`]).
pub fn tiles_pay(points: usize) -> bool {
    points >= TILES_FROM
}

impl HybGpu {
    /// Cuts this P into tiles for the 2-D attraction over Y of `points` points and frees its
    /// ELL and COO arrays: for a 2-D embedding summed in floats (a `deterministic` run keeps
    /// HYB and its fixed-point sums), with room on the device for the build beside HYB (else
    /// HYB stays). Returns whether it did. The callers ask first whether tiles pay at this
    /// size ([`tiles_pay`]).
    pub fn tile(
        &mut self,
        dims: usize,
        deterministic: bool,
        points: usize,
    ) -> Result<bool, GpuError> {
        if dims != 2 || deterministic || self.tiles.is_some() {
            return Ok(false);
        }
        let rows = Tiles::rows_for(self.n, self.gpu.multiprocessors());
        let nnz = self.n * self.width + self.coo_len;
        if ensure_fits(
            self.gpu,
            "tiles of P",
            Tiles::build_bytes(self.n, nnz, points, rows),
        )
        .is_err()
        {
            return Ok(false);
        }
        let tiles = Tiles::build(self, points)?;
        let gpu = self.gpu;
        self.ell_cols = alloc_uninit(gpu, 1)?;
        self.ell_vals = alloc_uninit(gpu, 1)?;
        self.coo_rows = alloc_uninit(gpu, 1)?;
        self.coo_cols = alloc_uninit(gpu, 1)?;
        self.coo_vals = alloc_uninit(gpu, 1)?;
        (self.width, self.coo_len) = (0, 0);
        self.tiles = Some(Box::new(tiles));
        Ok(true)
    }

    /// Whether the attraction reads tiles ([`HybGpu::tile`]).
    pub fn tiled(&self) -> bool {
        self.tiles.is_some()
    }
}

/// P in tiles on the device: see the module doc and `kernels/attract_tiles.cu`.
pub struct Tiles {
    /// Rows per row block (a multiple of 32, at most [`MAX_ROWS`]).
    pub(crate) rows: usize,
    /// Row blocks.
    pub(crate) blocks: usize,
    /// Columns: the points of the Y the attraction reads.
    pub(crate) points: usize,
    /// Tiles with entries.
    pub(crate) tiles: usize,
    /// Entries (HYB's non-zero ones).
    pub(crate) entries: usize,
    /// Per row block b, its tiles tb[b] .. tb[b + 1].
    pub(crate) tb: CudaSlice<i32>,
    /// Each tile's column block.
    pub(crate) tcol: CudaSlice<i32>,
    /// Tile t's entries of warp group g from wo[32 t + g]; 32 · tiles + 1 offsets.
    pub(crate) wo: CudaSlice<i64>,
    /// Each entry's row in its block << COL_BITS | its column in its block.
    pub(crate) packed: CudaSlice<u32>,
    pub(crate) vals: CudaSlice<f32>,
}

impl Tiles {
    /// Rows per row block for `n` rows on a device of `sms` multiprocessors: the most (up to
    /// [`MAX_ROWS`], which reads each tile's Y for the most entries) that still gives every
    /// multiprocessor two row blocks, at least 32 · [`MIN_GROUP`].
    pub fn rows_for(n: usize, sms: usize) -> usize {
        let mut rows = MAX_ROWS;
        while rows > 32 * MIN_GROUP && n.div_ceil(rows) < 2 * sms {
            rows /= 2;
        }
        rows
    }

    /// Device bytes the build needs beside HYB, at most: the tiles (8 bytes per entry, at
    /// most `nnz`), the counts and cursors (12 bytes per key), each row's COO start, the
    /// offsets.
    pub fn build_bytes(n: usize, nnz: usize, points: usize, rows: usize) -> usize {
        let keys = n.div_ceil(rows) * points.div_ceil(COLS) * 32;
        nnz * 8 + keys * (12 + 8) + (n + 1) * 8
    }

    /// Dynamic shared memory of the attraction's blocks ([`shared_bytes`]).
    pub(crate) fn shared_bytes(&self) -> usize {
        shared_bytes(self.rows)
    }

    /// The tiles of `hyb` (its rows; columns the `points` of Y).
    pub(crate) fn build(hyb: &HybGpu, points: usize) -> Result<Tiles, GpuError> {
        let (gpu, n) = (hyb.gpu, hyb.n);
        let s = &gpu.stream;
        let rows = Tiles::rows_for(n, gpu.multiprocessors());
        // The attraction's blocks take more than the 48 KiB of shared memory a launch gets
        // unasked (the attribute stays with the loaded kernel).
        gpu.function(KernelId::AttractTiles, &[], "attract_tiles_2d")?
            .set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared_bytes(rows) as i32,
            )?;
        let blocks = n.div_ceil(rows);
        let col_blocks = points.div_ceil(COLS);
        assert!(rows << COL_BITS <= 1 << 32, "rows {rows} do not pack");
        let keys = blocks * col_blocks * 32;
        let mut coo_start = alloc_uninit::<i64>(gpu, n + 1)?;
        TilesCooStart {
            n,
            row0: hyb.row0,
            coo_len: hyb.coo_len,
            coo_rows: &hyb.coo_rows,
            coo_start: &mut coo_start,
        }
        .launch(gpu, s, gpu.config(n + 1))?;
        let walk = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (THREADS as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut counts = s.alloc_zeros::<u32>(keys)?;
        TilesCount {
            blocks,
            n,
            row0: hyb.row0,
            rows,
            col_blocks,
            width: hyb.width,
            ell_cols: &hyb.ell_cols,
            ell_vals: &hyb.ell_vals,
            coo_start: &coo_start,
            coo_cols: &hyb.coo_cols,
            coo_vals: &hyb.coo_vals,
            coo_len: hyb.coo_len,
            counts: &mut counts,
        }
        .launch(gpu, s, walk)?;
        let counts = s.clone_dtoh(&counts)?;
        let plan = Plan::scan(&counts, blocks, col_blocks);
        drop(counts);
        let mut cursor = s.clone_htod(&plan.cursor)?;
        let mut packed = alloc_uninit::<u32>(gpu, plan.entries)?;
        let mut vals = alloc_uninit::<f32>(gpu, plan.entries)?;
        TilesFill {
            blocks,
            n,
            row0: hyb.row0,
            rows,
            col_blocks,
            width: hyb.width,
            ell_cols: &hyb.ell_cols,
            ell_vals: &hyb.ell_vals,
            coo_start: &coo_start,
            coo_cols: &hyb.coo_cols,
            coo_vals: &hyb.coo_vals,
            coo_len: hyb.coo_len,
            cursor: &mut cursor,
            packed: &mut packed,
            vals: &mut vals,
            entries: plan.entries,
        }
        .launch(gpu, s, walk)?;
        Ok(Tiles {
            rows,
            blocks,
            points,
            tiles: plan.tcol.len(),
            entries: plan.entries,
            tb: s.clone_htod(&plan.tb)?,
            tcol: s.clone_htod(&nonempty(plan.tcol))?,
            wo: s.clone_htod(&plan.wo)?,
            packed,
            vals,
        })
    }
}

/// Dynamic shared memory of the attraction's blocks for `rows` rows per block: the rows'
/// sums (two floats each) and a tile's Y (two floats per column).
fn shared_bytes(rows: usize) -> usize {
    rows * 8 + COLS * 8
}

/// The tiles' offsets from the counts of every (row block, column block, warp group) key.
#[derive(Debug, PartialEq)]
struct Plan {
    /// Where each key's entries start (the exclusive scan of the counts).
    cursor: Vec<i64>,
    /// Per row block, its first tile; `blocks + 1` entries.
    tb: Vec<i32>,
    /// Each tile's column block.
    tcol: Vec<i32>,
    /// Each tile's warp groups' starts, then the end: 32 · tiles + 1 entries.
    wo: Vec<i64>,
    entries: usize,
}

impl Plan {
    fn scan(counts: &[u32], blocks: usize, col_blocks: usize) -> Plan {
        let mut cursor = Vec::with_capacity(counts.len());
        let (mut tb, mut tcol, mut wo) = (vec![0i32], Vec::new(), Vec::new());
        let mut at = 0i64;
        for b in 0..blocks {
            for c in 0..col_blocks {
                let key0 = (b * col_blocks + c) * 32;
                let group = &counts[key0..key0 + 32];
                let tile = group.iter().any(|&g| g > 0);
                if tile {
                    tcol.push(c as i32);
                }
                for &g in group {
                    if tile {
                        wo.push(at);
                    }
                    cursor.push(at);
                    at += g as i64;
                }
            }
            tb.push(tcol.len() as i32);
        }
        wo.push(at);
        Plan {
            cursor,
            tb,
            tcol,
            wo,
            entries: at as usize,
        }
    }
}

/// A device buffer may not be empty: a P without tiles keeps one unused column block.
fn nonempty(tcol: Vec<i32>) -> Vec<i32> {
    if tcol.is_empty() {
        vec![0]
    } else {
        tcol
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Kernel;
    use crate::sparse::{ragged_p, Hyb};
    use rand::{rngs::StdRng, Rng, SeedableRng};

    crate::gpu::gpu_test! {
        /// Tiles give HYB's 2-D forces and Σ p ln w, for the whole P and for a row block
        /// (whole-P columns), with rows shorter and longer than the ELL width, 40 row blocks
        /// by 4 column blocks, for the Cauchy kernel and Student's t; the tiled P has
        /// freed its HYB arrays; 3-D and deterministic runs keep HYB.
        fn tiles_attract_as_hyb_does(gpu) {
            let seed = rand::random();
            let mut rng = StdRng::seed_from_u64(seed);
            let n = 40_000;
            let whole = Hyb::from_csr(&ragged_p(n, &mut rng), None).unwrap();
            assert!(!whole.coo_vals.is_empty(), "the test must exercise the COO part");
            let s = &gpu.stream;
            let y: Vec<f32> = (0..n * 2).map(|_| rng.random_range(-20.0..20.0)).collect();
            let y_dev = s.clone_htod(&y).unwrap();
            let attract = |hyb: &HybGpu, kernel: Kernel| -> (Vec<f32>, f64) {
                let mut force = s.alloc_zeros::<f32>(hyb.n() * 2).unwrap();
                let mut kl = s.alloc_zeros::<u64>(crate::gpu::sum::WORDS).unwrap();
                hyb.attract_device(s, kernel, &y_dev, 2, &mut force, Some(&mut kl), None)
                    .unwrap();
                (s.clone_dtoh(&force).unwrap(), crate::gpu::sum::read(s, &kl).unwrap()[0])
            };
            for rows in [0..n, 12_345..31_000] {
                let host = whole.row_block(rows.clone());
                let hyb = HybGpu::new(gpu, &host).unwrap();
                let mut tiled = HybGpu::new(gpu, &host).unwrap();
                assert!(!tiled.tile(3, false, n).unwrap());
                assert!(!tiled.tile(2, true, n).unwrap());
                assert!(tiled.tile(2, false, n).unwrap() && tiled.tiled());
                assert_eq!((tiled.width(), tiled.coo_len()), (0, 0));
                for dof in [1.0, 0.5, 3.0] {
                    let kernel = Kernel::new(dof).unwrap();
                    let (want, want_kl) = attract(&hyb, kernel);
                    let (got, got_kl) = attract(&tiled, kernel);
                    let what = format!("seed {seed}, rows {rows:?}, dof {dof}");
                    let e = crate::repulse::relative_error(&want, &got);
                    assert!(e < 1e-5, "{what}: relative error {e}");
                    assert!(
                        (got_kl - want_kl).abs() < 1e-5 * want_kl.abs(),
                        "{what}: Σ p ln w {got_kl} against {want_kl}"
                    );
                }
            }
        }
    }

    #[test]
    fn row_blocks_shrink_until_every_multiprocessor_has_two() {
        assert_eq!(Tiles::rows_for(10_000_000, 132), MAX_ROWS);
        assert_eq!(Tiles::rows_for(2_500_000, 132), 8192);
        assert_eq!(Tiles::rows_for(1_300_000, 132), 4096);
        assert_eq!(Tiles::rows_for(1000, 132), 32 * MIN_GROUP);
        for n in [1, 5000, 300_000, 4_000_000, 50_000_000] {
            let rows = Tiles::rows_for(n, 132);
            assert!(rows.is_multiple_of(32) && rows <= MAX_ROWS && rows << COL_BITS <= 1 << 32);
        }
    }

    #[test]
    fn the_scan_lists_the_tiles_with_entries_and_their_groups() {
        // Two row blocks, three column blocks: tiles (0, 1), (1, 0) and (1, 2).
        let (blocks, col_blocks) = (2, 3);
        let mut counts = vec![0u32; blocks * col_blocks * 32];
        counts[32 + 5] = 3;
        counts[32 + 31] = 1;
        counts[3 * 32] = 2;
        counts[5 * 32 + 7] = 4;
        let plan = Plan::scan(&counts, blocks, col_blocks);
        assert_eq!(plan.entries, 10);
        assert_eq!(plan.tb, vec![0, 1, 3]);
        assert_eq!(plan.tcol, vec![1, 0, 2]);
        assert_eq!(plan.wo.len(), 32 * 3 + 1);
        // Tile 0 = (0, 1): group 5 at 0 .. 3, group 31 at 3 .. 4.
        assert_eq!(&plan.wo[..7], &[0, 0, 0, 0, 0, 0, 3]);
        assert_eq!((plan.wo[31], plan.wo[32]), (3, 4));
        // Tile 1 = (1, 0): group 0 at 4 .. 6; tile 2 = (1, 2): group 7 at 6 .. 10.
        assert_eq!((plan.wo[32], plan.wo[33]), (4, 6));
        assert_eq!((plan.wo[64 + 7], plan.wo[64 + 8]), (6, 10));
        assert_eq!(plan.wo[96], 10);
        // Every key's cursor is where its entries start.
        assert_eq!(plan.cursor[32 + 5], 0);
        assert_eq!(plan.cursor[5 * 32 + 7], 6);
        assert_eq!(plan.cursor.len(), counts.len());
    }
}
