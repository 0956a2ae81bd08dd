// Exact k nearest neighbours on the GPU (DESIGN §1.3). The distance tiles come from cuBLAS
// SGEMM (src/knn/gpu/tiled.rs); these kernels keep the K best references of every query
// across reference tiles, and finish with exact keys.
//
// The key (src/knn/key.rs) is t_q + t_r - 2 q.r with per-row terms t: squared Euclidean,
// t = ||x||^2 on the centred points (centring leaves distances alone and shrinks the norms,
// hence the cancellation error of the GEMM form); inner product, t = c for every row on the
// points as given, 2(c - q.r). Ranking key of reference r for query q: s = t_r - 2 q.r, the
// key minus the per-query constant t_q.
//
// Argument contract (declared in src/gpu/kernels/knn.rs):
//   x: n*d floats, row-major (the caller's points); xc (the rows the tiles multiply) and
//   norms (their terms t) come from src/knn/gpu/mod.rs's key_rows;
//   norms: at least round_up(n, ldc) floats, 0 beyond n;
//   C: one tile, -2 xc_r . xc_q for r in [ref0, ref0 + r_valid), q in [q0, q0 + q_count),
//      column-major with ldc = reference-tile capacity (a multiple of 128):
//      C[q * ldc + (r - ref0)];
//   state_d, state_i: q_count * K entries, K = 32 * KR; row q holds the K best so far,
//      ascending by s, +inf / -1 where empty (knn_fill);
//   out_i, out_d: n * k entries, row q0 + q written by knn_finish (k <= K);
//   c (knn_finish): the inner product's c >= 0, or a negative value for squared Euclidean;
//   blocks of KNN_WARPS * 32 threads, one warp per query, ceil(q_count / KNN_WARPS) blocks.

// KNN_WARPS (warps per block of the selection and finish) comes from
// src/gpu/kernels/knn.rs as a -D option.

// Fills count entries of (dist, idx) with (value, -1): +inf empties the selection state,
// NaN poisons the outputs so that an entry knn_finish misses shows.
extern "C" __global__ void knn_fill(float* dist, int* idx, long long count, float value) {
    GRID_STRIDE(e, count) {
        dist[e] = value;
        idx[e] = -1;
    }
}

// The first `keep` of each of the n rows of k (idx, dist) entries, packed into n * keep:
// the few nearest a host stage reads (the quality measure's 10 of k = 90), so that only
// they cross to the host.
extern "C" __global__ void knn_leading(long long n, int k, int keep, const int* __restrict__ idx,
                                       const float* __restrict__ dist, int* __restrict__ idx_out,
                                       float* __restrict__ dist_out) {
    GRID_STRIDE(e, n * keep) {
        const long long at = e / keep * k + e % keep;
        idx_out[e] = idx[at];
        dist_out[e] = dist[at];
    }
}

// Inserts (x, xi) into the warp's sorted list: slot p = 32 * r + lane holds (v[r], id[r]).
// Every lane takes part; x is warp-uniform. Entries equal to x stay in front of it.
template <int KR>
__device__ __forceinline__ void topk_insert(float (&v)[KR], int (&id)[KR], float x, int xi,
                                            int lane) {
    float up[KR];
    int upi[KR];
    // up = the entry one slot lower (slot p - 1), -inf below slot 0.
#pragma unroll
    for (int r = 0; r < KR; ++r) {
        float a = __shfl_up_sync(FULL_MASK, v[r], 1);
        int ai = __shfl_up_sync(FULL_MASK, id[r], 1);
        float b = -KNN_INF;
        int bi = -1;
        if (r > 0) {
            b = __shfl_sync(FULL_MASK, v[r - 1], 31);
            bi = __shfl_sync(FULL_MASK, id[r - 1], 31);
        }
        up[r] = lane == 0 ? b : a;
        upi[r] = lane == 0 ? bi : ai;
    }
#pragma unroll
    for (int r = 0; r < KR; ++r) {
        bool keep = v[r] <= x;  // before the insertion point
        bool put = up[r] <= x;  // at it (given !keep)
        float nv = keep ? v[r] : (put ? x : up[r]);
        int ni = keep ? id[r] : (put ? xi : upi[r]);
        v[r] = nv;
        id[r] = ni;
    }
}

// Loads the warp's sorted list (slot 32 r + lane in v[r], id[r]) of query row q.
template <int KR>
__device__ __forceinline__ void load_list(const float* sd, const int* si, float (&v)[KR],
                                          int (&id)[KR], int lane) {
#pragma unroll
    for (int r = 0; r < KR; ++r) {
        v[r] = sd[r * 32 + lane];
        id[r] = si[r * 32 + lane];
    }
}

template <int KR>
__device__ __forceinline__ void store_list(float* sd, int* si, const float (&v)[KR],
                                           const int (&id)[KR], int lane) {
#pragma unroll
    for (int r = 0; r < KR; ++r) {
        sd[r * 32 + lane] = v[r];
        si[r * 32 + lane] = id[r];
    }
}

