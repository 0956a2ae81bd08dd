// The approximate kNN's refinement (src/knn/gpu/refine.rs): one round of "a neighbour of a
// neighbour is likely a neighbour" (the local join of NN-descent, Dong, Charikar and Li
// 2011, on forward edges) over a kNN graph. Each row keeps the k nearest of its current
// neighbours and of the first `fan` neighbours of its first `fan` neighbours.
//
// Argument contract (declared in src/gpu/kernels/knn_refine.rs):
//   x: n x d floats, row-major, d <= REFINE_MAX_DIM; c: the key (src/knn/key.rs), as
//   knn.cu's knn_finish takes it: the inner product's c >= 0 (key 2(c - x.y)), or a negative
//   value for the squared distance; in_i: n x k ints, the graph (row i: neighbours of point
//   i, nearest first, each a row of x other than i); out_i, out_d: n x k, rows row0 .. row0
//   + rows written (keys ascending, equal ones by index). k + 32 <= REFINE_BUF, 1 <= fan <= k. in_i and out_i must not overlap, so that a
//   round reads one graph and its result does not depend on the order rows are done in.

// REFINE_WARPS (warps per block, one row each), REFINE_BUF (entries of a warp's merge
// buffer, a power of two) and REFINE_MAX_DIM come from src/gpu/kernels/knn_refine.rs.

// The key from q (shared memory) to row j of x (squared distance for c < 0, 2(c - q.x_j)
// for c >= 0): products and sum in double in one fixed order, rounded once, so that one
// pair always gets the same float.
__device__ __forceinline__ float refine_dist(const float* __restrict__ x, float c,
                                             const float* q, int d, int j) {
    const float* xr = x + (long long)j * d;
    double acc = 0.0;
    if (c < 0.f) {
        for (int t = 0; t < d; ++t) {
            const double diff = (double)q[t] - (double)xr[t];
            acc = fma(diff, diff, acc);
        }
        return (float)acc;
    }
    for (int t = 0; t < d; ++t) acc = fma((double)q[t], (double)xr[t], acc);
    return (float)(2.0 * ((double)c - acc));
}

// The order of entries: by distance, then by index; empty entries (+inf, -1) last.
__device__ __forceinline__ bool refine_before(float da, int ia, float db, int ib) {
    return da < db || (da == db && (unsigned)ia < (unsigned)ib);
}

// Bitonic sort of the warp's REFINE_BUF entries in shared memory, by refine_before.
__device__ void refine_sort(float* bd, int* bi, int lane) {
    for (int size = 2; size <= REFINE_BUF; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int t = lane; t < REFINE_BUF / 2; t += 32) {
                const int lo = 2 * t - (t & (stride - 1)), hi = lo + stride;
                const float dl = bd[lo], dh = bd[hi];
                const int il = bi[lo], ih = bi[hi];
                const bool ascending = (lo & size) == 0;
                if (ascending ? refine_before(dh, ih, dl, il) : refine_before(dl, il, dh, ih)) {
                    bd[lo] = dh;
                    bd[hi] = dl;
                    bi[lo] = ih;
                    bi[hi] = il;
                }
            }
            __syncwarp();
        }
    }
}

// Sorts the buffer's first m entries (the rest empty), drops repeats (one pair always has
// one key, so repeats sit side by side), keeps the k first and empties the rest.
// Returns how many it kept.
__device__ int refine_merge(float* bd, int* bi, int m, int k, int lane) {
    refine_sort(bd, bi, lane);
    int kept = 0;
    for (int base = 0; base < m && kept < k; base += 32) {
        const int e = base + lane;
        const float de = e < m ? bd[e] : KNN_INF;
        const int ie = e < m ? bi[e] : -1;
        // Position base - 1 is unchanged or rewritten with its own entry by now: entries
        // only move down, to positions below their own.
        const bool keep = e < m && (e == 0 || bi[e - 1] != ie);
        __syncwarp();
        const unsigned mask = __ballot_sync(FULL_MASK, keep);
        const int at = kept + __popc(mask & ((1u << lane) - 1u));
        if (keep && at < k) {
            bd[at] = de;
            bi[at] = ie;
        }
        kept += __popc(mask);
        __syncwarp();
    }
    kept = min(kept, k);
    for (int e = kept + lane; e < REFINE_BUF; e += 32) {
        bd[e] = KNN_INF;
        bi[e] = -1;
    }
    __syncwarp();
    return kept;
}

// Rows row0 .. row0 + rows of the refined graph. One warp per row: the row's neighbours
// (distances recomputed as the candidates' are) and the fan x fan candidates, 32 at a time,
// one per lane, go into the warp's buffer when within the current k-th distance; a full
// buffer is merged back to the k nearest. Blocks of REFINE_WARPS warps.
extern "C" __global__ void __launch_bounds__(REFINE_WARPS * 32)
    knn_refine(const float* __restrict__ x, long long n, int d, float c_key,
               const int* __restrict__ in_i,
               int k, int fan, long long row0, long long rows, int* __restrict__ out_i,
               float* __restrict__ out_d) {
    __shared__ float buf_d[REFINE_WARPS][REFINE_BUF];
    __shared__ int buf_i[REFINE_WARPS][REFINE_BUF];
    __shared__ float q_s[REFINE_WARPS][REFINE_MAX_DIM];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const long long r = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
    if (r >= rows) return;  // whole warps only; warp-level syncs below
    const long long i = row0 + r;
    float* bd = buf_d[w];
    int* bi = buf_i[w];
    float* q = q_s[w];
    for (int t = lane; t < d; t += 32) q[t] = x[i * d + t];
    __syncwarp();
    const int* row = in_i + i * k;
    for (int e = lane; e < REFINE_BUF; e += 32) {
        const int j = e < k ? row[e] : -1;
        bd[e] = j >= 0 ? refine_dist(x, c_key, q, d, j) : KNN_INF;
        bi[e] = j;
    }
    __syncwarp();
    int m = refine_merge(bd, bi, k, k, lane);
    float kth = m == k ? bd[k - 1] : KNN_INF;
    const int candidates = fan * fan;
    for (int base = 0; base < candidates; base += 32) {
        if (m + 32 > REFINE_BUF) {
            m = refine_merge(bd, bi, m, k, lane);
            kth = m == k ? bd[k - 1] : KNN_INF;
        }
        const int f = base + lane;
        int c = -1;
        float dc = KNN_INF;
        if (f < candidates) {
            const int a = f / fan, b = f - a * fan;
            const int j = row[a];
            c = j >= 0 ? in_i[(long long)j * k + b] : -1;
            if (c < 0 || c >= n || c == i) c = -1;
            else dc = refine_dist(x, c_key, q, d, c);
        }
        const bool take = c >= 0 && dc <= kth;
        const unsigned mask = __ballot_sync(FULL_MASK, take);
        if (take) {
            const int at = m + __popc(mask & ((1u << lane) - 1u));
            bd[at] = dc;
            bi[at] = c;
        }
        m += __popc(mask);
        __syncwarp();
    }
    m = refine_merge(bd, bi, m, k, lane);
    for (int e = lane; e < k; e += 32) {
        out_i[i * k + e] = bi[e];
        out_d[i * k + e] = bd[e];
    }
}
