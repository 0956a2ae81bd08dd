// Exact repulsion, O(n^2), the reference: for every target i, sum over all sources j != i of
// w_ij = 1/(1+|y_i-y_j|^2) (into Z) and w_ij^2 (y_i - y_j) (the unnormalised force), sources
// staged through shared memory one block-sized tile at a time; double accumulators.
//
// Argument contract (src/repulse/exact_gpu.rs): y n*D floats; force n*D floats; z one double
// zeroed before exact_sums; launched with one thread per target (grid = ceil(n/block)),
// dynamic shared memory blockDim.x*D floats, blockDim.x a multiple of 32.

template <int D>
__device__ void sums(int n, const float* __restrict__ y, float* __restrict__ force, double* z) {
    extern __shared__ float tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float yi[D];
#pragma unroll
    for (int a = 0; a < D; ++a) yi[a] = i < n ? y[i * D + a] : 0.f;
    double zi = 0.0, f[D];
#pragma unroll
    for (int a = 0; a < D; ++a) f[a] = 0.0;
    for (int start = 0; start < n; start += blockDim.x) {
        int j = start + threadIdx.x;
#pragma unroll
        for (int a = 0; a < D; ++a) tile[threadIdx.x * D + a] = j < n ? y[j * D + a] : 0.f;
        __syncthreads();
        int count = min((int)blockDim.x, n - start);
        for (int t = 0; t < count; ++t) {
            if (start + t == i) continue;
            float diff[D], d2 = 0.f;
#pragma unroll
            for (int a = 0; a < D; ++a) {
                diff[a] = yi[a] - tile[t * D + a];
                d2 += diff[a] * diff[a];
            }
            double w = 1.0 / (1.0 + (double)d2);
            zi += w;
#pragma unroll
            for (int a = 0; a < D; ++a) f[a] += w * w * diff[a];
        }
        __syncthreads();
    }
    if (i < n) {
#pragma unroll
        for (int a = 0; a < D; ++a) force[i * D + a] = (float)f[a];
    } else {
        zi = 0.0;
    }
    double s = block_sum(zi);
    if (threadIdx.x == 0) atomicAdd(z, s);
}

extern "C" __global__ void exact_sums_1d(int n, const float* y, float* force, double* z) { sums<1>(n, y, force, z); }
extern "C" __global__ void exact_sums_2d(int n, const float* y, float* force, double* z) { sums<2>(n, y, force, z); }
extern "C" __global__ void exact_sums_3d(int n, const float* y, float* force, double* z) { sums<3>(n, y, force, z); }

// force /= Z.
extern "C" __global__ void exact_normalise(long long len, float* force, const double* z) {
    float inv_z = (float)(1.0 / z[0]);
    GRID_STRIDE(t, len) force[t] *= inv_z;
}
