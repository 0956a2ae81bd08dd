// S2G: spread every point's charges (1, y^1 - c^1, ..., y^D - c^D) onto the 4^D surrounding
// nodes with cubic Lagrange weights (Linderman et al. 2019; SG-t-SNE-Pi's s2g). Grids are
// channel-major: channel c of node m at c * len + m.
//
// Float atomics on the grid contend where many points share nodes (a cluster of 10^5 points
// covers a few hundred nodes), so points are binned by tile: the grid's stencil corners are
// cut into tiles of T^D nodes; a tile holding at least dense_min points is "dense" and its
// points are spread into a (T+3)^D patch in shared memory by blocks of one piece (at most
// `piece` points of one tile) each, the patch then added to the grid; the points of sparse
// tiles go to the grid directly. Per call: s2g_bin_count (tile of each point, counts),
// s2g_bin_plan (offsets, pieces), s2g_bin_place (dense points sorted by tile),
// s2g_scatter_sparse, s2g_scatter_dense.
//
// Argument contract (src/repulse/s2g_gpu.rs): y n*D floats, every point inside the grid's
// box (the grid was fitted to it); grid (1+D)*len reals (repulse.cuh), zeroed, len = p^D; nt tiles per
// axis, nt = ceil((p - 3) / T), ntiles = nt^D; bin, order n ints; counts ntiles ints, zeroed
// before s2g_bin_count; starts ntiles + 1 ints, cursor ntiles ints; pieces 3 ints per piece
// (tile, begin, end), room for n / piece + min(ntiles, n / dense_min) + 1 pieces; npieces one
// int. Uses repulse.cuh (prepended with common.cuh by src/gpu/kernels.rs).

#define S2G_PLAN_THREADS 1024

// The point's per-axis stencil weights and its first node's (offset -1) per-axis index.
template <int D>
__device__ inline void corner_of(const float* __restrict__ yi, const GridGeom& g, float w[D][4],
                                 int c[D]) {
#pragma unroll
    for (int a = 0; a < D; ++a) c[a] = stencil(yi[a], g.origin[a], g.inv_h, g.p, w[a]) - 1;
}

// Tile of a point: its stencil corner's per-axis index divided by T.
template <int D>
__device__ inline int tile_of(const float* __restrict__ yi, const GridGeom& g, int T, int nt) {
    int key = 0, stride = 1;
#pragma unroll
    for (int a = 0; a < D; ++a) {
        float x;
        key += ((stencil_base(yi[a], g.origin[a], g.inv_h, g.p, &x) - 1) / T) * stride;
        stride *= nt;
    }
    return key;
}

// Adds the point's 4^D weighted charges at node `corner` of a channel-major array of `len`
// nodes per channel and `stride` nodes per axis (the grid, or a shared patch).
template <int D>
__device__ inline void spread(const float* __restrict__ yi, const GridGeom& g, const float w[D][4],
                              long long corner, int stride, long long len, real* out) {
    float q[D];
#pragma unroll
    for (int a = 0; a < D; ++a) q[a] = yi[a] - g.centre[a];
#pragma unroll
    for (int k = 0; k < (1 << (2 * D)); ++k) {
        float wt;
        long long idx = stencil_node<D>(k, corner, stride, w, &wt);
        atomicAdd(&out[idx], (real)wt);
#pragma unroll
        for (int a = 0; a < D; ++a) atomicAdd(&out[(a + 1) * len + idx], (real)(wt * q[a]));
    }
}

// bin[i] = tile of point i; counts[tile] += 1, one atomic per tile per warp (__match_any).
template <int D>
__device__ void bin_count(int n, GridGeom g, int T, int nt, const float* __restrict__ y,
                          int* __restrict__ bin, int* counts) {
    const int lane = threadIdx.x & 31;
    long long warp0 = (blockIdx.x * (long long)blockDim.x + threadIdx.x) - lane;
    for (long long base = warp0; base < n; base += (long long)gridDim.x * blockDim.x) {
        long long i = base + lane;
        int key = i < n ? tile_of<D>(y + i * D, g, T, nt) : -1;
        unsigned peers = __match_any_sync(FULL_MASK, key);
        if (key >= 0) {
            bin[i] = key;
            if (lane == __ffs(peers) - 1) atomicAdd(&counts[key], __popc(peers));
        }
    }
}

