// Attraction in 2-D over P cut into tiles (src/sparse/hyb/tiles.rs): F_attr,i = sum_j p_ij e_ij
// (y_i - y_j) with e = 1/(1+|y_i-y_j|^2/dof), as kernels/attract_hyb.cu computes it, but with
// the y_j read from shared memory instead of gathered from L2.
//
// Why: where a point's neighbours lie at random among many (a cluster of 1.66M points in the
// 10M mixture, 13 MB of y), every entry of P costs a random 32-byte sector from L2, and the
// gathers alone take 13.8 ms per evaluation at 10M points on an H100, more than the 10 ms the
// whole attraction may take (scripts/bench/attract_floors.py). Cut into tiles of TILE_ROWS-or-
// fewer rows by TILE_COLS columns, a tile's columns are copied into shared memory once,
// coalesced, and its entries read them there.
//
// Layout (argument contract, declared in src/gpu/kernels/attract_tiles.rs):
//   P's rows are rows row0 .. row0+n of the whole P (a GPU's row block, or all of P), in
//   row blocks of `rows` (a multiple of 32, at most 1 << ROW_BITS): block b holds local rows
//   b*rows .. ; columns (points of y, whole-P numbers) in column blocks of TILE_COLS.
//   A tile is (row block b, column block c) with entries; block b's tiles are tb[b] ..
//   tb[b+1] (tcol[t] = c). Warp group g of the 32 of a row block holds the rows g*rows/32 ..
//   (g+1)*rows/32 of its row block in the build: tile t's entries of those rows are wo[32t+g]
//   .. wo[32t+g+1], sorted by row (wo has 32 * tiles + 1 entries; the attraction reads the
//   tiles' bounds wo[32t]). Each entry is
//   packed = (row within block) << COL_BITS | (column within block), and its value.
//
// The sums: each warp takes an equal share of a tile's entries (sorted by row), 32 at a time,
// sums the runs of equal rows by shuffles and the first lane of each run adds the run's sum to
// the row's sum in shared memory: with a plain read and write for the rows inside its share
// (no other warp has them, and the runs of one step have distinct rows), with atomics for
// the share's first and last rows, which may go on in the next or previous share. Shares by
// rows instead (warp g took its group's rows) left a block waiting on the warp holding a hub
// (a row of hundreds of entries): 19.3 against 12.1 ms at 10M points; shared-memory atomics
// for every run cost 2 ms more (scripts/bench/attract_floors.py). `--deterministic` runs keep
// HYB and its fixed-point sums.

// The build: warp g of thread block b walks the rows of its group in order, each row's ELL
// slots then its COO entries, 32 at a time; the lanes whose entries fall in the same column
// block (__match_any_sync) take consecutive places. COUNT: per (tile, warp) key,
// counts[key] += entries; else each entry is written at cursor[key] onward (cursors from the
// exclusive scan of the counts, each key advanced by its one warp, so a (tile, warp)'s
// entries come out in row order).
template <bool COUNT>
__device__ void tiles_walk(int n, int row0, int rows, long long col_blocks, int width,
                           const int* __restrict__ ell_cols, const float* __restrict__ ell_vals,
                           const long long* __restrict__ coo_start, const int* __restrict__ coo_cols,
                           const float* __restrict__ coo_vals, unsigned* __restrict__ counts,
                           long long* __restrict__ cursor, unsigned* __restrict__ packed,
                           float* __restrict__ vals) {
    const int lane = threadIdx.x & 31;
    const long long warp = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
    const int group = rows / 32;
    const long long b = warp >> 5, g = warp & 31;
    const long long lo = b * rows + g * group, hi = min(lo + group, (long long)n);
    const unsigned below = (1u << lane) - 1u;
    for (long long i = lo; i < hi; ++i) {
        long long c0 = coo_start[i], total = width + (coo_start[i + 1] - c0);
        for (long long base = 0; base < total; base += 32) {
            long long s = base + lane;
            int col = 0;
            float v = 0.f;
            if (s < width) {
                col = ell_cols[s * n + i];
                v = ell_vals[s * n + i];
            } else if (s < total) {
                col = coo_cols[c0 + s - width];
                v = coo_vals[c0 + s - width];
            }
            // Padding slots hold 0 (and a zero entry adds nothing).
            long long block = v != 0.f ? col / TILE_COLS : -1;
            unsigned peers = __match_any_sync(FULL_MASK, block);
            int leader = __ffs(peers) - 1, count = __popc(peers);
            long long key = ((b * col_blocks + block) << 5) + g;
            if constexpr (COUNT) {
                if (block >= 0 && lane == leader) counts[key] += count;
                __syncwarp();  // the next leader of this key may be another lane
            } else {
                long long at = block >= 0 ? cursor[key] : 0;
                __syncwarp();
                if (block >= 0) {
                    long long e = at + __popc(peers & below);
                    packed[e] = ((unsigned)(i - b * rows) << COL_BITS) |
                                (unsigned)(col - block * TILE_COLS);
                    vals[e] = v;
                    if (lane == leader) cursor[key] = at + count;
                }
                __syncwarp();
            }
        }
    }
}

