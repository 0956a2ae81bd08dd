// Attraction F_attr,i = sum_j p_ij e_ij (y_i - y_j), e = 1/(1+|y_i-y_j|^2/dof) (the Student t
// kernel's edge weight w^(1/dof), src/kernel.rs; dof 1: the Cauchy w), over P in HYB
// (Bell & Garland 2009): an ELL part (n rows x K slots, column-major so that a warp reads
// 32 consecutive rows coalesced) and a COO part for the entries of rows longer than K.
//
// Argument contract (declared in src/gpu/kernels/attract_hyb.rs):
//   P's rows are rows row0 .. row0+n of the whole P (a GPU's row block in a run over several
//   GPUs, src/backend/multi.rs; row0 = 0 otherwise): row i is point row0 + i, columns are
//   whole-P point numbers.
//   y: (row0+n)*D floats or more, row-major, every point; force: n*D floats, the rows'; ell_cols/ell_vals: K*n entries, slot k of row i at
//   k*n + i, padding slots have col = row0 + i and val = 0; COO rows are whole-P numbers too
//   (row0 .. row0+n), so that a block's COO part is a slice of the whole's; coo_rows/coo_cols/coo_vals: m entries
//   sorted by row (the warp reduction in attract_coo relies on it).
//   inv_dof, dof: 1/dof and dof in float (dof 1: both products exact, the Cauchy results
//   unchanged bit for bit); kl (may be null): an exact sum (common.cuh, EXACT_WORDS words)
//   receiving sum p ln w, ln w = dof ln e.
// The ELL kernel overwrites force; the COO kernel then adds with atomics.
//
// Deterministic forces (`--deterministic`, the *_fixed kernels): float atomics add in
// whatever order the warps reach them, and a row's entries sit in an order the
// symmetrisation's atomics chose, so the float sums vary in their last bits from run to
// run. The fixed kernels round every term p e (y_i - y_j) once to a multiple of 1/scale and
// sum 64-bit integers (exact, so in any order) into `fixed`; attract_fixed_to_force then
// writes force = fixed / scale. |F_attr,i| <= sqrt(dof)/2 * sum_j p_ij (e d peaks at
// d = sqrt(dof)), so with scale = 2^56 / max(1, sqrt(dof)) (src/attract/gpu.rs) the rows of
// a P that sums to 1 stay far inside the 64 bits, and the rounding (2^-56 sqrt(dof) per
// term) lies below a float's precision of the forces of 10^8 points.

// P's entries are read once per evaluation, and at 10M points they are 12 GB: they are
// loaded evict-first (`__ldcs`), so that they pass through L2 without pushing out the
// coordinates the gathers reuse (10M mixture, H100: 14.98 -> 14.29 ms per evaluation;
// benches/RESULTS.md, 2026-11-27).

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

// A force term added to a float sum, or to a fixed-point one (rounded to a multiple of
// 1/scale).
__device__ inline void accumulate(float& acc, float term, float) { acc += term; }
__device__ inline void accumulate(long long& acc, float term, float scale) {
    acc += __float2ll_rn(term * scale);
}

// Adds p e (y_i - y_j) to acc (float, or fixed point with `scale`); returns
// e = 1 / (1 + |y_i - y_j|^2 / dof).
template <int D, typename Acc>
__device__ inline float pair_force(const float yi[D], const float yj[D], float p, float inv_dof,
                                   float scale, Acc acc[D]) {
    float diff[D], d2 = 0.f;
#pragma unroll
    for (int k = 0; k < D; ++k) {
        diff[k] = yi[k] - yj[k];
        d2 += diff[k] * diff[k];
    }
    float w = 1.f / (1.f + d2 * inv_dof);
#pragma unroll
    for (int k = 0; k < D; ++k) accumulate(acc[k], p * w * diff[k], scale);
    return w;
}

// One ELL slot e of row point yi: its pull added to acc, and p ln w to kl_sum (unless null)
// when the slot holds a neighbour. Shared by the one-thread and the split forms.
template <int D, typename Acc>
__device__ __forceinline__ void ell_term(long long e, const int* __restrict__ ell_cols,
                                         const float* __restrict__ ell_vals,
                                         const float* __restrict__ y, const float yi[D],
                                         float inv_dof, float dof, float scale, Acc acc[D],
                                         ExactSum* kl_sum) {
    float p = __ldcs(ell_vals + e), yj[D];
    load_point<D>(y, __ldcs(ell_cols + e), yj);
    float w = pair_force<D>(yi, yj, p, inv_dof, scale, acc);
    if (kl_sum && p > 0.f) exact_add(*kl_sum, (double)(p * (dof * logf(w))));
}

