// The near field of the split kernel (src/repulse/near/mod.rs): every point's short-range
// sums over the points within the cutoff, from S2G's sort by grid cell (cells h wide, nc =
// p - 3 per axis, the points of cell c at sorted positions starts[c] .. starts[c + 1]).
// Along the fastest axis a row's cells are contiguous in that order, so each row of cells
// within the cutoff is one run of candidates, trimmed to the cutoff sphere's chord, as
// src/repulse/near/cpu.rs does. Threads take the points in sorted order: a warp's points
// share their cells, and their reads of the candidates hit the same lines.
//
// near_sorted_coords: ys[t] = y[order[t]] as float4 (coalesced candidates).
// near_sums: adds to pot (n x (2 + D), point-major, written by G2S: psi, phi_0, phi_a)
// psi += sum G1s + the short kernel's interpolated self term, phi_0 += sum G2s, phi_a +=
// sum G2s (y_j - centre)_a, and the psi terms to the exact sum z (which G2S started).
//
// The candidate loop is unrolled by 4 and the kernel held to 64 registers (4 blocks of 256
// threads per SM against 3 at its 72): the loop waits on its loads, and more of them in
// flight took the near field from 4.64 to 3.93 ms per evaluation at 1.3M points (H100,
// scripts/bench/grid3d.sh against the build before, same machine), 80 to 68 s in a 10M run.
//
// Argument contract (declared in src/gpu/kernels/near.rs): order a permutation of [0, n)
// sorted by cell; starts nc^D + 1 ints; ys n float4; y n*D floats; pot n*(2+D) reals; z an
// exact sum (common.cuh); near_sums in blocks of NEAR_THREADS (src/gpu/kernels/near.rs).
// Uses repulse.cuh.

extern "C" __global__ void near_sorted_coords(int n, int D, const int* __restrict__ order,
                                              const float* __restrict__ y,
                                              float4* __restrict__ ys) {
    GRID_STRIDE(t, n) {
        const long long i = order[t];
        float v[3] = {0.f, 0.f, 0.f};
        for (int a = 0; a < D; ++a) v[a] = y[i * D + a];
        ys[t] = make_float4(v[0], v[1], v[2], 0.f);
    }
}

// Cell of grid coordinate x on one axis: the stencil's base node less one, clamped as
// stencil_base clamps it (monotone in x).
__device__ inline int near_cell(float x, int p) { return min(max((int)floorf(x), 1), p - 3) - 1; }

// Distance in grid units from x to cell c's interval [c + 1, c + 2); the edge cells, which
// hold the clamped points too, open outwards.
__device__ inline float near_gap(float x, int c, int nc) {
    const float below = c == 0 ? 0.f : (float)(c + 1) - x;
    const float above = c + 1 == nc ? 0.f : x - (float)(c + 2);
    return fmaxf(fmaxf(below, above), 0.f);
}

template <int D>
__device__ __forceinline__ void near_sums(int n, GridGeom g, float t0, float cutoff,
                                          const int* __restrict__ order,
                                          const int* __restrict__ starts,
                                          const float4* __restrict__ ys,
                                          real* __restrict__ pot, unsigned long long* z) {
    const int C = 2 + D, nc = g.p - 3;
    const float r = cutoff * g.inv_h, r2 = cutoff * cutoff;
    ExactSum local_z = exact_zero();
    GRID_STRIDE(t, n) {
        const float4 y4 = ys[t];
        const float yi[3] = {y4.x, y4.y, y4.z};
        float x[D];
        int lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
#pragma unroll
        for (int a = 0; a < D; ++a) {
            x[a] = (yi[a] - g.origin[a]) * g.inv_h;
            lo[a] = near_cell(x[a] - r, g.p);
            hi[a] = near_cell(x[a] + r, g.p);
        }
        float s1 = 0.f, s2 = 0.f, sq[3] = {0.f, 0.f, 0.f};
        for (int c2 = lo[2]; c2 <= hi[2]; ++c2) {
            const float gap2 = D > 2 ? near_gap(x[D > 2 ? 2 : 0], c2, nc) : 0.f;
            for (int c1 = lo[1]; c1 <= hi[1]; ++c1) {
                const float gap1 = D > 1 ? near_gap(x[D > 1 ? 1 : 0], c1, nc) : 0.f;
                const float left = r * r - gap1 * gap1 - gap2 * gap2;
                if (left < 0.f) continue;
                const float chord = sqrtf(left);
                const int row = (c2 * nc + c1) * nc;
                const int end = starts[row + near_cell(x[0] + chord, g.p) + 1];
#pragma unroll 4
                for (int k = starts[row + near_cell(x[0] - chord, g.p)]; k < end; ++k) {
                    const float4 yj = ys[k];
                    const float d[3] = {yi[0] - yj.x, yi[1] - yj.y, yi[2] - yj.z};
                    float d2 = 0.f;
#pragma unroll
                    for (int a = 0; a < D; ++a) d2 += d[a] * d[a];
                    if (d2 >= r2 || k == t) continue;
                    const float u = 1.f + d2, xu = t0 * u, iu = 1.f / u;
                    const float g1 = __expf(-xu) * iu, g2 = g1 * iu * (1.f + xu);
                    s1 += g1;
                    s2 += g2;
                    const float yjv[3] = {yj.x, yj.y, yj.z};
#pragma unroll
                    for (int a = 0; a < D; ++a) sq[a] += g2 * (yjv[a] - g.centre[a]);
                }
            }
        }
        float w[D][4];
        locate<D>(yi, g, w);
        const float h2 = g.h * g.h;
        const real own = interpolated_self<D>(w, [&](float o2) {
            const float u = 1.f + h2 * o2;
            return (real)(expf(-t0 * u) / u);
        });
        const long long i = order[t];
        pot[i * C] += (real)s1 + own;
        pot[i * C + 1] += (real)s2;
#pragma unroll
        for (int a = 0; a < D; ++a) pot[i * C + 2 + a] += (real)sq[a];
        exact_add(local_z, (double)s1 + (double)own);
    }
    exact_block_add(local_z, z);
}

#define NEAR_SUMS(D)                                                                     \
    extern "C" __global__ void __launch_bounds__(NEAR_THREADS, 4)                         \
        near_sums_##D##d(int n, GridGeom g, float t0, float cutoff, const int* order,    \
                         const int* starts, const float4* ys, real* pot,                  \
                         unsigned long long* z) {                                         \
        near_sums<D>(n, g, t0, cutoff, order, starts, ys, pot, z);                        \
    }
NEAR_SUMS(1)
NEAR_SUMS(2)
NEAR_SUMS(3)