// Where each row's COO entries start (rows sorted, whole-P numbers row0 ..): coo_start[i] =
// the first COO entry of row row0 + i or later, for i = 0 ..= n.
extern "C" __global__ void tiles_coo_start(int n, int row0, long long coo_len,
                                           const int* __restrict__ coo_rows,
                                           long long* __restrict__ coo_start) {
    GRID_STRIDE(i, n + 1) {
        long long lo = 0, hi = coo_len;
        int row = row0 + (int)i;
        while (lo < hi) {
            long long mid = (lo + hi) >> 1;
            if (coo_rows[mid] < row) lo = mid + 1;
            else hi = mid;
        }
        coo_start[i] = lo;
    }
}

// One warp per (row block, warp group): blocks of TILE_THREADS threads, one per row block.
extern "C" __global__ void tiles_count(int n, int row0, int rows, long long col_blocks, int width,
                                       const int* ell_cols, const float* ell_vals,
                                       const long long* coo_start, const int* coo_cols,
                                       const float* coo_vals, unsigned* counts) {
    tiles_walk<true>(n, row0, rows, col_blocks, width, ell_cols, ell_vals, coo_start, coo_cols,
                     coo_vals, counts, nullptr, nullptr, nullptr);
}

extern "C" __global__ void tiles_fill(int n, int row0, int rows, long long col_blocks, int width,
                                      const int* ell_cols, const float* ell_vals,
                                      const long long* coo_start, const int* coo_cols,
                                      const float* coo_vals, long long* cursor, unsigned* packed,
                                      float* vals) {
    tiles_walk<false>(n, row0, rows, col_blocks, width, ell_cols, ell_vals, coo_start, coo_cols,
                      coo_vals, nullptr, cursor, packed, vals);
}

