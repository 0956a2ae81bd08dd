// S2G: spread every point's charges (1, y^1 - c^1, ..., y^D - c^D) onto the 4^D surrounding
// nodes with cubic Lagrange weights (Linderman et al. 2019; SG-t-SNE-Pi's s2g). Grids are
// node-major: channel c of node m at m * S + c, S = charge_stride(D) (repulse.cuh), so that
// on sm_90 a point adds its charges to a node in one vector atomic (2-D: 16 atomics a point
// instead of 48; the sparse scatter at 1.3M points, H200: 0.31 -> 0.18 ms per call).
//
// Float atomics straight into the grid contend where many points share nodes (a cluster of
// 10^5 points covers a few hundred nodes). So points are counting-sorted by cell (the
// corner of their stencil, nc = p - 3 cells per axis): all points of a cell share one
// stencil, so a cell holding at least dense_min points is cut into pieces of at most
// `piece` points, and one warp per piece sums its points' 4^D x (1+D) weighted charges in
// registers, reduces them across the warp and adds each total to the grid once
// (s2g_scatter_cells; in 3-D the 256 values go a slab of 64 at a time). The points of
// sparse cells go to the grid directly (s2g_scatter_sparse), with native float atomics.
// Shared-memory patches are not used: float atomicAdd on shared memory compiles to a
// compare-and-swap loop on sm_90 (ATOMS.CAST.SPIN); a patch pass took 0.7 ms per call at
// 1.3M points in 2-D and 1.5-2 ms in 3-D.
//
// Deterministic S2G (`--deterministic`, the *_fixed kernels): float atomics add in the
// order warps reach a node, and the points of a cell sit in the order the placing's atomics
// chose, so float sums vary in their last bits between runs. The fixed kernels round each
// point's charge once to a multiple of 1/s0 (channel 0, weights |w| <= 1) or 1/sq (the
// others, sq = s0 / R with |y - c| <= R, the grid's half width), sum integers in a warp's
// registers (fixed_lane, over a piece of at most PIECE = 512 points) and add them to 64-bit
// integer nodes (`fixed`): integer sums are exact, so any order gives the same grid, which
// s2g_fixed_to_grid then writes in reals. Float grids sum 32-bit lanes with s0 = 2^21
// (|piece sum| <= 2^30; 5e-7 per charge, far below the interpolation's own error), double
// grids 64-bit lanes with s0 = 2^62 / n (a node's total stays below 2^62; 2^-41 per charge
// at 10^6 points), s0 chosen in src/repulse/s2g/gpu.rs.
//
// Points are sorted in the order of the previous call's sort (`prev`, a permutation of the
// points; the identity at first): points move little between iterations, so the lanes of a
// warp mostly share a cell and its counter takes one atomic per warp (__match_any_sync), not
// one per point. At 1.3M points in 1-D (~500 cells) the atomics in index order cost ~0.19 ms
// per pass.
//
// Per call: s2g_bin_count (cell of each point, counts), s2g_plan_sums and s2g_bin_plan
// (offsets, pieces), s2g_bin_place (all points sorted by cell, into `order`, which is the
// next call's `prev`), s2g_scatter_sparse, s2g_scatter_cells.
//
// Argument contract (declared in src/gpu/kernels/s2g.rs): y n*D floats, every point inside the grid's
// box (the grid was fitted to it); grid charge_stride(D)*len reals, node-major (repulse.cuh),
// zeroed, len = p^D (fixed likewise in 64-bit integers);
// nc = p - 3, ncells = nc^D; prev a permutation of [0, n); bin, order n ints; counts
// ncells ints, zeroed before s2g_bin_count; sums 2 ints per plan block (S2G_PLAN_CHUNK cells
// each); starts ncells + 1 ints, cursor ncells ints; pieces 3 ints per piece (cell, begin,
// end), room for n / piece + min(ncells, n / dense_min) + 1 pieces; npieces one int;
// dense_min >= 1. Uses repulse.cuh (prepended with common.cuh by src/gpu/kernels/mod.rs).

