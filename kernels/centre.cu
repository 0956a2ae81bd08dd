// Centring on the device, shared by the kNN and the PCA (src/gpu/centre.rs): the column means
// of n x d points, then the centred copy and the squared norms of its rows.
//
// The column sums are exact sums (common.cuh), so that the mean stays exact at n = 10^6+
// and does not depend on the order the blocks' atomics land in (nor, then, do the
// distances after it). An exact sum holds terms below 1 and totals below 2^55 at a
// resolution of 2^-40: each column is scaled first by the power of two that brings its
// largest magnitude below 1 (exact), whatever the data's units (screening allows values
// up to ~1e18).
//
// Argument contract (declared in src/gpu/kernels/centre.rs): x, xc n*d floats, row-major;
// maxbits d words, zeroed before centre_column_max; sums d exact sums (d * EXACT_WORDS
// words), zeroed before centre_column_sums; mean d doubles; norms n floats. The first two
// kernels take any grid of blocks of a multiple of 32 threads, the same for both.

// The rows of block b: [r0, r1).
__device__ inline void block_rows(long long n, long long* r0, long long* r1) {
    long long per_block = (n + gridDim.x - 1) / gridDim.x;
    *r0 = blockIdx.x * per_block;
    *r1 = min(n, *r0 + per_block);
}

// The power of two that scales a column of largest magnitude max (as float bits) below 1.
__device__ inline double column_scale(unsigned int maxbits) {
    int e;
    frexp((double)__uint_as_float(maxbits), &e);
    return ldexp(1.0, -e);
}

// Calls f(j, first row, row step) for the column and rows this thread walks: with d at most
// blockDim.x, blockDim.x / d row lanes each take one column over every lanes-th row;
// otherwise each thread takes whole columns.
template <typename F>
__device__ inline void walk_columns(long long n, int d, F f) {
    long long r0, r1;
    block_rows(n, &r0, &r1);
    if (d <= (int)blockDim.x) {
        int lanes = blockDim.x / d;
        int j = threadIdx.x % d, sub = threadIdx.x / d;
        if (sub < lanes) f(j, r0 + sub, r1, (long long)lanes);
    } else {
        for (int j = threadIdx.x; j < d; j += blockDim.x) f(j, r0, r1, 1ll);
    }
}

// maxbits[j] = the largest |x_ij| as float bits (non-negative floats order as their bits).
extern "C" __global__ void centre_column_max(const float* __restrict__ x, long long n, int d,
                                             unsigned int* maxbits) {
    walk_columns(n, d, [&](int j, long long r, long long r1, long long step) {
        float m = 0.f;
        for (; r < r1; r += step) m = fmaxf(m, fabsf(x[r * d + j]));
        if (m > 0.f) atomicMax(&maxbits[j], __float_as_uint(m));
    });
}

// Column sums of x, each column scaled by column_scale, into sums.
extern "C" __global__ void centre_column_sums(const float* __restrict__ x, long long n, int d,
                                              const unsigned int* __restrict__ maxbits,
                                              unsigned long long* sums) {
    walk_columns(n, d, [&](int j, long long r, long long r1, long long step) {
        const double scale = column_scale(maxbits[j]);
        ExactSum s = exact_zero();
        for (; r < r1; r += step) exact_add(s, (double)x[r * d + j] * scale);
        exact_thread_add(s, sums + j * EXACT_WORDS);
    });
}

// mean[j] = sum_j / (n scale_j); one thread per column.
extern "C" __global__ void centre_means(long long n, int d,
                                        const unsigned int* __restrict__ maxbits,
                                        const unsigned long long* __restrict__ sums,
                                        double* __restrict__ mean) {
    GRID_STRIDE(j, d) {
        mean[j] = exact_value(sums + j * EXACT_WORDS) / column_scale(maxbits[j]) / (double)n;
    }
}

// xc = x - mean, norms[i] = ||xc_i||^2; one warp per row (grid-stride over rows).
extern "C" __global__ void centre_rows(const float* __restrict__ x, long long n, int d,
                                       const double* __restrict__ mean, float* __restrict__ xc,
                                       float* __restrict__ norms) {
    int lane = threadIdx.x & 31;
    long long warps = (long long)gridDim.x * (blockDim.x >> 5);
    for (long long i = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5; i < n;
         i += warps) {
        float acc = 0.f;
        for (int t = lane; t < d; t += 32) {
            float v = x[i * d + t] - (float)mean[t];
            xc[i * d + t] = v;
            acc = fmaf(v, v, acc);
        }
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(FULL_MASK, acc, off);
        if (lane == 0) norms[i] = acc;
    }
}
