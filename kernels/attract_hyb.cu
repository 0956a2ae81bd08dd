// Attraction F_attr,i = sum_j p_ij e_ij (y_i - y_j), e = 1/(1+|y_i-y_j|^2/dof) (the Student t
// kernel's edge weight w^(1/dof), src/kernel.rs; dof 1: the Cauchy w), over P in HYB
// (Bell & Garland 2009): an ELL part (n rows x K slots, column-major so that a warp reads
// 32 consecutive rows coalesced) and a COO part for the entries of rows longer than K.
//
// Argument contract (declared in src/gpu/kernels/attract_hyb.rs):
//   y, force: n*D floats, row-major; ell_cols/ell_vals: K*n entries, slot k of row i at
//   k*n + i, padding slots have col = i and val = 0; coo_rows/coo_cols/coo_vals: m entries
//   sorted by row (the warp reduction in attract_coo relies on it).
//   inv_dof, dof: 1/dof and dof in float (dof 1: both products exact, the Cauchy results
//   unchanged bit for bit); kl (may be null): one double receiving sum p ln w, ln w = dof ln e.
// The ELL kernel overwrites force; the COO kernel then adds with atomics.

// Point j's coordinates; in 2-D one 8-byte load (the gathers of y_j are what the
// attraction waits on: one request per neighbour instead of two).
template <int D>
__device__ inline void load_point(const float* __restrict__ y, int j, float out[D]) {
    if constexpr (D == 2) {
        float2 v = __ldg(reinterpret_cast<const float2*>(y) + j);
        out[0] = v.x;
        out[1] = v.y;
    } else {
#pragma unroll
        for (int k = 0; k < D; ++k) out[k] = __ldg(y + (long long)j * D + k);
    }
}

// Adds p e (y_i - y_j) to acc; returns e = 1 / (1 + |y_i - y_j|^2 / dof).
template <int D>
__device__ inline float pair_force(const float yi[D], const float yj[D], float p, float inv_dof,
                                   float acc[D]) {
    float diff[D], d2 = 0.f;
#pragma unroll
    for (int k = 0; k < D; ++k) {
        diff[k] = yi[k] - yj[k];
        d2 += diff[k] * diff[k];
    }
    float w = 1.f / (1.f + d2 * inv_dof);
#pragma unroll
    for (int k = 0; k < D; ++k) acc[k] += p * w * diff[k];
    return w;
}

template <int D>
__device__ void attract_ell(int n, int K, const int* __restrict__ ell_cols,
                            const float* __restrict__ ell_vals, const float* __restrict__ y,
                            float inv_dof, float dof, float* __restrict__ force, double* kl) {
    double local_kl = 0.0;
    GRID_STRIDE(i, n) {
        float acc[D], yi[D];
        load_point<D>(y, (int)i, yi);
#pragma unroll
        for (int k = 0; k < D; ++k) acc[k] = 0.f;
#pragma unroll 4
        for (int s = 0; s < K; ++s) {
            long long e = (long long)s * n + i;
            float p = ell_vals[e], yj[D];
            load_point<D>(y, ell_cols[e], yj);
            float w = pair_force<D>(yi, yj, p, inv_dof, acc);
            if (kl && p > 0.f) local_kl += (double)(p * (dof * logf(w)));
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
// A warp takes COO_CHUNKS runs of 32 entries per step, their loads issued together (more
// gathers in flight per thread), and loops over the entries with a grid sized to fill the
// device once (src/attract/gpu.rs), not one block per 256 entries. COO_CHUNKS comes from
// src/gpu/kernels/attract_hyb.rs as a -D option.

template <int D>
__device__ void attract_coo(long long m, const int* __restrict__ rows,
                            const int* __restrict__ cols, const float* __restrict__ vals,
                            const float* __restrict__ y, float inv_dof, float dof,
                            float* __restrict__ force, double* kl) {
    double local_kl = 0.0;
    const int lane = threadIdx.x & 31;
    const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
    const long long step = warps * 32 * COO_CHUNKS;
    for (long long base = ((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5) * 32 * COO_CHUNKS;
         base < m; base += step) {
        int i[COO_CHUNKS], j[COO_CHUNKS];
        float p[COO_CHUNKS], yi[COO_CHUNKS][D], yj[COO_CHUNKS][D];
#pragma unroll
        for (int c = 0; c < COO_CHUNKS; ++c) {
            long long e = base + c * 32 + lane;
            bool in = e < m;
            i[c] = in ? rows[e] : -1;
            j[c] = in ? cols[e] : 0;
            p[c] = in ? vals[e] : 0.f;
        }
#pragma unroll
        for (int c = 0; c < COO_CHUNKS; ++c) {
            load_point<D>(y, max(i[c], 0), yi[c]);
            load_point<D>(y, j[c], yj[c]);
        }
#pragma unroll
        for (int c = 0; c < COO_CHUNKS; ++c) {
            float acc[D];
#pragma unroll
            for (int k = 0; k < D; ++k) acc[k] = 0.f;
            float w = pair_force<D>(yi[c], yj[c], p[c], inv_dof, acc);
            if (kl && i[c] >= 0) local_kl += (double)(p[c] * (dof * logf(w)));
            // Segmented reduction towards the first lane of each row: rows are sorted, so a
            // lane `off` places further holding the same row means every lane between does.
#pragma unroll
            for (int off = 1; off < 32; off <<= 1) {
                int other = __shfl_down_sync(FULL_MASK, i[c], off);
                bool same = lane + off < 32 && other == i[c];
#pragma unroll
                for (int k = 0; k < D; ++k) {
                    float v = __shfl_down_sync(FULL_MASK, acc[k], off);
                    if (same) acc[k] += v;
                }
            }
            int prev = __shfl_up_sync(FULL_MASK, i[c], 1);
            bool head = i[c] >= 0 && (lane == 0 || prev != i[c]);
            if (head) {
#pragma unroll
                for (int k = 0; k < D; ++k) atomicAdd(&force[i[c] * D + k], acc[k]);
            }
        }
    }
    if (kl) {
        double s = block_sum(local_kl);
        if (threadIdx.x == 0) atomicAdd(kl, s);
    }
}

// Both kernels wait on gathers: occupancy hides them, so their registers are capped for
// MIN_BLOCKS blocks of ATTRACT_THREADS (256, from src/gpu/kernels/attract_hyb.rs) threads per
// SM (8 = the full 2048 threads; 3-D would spill there).
#define ATTRACT_INSTANCES(D, MIN_BLOCKS)                                                       \
    extern "C" __global__ void __launch_bounds__(ATTRACT_THREADS, MIN_BLOCKS) attract_ell_##D##d(int n, int K, const int* ell_cols,           \
                                                  const float* ell_vals, const float* y,       \
                                                  float inv_dof, float dof,                    \
                                                  float* force, double* kl) {                  \
        attract_ell<D>(n, K, ell_cols, ell_vals, y, inv_dof, dof, force, kl);                  \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(ATTRACT_THREADS, MIN_BLOCKS) attract_coo_##D##d(long long m, const int* rows, const int* cols, \
                                                  const float* vals, const float* y,           \
                                                  float inv_dof, float dof,                    \
                                                  float* force, double* kl) {                  \
        attract_coo<D>(m, rows, cols, vals, y, inv_dof, dof, force, kl);                       \
    }
ATTRACT_INSTANCES(1, 8)
ATTRACT_INSTANCES(2, 8)
ATTRACT_INSTANCES(3, 6)
