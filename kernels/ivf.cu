// The approximate kNN's device helpers (src/knn/gpu/ivf.rs): the k-means assignment of
// points to their nearest centroid, the points' gather into cell order, and the return of
// a kNN computed on the points sorted by cell to the input's numbering.
//
// Argument contract (declared in src/gpu/kernels/ivf.rs):
//   x: n x d floats, row-major, d <= IVF_MAX_DIM; centroids: lists x d floats;
//   labels: n ints; order: n ints, a permutation (sorted position -> input row);
//   sorted_i, sorted_d, out_i, out_d: n x k entries; out (ivf_gather): n x d floats;
//   pos: count ints in [0, n);
//   rows: count x k ints.

// IVF_THREADS (points per block of ivf_assign), IVF_TILE (centroids staged per step) and
// IVF_MAX_DIM come from src/gpu/kernels/ivf.rs as -D options.

// labels[i] = the centroid nearest x_i by squared distance (the first on ties). One thread
// per point, its coordinates in registers; the centroids pass through shared memory
// IVF_TILE at a time. Blocks of IVF_THREADS threads, ceil(n / IVF_THREADS) of them.
extern "C" __global__ void __launch_bounds__(IVF_THREADS)
    ivf_assign(const float* __restrict__ x, long long n, int d,
               const float* __restrict__ centroids, int lists, int* __restrict__ labels) {
    __shared__ float tile[IVF_TILE * IVF_MAX_DIM];
    const long long i = (long long)blockIdx.x * IVF_THREADS + threadIdx.x;
    float q[IVF_MAX_DIM];
#pragma unroll
    for (int l = 0; l < IVF_MAX_DIM; ++l) q[l] = i < n && l < d ? x[i * d + l] : 0.f;
    float best = KNN_INF;
    int best_c = 0;
    for (int c0 = 0; c0 < lists; c0 += IVF_TILE) {
        const int count = min(IVF_TILE, lists - c0);
        __syncthreads();
        for (int e = threadIdx.x; e < count * IVF_MAX_DIM; e += IVF_THREADS) {
            const int c = e / IVF_MAX_DIM, l = e - c * IVF_MAX_DIM;
            tile[e] = l < d ? centroids[(long long)(c0 + c) * d + l] : 0.f;
        }
        __syncthreads();
        for (int c = 0; c < count; ++c) {
            const float* cr = tile + c * IVF_MAX_DIM;
            float acc = 0.f;
#pragma unroll
            for (int l = 0; l < IVF_MAX_DIM; ++l) {
                const float t = q[l] - cr[l];
                acc = fmaf(t, t, acc);
            }
            if (acc < best) {
                best = acc;
                best_c = c0 + c;
            }
        }
    }
    if (i < n) labels[i] = best_c;
}

// Row p of the kNN of the sorted points (sorted_i: positions, sorted_d: squared distances,
// ascending) becomes row order[p] of out, its neighbours renamed order[j]; equal distances
// are then reordered by the new index (an insertion sort, a few swaps at most: rows come
// sorted by distance). One thread per row.
extern "C" __global__ void ivf_unsort(const int* __restrict__ sorted_i,
                                      const float* __restrict__ sorted_d,
                                      const int* __restrict__ order, long long n, int k,
                                      int* __restrict__ out_i, float* __restrict__ out_d) {
    GRID_STRIDE(p, n) {
        const long long row = order[p];
        int* oi = out_i + row * k;
        float* od = out_d + row * k;
        for (int j = 0; j < k; ++j) {
            const float dj = sorted_d[p * k + j];
            const int ij = order[sorted_i[p * k + j]];
            int at = j;
            while (at > 0 && od[at - 1] == dj && oi[at - 1] > ij) {
                oi[at] = oi[at - 1];
                od[at] = od[at - 1];
                --at;
            }
            oi[at] = ij;
            od[at] = dj;
        }
    }
}

// Row pos[r] of src (n x k ints) into row r of rows: the recall sample's approximate
// neighbours fetched from the answer at their sorted positions. One thread per entry.
extern "C" __global__ void ivf_rows(const int* __restrict__ src, long long n, int k,
                                    const int* __restrict__ pos, long long count,
                                    int* __restrict__ rows) {
    GRID_STRIDE(e, count * k) {
        const long long r = e / k, c = e - r * k;
        const long long p = pos[r];
        rows[e] = p >= 0 && p < n ? src[p * k + c] : -1;
    }
}

// Row order[p] of x (n x d floats) into row p of out: the points sorted by cell, gathered
// from their upload in input order. One thread per value.
extern "C" __global__ void ivf_gather(const float* __restrict__ x, long long n, int d,
                                      const int* __restrict__ order, float* __restrict__ out) {
    GRID_STRIDE(e, n * d) {
        const long long p = e / d, c = e - p * d;
        out[e] = x[(long long)order[p] * d + c];
    }
}
