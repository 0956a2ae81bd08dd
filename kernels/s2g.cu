// S2G: spread every point's charges (1, y^1 - c^1, ..., y^D - c^D) onto the 4^D surrounding
// nodes with cubic Lagrange weights (Linderman et al. 2019; SG-t-SNE-Pi's s2g), with float
// atomics. Grids are channel-major: channel c of node m at c * len + m.
//
// Argument contract (src/repulse/gpu.rs): y n*D floats; grid (1+D)*len reals, zeroed before
// the launch, len = p^D; every point lies inside the grid's box (the grid was fitted to it).
// Uses repulse.cuh (prepended with common.cuh by src/gpu/kernels.rs: NVRTC sees one source).

template <int D>
__device__ void scatter(int n, GridGeom g, const float* __restrict__ y, real* __restrict__ grid) {
    long long len = 1;
    for (int a = 0; a < D; ++a) len *= g.p;
    GRID_STRIDE(i, n) {
        float w[D][4], q[D];
        long long corner = locate<D>(y + i * D, g, w);
#pragma unroll
        for (int a = 0; a < D; ++a) q[a] = y[i * D + a] - g.centre[a];
#pragma unroll
        for (int k = 0; k < (1 << (2 * D)); ++k) {
            float wt;
            long long idx = stencil_node<D>(k, corner, g.p, w, &wt);
            atomicAdd(&grid[idx], wt);
#pragma unroll
            for (int a = 0; a < D; ++a) atomicAdd(&grid[(a + 1) * len + idx], wt * q[a]);
        }
    }
}

extern "C" __global__ void s2g_scatter_1d(int n, GridGeom g, const float* y, real* grid) { scatter<1>(n, g, y, grid); }
extern "C" __global__ void s2g_scatter_2d(int n, GridGeom g, const float* y, real* grid) { scatter<2>(n, g, y, grid); }
extern "C" __global__ void s2g_scatter_3d(int n, GridGeom g, const float* y, real* grid) { scatter<3>(n, g, y, grid); }

// Bounding box of y: lo/hi receive per-axis min/max as order-preserving uint keys
// (initialised by the caller to 0xffffffff / 0), decoded on the host.
__device__ inline unsigned int float_key(float f) {
    unsigned int u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

template <int D>
__device__ void bounds(int n, const float* __restrict__ y, unsigned int* lo, unsigned int* hi) {
    float mn[D], mx[D];
#pragma unroll
    for (int a = 0; a < D; ++a) { mn[a] = 3.4e38f; mx[a] = -3.4e38f; }
    GRID_STRIDE(i, n) {
#pragma unroll
        for (int a = 0; a < D; ++a) {
            float v = y[i * D + a];
            mn[a] = fminf(mn[a], v);
            mx[a] = fmaxf(mx[a], v);
        }
    }
#pragma unroll
    for (int a = 0; a < D; ++a) {
        for (int off = 16; off > 0; off >>= 1) {
            mn[a] = fminf(mn[a], __shfl_down_sync(0xffffffffu, mn[a], off));
            mx[a] = fmaxf(mx[a], __shfl_down_sync(0xffffffffu, mx[a], off));
        }
        if ((threadIdx.x & 31) == 0) {
            atomicMin(&lo[a], float_key(mn[a]));
            atomicMax(&hi[a], float_key(mx[a]));
        }
    }
}

extern "C" __global__ void s2g_bounds_1d(int n, const float* y, unsigned int* lo, unsigned int* hi) { bounds<1>(n, y, lo, hi); }
extern "C" __global__ void s2g_bounds_2d(int n, const float* y, unsigned int* lo, unsigned int* hi) { bounds<2>(n, y, lo, hi); }
extern "C" __global__ void s2g_bounds_3d(int n, const float* y, unsigned int* lo, unsigned int* hi) { bounds<3>(n, y, lo, hi); }