// One block of S2G_PLAN_THREADS: starts = exclusive prefix sums of counts (starts[ntiles] =
// n), cursor = starts, and the pieces of the dense tiles (counts >= dense_min), split into runs
// of at most `piece` points, in tile order; npieces = their number.
extern "C" __global__ void __launch_bounds__(S2G_PLAN_THREADS)
    s2g_bin_plan(int ntiles, const int* __restrict__ counts, int dense_min, int piece,
                 int* __restrict__ starts, int* __restrict__ cursor, int* __restrict__ pieces,
                 int* __restrict__ npieces) {
    __shared__ int scan_pts[S2G_PLAN_THREADS];
    __shared__ int scan_pcs[S2G_PLAN_THREADS];
    const int t = threadIdx.x;
    const int per = (ntiles + S2G_PLAN_THREADS - 1) / S2G_PLAN_THREADS;
    const int t0 = min(ntiles, t * per), t1 = min(ntiles, t0 + per);
    int pts = 0, pcs = 0;
    for (int k = t0; k < t1; ++k) {
        int c = counts[k];
        pts += c;
        if (c >= dense_min) pcs += (c + piece - 1) / piece;
    }
    scan_pts[t] = pts;
    scan_pcs[t] = pcs;
    __syncthreads();
    // Hillis-Steele inclusive scan of both sequences.
    for (int off = 1; off < S2G_PLAN_THREADS; off <<= 1) {
        int a = t >= off ? scan_pts[t - off] : 0;
        int b = t >= off ? scan_pcs[t - off] : 0;
        __syncthreads();
        scan_pts[t] += a;
        scan_pcs[t] += b;
        __syncthreads();
    }
    int at = scan_pts[t] - pts, pc = scan_pcs[t] - pcs;
    for (int k = t0; k < t1; ++k) {
        int c = counts[k];
        starts[k] = at;
        cursor[k] = at;
        if (c >= dense_min) {
            for (int b = 0; b < c; b += piece) {
                pieces[3 * pc] = k;
                pieces[3 * pc + 1] = at + b;
                pieces[3 * pc + 2] = at + min(c, b + piece);
                ++pc;
            }
        }
        at += c;
    }
    if (t == S2G_PLAN_THREADS - 1) {
        starts[ntiles] = at;
        *npieces = pc;
    }
}

// order[cursor[tile]++] = i for the points of dense tiles (one atomic per tile per warp).
extern "C" __global__ void s2g_bin_place(int n, const int* __restrict__ bin,
                                         const int* __restrict__ counts, int dense_min,
                                         int* cursor, int* __restrict__ order) {
    const int lane = threadIdx.x & 31;
    long long warp0 = (blockIdx.x * (long long)blockDim.x + threadIdx.x) - lane;
    for (long long base = warp0; base < n; base += (long long)gridDim.x * blockDim.x) {
        long long i = base + lane;
        int key = -1;
        if (i < n) {
            key = bin[i];
            if (counts[key] < dense_min) key = -1;
        }
        unsigned peers = __match_any_sync(FULL_MASK, key);
        int leader = __ffs(peers) - 1;
        int at = 0;
        if (key >= 0 && lane == leader) at = atomicAdd(&cursor[key], __popc(peers));
        at = __shfl_sync(peers, at, leader);
        if (key >= 0) order[at + __popc(peers & ((1u << lane) - 1))] = (int)i;
    }
}

// The points of sparse tiles, straight to the grid.
template <int D>
__device__ void scatter_sparse(int n, GridGeom g, const float* __restrict__ y,
                               const int* __restrict__ bin, const int* __restrict__ counts,
                               int dense_min, real* __restrict__ grid) {
    long long len = 1;
    for (int a = 0; a < D; ++a) len *= g.p;
    GRID_STRIDE(i, n) {
        if (counts[bin[i]] >= dense_min) continue;
        float w[D][4];
        int c[D];
        corner_of<D>(y + i * D, g, w, c);
        long long corner = 0, st = 1;
#pragma unroll
        for (int a = 0; a < D; ++a) {
            corner += c[a] * st;
            st *= g.p;
        }
        spread<D>(y + i * D, g, w, corner, g.p, len, grid);
    }
}

