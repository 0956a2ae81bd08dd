// Exact repulsion, O(n^2), the reference: for every target i, sum over all sources j != i of
// w_ij = G1 (into Z) and G2 (y_i - y_j) (the unnormalised force), sources staged through
// shared memory one block-sized tile at a time; double accumulators. G1 and G2 are the
// Student t kernel's of dof degrees of freedom (student_t in common.cuh; dof 1: w = 1/(1+d^2)
// and w^2).
//
// Argument contract (declared in src/gpu/kernels/exact.rs): y n*D floats; force n*D floats; z
// an exact sum (common.cuh, EXACT_WORDS words: Z then does not depend on the order the
// blocks add in) zeroed before exact_sums; launched with one thread per target (grid =
// ceil(n/block)), dynamic shared memory blockDim.x*D floats, blockDim.x a multiple of 32.
//
// exact_targets (the grid-size sweep's reference at large n): m targets, their indices in
// targets[m]; z_row m doubles and force_z m*D doubles zeroed before the launch; grid
// (ceil(m/block), ceil(n/chunk)): block column c sums the sources [c*chunk, (c+1)*chunk) and
// adds its partial sums atomically, so a few thousand targets still fill the device (in an
// order that varies: a measurement's reference, not part of a run).
//
// exact_z: Z alone over all n^2 pairs, one thread per target as exact_sums; the pair weights in
// float (correctly rounded reciprocal), summed in float over runs of 32 sources and then in
// double: relative error about 1e-7, ten times fewer double operations than exact_sums.

// Adds the pairs of target yi (global index i) with the count sources staged in tile, whose
// first has global index start, to zi and f.
template <int D>
__device__ inline void tile_sums(const float* yi, int i, const float* tile, int start, int count,
                                 double dof, double& zi, double* f) {
    for (int t = 0; t < count; ++t) {
        if (start + t == i) continue;
        float diff[D], d2 = 0.f;
#pragma unroll
        for (int a = 0; a < D; ++a) {
            diff[a] = yi[a] - tile[t * D + a];
            d2 += diff[a] * diff[a];
        }
        double w, g2;
        student_t((double)d2, dof, &w, &g2);
        zi += w;
#pragma unroll
        for (int a = 0; a < D; ++a) f[a] += g2 * diff[a];
    }
}

// Stages the sources [start, min(start + blockDim.x, end)) of y into tile.
template <int D>
__device__ inline void stage(const float* y, int start, int end, float* tile) {
    int j = start + threadIdx.x;
#pragma unroll
    for (int a = 0; a < D; ++a) tile[threadIdx.x * D + a] = j < end ? y[j * D + a] : 0.f;
}

template <int D>
__device__ void sums(int n, const float* __restrict__ y, double dof, float* __restrict__ force,
                     unsigned long long* z) {
    extern __shared__ float tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float yi[D];
#pragma unroll
    for (int a = 0; a < D; ++a) yi[a] = i < n ? y[i * D + a] : 0.f;
    double zi = 0.0, f[D];
#pragma unroll
    for (int a = 0; a < D; ++a) f[a] = 0.0;
    for (int start = 0; start < n; start += blockDim.x) {
        stage<D>(y, start, n, tile);
        __syncthreads();
        tile_sums<D>(yi, i, tile, start, min((int)blockDim.x, n - start), dof, zi, f);
        __syncthreads();
    }
    if (i < n) {
#pragma unroll
        for (int a = 0; a < D; ++a) force[i * D + a] = (float)f[a];
    } else {
        zi = 0.0;
    }
    ExactSum zs = exact_zero();
    exact_add(zs, zi);
    exact_block_add(zs, z);
}

