//! `kernels/attract_tiles.cu`: the 2-D attraction over P cut into tiles, and the tiles'
//! build from HYB on the device (`crate::sparse::hyb::tiles`).

use crate::gpu::launch::kernels;
use crate::gpu::sum::WORDS;

/// Threads per block of every kernel of the file (`TILE_THREADS`): 32 warps, one per group
/// of a row block's rows.
pub const THREADS: usize = 1024;
/// Columns per tile (`TILE_COLS`): a tile's y in shared memory, 96 KiB in 2-D.
pub const COLS: usize = 12_288;
/// Bits of an entry's column within its tile (`COL_BITS`); the rest hold its row.
pub const COL_BITS: u32 = 14;
/// Most rows per row block: the rows' sums (8 bytes each) and a tile's columns fill the
/// 227 KiB of shared memory a block may have.
pub const MAX_ROWS: usize = 16_384;
/// Entries below which a tile's y_j are gathered from global memory rather than copied
/// into shared memory first (`TILE_DENSE`): a quarter of the columns.
pub const DENSE: usize = COLS / 4;
/// Entries each lane loads at once (`IN_FLIGHT`): 4 measured best against 2 and 8
/// (scripts/bench/attract_floors.py).
pub const IN_FLIGHT: usize = 4;

/// Constants the file is compiled with (`-DNAME=VALUE`).
pub(crate) const CONSTANTS: &[(&str, usize)] = &[
    ("TILE_THREADS", THREADS),
    ("TILE_COLS", COLS),
    ("COL_BITS", COL_BITS as usize),
    ("TILE_DENSE", DENSE),
    ("IN_FLIGHT", IN_FLIGHT),
];

kernels! {
    file: AttractTiles;

    /// `coo_start[i]` = the first COO entry of whole-P row `row0 + i` or later (the COO rows
    /// sorted), for i = 0 ..= n.
    pub struct TilesCooStart = "tiles_coo_start" {
        n: usize as i32,
        row0: usize as i32,
        coo_len: usize as i64,
        coo_rows: in i32 [coo_len],
        coo_start: out i64 [n + 1],
    }

    /// Adds to `counts[((b · col_blocks + c) << 5) + g]` the entries of P (HYB: ELL of
    /// `width` slots, COO by `coo_start`) in row block b (of `rows` rows), column block c, rows
    /// of warp group g. One block of [`THREADS`] per row block.
    pub struct TilesCount = "tiles_count" {
        blocks: host,
        n: usize as i32,
        row0: usize as i32,
        rows: usize as i32,
        col_blocks: usize as i64,
        width: usize as i32,
        ell_cols: in i32 [n * width],
        ell_vals: in f32 [n * width],
        coo_start: in i64 [n + 1],
        coo_cols: in i32 [coo_len],
        coo_vals: in f32 [coo_len],
        coo_len: host,
        counts: out u32 [blocks * col_blocks * 32],
    }

    /// Writes each entry at its key's cursor (advanced), packed as (row in block) <<
    /// [`COL_BITS`] | (column in block), and its value: each key's entries in row order.
    pub struct TilesFill = "tiles_fill" {
        blocks: host,
        n: usize as i32,
        row0: usize as i32,
        rows: usize as i32,
        col_blocks: usize as i64,
        width: usize as i32,
        ell_cols: in i32 [n * width],
        ell_vals: in f32 [n * width],
        coo_start: in i64 [n + 1],
        coo_cols: in i32 [coo_len],
        coo_vals: in f32 [coo_len],
        coo_len: host,
        cursor: out i64 [blocks * col_blocks * 32],
        packed: out u32 [entries],
        vals: out f32 [entries],
        entries: host,
    }

    /// F_attr in 2-D of the rows row0 .. row0 + n into `force` (overwritten), each edge
    /// weighed by 1 / (1 + d² · `inv_dof`); with `kl`, Σ p ln w added to it. One block of
    /// [`THREADS`] per row block, `rows` · 8 + [`COLS`] · 8 bytes of dynamic shared memory.
    pub struct AttractTiles2d = "attract_tiles_2d" {
        blocks: host,
        tiles: host,
        entries: host,
        n: usize as i32,
        row0: usize as i32,
        rows: usize as i32,
        points: usize as i64,
        tb: in i32 [blocks + 1],
        tcol: in i32 [tiles],
        wo: in i64 [32 * tiles + 1],
        packed: in u32 [entries],
        vals: in f32 [entries],
        y: in f32 [points * 2],
        inv_dof: f32,
        dof: f32,
        force: out f32 [n * 2],
        kl: opt u64 [WORDS],
    }
}