// The ELL part with one thread per row, in float into force (FIXED false) or in fixed point
// into fixed: where the rows fill the device several times over. (The shared-memory sums of
// the split form below cost this case a tenth: 10M points, H200, 11.4 -> 12.4 s of
// attraction over 1000 iterations.)
template <int D, bool FIXED>
__device__ void attract_ell_rows(int n, int row0, int K, const int* __restrict__ ell_cols,
                                 const float* __restrict__ ell_vals,
                                 const float* __restrict__ y, float inv_dof, float dof,
                                 float scale, float* __restrict__ force,
                                 long long* __restrict__ fixed, unsigned long long* kl) {
    typedef typename pick<FIXED, long long, float>::type acc_t;
    ExactSum local_kl = exact_zero();
    GRID_STRIDE(i, n) {
        float yi[D];
        acc_t acc[D];
        load_point<D>(y, row0 + (int)i, yi);
#pragma unroll
        for (int k = 0; k < D; ++k) acc[k] = 0;
#pragma unroll 4
        for (int s = 0; s < K; ++s) {
            ell_term<D>((long long)s * n + i, ell_cols, ell_vals, y, yi, inv_dof, dof, scale,
                        acc, kl ? &local_kl : nullptr);
        }
#pragma unroll
        for (int k = 0; k < D; ++k) {
            if constexpr (FIXED)
                fixed[i * D + k] = acc[k];
            else
                force[i * D + k] = acc[k];
        }
    }
    if (kl) exact_block_add(local_kl, kl);
}

// The ELL part, with `split` threads per row (a power of two dividing the block;
// src/attract/gpu.rs picks it from n; 1: attract_ell_rows). A block holds
// rows = blockDim / split rows; thread t takes row t % rows and the slots g, g + split, ...
// for g = t / rows, so that each warp reads one slot of 32 consecutive rows (coalesced).
// The partial sums meet in shared memory and the row's first thread adds them in the order
// g = 0, 1, ...: the same forces from run to run. At small n one thread per row leaves most
// of the device idle (MNIST 70k on an H200: 0.10 ms per evaluation with one, 0.09 with 8).
template <int D, bool FIXED>
__device__ void attract_ell(int n, int row0, int K, int split, const int* __restrict__ ell_cols,
                            const float* __restrict__ ell_vals, const float* __restrict__ y,
                            float inv_dof, float dof, float scale, float* __restrict__ force,
                            long long* __restrict__ fixed, unsigned long long* kl) {
    if (split == 1) {
        attract_ell_rows<D, FIXED>(n, row0, K, ell_cols, ell_vals, y, inv_dof, dof, scale, force,
                                   fixed, kl);
        return;
    }
    typedef typename pick<FIXED, long long, float>::type acc_t;
    // Dynamic, blockDim * D * 8 bytes, given only to a split launch: the one-thread form keeps
    // all of the multiprocessor's L1 for its gathers.
    extern __shared__ __align__(8) unsigned char attract_parts[];
    acc_t* part = reinterpret_cast<acc_t*>(attract_parts);
    ExactSum local_kl = exact_zero();
    const int rows = blockDim.x / split;
    const int r = threadIdx.x % rows, g = threadIdx.x / rows;
    for (long long base = (long long)blockIdx.x * rows; base < n;
         base += (long long)gridDim.x * rows) {
        const long long i = base + r;
        acc_t acc[D];
#pragma unroll
        for (int k = 0; k < D; ++k) acc[k] = 0;
        if (i < n) {
            float yi[D];
            load_point<D>(y, row0 + (int)i, yi);
#pragma unroll 4
            for (int s = g; s < K; s += split) {
                ell_term<D>((long long)s * n + i, ell_cols, ell_vals, y, yi, inv_dof, dof,
                            scale, acc, kl ? &local_kl : nullptr);
            }
        }
#pragma unroll
        for (int k = 0; k < D; ++k) part[threadIdx.x * D + k] = acc[k];
        __syncthreads();
        if (g == 0 && i < n) {
            for (int h = 1; h < split; ++h) {
#pragma unroll
                for (int k = 0; k < D; ++k) acc[k] += part[(h * rows + r) * D + k];
            }
#pragma unroll
            for (int k = 0; k < D; ++k) {
                if constexpr (FIXED)
                    fixed[i * D + k] = acc[k];
                else
                    force[i * D + k] = acc[k];
            }
        }
        __syncthreads();
    }
    if (kl) exact_block_add(local_kl, kl);
}

// COO entries are sorted by row (a hub's many reverse edges sit together), so each warp
// first sums its 32 entries per row with a segmented shuffle reduction and only the first
// lane of each row segment issues the atomics: one per row and warp instead of one per entry.
// A warp takes COO_CHUNKS runs of 32 entries per step, their loads issued together (more
// gathers in flight per thread), and loops over the entries with a grid sized to fill the
// device once (src/attract/gpu.rs), not one block per 256 entries. COO_CHUNKS comes from
// src/gpu/kernels/attract_hyb.rs as a -D option.

// FIXED: the terms in fixed point, the totals added to `fixed` with integer atomics.
template <int D, bool FIXED>
__device__ void attract_coo(long long m, int row0, const int* __restrict__ rows,
                            const int* __restrict__ cols, const float* __restrict__ vals,
                            const float* __restrict__ y, float inv_dof, float dof, float scale,
                            float* __restrict__ force, long long* __restrict__ fixed,
                            unsigned long long* kl) {
    typedef typename pick<FIXED, long long, float>::type acc_t;
    ExactSum local_kl = exact_zero();
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
            i[c] = in ? __ldcs(rows + e) - row0 : -1;
            j[c] = in ? __ldcs(cols + e) : 0;
            p[c] = in ? __ldcs(vals + e) : 0.f;
        }