template <int D>
__device__ void target_sums(int n, int m, const int* __restrict__ targets, const float* __restrict__ y,
                            double dof, int chunk, double* z_row, double* force_z) {
    extern __shared__ float tile[];
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    int i = k < m ? targets[k] : -1;
    float yi[D];
#pragma unroll
    for (int a = 0; a < D; ++a) yi[a] = i >= 0 ? y[i * D + a] : 0.f;
    double zi = 0.0, f[D];
#pragma unroll
    for (int a = 0; a < D; ++a) f[a] = 0.0;
    int begin = blockIdx.y * chunk, end = min(n, begin + chunk);
    for (int start = begin; start < end; start += blockDim.x) {
        stage<D>(y, start, end, tile);
        __syncthreads();
        tile_sums<D>(yi, i, tile, start, min((int)blockDim.x, end - start), dof, zi, f);
        __syncthreads();
    }
    if (k < m) {
        atomicAdd(&z_row[k], zi);
#pragma unroll
        for (int a = 0; a < D; ++a) atomicAdd(&force_z[k * D + a], f[a]);
    }
}

template <int D>
__device__ void z_sum(int n, const float* __restrict__ y, float inv_dof, float dof,
                      unsigned long long* z) {
    extern __shared__ float tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float yi[D];
#pragma unroll
    for (int a = 0; a < D; ++a) yi[a] = i < n ? y[i * D + a] : 0.f;
    double zi = 0.0;
    for (int start = 0; start < n; start += blockDim.x) {
        stage<D>(y, start, n, tile);
        __syncthreads();
        int count = min((int)blockDim.x, n - start);
        for (int t0 = 0; t0 < count; t0 += 32) {
            float run = 0.f;
            int t1 = min(t0 + 32, count);
            for (int t = t0; t < t1; ++t) {
                float d2 = 0.f;
#pragma unroll
                for (int a = 0; a < D; ++a) {
                    float diff = yi[a] - tile[t * D + a];
                    d2 += diff * diff;
                }
                float w = __frcp_rn(1.f + d2 * inv_dof);
                if (dof != 1.f) w = powf(w, dof);
                run += start + t != i ? w : 0.f;
            }
            zi += run;
        }
        __syncthreads();
    }
    if (i >= n) zi = 0.0;
    ExactSum zs = exact_zero();
    exact_add(zs, zi);
    exact_block_add(zs, z);
}

extern "C" __global__ void exact_sums_1d(int n, const float* y, double dof, float* force, unsigned long long* z) { sums<1>(n, y, dof, force, z); }
extern "C" __global__ void exact_sums_2d(int n, const float* y, double dof, float* force, unsigned long long* z) { sums<2>(n, y, dof, force, z); }
extern "C" __global__ void exact_sums_3d(int n, const float* y, double dof, float* force, unsigned long long* z) { sums<3>(n, y, dof, force, z); }

extern "C" __global__ void exact_targets_1d(int n, int m, const int* targets, const float* y, double dof, int chunk, double* z_row, double* force_z) { target_sums<1>(n, m, targets, y, dof, chunk, z_row, force_z); }
extern "C" __global__ void exact_targets_2d(int n, int m, const int* targets, const float* y, double dof, int chunk, double* z_row, double* force_z) { target_sums<2>(n, m, targets, y, dof, chunk, z_row, force_z); }
extern "C" __global__ void exact_targets_3d(int n, int m, const int* targets, const float* y, double dof, int chunk, double* z_row, double* force_z) { target_sums<3>(n, m, targets, y, dof, chunk, z_row, force_z); }

extern "C" __global__ void exact_z_1d(int n, const float* y, float inv_dof, float dof, unsigned long long* z) { z_sum<1>(n, y, inv_dof, dof, z); }
extern "C" __global__ void exact_z_2d(int n, const float* y, float inv_dof, float dof, unsigned long long* z) { z_sum<2>(n, y, inv_dof, dof, z); }
extern "C" __global__ void exact_z_3d(int n, const float* y, float inv_dof, float dof, unsigned long long* z) { z_sum<3>(n, y, inv_dof, dof, z); }

// force /= Z.
extern "C" __global__ void exact_normalise(long long len, float* force,
                                           const unsigned long long* z) {
    float inv_z = (float)(1.0 / exact_value(z));
    GRID_STRIDE(t, len) force[t] *= inv_z;
}
