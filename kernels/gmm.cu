// Gaussian mixtures on the device (src/gmm/gpu.rs): the passes over the samples that
// cuBLAS and cuSOLVER do not make. The products (means, weighted covariances by SYRK), the
// Cholesky factorisations (POTRF) and the triangular solves (TRSM) are theirs; these kernels
// build the deviations those take, turn solved deviations into log-densities, normalise the
// responsibilities by log-sum-exp, and sum the diagonal covariances.
//
// Element type `real`: double when NVRTC is given -DREAL_F64 (src/gpu/real.rs), else float,
// as `--precision` asks; log-likelihood sums are kept in double either way.
//
// Argument contract (declared in src/gpu/kernels/gmm.rs): x n*d values, row-major; resp
// n*k, row-major; means and scales k*d, row-major; deviations b*d, row-major (the d x b
// column-major matrix cuBLAS sees); factor d*d column-major, lower triangle. Every kernel
// takes any grid of blocks of a multiple of 32 threads (at most 1024).

#ifdef REAL_F64
typedef double real;
#else
typedef float real;
#endif

// Sum of v over a warp, in a fixed order; the result is valid in lane 0.
__device__ inline real warp_sum(real v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(FULL_MASK, v, off);
    return v;
}

// out (b x d) = x_i - mean for the b rows from row0, each times sqrt(resp[i*k + c]) when
// weighted (the M-step's sqrt(r_ic) (x_i - mu_c), whose SYRK is sum_i r_ic (x_i - mu_c)
// (x_i - mu_c)^T), else as they are (the E-step's, which TRSM then solves).
extern "C" __global__ void gmm_deviations(const real* __restrict__ x, long long row0,
                                          long long b, int d, const real* __restrict__ mean,
                                          const real* __restrict__ resp, int k, int c,
                                          int weighted, real* __restrict__ out) {
    long long total = b * d;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total; t += stride) {
        long long i = t / d;
        int j = (int)(t - i * d);
        real v = x[(row0 + i) * d + j] - mean[j];
        if (weighted) v *= sqrt(resp[(row0 + i) * k + c]);
        out[t] = v;
    }
}

// out[(row0 + i)*k + c] = log_norm - ||y_i||^2 / 2 for the b rows of y (b x d), each
// L^-1 (x_i - mu_c) after the solve: log pi_c + log N(x_i | mu_c, Sigma_c). One warp per row.
extern "C" __global__ void gmm_full_log_prob(const real* __restrict__ y, long long row0,
                                             long long b, int d, int k, int c, double log_norm,
                                             real* __restrict__ out) {
    int lane = threadIdx.x & 31;
    long long warps = (long long)gridDim.x * (blockDim.x >> 5);
    for (long long i = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5; i < b; i += warps) {
        real q = 0;
        for (int j = lane; j < d; j += 32) {
            real v = y[i * d + j];
            q += v * v;
        }
        q = warp_sum(q);
        if (lane == 0) out[(row0 + i) * k + c] = (real)log_norm - (real)0.5 * q;
    }
}

// out[i*k + c] = log_norm[c] - sum_j ((x_ij - mu_cj) s_cj)^2 / 2 for every row i and
// component c, s_c the inverse standard deviations of a diagonal (or spherical, repeated)
// covariance. One warp per (row, component).
extern "C" __global__ void gmm_diag_log_prob(const real* __restrict__ x, long long n, int d,
                                             int k, const real* __restrict__ means,
                                             const real* __restrict__ scales,
                                             const double* __restrict__ log_norm,
                                             real* __restrict__ out) {
    int lane = threadIdx.x & 31;
    long long warps = (long long)gridDim.x * (blockDim.x >> 5);
    for (long long w = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5; w < n * k;
         w += warps) {
        long long i = w / k;
        int c = (int)(w - i * k);
        real q = 0;
        for (int j = lane; j < d; j += 32) {
            real v = (x[i * d + j] - means[c * d + j]) * scales[c * d + j];
            q += v * v;
        }
        q = warp_sum(q);
        if (lane == 0) out[w] = (real)log_norm[c] - (real)0.5 * q;
    }
}

// Each row of resp (log pi_c + log N(x_i | c), k of them) into responsibilities in place
// by log-sum-exp; ll[i] = the row's log-sum-exp, log p(x_i); partial[blockIdx.x] = the sum
// of the block's ll in double. The rows a thread takes, and so every partial, depend only on
// n and the grid: the host adds the partials in order, the same total on every run.
extern "C" __global__ void gmm_normalise(real* __restrict__ resp, long long n, int k,
                                         real* __restrict__ ll, double* __restrict__ partial) {
    double sum = 0.0;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) {
        real* r = resp + i * k;
        real m = r[0];
        for (int c = 1; c < k; c++) m = fmax(m, r[c]);
        real total = 0;
        for (int c = 0; c < k; c++) {
            real e = exp(r[c] - m);
            r[c] = e;
            total += e;
        }
        real inv = (real)1 / total;
        for (int c = 0; c < k; c++) r[c] *= inv;
        real l = m + log(total);
        ll[i] = l;
        sum += (double)l;
    }
    sum = block_sum(sum);
    if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

// out[0] = sum_i log L_ii of the d x d lower factor (column-major, leading dimension d):
// log det Sigma / 2. One block.
extern "C" __global__ void gmm_log_det(const real* __restrict__ factor, int d,
                                       double* __restrict__ out) {
    double s = 0.0;
    for (int i = threadIdx.x; i < d; i += blockDim.x) s += log((double)factor[(long long)i * d + i]);
    s = block_sum(s);
    if (threadIdx.x == 0) out[0] = s;
}

// partial[g*k*d + c*d + j] = sum over the rows of group g of resp[i*k + c] (x_ij - mu_cj)^2,
// the weighted squared deviations of diagonal covariances. Group g (of gridDim.x) holds rows
// [g*per, min(n, (g+1)*per)); its threads take the k*d sums in turn.
extern "C" __global__ void gmm_diag_sums(const real* __restrict__ x, long long n, int d, int k,
                                         const real* __restrict__ resp,
                                         const real* __restrict__ means, long long per,
                                         real* __restrict__ partial) {
    long long r0 = blockIdx.x * per, r1 = min(n, r0 + per);
    for (int t = threadIdx.x; t < k * d; t += blockDim.x) {
        int c = t / d, j = t - c * d;
        real mu = means[t], s = 0;
        for (long long i = r0; i < r1; i++) {
            real v = x[i * d + j] - mu;
            s += resp[i * k + c] * v * v;
        }
        partial[(long long)blockIdx.x * k * d + t] = s;
    }
}