// S2G_PLAN_THREADS, S2G_PLAN_ITEMS, S2G_PLAN_CHUNK (= S2G_PLAN_THREADS * S2G_PLAN_ITEMS cells
// per plan block) and S2G_CELL_THREADS come from src/gpu/kernels/s2g.rs as -D options.

// Cell of a point: the flat index of its stencil corner (base node - 1 on every axis).
template <int D>
__device__ inline int cell_of(const float* __restrict__ yi, const GridGeom& g, int nc) {
    int key = 0, stride = 1;
#pragma unroll
    for (int a = 0; a < D; ++a) {
        float x;
        key += (stencil_base(yi[a], g.origin[a], g.inv_h, g.p, &x) - 1) * stride;
        stride *= nc;
    }
    return key;
}

// bin[i] = cell of point i; counts[cell] += 1, one atomic per cell per warp (__match_any),
// the points taken in the order prev.
template <int D>
__device__ void bin_count(int n, GridGeom g, int nc, const float* __restrict__ y,
                          const int* __restrict__ prev, int* __restrict__ bin, int* counts) {
    const int lane = threadIdx.x & 31;
    long long warp0 = (blockIdx.x * (long long)blockDim.x + threadIdx.x) - lane;
    for (long long base = warp0; base < n; base += (long long)gridDim.x * blockDim.x) {
        long long j = base + lane;
        int i = j < n ? prev[j] : 0;
        int key = j < n ? cell_of<D>(y + (long long)i * D, g, nc) : -1;
        unsigned peers = __match_any_sync(FULL_MASK, key);
        if (key >= 0) {
            bin[i] = key;
            if (lane == __ffs(peers) - 1) atomicAdd(&counts[key], __popc(peers));
        }
    }
}

// Points and pieces of a run of cells in one 64-bit word (points high, pieces low), so that
// one scan carries both: every sum of pieces stays below 2^31, so no carry crosses halves.
__device__ inline long long pack(int pts, int pcs) {
    return ((long long)pts << 32) | (unsigned int)pcs;
}
__device__ inline int packed_points(long long v) { return (int)(v >> 32); }
__device__ inline int packed_pieces(long long v) { return (int)(v & 0xffffffffll); }

// The thread's S2G_PLAN_ITEMS cells from k0: their counts c, the sum of their points and of
// their pieces (cells of at least dense_min points, in runs of at most `piece`).
__device__ inline void plan_items(int k0, int ncells, const int* __restrict__ counts,
                                  int dense_min, int piece, int c[S2G_PLAN_ITEMS], int& pts,
                                  int& pcs) {
    pts = 0;
    pcs = 0;
#pragma unroll
    for (int e = 0; e < S2G_PLAN_ITEMS; ++e) {
        c[e] = k0 + e < ncells ? counts[k0 + e] : 0;
        pts += c[e];
        pcs += c[e] >= dense_min ? (c[e] + piece - 1) / piece : 0;
    }
}

// Blocks of S2G_PLAN_THREADS over chunks of S2G_PLAN_CHUNK cells: sums[2b], sums[2b + 1] =
// points and pieces of chunk b (grids have up to ~10^6 cells, too many for one block to
// scan in time: a single block took 0.37 ms on 5 x 10^5).
extern "C" __global__ void __launch_bounds__(S2G_PLAN_THREADS)
    s2g_plan_sums(int ncells, const int* __restrict__ counts, int dense_min, int piece,
                  int* __restrict__ sums) {
    int c[S2G_PLAN_ITEMS], pts, pcs;
    plan_items(blockIdx.x * S2G_PLAN_CHUNK + threadIdx.x * S2G_PLAN_ITEMS, ncells, counts,
               dense_min, piece, c, pts, pcs);
    long long total;
    block_exclusive_scan(pack(pts, pcs), &total);
    if (threadIdx.x == 0) {
        sums[2 * blockIdx.x] = packed_points(total);
        sums[2 * blockIdx.x + 1] = packed_pieces(total);
    }
}