// Offers the warp's 128 candidates (lane holds keys s[0..3] of candidates first + 4 lane + t)
// to the list. Nearly every candidate is rejected by one compare with the warp's current
// K-th best (thr) and a ballot; the survivors are inserted one at a time, each tightening thr.
template <int KR>
__device__ __forceinline__ void offer4(float (&v)[KR], int (&id)[KR], float& thr, const float (&s)[4],
                                       int first, int lane) {
#pragma unroll
    for (int t = 0; t < 4; ++t) {
        unsigned pass = __ballot_sync(FULL_MASK, s[t] < thr);
        while (pass) {
            int src = __ffs(pass) - 1;
            pass &= pass - 1;
            float xv = __shfl_sync(FULL_MASK, s[t], src);
            if (xv < thr) {
                topk_insert<KR>(v, id, xv, first + src * 4 + t, lane);
                thr = __shfl_sync(FULL_MASK, v[KR - 1], 31);
            }
        }
    }
}

// Merges one distance tile into the state of its queries (columns of C: one warp per query).
// Block `block` takes queries KNN_WARPS * block + warp.
template <int KR>
__device__ void select_tile(int block, const float* __restrict__ C, int ldc, int r_valid,
                            int q_count, int q0, int ref0, const float* __restrict__ norms,
                            float* __restrict__ state_d, int* __restrict__ state_i) {
    constexpr int K = 32 * KR;
    const int lane = threadIdx.x & 31;
    const int q = block * KNN_WARPS + (threadIdx.x >> 5);
    if (q >= q_count) return;  // whole warps only
    float v[KR];
    int id[KR];
    float* sd = state_d + (long long)q * K;
    int* si = state_i + (long long)q * K;
    load_list<KR>(sd, si, v, id, lane);
    float thr = __shfl_sync(FULL_MASK, v[KR - 1], 31);
    const float* row = C + (long long)q * ldc;
    const float* nr = norms + ref0;
    const int self = q0 + q - ref0;  // this query's own column, maybe outside the tile
    // Software pipeline: the next 128 candidates load while these are examined.
    float4 c = __ldg(reinterpret_cast<const float4*>(row) + lane);
    float4 m = __ldg(reinterpret_cast<const float4*>(nr) + lane);
    for (int base = 0; base < r_valid; base += 128) {
        float s[4] = {c.x + m.x, c.y + m.y, c.z + m.z, c.w + m.w};
        const int next = base + 128;
        if (next < r_valid) {
            c = __ldg(reinterpret_cast<const float4*>(row + next) + lane);
            m = __ldg(reinterpret_cast<const float4*>(nr + next) + lane);
        }
        if (next > r_valid || (self >= base && self < next)) {  // rare: tile end or self
#pragma unroll
            for (int t = 0; t < 4; ++t) {
                int j = base + lane * 4 + t;
                if (j >= r_valid || j == self) s[t] = KNN_INF;
            }
        }
        offer4<KR>(v, id, thr, s, ref0 + base, lane);
    }
    store_list<KR>(sd, si, v, id, lane);
}

// The transposed merge, for the symmetric schedule: the tile's rows r (its references) are
// the queries here, its columns (c_count of them, starting at point cand0) the candidates,
// and the state rows are those of the rows. A block's KNN_WARPS warps take KNN_WARPS
// consecutive rows; each step stages a KNN_SLAB-column by KNN_WARPS-row slab in shared
// memory with 32-byte reads, then each warp offers its row's candidates 128 at a time. The
// tile holds no query's own point (it is off the diagonal).
#define KNN_SLAB 512
template <int KR>
__device__ void select_tile_t(int block, const float* __restrict__ C, int ldc, int r_count,
                              int c_count, int cand0, const float* __restrict__ norms,
                              float* __restrict__ state_d, int* __restrict__ state_i) {
    constexpr int K = 32 * KR;
    __shared__ __align__(16) float slab[KNN_WARPS][KNN_SLAB + 4];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int r0 = block * KNN_WARPS;
    const int r = r0 + w;
    const bool active = r < r_count;
    float v[KR];
    int id[KR];
    float* sd = state_d + (long long)r * K;
    int* si = state_i + (long long)r * K;
    if (active) load_list<KR>(sd, si, v, id, lane);
    float thr = active ? __shfl_sync(FULL_MASK, v[KR - 1], 31) : 0.f;
    // Thread t stages row r0 + t % KNN_WARPS of the columns t / KNN_WARPS + 32 j.
    const int sr = threadIdx.x % KNN_WARPS, sc = threadIdx.x / KNN_WARPS;
    const bool row_ok = r0 + sr < r_count;
    for (int base = 0; base < c_count; base += KNN_SLAB) {
#pragma unroll
        for (int j = 0; j < KNN_SLAB / 32; ++j) {
            int col = base + sc + 32 * j;
            slab[sr][sc + 32 * j] =
                (col < c_count && row_ok) ? C[(long long)col * ldc + r0 + sr] : 0.f;
        }
        __syncthreads();
        if (active) {
            for (int sub = 0; sub < KNN_SLAB && base + sub < c_count; sub += 128) {
                const float4 c = reinterpret_cast<const float4*>(slab[w] + sub)[lane];
                const float cs[4] = {c.x, c.y, c.z, c.w};
                float s[4];
#pragma unroll
                for (int t = 0; t < 4; ++t) {
                    int col = base + sub + lane * 4 + t;
                    s[t] = col < c_count ? cs[t] + norms[cand0 + col] : KNN_INF;
                }
                offer4<KR>(v, id, thr, s, cand0 + base + sub, lane);
            }
        }
        __syncthreads();
    }
    if (active) store_list<KR>(sd, si, v, id, lane);
}

