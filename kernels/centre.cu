// Centring on the device, shared by the kNN and the PCA (src/gpu/centre.rs): the column sums
// of n x d points in double (so that the mean stays exact at n = 10^6+), then the centred
// copy and the squared norms of its rows.
//
// Argument contract (declared in src/gpu/kernels/centre.rs): x, xc n*d floats, row-major;
// sums d doubles, zeroed before centre_column_sums; norms n floats.

// Column sums of x (in double) into sums; any grid, blockDim.x a multiple of 32.
extern "C" __global__ void centre_column_sums(const float* __restrict__ x, long long n, int d,
                                              double* sums) {
    long long per_block = (n + gridDim.x - 1) / gridDim.x;
    long long r0 = blockIdx.x * per_block;
    long long r1 = min(n, r0 + per_block);
    if (d <= (int)blockDim.x) {
        // blockDim.x / d row lanes, each summing one column over every lanes-th row.
        int lanes = blockDim.x / d;
        int j = threadIdx.x % d, sub = threadIdx.x / d;
        if (sub >= lanes) return;
        double s = 0.0;
        for (long long r = r0 + sub; r < r1; r += lanes) s += (double)x[r * d + j];
        atomicAdd(&sums[j], s);
    } else {
        for (int j = threadIdx.x; j < d; j += blockDim.x) {
            double s = 0.0;
            for (long long r = r0; r < r1; ++r) s += (double)x[r * d + j];
            atomicAdd(&sums[j], s);
        }
    }
}

// xc = x - mean, norms[i] = ||xc_i||^2; one warp per row (grid-stride over rows).
extern "C" __global__ void centre_rows(const float* __restrict__ x, long long n, int d,
                                       const double* __restrict__ sums, float* __restrict__ xc,
                                       float* __restrict__ norms) {
    int lane = threadIdx.x & 31;
    long long warps = (long long)gridDim.x * (blockDim.x >> 5);
    double inv_n = 1.0 / (double)n;
    for (long long i = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5; i < n;
         i += warps) {
        float acc = 0.f;
        for (int t = lane; t < d; t += 32) {
            float v = x[i * d + t] - (float)(sums[t] * inv_n);
            xc[i * d + t] = v;
            acc = fmaf(v, v, acc);
        }
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(FULL_MASK, acc, off);
        if (lane == 0) norms[i] = acc;
    }
}