// The same blocks: starts = exclusive prefix sums of counts (starts[ncells] = n), cursor =
// starts, and the pieces of the dense cells in cell order; npieces = their number. Each
// block adds the sums of the chunks before its own (at most a few hundred).
extern "C" __global__ void __launch_bounds__(S2G_PLAN_THREADS)
    s2g_bin_plan(int ncells, const int* __restrict__ counts, int dense_min, int piece,
                 const int* __restrict__ sums, int* __restrict__ starts,
                 int* __restrict__ cursor, int* __restrict__ pieces, int* __restrict__ npieces) {
    long long before = 0, base, total;
    for (int b = threadIdx.x; b < (int)blockIdx.x; b += S2G_PLAN_THREADS)
        before += pack(sums[2 * b], sums[2 * b + 1]);
    block_exclusive_scan(before, &base);
    int c[S2G_PLAN_ITEMS], pts, pcs;
    const int k0 = blockIdx.x * S2G_PLAN_CHUNK + threadIdx.x * S2G_PLAN_ITEMS;
    plan_items(k0, ncells, counts, dense_min, piece, c, pts, pcs);
    const long long first = base + block_exclusive_scan(pack(pts, pcs), &total);
    int at = packed_points(first), pc = packed_pieces(first);
#pragma unroll
    for (int e = 0; e < S2G_PLAN_ITEMS; ++e) {
        const int k = k0 + e;
        if (k >= ncells) break;
        starts[k] = at;
        cursor[k] = at;
        if (c[e] >= dense_min) {
            for (int b = 0; b < c[e]; b += piece) {
                pieces[3 * pc] = k;
                pieces[3 * pc + 1] = at + b;
                pieces[3 * pc + 2] = at + min(c[e], b + piece);
                ++pc;
            }
        }
        at += c[e];
    }
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) {
        starts[ncells] = packed_points(base + total);
        *npieces = packed_pieces(base + total);
    }
}

// order[cursor[cell]++] = i for every point, taken in the order prev (one atomic per cell
// per warp): order holds the points sorted by cell.
extern "C" __global__ void s2g_bin_place(int n, const int* __restrict__ prev,
                                         const int* __restrict__ bin, int* cursor,
                                         int* __restrict__ order) {
    const int lane = threadIdx.x & 31;
    long long warp0 = (blockIdx.x * (long long)blockDim.x + threadIdx.x) - lane;
    for (long long base = warp0; base < n; base += (long long)gridDim.x * blockDim.x) {
        long long j = base + lane;
        int i = j < n ? prev[j] : 0;
        int key = j < n ? bin[i] : -1;
        unsigned peers = __match_any_sync(FULL_MASK, key);
        int leader = __ffs(peers) - 1;
        int at = 0;
        if (key >= 0 && lane == leader) at = atomicAdd(&cursor[key], __popc(peers));
        at = __shfl_sync(peers, at, leader);
        if (key >= 0) order[at + __popc(peers & ((1u << lane) - 1))] = i;
    }
}

// A point's charges (weight wt: wt and wt * q_a) added to the node at `at` (node-major):
// one float2 / float4 atomic on sm_90 with float grids, one atomic per channel otherwise.
template <int D>
__device__ inline void add_charges(real* at, float wt, const float q[D]) {
#if !defined(REAL_F64) && __CUDA_ARCH__ >= 900
    if constexpr (D == 1) {
        atomicAdd(reinterpret_cast<float2*>(at), make_float2(wt, wt * q[0]));
    } else if constexpr (D == 2) {
        atomicAdd(reinterpret_cast<float4*>(at), make_float4(wt, wt * q[0], wt * q[1], 0.f));
    } else {
        atomicAdd(reinterpret_cast<float4*>(at),
                  make_float4(wt, wt * q[0], wt * q[1], wt * q[2]));
    }
#else
    atomicAdd(at, (real)wt);
#pragma unroll
    for (int a = 0; a < D; ++a) atomicAdd(at + a + 1, (real)(wt * q[a]));
#endif
}

