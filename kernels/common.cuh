// Shared device helpers, prepended to every kernel file before NVRTC compiles it.

// Every lane of a warp, for the *_sync intrinsics.
#define FULL_MASK 0xffffffffu

// +infinity as a float (NVRTC has no math.h): empty list slots, distances never selected.
#define KNN_INF __int_as_float(0x7f800000)

// Sum of a double over a block (blockDim.x a multiple of 32, at most 1024); the result is
// valid in thread 0. Used for Z and KL partial sums, which must be exact enough at
// n = 10^6+ (float accumulation of 10^12 pair weights loses the low digits).
__device__ inline double block_sum(double v) {
    __shared__ double warp_sums[32];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(FULL_MASK, v, off);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int nwarps = (blockDim.x + 31) >> 5;
        v = lane < nwarps ? warp_sums[lane] : 0.0;
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(FULL_MASK, v, off);
    }
    __syncthreads();
    return v;
}

// Exclusive scan of v over the block (blockDim.x a multiple of 32); *total = the block's sum.
__device__ inline long long block_exclusive_scan(long long v, long long* total) {
    __shared__ long long warp_tot[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    long long x = v;
    for (int off = 1; off < 32; off <<= 1) {
        long long y = __shfl_up_sync(FULL_MASK, x, off);
        if (lane >= off) x += y;
    }
    if (lane == 31) warp_tot[warp] = x;
    __syncthreads();
    if (warp == 0) {
        long long t = lane < nw ? warp_tot[lane] : 0;
        for (int off = 1; off < 32; off <<= 1) {
            long long y = __shfl_up_sync(FULL_MASK, t, off);
            if (lane >= off) t += y;
        }
        warp_tot[lane] = t;
    }
    __syncthreads();
    long long excl = x - v + (warp > 0 ? warp_tot[warp - 1] : 0);
    *total = warp_tot[nw - 1];
    __syncthreads();
    return excl;
}

// Student's t kernel of dof degrees of freedom (src/kernel.rs) at squared distance d2:
// edge = 1/(1 + d2/dof), G1 = edge^dof (edge itself for dof 1), G2 = G1 * edge. With dof 1
// the division and the product are exact, so the Cauchy kernel's values are unchanged bit
// for bit.
__device__ inline void student_t(double d2, double dof, double* g1, double* g2) {
    double edge = 1.0 / (1.0 + d2 / dof);
    *g1 = dof == 1.0 ? edge : pow(edge, dof);
    *g2 = *g1 * edge;
}

// Grid-stride loop over [0, n).
#define GRID_STRIDE(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (long long)(n); \
         i += (long long)gridDim.x * blockDim.x)
