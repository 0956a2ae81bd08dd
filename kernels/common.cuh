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

// The bisection on the precision beta of the perplexity calibration, step for step the CPU's
// (calibrate_row, src/affinity/perplexity.rs): from 1 / spread, doubling beta while the
// entropy is above its target and no upper bound is known, halving the bracket otherwise,
// until |gap| < tol or max_steps steps; then the beta of the smallest |gap| seen. gap(beta)
// is the row's entropy at beta minus the target; *converged says whether tol was met (when
// it was, gap's last call was at the returned beta). Shared by the kNN rows (one thread
// each, kernels/affinity.cu) and the exact rows (one block each, kernels/affinity_exact.cu,
// where every thread of the block calls it and gap reduces over the block).
template <typename Gap>
__device__ inline double perplexity_bisect(double spread, double tol, int max_steps, Gap gap,
                                           bool* converged) {
    double lo = 0.0, hi = __longlong_as_double(0x7ff0000000000000ll), beta = 1.0 / spread;
    double best_gap = hi, best_beta = beta;
    for (int step = 0; step < max_steps; ++step) {
        const double g = gap(beta);
        if (fabs(g) < best_gap) {
            best_gap = fabs(g);
            best_beta = beta;
        }
        if (fabs(g) < tol) {
            *converged = true;
            return beta;
        }
        if (g > 0.0) {
            lo = beta;
            beta = isinf(hi) ? beta * 2.0 : 0.5 * (lo + hi);
        } else {
            hi = beta;
            beta = 0.5 * (lo + hi);
        }
    }
    *converged = false;
    return best_beta;
}

// pick<B, T, F>::type is T if B, else F (NVRTC has no <type_traits>).
template <bool B, typename T, typename F>
struct pick {
    typedef T type;
};
template <typename T, typename F>
struct pick<false, T, F> {
    typedef F type;
};

// Exact sums (src/gpu/sum.rs): a double sum whose value does not depend on the order of
// its terms, so that a run repeats bit for bit whatever order blocks and atomics take. Each
// term is rounded once to a multiple of 2^-40 and split into integers, hi = floor(v 2^8) and
// lo = (v 2^8 - hi) 2^32 in [0, 2^32]; integer sums are exact, so every order gives the
// same words. A sum lives in EXACT_WORDS words of device memory (hi as two's complement,
// lo, and a flag raised by a term that is not finite or beyond +-2^55, the range of hi);
// zero them before the first add. Terms of magnitude below 2^-41 are lost, which is far
// below what the sums here are used for (Z, KL, means, totals).
#define EXACT_WORDS 3

struct ExactSum {
    long long hi;
    unsigned long long lo;
    unsigned int bad;
};

__device__ inline ExactSum exact_zero() {
    ExactSum s;
    s.hi = 0;
    s.lo = 0ull;
    s.bad = 0u;
    return s;
}

__device__ inline void exact_add(ExactSum& s, double v) {
    if (!(fabs(v) < 36028797018963968.0)) {  // 2^55; NaN fails too
        s.bad = 1u;
        return;
    }
    double x = v * 256.0, f = floor(x);
    s.hi += (long long)f;
    s.lo += (unsigned long long)llrint((x - f) * 4294967296.0);
}

// Adds the thread's sum s to the words `out`, one set of atomics per block (every thread
// of the block calls it; blockDim.x a multiple of 32, at most 1024). The carry of lo into
// hi is taken first, so that lo stays far from overflowing across blocks.
__device__ inline void exact_block_add(ExactSum s, unsigned long long* out) {
    __shared__ long long warp_hi[32];
    __shared__ unsigned long long warp_lo[32];
    __shared__ unsigned int warp_bad[32];
    s.hi += (long long)(s.lo >> 32);
    s.lo &= 0xffffffffull;
    for (int off = 16; off > 0; off >>= 1) {
        s.hi += __shfl_down_sync(FULL_MASK, s.hi, off);
        s.lo += __shfl_down_sync(FULL_MASK, s.lo, off);
        s.bad |= __shfl_down_sync(FULL_MASK, s.bad, off);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        warp_hi[warp] = s.hi;
        warp_lo[warp] = s.lo;
        warp_bad[warp] = s.bad;
    }
    __syncthreads();
    if (warp == 0) {
        int nwarps = (blockDim.x + 31) >> 5;
        s.hi = lane < nwarps ? warp_hi[lane] : 0;
        s.lo = lane < nwarps ? warp_lo[lane] : 0ull;
        s.bad = lane < nwarps ? warp_bad[lane] : 0u;
        for (int off = 16; off > 0; off >>= 1) {
            s.hi += __shfl_down_sync(FULL_MASK, s.hi, off);
            s.lo += __shfl_down_sync(FULL_MASK, s.lo, off);
            s.bad |= __shfl_down_sync(FULL_MASK, s.bad, off);
        }
        if (lane == 0) {
            if (s.hi) atomicAdd(&out[0], (unsigned long long)s.hi);
            if (s.lo) atomicAdd(&out[1], s.lo);
            if (s.bad) atomicOr(&out[2], 1ull);
        }
    }
    __syncthreads();
}

// Adds one thread's sum to `out` alone (for sums kept per row, not per block).
__device__ inline void exact_thread_add(ExactSum s, unsigned long long* out) {
    s.hi += (long long)(s.lo >> 32);
    s.lo &= 0xffffffffull;
    if (s.hi) atomicAdd(&out[0], (unsigned long long)s.hi);
    if (s.lo) atomicAdd(&out[1], s.lo);
    if (s.bad) atomicOr(&out[2], 1ull);
}

// The value of the words of an exact sum (NaN where a term was not finite or too large);
// the same words give the same double.
__device__ inline double exact_value(const unsigned long long* s) {
    if (s[2]) return __longlong_as_double(0x7ff8000000000000ll);
    return (double)(long long)s[0] * (1.0 / 256.0) + (double)s[1] * 9.094947017729282e-13;
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

// G1 alone (student_t's).
__device__ inline double student_g1(double d2, double dof) {
    double g1, g2;
    student_t(d2, dof, &g1, &g2);
    return g1;
}

// Grid-stride loop over [0, n).
#define GRID_STRIDE(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (long long)(n); \
         i += (long long)gridDim.x * blockDim.x)