// The points of sparse cells, each spread straight into the grid; taken in cell order, so
// that a warp's atomics land near each other. FIXED: into `fixed` in fixed point.
template <int D, bool FIXED>
__device__ void scatter_sparse(int n, GridGeom g, const float* __restrict__ y,
                               const int* __restrict__ order, const int* __restrict__ bin,
                               const int* __restrict__ counts, int dense_min,
                               real* __restrict__ grid, float s0, float sq,
                               long long* __restrict__ fixed) {
    constexpr int S = charge_stride(D);
    GRID_STRIDE(j, n) {
        const int i = order[j];
        if (counts[bin[i]] >= dense_min) continue;
        const float* yi = y + (long long)i * D;
        float w[D][4], q[D];
        const long long corner = locate<D>(yi, g, w);
#pragma unroll
        for (int a = 0; a < D; ++a) q[a] = yi[a] - g.centre[a];
#pragma unroll
        for (int k = 0; k < (1 << (2 * D)); ++k) {
            float wt;
            long long idx = stencil_node<D>(k, corner, g.p, w, &wt);
            if constexpr (FIXED) {
                unsigned long long* f = reinterpret_cast<unsigned long long*>(fixed) + idx * S;
                atomicAdd(&f[0], (unsigned long long)__float2ll_rn(wt * s0));
#pragma unroll
                for (int a = 0; a < D; ++a)
                    atomicAdd(&f[a + 1], (unsigned long long)__float2ll_rn(wt * q[a] * sq));
            } else {
                add_charges<D>(grid + idx * S, wt, q);
            }
        }
    }
}

// grid = fixed / s0 (channel 0 of each node, every stride-th value; stride a power of two,
// charge_stride) or / sq (the others), after the fixed kernels. (A mask, not a 64-bit
// modulo, a software routine on the GPU.)
extern "C" __global__ void s2g_fixed_to_grid(long long total, int stride,
                                             const long long* __restrict__ fixed,
                                             double inv_s0, double inv_sq,
                                             real* __restrict__ grid) {
    GRID_STRIDE(t, total)
    grid[t] = (real)((double)fixed[t] * ((t & (stride - 1)) == 0 ? inv_s0 : inv_sq));
}

#ifdef REAL_F64
typedef long long fixed_lane;
__device__ inline fixed_lane to_fixed(float v) { return __float2ll_rn(v); }
#else
typedef int fixed_lane;
__device__ inline fixed_lane to_fixed(float v) { return __float2int_rn(v); }
#endif

// One step of warp_reduce_scatter: lanes `off` apart swap halves of their first 2 HALF
// values; each keeps the sum of its half (the upper one where lane & off).
template <int HALF, typename T>
__device__ inline void swap_halves(T* v, int off) {
    const bool upper = (threadIdx.x & 31) & off;
#pragma unroll
    for (int k = 0; k < HALF; ++k) {
        T send = upper ? v[k] : v[k + HALF];
        T keep = upper ? v[k + HALF] : v[k];
        v[k] = keep + __shfl_xor_sync(FULL_MASK, send, off);
    }
}

// Sum of the NR values v over the warp, spread over the lanes: lane l ends with the totals
// of values NR/32 * l + k in v[k], k < NR/32 (NR a power of two, at least 32). Each step
// swaps half of what a lane holds with its partner, so the warp shuffles NR - NR/32 values
// instead of the 5 NR of a butterfly on every value.
template <int NR, typename T>
__device__ inline void warp_reduce_scatter(T v[NR]) {
    swap_halves<NR / 2>(v, 16);
    swap_halves<NR / 4>(v, 8);
    swap_halves<NR / 8>(v, 4);
    swap_halves<NR / 16>(v, 2);
    swap_halves<NR / 32>(v, 1);
}