#pragma unroll
        for (int c = 0; c < COO_CHUNKS; ++c) {
            load_point<D>(y, row0 + max(i[c], 0), yi[c]);
            load_point<D>(y, j[c], yj[c]);
        }
#pragma unroll
        for (int c = 0; c < COO_CHUNKS; ++c) {
            acc_t acc[D];
#pragma unroll
            for (int k = 0; k < D; ++k) acc[k] = 0;
            float w = pair_force<D>(yi[c], yj[c], p[c], inv_dof, scale, acc);
            if (kl && i[c] >= 0) exact_add(local_kl, (double)(p[c] * (dof * logf(w))));
            // Segmented reduction towards the first lane of each row: rows are sorted, so a
            // lane `off` places further holding the same row means every lane between does.
#pragma unroll
            for (int off = 1; off < 32; off <<= 1) {
                int other = __shfl_down_sync(FULL_MASK, i[c], off);
                bool same = lane + off < 32 && other == i[c];
#pragma unroll
                for (int k = 0; k < D; ++k) {
                    acc_t v = __shfl_down_sync(FULL_MASK, acc[k], off);
                    if (same) acc[k] += v;
                }
            }
            int prev = __shfl_up_sync(FULL_MASK, i[c], 1);
            bool head = i[c] >= 0 && (lane == 0 || prev != i[c]);
            if (head) {
#pragma unroll
                for (int k = 0; k < D; ++k) {
                    if constexpr (FIXED)
                        atomicAdd(reinterpret_cast<unsigned long long*>(&fixed[i[c] * D + k]),
                                  (unsigned long long)acc[k]);
                    else
                        atomicAdd(&force[i[c] * D + k], acc[k]);
                }
            }
        }
    }
    if (kl) exact_block_add(local_kl, kl);
}

// force = fixed / scale, after the fixed kernels.
extern "C" __global__ void attract_fixed_to_force(long long len, const long long* __restrict__ fixed,
                                                  double inv_scale, float* __restrict__ force) {
    GRID_STRIDE(t, len) force[t] = (float)((double)fixed[t] * inv_scale);
}

// Both kernels wait on gathers: occupancy hides them, so their registers are capped for
// MIN_BLOCKS blocks of ATTRACT_THREADS (256, from src/gpu/kernels/attract_hyb.rs) threads per
// SM (8 = the full 2048 threads; 3-D would spill there).
#define ATTRACT_INSTANCES(D, MIN_BLOCKS)                                                  \
    extern "C" __global__ void __launch_bounds__(ATTRACT_THREADS, MIN_BLOCKS)             \
        attract_ell_##D##d(int n, int row0, int K, int split, const int* ell_cols,        \
                           const float* ell_vals, const float* y, float inv_dof, float dof, \
                           float* force, unsigned long long* kl) {                        \
        attract_ell<D, false>(n, row0, K, split, ell_cols, ell_vals, y, inv_dof, dof, 0.f, \
                              force, nullptr, kl);                                        \
    }                                                                                     \
    extern "C" __global__ void __launch_bounds__(ATTRACT_THREADS, MIN_BLOCKS)             \
        attract_ell_fixed_##D##d(int n, int row0, int K, int split, const int* ell_cols,  \
                                 const float* ell_vals, const float* y, float inv_dof,    \
                                 float dof, float scale, long long* fixed,                \
                                 unsigned long long* kl) {                                \
        attract_ell<D, true>(n, row0, K, split, ell_cols, ell_vals, y, inv_dof, dof, scale, \
                             nullptr, fixed, kl);                                         \
    }                                                                                     \
    extern "C" __global__ void __launch_bounds__(ATTRACT_THREADS, MIN_BLOCKS)                 \
        attract_coo_##D##d(long long m, int row0, const int* rows, const int* cols,           \
                           const float* vals, const float* y, float inv_dof, float dof,       \
                           float* force, unsigned long long* kl) {                            \
        attract_coo<D, false>(m, row0, rows, cols, vals, y, inv_dof, dof, 0.f, force,         \
                              nullptr, kl);                                                   \
    }                                                                                         \
    extern "C" __global__ void __launch_bounds__(ATTRACT_THREADS, MIN_BLOCKS)                 \
        attract_coo_fixed_##D##d(long long m, int row0, const int* rows, const int* cols,     \
                                 const float* vals, const float* y, float inv_dof, float dof, \
                                 float scale, long long* fixed, unsigned long long* kl) {     \
        attract_coo<D, true>(m, row0, rows, cols, vals, y, inv_dof, dof, scale, nullptr,      \
                             fixed, kl);                                                      \
    }
ATTRACT_INSTANCES(1, 8)
ATTRACT_INSTANCES(2, 8)
ATTRACT_INSTANCES(3, 6)
