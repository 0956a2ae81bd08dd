// G2S: every point interpolates its potentials from the 4^D surrounding nodes (a gather,
// no atomics), then Phi2Force's first half: Z = sum_i (psi_i - w~_ii), where w~_ii is the
// point's own interpolated self-interaction sum_{a,b} L_a L_b G1(h|a-b|) over its stencil,
// computed from per-axis autocorrelations c_d of the weights as src/repulse/g2s/cpu.rs does
// (subtracting w~_ii instead of 1 removes the interpolation error of the self term from Z).
// G1 is the grid's kernel, (1 + d^2/dof)^-dof as G2G convolved with (common.cuh's
// student_g1; dof 1: the Cauchy 1/(1 + d^2), computed in the grid's precision as before).
//
// In 3-D the points are taken in S2G's cell order (`order`, src/repulse/s2g/gpu.rs): the
// lanes of a warp then mostly share a stencil, so their reads of 64 nodes x 5 channels
// coalesce (1.3M points: 0.72 -> 0.28 s per 1000 calls on the H100). In 1-D and 2-D a point
// reads 12 or 64 values, and index order's coalesced reads of y and writes of out win
// (2-D 0.127 s in index order against 0.145 s in cell order, 1-D 0.020 against 0.098 s).
//
// Argument contract (declared in src/gpu/kernels/g2s.rs): dof the kernel's degrees of
// freedom (> 0); y n*D floats; order a permutation of [0, n); phi
// C*len reals node-major with C = 2 + D channels (node m's psi, phi_0, phi_1..phi_D at m*C,
// as g2g_demodulate writes them); out n*C
// reals point-major; z an exact sum (common.cuh: EXACT_WORDS words, zeroed before the launch),
// so that Z does not depend on the order points are taken in; blockDim.x a multiple of 32.
// Uses repulse.cuh (prepended with common.cuh by src/gpu/kernels/mod.rs: NVRTC sees one source).

// acc[ch] += wt * the node's C potentials, node-major at phi + idx * C: in 2-D with float
// grids one 16-byte load (a stencil of 16 nodes, 16 requests a point instead of 64: the
// gather was bound by its L1 requests; 1.3M points on a 1440^2 grid, H200: 0.28 -> 0.13 ms).
template <int C>
__device__ inline void add_node(const real* __restrict__ phi, long long idx, float wt,
                                real acc[C]) {
    const real* v = phi + idx * C;
#ifndef REAL_F64
    if constexpr (C == 4) {
        const float4 q = __ldg(reinterpret_cast<const float4*>(v));
        acc[0] += wt * q.x;
        acc[1] += wt * q.y;
        acc[2] += wt * q.z;
        acc[3] += wt * q.w;
        return;
    }
#endif
#pragma unroll
    for (int ch = 0; ch < C; ++ch) acc[ch] += wt * __ldg(v + ch);
}

template <int D>
__device__ void gather(int n, GridGeom g, double dof, const float* __restrict__ y,
                       const int* __restrict__ order, const real* __restrict__ phi,
                       real* __restrict__ out, unsigned long long* z) {
    constexpr int C = 2 + D;
    ExactSum local_z = exact_zero();
    GRID_STRIDE(j, n) {
        const long long i = D == 3 ? order[j] : j;
        float w[D][4];
        long long corner = locate<D>(y + i * D, g, w);
        real acc[C];
#pragma unroll
        for (int ch = 0; ch < C; ++ch) acc[ch] = 0.f;
#pragma unroll
        for (int k = 0; k < (1 << (2 * D)); ++k) {
            float wt;
            long long idx = stencil_node<D>(k, corner, g.p, w, &wt);
            add_node<C>(phi, idx, wt, acc);
        }
#pragma unroll
        for (int ch = 1; ch < C; ++ch) out[i * C + ch] = acc[ch];
        const real self_w = interpolated_self<D>(w, [&](float d2) {
            const real u = (real)g.h * (real)g.h * (real)d2;
            if (dof == 1.0) return (real)1 / ((real)1 + u);
            return (real)student_g1((double)u, dof);
        });
        acc[0] -= self_w;
        out[i * C] = acc[0];
        exact_add(local_z, (double)acc[0]);
    }
    exact_block_add(local_z, z);
}

extern "C" __global__ void g2s_gather_1d(int n, GridGeom g, double dof, const float* y, const int* order,
                                          const real* phi, real* out, unsigned long long* z) {
    gather<1>(n, g, dof, y, order, phi, out, z);
}
extern "C" __global__ void g2s_gather_2d(int n, GridGeom g, double dof, const float* y, const int* order,
                                          const real* phi, real* out, unsigned long long* z) {
    gather<2>(n, g, dof, y, order, phi, out, z);
}
extern "C" __global__ void g2s_gather_3d(int n, GridGeom g, double dof, const float* y, const int* order,
                                          const real* phi, real* out, unsigned long long* z) {
    gather<3>(n, g, dof, y, order, phi, out, z);
}