// Warps over the pieces (runs of one dense cell's points): the points share their cell's
// stencil, so the lanes sum their weighted charges in registers, the warp reduces them and
// each total meets the grid in one atomic. The 4^D nodes go in SLABS slabs by their offset
// on the last axis (3-D: four slabs of 16 nodes x 4 channels), the points re-read per slab.
// FIXED: the charges summed as integers, into `fixed`.
template <int D, bool FIXED>
__device__ void scatter_cells(GridGeom g, int nc, const float* __restrict__ y,
                              const int* __restrict__ order, const int* __restrict__ pieces,
                              const int* __restrict__ npieces, real* __restrict__ grid,
                              float s0, float sq, long long* __restrict__ fixed) {
    typedef typename pick<FIXED, fixed_lane, real>::type acc_t;
    constexpr int K = 1 << (2 * D);         // stencil nodes
    constexpr int SLABS = D == 3 ? 4 : 1;   // slabs of nodes summed at a time
    constexpr int KS = K / SLABS;           // nodes per slab
    constexpr int NV = KS * (1 + D);        // values per slab, channel-major: c * KS + node
    constexpr int NR = NV <= 32 ? 32 : 64;  // padded for warp_reduce_scatter
    static_assert(NV <= 64, "scatter_cells holds at most 64 values per lane");
    constexpr int S = charge_stride(D);
    const int lane = threadIdx.x & 31;
    const int warps = gridDim.x * (blockDim.x >> 5);
    const int npc = *npieces;
    for (int pc = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); pc < npc; pc += warps) {
        const int cell = pieces[3 * pc], begin = pieces[3 * pc + 1], end = pieces[3 * pc + 2];
        long long corner = 0, st = 1;
        for (int a = 0, rest = cell; a < D; ++a, rest /= nc) {
            corner += (rest % nc) * st;
            st *= g.p;
        }
#pragma unroll
        for (int slab = 0; slab < SLABS; ++slab) {
            acc_t v[NR];
#pragma unroll
            for (int k = 0; k < NR; ++k) v[k] = 0;
            for (int j = begin + lane; j < end; j += 32) {
                const float* yi = y + (long long)order[j] * D;
                float w[D][4], q[D];
#pragma unroll
                for (int a = 0; a < D; ++a) {
                    stencil(yi[a], g.origin[a], g.inv_h, g.p, w[a]);
                    q[a] = yi[a] - g.centre[a];
                }
#pragma unroll
                for (int k = 0; k < KS; ++k) {
                    const int node = slab * KS + k;
                    float wt = 1.f;
#pragma unroll
                    for (int a = 0; a < D; ++a) wt *= w[a][(node >> (2 * a)) & 3];
                    if constexpr (FIXED) {
                        v[k] += to_fixed(wt * s0);
#pragma unroll
                        for (int a = 0; a < D; ++a)
                            v[(a + 1) * KS + k] += to_fixed(wt * q[a] * sq);
                    } else {
                        v[k] += (real)wt;
#pragma unroll
                        for (int a = 0; a < D; ++a) v[(a + 1) * KS + k] += (real)(wt * q[a]);
                    }
                }
            }
            warp_reduce_scatter<NR, acc_t>(v);
#pragma unroll
            for (int k = 0; k < NR / 32; ++k) {
                const int idx = NR / 32 * lane + k;
                if (idx >= NV) continue;
                const int ch = idx / KS, node = slab * KS + idx % KS;
                long long at = corner, sa = 1;
#pragma unroll
                for (int a = 0; a < D; ++a) {
                    at += ((node >> (2 * a)) & 3) * sa;
                    sa *= g.p;
                }
                if constexpr (FIXED)
                    atomicAdd(reinterpret_cast<unsigned long long*>(&fixed[at * S + ch]),
                              (unsigned long long)(long long)v[k]);
                else
                    atomicAdd(&grid[at * S + ch], v[k]);
            }
        }
    }
}

