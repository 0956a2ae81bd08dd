// The quality measures' embedding kNN (src/quality/gpu.rs): the k nearest other points of
// every point of a 1-3-D embedding, exactly, in the host's levels of uniform grids
// (src/quality/embedding_knn.rs, which builds them). One thread per query does the host's
// search step for step: its own level first, then the others in order, the cells at
// Chebyshev distance 0, 1, 2, ... from its own, until the k-th distance found is no more
// than the distance to the cells not yet visited less the same slack. The float operations
// are the host's, written as _rn intrinsics so that nothing is contracted into a fused
// multiply-add: the rows equal the host's (nearest first, ties by point id).
//
// Argument contract (declared in src/gpu/kernels/quality.rs): positions 0..n hold the
// levels' points, one level after another, each level's in cell order; sorted (n * D
// floats) their coordinates, order (n) their point ids. Level l holds positions first[l] ..
// first[l + 1]; its grid has its corner at geom[8l .. 8l + D], cell widths geom[8l + 3 ..
// 8l + 3 + D] and cells[l] cells per axis; its cells' first positions, relative to
// first[l], are starts[start_at[l] + c] for c in 0 ..= cells[l]^D. The rows of positions
// s0 .. s0 + count go to rows[(s - s0) * k ...]; k <= QUALITY_MAX_K, and k <= n - 1 so
// that every row fills.

struct Best {
    float d[QUALITY_MAX_K];
    unsigned int j[QUALITY_MAX_K];
    int len;
};

// (d, j) before (e, i) in the host's tuple order.
__device__ inline bool before(float d, unsigned int j, float e, unsigned int i) {
    return d < e || (d == e && j < i);
}

// Keeps (d, j) among the k smallest.
__device__ inline void offer(Best& b, int k, float d, unsigned int j) {
    if (b.len == k && !before(d, j, b.d[k - 1], b.j[k - 1])) return;
    int at = b.len < k ? b.len : k - 1;
    while (at > 0 && before(d, j, b.d[at - 1], b.j[at - 1])) {
        b.d[at] = b.d[at - 1];
        b.j[at] = b.j[at - 1];
        --at;
    }
    b.d[at] = d;
    b.j[at] = j;
    if (b.len < k) ++b.len;
}

// Whether the k found are nearer than everything at distance gap (less the slack).
__device__ inline bool done(const Best& b, int k, float gap, float slack) {
    gap = fmaxf(__fsub_rn(gap, slack), 0.f);
    return b.len == k && (gap == KNN_INF || b.d[k - 1] <= __fmul_rn(gap, gap));
}

__device__ inline float outside(float v, float lo, float hi) {
    return fmaxf(fmaxf(__fsub_rn(lo, v), __fsub_rn(v, hi)), 0.f);
}

// One level's grid.
template <int D>
struct Grid {
    float lo[D], width[D];
    int cells;

    __device__ float end(int a) const {
        return __fadd_rn(lo[a], __fmul_rn((float)cells, width[a]));
    }

    // The distance from q to the slab of axis a between from and to, the other axes
    // spanning the grid.
    __device__ float slab_distance(const float* q, int a, float from, float to) const {
        float sum = 0.f;
        for (int b = 0; b < D; ++b) {
            float t = b == a ? outside(q[b], from, to) : outside(q[b], lo[b], end(b));
            sum = __fadd_rn(sum, __fmul_rn(t, t));
        }
        return __fsqrt_rn(sum);
    }

    // The largest coordinate of q and of the grid's box, in magnitude.
    __device__ float scale(const float* q) const {
        float s = 0.f;
        for (int a = 0; a < D; ++a) {
            s = fmaxf(s, fmaxf(fmaxf(fabsf(q[a]), fabsf(lo[a])), fabsf(end(a))));
        }
        return s;
    }

    __device__ float box_distance(const float* q) const {
        return slab_distance(q, 0, lo[0], end(0));
    }

    // The distance from q to the cells beyond Chebyshev distance r of cell c.
    __device__ float unvisited_distance(const float* q, const int* c, int r) const {
        float gap = KNN_INF;
        for (int a = 0; a < D; ++a) {
            if (c[a] - r > 0) {
                float face = __fadd_rn(lo[a], __fmul_rn((float)(c[a] - r), width[a]));
                gap = fminf(gap, slab_distance(q, a, lo[a], face));
            }
            if (c[a] + r < cells - 1) {
                float face = __fadd_rn(lo[a], __fmul_rn((float)(c[a] + r + 1), width[a]));
                gap = fminf(gap, slab_distance(q, a, face, end(a)));
            }
        }
        return gap;
    }

