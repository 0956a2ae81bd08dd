// Shared by the repulsion kernels: the grid's geometry and the cubic Lagrange stencil,
// identical to src/repulse/grid.rs (so the CPU and GPU paths agree to float rounding).

// Precision of the grids, FFTs and potentials (`--precision`): double when NVRTC is given
// -DREAL_F64 (src/gpu/real.rs), else float. Coordinates, stencil weights and forces stay
// float: the weights' rounding (6e-8) is far below the interpolation error, while the
// grids' sums over many points and the FFTs are where float loses digits.
#ifdef REAL_F64
typedef double real;
typedef double2 complex_t;
#else
typedef float real;
typedef float2 complex_t;
#endif

__device__ inline complex_t make_complex(real re, real im) {
    complex_t z;
    z.x = re;
    z.y = im;
    return z;
}


// Reals per node of the charge grids, node-major (node m's charge 1 and its D coordinate
// channels at m * charge_stride(D)): 2 in 1-D, 4 in 2-D (one padding real) and 3-D, so that a
// node's charges meet the grid in one 8- or 16-byte atomic (src/gpu/kernels/s2g.rs mirrors it).
__host__ __device__ constexpr int charge_stride(int D) { return D == 1 ? 2 : 4; }

// Grid geometry passed by value: p nodes per axis, spacing h (and 1/h), origin and centre
// per axis. Mirrors `GridGeom` in src/gpu/kernels/repulse.rs (#[repr(C)]).
struct GridGeom {
    int p;
    float h;
    float inv_h;
    float origin[3];
    float centre[3];
};

// Cubic Lagrange weights of the 4 nodes at offsets -1, 0, 1, 2 for t in [0, 1].
__device__ inline void lagrange4(float t, float w[4]) {
    w[0] = -t * (t - 1.f) * (t - 2.f) * (1.f / 6.f);
    w[1] = (t + 1.f) * (t - 1.f) * (t - 2.f) * 0.5f;
    w[2] = -(t + 1.f) * t * (t - 2.f) * 0.5f;
    w[3] = (t + 1.f) * t * (t - 1.f) * (1.f / 6.f);
}

// Base node of one coordinate: floor(x) clamped to [1, p-3], x = (y - origin) / h.
__device__ inline int stencil_base(float y, float origin, float inv_h, int p, float* x) {
    *x = (y - origin) * inv_h;
    return min(max((int)floorf(*x), 1), p - 3);
}

// Stencil of one coordinate: the base node and its 4 weights.
__device__ inline int stencil(float y, float origin, float inv_h, int p, float w[4]) {
    float x;
    int base = stencil_base(y, origin, inv_h, p, &x);
    lagrange4(x - (float)base, w);
    return base;
}

// The point's stencil: per-axis weights w and the flat index of its first node (offset -1 on
// every axis); node k of the 4^D stencil (base-4 digit a = offset on axis a) is at
// corner + sum_a o_a p^a with weight prod_a w[a][o_a] (stencil_node).
template <int D>
__device__ inline long long locate(const float* __restrict__ yi, const GridGeom& g, float w[D][4]) {
    long long corner = 0, stride = 1;
#pragma unroll
    for (int a = 0; a < D; ++a) {
        int base = stencil(yi[a], g.origin[a], g.inv_h, g.p, w[a]);
        corner += (long long)(base - 1) * stride;
        stride *= g.p;
    }
    return corner;
}

template <int D>
__device__ inline long long stencil_node(int k, long long corner, int p, const float w[D][4],
                                         float* wt) {
    long long idx = corner, st = 1;
    float weight = 1.f;
#pragma unroll
    for (int a = 0; a < D; ++a) {
        int o = (k >> (2 * a)) & 3;
        idx += o * st;
        st *= p;
        weight *= w[a][o];
    }
    *wt = weight;
    return idx;
}


// A point's interpolated self-interaction sum_{a,b} L_a L_b k(|a-b|^2) over its stencil of
// per-axis weights w, from the weights' per-axis autocorrelations c[a][d] = sum_j w_j w_{j+d}
// (doubled for d > 0): sum over the 4^D offsets delta of prod_a c[a][delta_a] k(|delta|^2),
// with k taking the squared offset in grid units (src/repulse/g2s/cpu.rs: self_weight).
template <int D, class K>
__device__ inline real interpolated_self(const float w[D][4], K k) {
    float c[D][4];
#pragma unroll
    for (int a = 0; a < D; ++a)
#pragma unroll
        for (int d = 0; d < 4; ++d) {
            float s = 0.f;
            for (int j = 0; j + d < 4; ++j) s += w[a][j] * w[a][j + d];
            c[a][d] = d == 0 ? s : 2.f * s;
        }
    real total = 0;
#pragma unroll
    for (int o = 0; o < (1 << (2 * D)); ++o) {
        float prod = 1.f, d2 = 0.f;
#pragma unroll
        for (int a = 0; a < D; ++a) {
            int off = (o >> (2 * a)) & 3;
            prod *= c[a][off];
            d2 += (float)(off * off);
        }
        total += (real)prod * k(d2);
    }
    return total;
}