// One block per piece: its points into a shared (T+3)^D patch, then the patch's non-zero
// entries added to the grid.
template <int D>
__device__ void scatter_dense(GridGeom g, int T, int nt, const float* __restrict__ y,
                              const int* __restrict__ order, const int* __restrict__ pieces,
                              const int* __restrict__ npieces, real* __restrict__ grid) {
    extern __shared__ real patch[];
    if ((int)blockIdx.x >= *npieces) return;
    const int tile = pieces[3 * blockIdx.x], begin = pieces[3 * blockIdx.x + 1],
              end = pieces[3 * blockIdx.x + 2];
    const int P = T + 3;
    int plen = 1, origin[D];
    long long len = 1;
    for (int a = 0, rest = tile; a < D; ++a, rest /= nt) {
        origin[a] = (rest % nt) * T;
        plen *= P;
        len *= g.p;
    }
    for (int e = threadIdx.x; e < (1 + D) * plen; e += blockDim.x) patch[e] = 0;
    __syncthreads();
    for (int j = begin + threadIdx.x; j < end; j += blockDim.x) {
        const int i = order[j];
        float w[D][4];
        int c[D];
        corner_of<D>(y + (long long)i * D, g, w, c);
        int local = 0;
        for (int a = D - 1; a >= 0; --a) local = local * P + (c[a] - origin[a]);
        spread<D>(y + (long long)i * D, g, w, local, P, plen, patch);
    }
    __syncthreads();
    for (int e = threadIdx.x; e < (1 + D) * plen; e += blockDim.x) {
        real v = patch[e];
        if (v == 0) continue;
        int ch = e / plen, m = e - ch * plen;
        long long node = 0, st = 1;
        bool inside = true;
        for (int a = 0; a < D; ++a, m /= P) {
            int at = origin[a] + m % P;
            inside &= at < g.p;
            node += at * st;
            st *= g.p;
        }
        if (inside) atomicAdd(&grid[ch * len + node], v);
    }
}

#define S2G_INSTANCES(D)                                                                       \
    extern "C" __global__ void s2g_bin_count_##D##d(int n, GridGeom g, int T, int nt,          \
                                                    const float* y, int* bin, int* counts) {   \
        bin_count<D>(n, g, T, nt, y, bin, counts);                                             \
    }                                                                                          \
    extern "C" __global__ void s2g_scatter_sparse_##D##d(int n, GridGeom g, const float* y,    \
                                                         const int* bin, const int* counts,    \
                                                         int dense_min, real* grid) {          \
        scatter_sparse<D>(n, g, y, bin, counts, dense_min, grid);                              \
    }                                                                                          \
    extern "C" __global__ void s2g_scatter_dense_##D##d(GridGeom g, int T, int nt,             \
                                                        const float* y, const int* order,      \
                                                        const int* pieces, const int* npieces, \
                                                        real* grid) {                          \
        scatter_dense<D>(g, T, nt, y, order, pieces, npieces, grid);                           \
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

template <int D>
__device__ void bounds(int n, const float* __restrict__ y, unsigned int* lo, unsigned int* hi) {
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
        if ((threadIdx.x & 31) == 0) {
            atomicMin(&lo[a], float_key(mn[a]));
            atomicMax(&hi[a], float_key(mx[a]));
        }
    }
}

extern "C" __global__ void s2g_bounds_1d(int n, const float* y, unsigned int* lo, unsigned int* hi) { bounds<1>(n, y, lo, hi); }
extern "C" __global__ void s2g_bounds_2d(int n, const float* y, unsigned int* lo, unsigned int* hi) { bounds<2>(n, y, lo, hi); }
extern "C" __global__ void s2g_bounds_3d(int n, const float* y, unsigned int* lo, unsigned int* hi) { bounds<3>(n, y, lo, hi); }