    __device__ void cell(const float* p, int* c) const {
        for (int a = 0; a < D; ++a) {
            float f = fmaxf(floorf(__fdiv_rn(__fsub_rn(p[a], lo[a]), width[a])), 0.f);
            c[a] = f >= (float)(cells - 1) ? cells - 1 : (int)f;
        }
    }

    __device__ long long id(const int* c) const {
        long long id = 0;
        for (int a = D - 1; a >= 0; --a) id = id * cells + c[a];
        return id;
    }
};

// Adds level l's points nearer q (point me, left out) than the k-th of b.
template <int D>
__device__ void level_nearest(int l, const float* q, unsigned int me, int k, Best& b,
                              const float* __restrict__ sorted,
                              const unsigned int* __restrict__ order,
                              const unsigned int* __restrict__ starts,
                              const long long* __restrict__ start_at,
                              const long long* __restrict__ first,
                              const float* __restrict__ geom, const int* __restrict__ cells) {
    Grid<D> g;
    for (int a = 0; a < D; ++a) {
        g.lo[a] = geom[8 * l + a];
        g.width[a] = geom[8 * l + 3 + a];
    }
    g.cells = cells[l];
    const float slack = __fmul_rn(1e-5f, g.scale(q));
    if (done(b, k, g.box_distance(q), slack)) return;
    const unsigned int* st = starts + start_at[l];
    const long long base = first[l];
    int c[D];
    g.cell(q, c);
    int lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (int r = 0; r <= g.cells; ++r) {
        for (int a = 0; a < D; ++a) {
            lo[a] = max(c[a] - r, 0);
            hi[a] = min(c[a] + r, g.cells - 1);
        }
        // The cells of the box at Chebyshev distance r: along axis 0 the whole row when
        // another axis is on the ring, else the row's two ends.
        for (int a2 = lo[2]; a2 <= hi[2]; ++a2) {
            for (int a1 = lo[1]; a1 <= hi[1]; ++a1) {
                auto visit = [&](int a0) {
                    const int at[3] = {a0, a1, a2};
                    const long long id = g.id(at);
                    for (unsigned int s = st[id]; s < st[id + 1]; ++s) {
                        const long long p = base + s;
                        const unsigned int j = order[p];
                        if (j == me) continue;
                        float d = 0.f;
                        for (int a = 0; a < D; ++a) {
                            float t = __fsub_rn(sorted[p * D + a], q[a]);
                            d = __fadd_rn(d, __fmul_rn(t, t));
                        }
                        offer(b, k, d, j);
                    }
                };
                const bool interior =
                    (D < 2 || abs(a1 - c[1]) < r) && (D < 3 || abs(a2 - c[2]) < r);
                if (r > 0 && interior) {
                    if (c[0] - r >= 0) visit(c[0] - r);
                    if (c[0] + r <= g.cells - 1) visit(c[0] + r);
                } else {
                    for (int a0 = lo[0]; a0 <= hi[0]; ++a0) visit(a0);
                }
            }
        }
        if (done(b, k, g.unvisited_distance(q, c, r), slack)) return;
    }
}

template <int D>
__device__ void quality_knn(const float* __restrict__ sorted,
                            const unsigned int* __restrict__ order,
                            const unsigned int* __restrict__ starts,
                            const long long* __restrict__ start_at,
                            const long long* __restrict__ first, const float* __restrict__ geom,
                            const int* __restrict__ cells, int levels, int k, long long s0,
                            long long count, unsigned int* __restrict__ rows) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count) return;
    const long long s = s0 + t;
    int own = 0;
    while (own + 1 < levels && first[own + 1] <= s) ++own;
    float q[D];
    for (int a = 0; a < D; ++a) q[a] = sorted[s * D + a];
    const unsigned int me = order[s];
    Best b;
    b.len = 0;
    level_nearest<D>(own, q, me, k, b, sorted, order, starts, start_at, first, geom, cells);
    for (int l = 0; l < levels; ++l) {
        if (l != own) {
            level_nearest<D>(l, q, me, k, b, sorted, order, starts, start_at, first, geom, cells);
        }
    }
    for (int i = 0; i < k; ++i) rows[t * k + i] = b.j[i];
}

#define QUALITY_KNN(D)                                                                        \
    extern "C" __global__ void quality_knn_##D##d(                                            \
        const float* __restrict__ sorted, const unsigned int* __restrict__ order,              \
        const unsigned int* __restrict__ starts, const long long* __restrict__ start_at,      \
        const long long* __restrict__ first, const float* __restrict__ geom,                  \
        const int* __restrict__ cells, int levels, int k, long long s0, long long count,      \
        unsigned int* __restrict__ rows) {                                                    \
        quality_knn<D>(sorted, order, starts, start_at, first, geom, cells, levels, k, s0, \
                       count, rows);                                                          \
    }

QUALITY_KNN(1)
QUALITY_KNN(2)
QUALITY_KNN(3)