// Recomputes the K candidates' keys exactly (in double on the caller's points, rounded once
// to float: the squared distance from the differences for c < 0, 2(c - q.r) from the
// products for c >= 0), ranks them by (key, index) and writes the first k to row q0 + q of
// out_i / out_d.
template <int KR>
__device__ void finish(const float* __restrict__ x, int d, int q0, int q_count, int k,
                       float c_ip, const int* __restrict__ state_i, int* __restrict__ out_i,
                       float* __restrict__ out_d) {
    constexpr int K = 32 * KR;
    __shared__ float dist[KNN_WARPS][K];
    __shared__ int idx[KNN_WARPS][K];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int q = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5);
    if (q >= q_count) return;  // whole warps only; warp-level syncs below
    const long long qi = (long long)q0 + q;
    const float* xq = x + qi * d;
#pragma unroll
    for (int r = 0; r < KR; ++r) idx[w][r * 32 + lane] = state_i[(long long)q * K + r * 32 + lane];
    __syncwarp();
    for (int c = 0; c < K; ++c) {
        const int j = idx[w][c];  // warp-uniform
        double acc = 0.0;
        if (j >= 0) {
            const float* xr = x + (long long)j * d;
            if (c_ip < 0.f) {
                for (int t = lane; t < d; t += 32) {
                    double diff = (double)xq[t] - (double)xr[t];
                    acc = fma(diff, diff, acc);
                }
            } else {
                for (int t = lane; t < d; t += 32) acc = fma((double)xq[t], (double)xr[t], acc);
            }
        }
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(FULL_MASK, acc, off);
        if (c_ip >= 0.f) acc = 2.0 * ((double)c_ip - acc);
        if (lane == 0) dist[w][c] = j >= 0 ? (float)acc : KNN_INF;
    }
    __syncwarp();
#pragma unroll
    for (int r = 0; r < KR; ++r) {
        const int c = r * 32 + lane;
        const float dc = dist[w][c];
        const unsigned ic = (unsigned)idx[w][c];  // empty (-1) ranks last
        int rank = 0;
        for (int o = 0; o < K; ++o) {
            float dd = dist[w][o];
            unsigned io = (unsigned)idx[w][o];
            rank += (dd < dc) || (dd == dc && (io < ic || (io == ic && o < c)));
        }
        if (rank < k) {
            out_i[qi * k + rank] = (int)ic;
            out_d[qi * k + rank] = dc;
        }
    }
}

#define KNN_INSTANCES(KR)                                                                     \
    /* Blocks below ceil(q_count / KNN_WARPS) merge the tile into the queries' lists by */    \
    /* rows; any further blocks merge it into the references' lists by columns. */           \
    extern "C" __global__ void __launch_bounds__(KNN_WARPS * 32)                             \
        knn_select_##KR(const float* C, int ldc, int r_valid, int q_count, int q0, int ref0, \
                        const float* norms, float* state_d, int* state_i,                     \
                        float* ref_state_d, int* ref_state_i) {                               \
        const int row_blocks = (q_count + KNN_WARPS - 1) / KNN_WARPS;                         \
        if ((int)blockIdx.x < row_blocks)                                                     \
            select_tile<KR>(blockIdx.x, C, ldc, r_valid, q_count, q0, ref0, norms, state_d,  \
                            state_i);                                                         \
        else                                                                                  \
            select_tile_t<KR>(blockIdx.x - row_blocks, C, ldc, r_valid, q_count, q0, norms,  \
                              ref_state_d, ref_state_i);                                      \
    }                                                                                         \
    extern "C" __global__ void __launch_bounds__(KNN_WARPS * 32)                             \
        knn_finish_##KR(const float* x, int d, int q0, int q_count, int k, float c,          \
                        const int* state_i, int* out_i, float* out_d) {                       \
        finish<KR>(x, d, q0, q_count, k, c, state_i, out_i, out_d);                           \
    }
// One list length per compilation: KNN_KR comes from src/knn/gpu (`list_variant`) as a -D
// option. A run keeps lists of one length; all eight instances took 3.5 s of NVRTC, which a
// fresh machine's first run waited for. The indirection expands KNN_KR before pasting.
#define KNN_INSTANCES_OF(KR) KNN_INSTANCES(KR)
KNN_INSTANCES_OF(KNN_KR)
