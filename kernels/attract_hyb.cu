// Attraction F_attr,i = sum_j p_ij w_ij (y_i - y_j), w = 1/(1+|y_i-y_j|^2), over P in HYB
// (Bell & Garland 2009): an ELL part (n rows x K slots, column-major so that a warp reads
// 32 consecutive rows coalesced) and a COO part for the entries of rows longer than K.
//
// Argument contract (checked by the Rust wrapper, src/attract/gpu.rs):
//   y, force: n*D floats, row-major; ell_cols/ell_vals: K*n entries, slot k of row i at
//   k*n + i, padding slots have col = i and val = 0; coo_rows/coo_cols/coo_vals: m entries
//   sorted by row (the warp reduction in attract_coo relies on it).
//   kl (may be null): one double receiving sum p ln w.
// The ELL kernel overwrites force; the COO kernel then adds with atomics.

template <int D>
__device__ inline float pair_force(const float* __restrict__ y, int i, int j, float p,
                                   float acc[D]) {
    float d2 = 0.f, diff[D];
#pragma unroll
    for (int k = 0; k < D; ++k) {
        diff[k] = y[i * D + k] - y[j * D + k];
        d2 += diff[k] * diff[k];
    }
    float w = 1.f / (1.f + d2);
#pragma unroll
    for (int k = 0; k < D; ++k) acc[k] += p * w * diff[k];
    return w;
}

template <int D>
__device__ void attract_ell(int n, int K, const int* __restrict__ ell_cols,
                            const float* __restrict__ ell_vals, const float* __restrict__ y,
                            float* __restrict__ force, double* kl) {
    double local_kl = 0.0;
    GRID_STRIDE(i, n) {
        float acc[D];
#pragma unroll
        for (int k = 0; k < D; ++k) acc[k] = 0.f;
        for (int s = 0; s < K; ++s) {
            long long e = (long long)s * n + i;
            float p = ell_vals[e];
            float w = pair_force<D>(y, (int)i, ell_cols[e], p, acc);
            if (kl && p > 0.f) local_kl += (double)(p * logf(w));
        }
#pragma unroll
        for (int k = 0; k < D; ++k) force[i * D + k] = acc[k];
    }
    if (kl) {
        double s = block_sum(local_kl);
        if (threadIdx.x == 0) atomicAdd(kl, s);
    }
}

// COO entries are sorted by row (a hub's many reverse edges sit together), so each warp
// first sums its 32 entries per row with a segmented shuffle reduction and only the first
// lane of each row segment issues the atomics: one per row and warp instead of one per entry.
template <int D>
__device__ void attract_coo(long long m, const int* __restrict__ rows,
                            const int* __restrict__ cols, const float* __restrict__ vals,
                            const float* __restrict__ y, float* __restrict__ force, double* kl) {
    double local_kl = 0.0;
    const int lane = threadIdx.x & 31;
    const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
    for (long long base = ((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5) * 32; base < m;
         base += warps * 32) {
        long long e = base + lane;
        float acc[D];
#pragma unroll
        for (int k = 0; k < D; ++k) acc[k] = 0.f;
        int i = -1;
        if (e < m) {
            i = rows[e];
            float w = pair_force<D>(y, i, cols[e], vals[e], acc);
            if (kl) local_kl += (double)(vals[e] * logf(w));
        }
        // Segmented reduction towards the first lane of each row: rows are sorted, so a
        // lane `off` places further holding the same row means every lane between does too.
#pragma unroll
        for (int off = 1; off < 32; off <<= 1) {
            int other = __shfl_down_sync(FULL_MASK, i, off);
            bool same = lane + off < 32 && other == i;
#pragma unroll
            for (int k = 0; k < D; ++k) {
                float v = __shfl_down_sync(FULL_MASK, acc[k], off);
                if (same) acc[k] += v;
            }
        }
        int prev = __shfl_up_sync(FULL_MASK, i, 1);
        bool head = i >= 0 && (lane == 0 || prev != i);
        if (head) {
#pragma unroll
            for (int k = 0; k < D; ++k) atomicAdd(&force[i * D + k], acc[k]);
        }
    }
    if (kl) {
        double s = block_sum(local_kl);
        if (threadIdx.x == 0) atomicAdd(kl, s);
    }
}

#define ATTRACT_INSTANCES(D)                                                                   \
    extern "C" __global__ void attract_ell_##D##d(int n, int K, const int* ell_cols,           \
                                                  const float* ell_vals, const float* y,       \
                                                  float* force, double* kl) {                  \
        attract_ell<D>(n, K, ell_cols, ell_vals, y, force, kl);                                \
    }                                                                                          \
    extern "C" __global__ void attract_coo_##D##d(long long m, const int* rows, const int* cols, \
                                                  const float* vals, const float* y,           \
                                                  float* force, double* kl) {                  \
        attract_coo<D>(m, rows, cols, vals, y, force, kl);                                     \
    }
ATTRACT_INSTANCES(1)
ATTRACT_INSTANCES(2)
ATTRACT_INSTANCES(3)