#define S2G_INSTANCES(D)                                                                     \
    extern "C" __global__ void s2g_bin_count_##D##d(int n, GridGeom g, int nc, const float* y, \
                                                    const int* prev, int* bin, int* counts) {  \
        bin_count<D>(n, g, nc, y, prev, bin, counts);                                         \
    }                                                                                         \
    extern "C" __global__ void s2g_scatter_sparse_##D##d(int n, GridGeom g, const float* y,   \
                                                         const int* order, const int* bin,    \
                                                         const int* counts, int dense_min,    \
                                                         real* grid) {                        \
        scatter_sparse<D, false>(n, g, y, order, bin, counts, dense_min, grid, 0.f, 0.f,      \
                                 nullptr);                                                    \
    }                                                                                         \
    extern "C" __global__ void __launch_bounds__(S2G_CELL_THREADS)                            \
        s2g_scatter_cells_##D##d(GridGeom g, int nc, const float* y, const int* order,        \
                                 const int* pieces, const int* npieces, real* grid) {         \
        scatter_cells<D, false>(g, nc, y, order, pieces, npieces, grid, 0.f, 0.f, nullptr);   \
    }                                                                                         \
    extern "C" __global__ void s2g_scatter_sparse_fixed_##D##d(                               \
        int n, GridGeom g, const float* y, const int* order, const int* bin,                  \
        const int* counts, int dense_min, float s0, float sq, long long* fixed) {             \
        scatter_sparse<D, true>(n, g, y, order, bin, counts, dense_min, nullptr, s0, sq,      \
                                fixed);                                                       \
    }                                                                                         \
    extern "C" __global__ void __launch_bounds__(S2G_CELL_THREADS)                            \
        s2g_scatter_cells_fixed_##D##d(GridGeom g, int nc, const float* y, const int* order,  \
                                       const int* pieces, const int* npieces, float s0,       \
                                       float sq, long long* fixed) {                          \
        scatter_cells<D, true>(g, nc, y, order, pieces, npieces, nullptr, s0, sq, fixed);     \
    }
S2G_INSTANCES(1)
S2G_INSTANCES(2)
S2G_INSTANCES(3)

// Bounding box of y: lo/hi receive per-axis min/max as order-preserving uint keys
// (initialised by the caller to 0xffffffff / 0), decoded on the host.
__device__ inline unsigned int float_key(float f) {
    unsigned int u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Reduced per warp, then per block, so that the four words take one atomic per block (one
// per warp contended on them for 0.12 ms at 1.3M points); launched with few blocks.
template <int D>
__device__ void bounds(int n, const float* __restrict__ y, unsigned int* lo, unsigned int* hi) {
    __shared__ float warp_mn[32][D], warp_mx[32][D];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    float mn[D], mx[D];
#pragma unroll
    for (int a = 0; a < D; ++a) { mn[a] = 3.4e38f; mx[a] = -3.4e38f; }
    GRID_STRIDE(i, n) {
#pragma unroll
        for (int a = 0; a < D; ++a) {
            float v = y[i * D + a];
            mn[a] = fminf(mn[a], v);
            mx[a] = fmaxf(mx[a], v);
        }
    }
#pragma unroll
    for (int a = 0; a < D; ++a) {
        for (int off = 16; off > 0; off >>= 1) {
            mn[a] = fminf(mn[a], __shfl_down_sync(FULL_MASK, mn[a], off));
            mx[a] = fmaxf(mx[a], __shfl_down_sync(FULL_MASK, mx[a], off));
        }
        if (lane == 0) {
            warp_mn[warp][a] = mn[a];
            warp_mx[warp][a] = mx[a];
        }
    }
    __syncthreads();
    if (warp == 0) {
#pragma unroll
        for (int a = 0; a < D; ++a) {
            mn[a] = lane < warps ? warp_mn[lane][a] : 3.4e38f;
            mx[a] = lane < warps ? warp_mx[lane][a] : -3.4e38f;
            for (int off = 16; off > 0; off >>= 1) {
                mn[a] = fminf(mn[a], __shfl_down_sync(FULL_MASK, mn[a], off));
                mx[a] = fmaxf(mx[a], __shfl_down_sync(FULL_MASK, mx[a], off));
            }
            if (lane == 0) {
                atomicMin(&lo[a], float_key(mn[a]));
                atomicMax(&hi[a], float_key(mx[a]));
            }
        }
    }
}

extern "C" __global__ void s2g_bounds_1d(int n, const float* y, unsigned int* lo, unsigned int* hi) { bounds<1>(n, y, lo, hi); }
extern "C" __global__ void s2g_bounds_2d(int n, const float* y, unsigned int* lo, unsigned int* hi) { bounds<2>(n, y, lo, hi); }
extern "C" __global__ void s2g_bounds_3d(int n, const float* y, unsigned int* lo, unsigned int* hi) { bounds<3>(n, y, lo, hi); }