// The attraction: one thread block of TILE_THREADS (32 warps) per row block, dynamic shared
// memory rows * 8 + TILE_COLS * 8 bytes (the rows' sums, then a tile's columns). The entries'
// loads are evict-first (read once per evaluation), IN_FLIGHT per lane issued together.
extern "C" __global__ void __launch_bounds__(TILE_THREADS, 1)
    attract_tiles_2d(int n, int row0, int rows, long long points, const int* __restrict__ tb,
                     const int* __restrict__ tcol, const long long* __restrict__ wo,
                     const unsigned* __restrict__ packed, const float* __restrict__ vals,
                     const float* __restrict__ y, float inv_dof, float dof,
                     float* __restrict__ force, unsigned long long* kl) {
    extern __shared__ float shared[];
    float* sx = shared;
    float* sy = shared + rows;
    float2* cols = reinterpret_cast<float2*>(shared + 2 * rows);
    const float2* y2 = reinterpret_cast<const float2*>(y);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int b = blockIdx.x;
    const long long first = (long long)b * rows;
    const int held = (int)min((long long)rows, n - first);
    ExactSum local_kl = exact_zero();
    for (int r = threadIdx.x; r < held; r += blockDim.x) sx[r] = sy[r] = 0.f;
    __syncthreads();
    for (int t = tb[b]; t < tb[b + 1]; ++t) {
        const long long col0 = (long long)tcol[t] * TILE_COLS;
        // A tile of fewer than TILE_DENSE entries reads its y_j from global memory: copying
        // its columns would cost more than the gathers it saves (the tiles off the diagonal
        // of a P whose points are in a locality order). The same for every warp.
        const bool dense = wo[32LL * t + 32] - wo[32LL * t] >= TILE_DENSE;
        if (dense) {
        __syncthreads();
        const int width = (int)min((long long)TILE_COLS, points - col0);
        for (int c0 = threadIdx.x; c0 < width; c0 += 4 * blockDim.x) {
            float2 v[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                int c = c0 + u * blockDim.x;
                if (c < width) v[u] = __ldcg(y2 + col0 + c);
            }
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                int c = c0 + u * blockDim.x;
                if (c < width) cols[c] = v[u];
            }
        }
        __syncthreads();
        }
        // The tile's entries in 32 equal shares, one a warp: a row may span shares (a hub's
        // hundreds of entries), so a share's first and last rows are added with atomics;
        // its other rows are its own.
        const long long tile0 = wo[32LL * t], count = wo[32LL * t + 32] - tile0;
        const long long begin = tile0 + count * warp / 32, end = tile0 + count * (warp + 1) / 32;
        const int first_row = begin < end ? (int)(__ldg(packed + begin) >> COL_BITS) : -1;
        const int last_row = begin < end ? (int)(__ldg(packed + end - 1) >> COL_BITS) : -1;
        for (long long step = begin; step < end; step += IN_FLIGHT * 32) {
            unsigned q[IN_FLIGHT];
            float p[IN_FLIGHT];
#pragma unroll
            for (int u = 0; u < IN_FLIGHT; ++u) {
                long long e = step + u * 32 + lane;
                bool in = e < end;
                q[u] = in ? __ldcs(packed + e) : 0u;
                p[u] = in ? __ldcs(vals + e) : 0.f;
            }
#pragma unroll
            for (int u = 0; u < IN_FLIGHT; ++u) {
                if (step + u * 32 >= end) break;  // the same for the whole warp
                bool in = step + u * 32 + lane < end;
                int r = in ? (int)(q[u] >> COL_BITS) : -1;
                float fx = 0.f, fy = 0.f;
                if (in) {
                    const unsigned c = q[u] & ((1u << COL_BITS) - 1u);
                    float2 a = __ldg(y2 + row0 + first + r), o = dense ? cols[c] : __ldg(y2 + col0 + c);
                    float dx = a.x - o.x, dy = a.y - o.y;
                    float w = 1.f / (1.f + (dx * dx + dy * dy) * inv_dof);
                    fx = p[u] * w * dx;
                    fy = p[u] * w * dy;
                    if (kl && p[u] > 0.f) exact_add(local_kl, (double)(p[u] * (dof * logf(w))));
                }
                // Runs of equal rows summed towards their first lane (rows ascending, so a
                // lane `off` places further with the same row means every lane between does).
#pragma unroll
                for (int off = 1; off < 32; off <<= 1) {
                    int other = __shfl_down_sync(FULL_MASK, r, off);
                    bool same = lane + off < 32 && other == r;
                    if (!__any_sync(FULL_MASK, same)) break;
                    float ox = __shfl_down_sync(FULL_MASK, fx, off);
                    float oy = __shfl_down_sync(FULL_MASK, fy, off);
                    if (same) {
                        fx += ox;
                        fy += oy;
                    }
                }
                int prev = __shfl_up_sync(FULL_MASK, r, 1);
                if (in && (lane == 0 || prev != r)) {
                    if (r == first_row || r == last_row) {
                        atomicAdd(sx + r, fx);
                        atomicAdd(sy + r, fy);
                    } else {
                        sx[r] += fx;
                        sy[r] += fy;
                    }
                }
            }
        }
    }
    __syncthreads();
    for (int r = threadIdx.x; r < held; r += blockDim.x) {
        force[2 * (first + r)] = sx[r];
        force[2 * (first + r) + 1] = sy[r];
    }
    if (kl) exact_block_add(local_kl, kl);
}
