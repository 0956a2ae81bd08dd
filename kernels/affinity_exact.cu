// Exact affinities on the device (src/affinity/gpu/exact.rs, whose module doc describes the
// scheme): P over every pair of n points, the twin of exact_affinities in
// src/affinity/exact.rs. Rows are taken in blocks of `rows` rows from row0; the kernels run
//   pass 1, every block of rows: exact_distances -> exact_calibrate;
//   pass 2, every block of rows (every row calibrated, Σ C known): exact_distances -> exact_joint.
//
// Argument contract (declared in src/gpu/kernels/affinity_exact.rs):
//   n points (2 <= n < 2^31) of d dimensions, x: n*d floats, row-major.
//   0 <= row0, row0 + rows <= n. dist: rows*n floats, row b the squared distances from point
//   row0 + b to every point (its own, 0, included); 64-bit offsets throughout.
//   beta, shift, norm: n doubles each; row i's precision, its smallest distance to another
//   point, and the normaliser sum_{j != i} exp(-beta (d_ij - shift)) of its conditionals.
//   total: one exact sum (common.cuh, EXACT_WORDS words), zeroed before the first
//   exact_calibrate: sum over rows of the row's conditionals rounded to float.
//   p: rows*(n-1) floats, row b P's row row0 + b in column order without the diagonal;
//   dropped: one unsigned long long, zeroed, counting the entries written as DROPPED.
//   Launches: exact_distances with blockDim (PAIR_TILE, TILE_ROWS) and grid
//   (ceil(n / PAIR_TILE), ceil(rows / PAIR_TILE)); exact_calibrate with blockDim.x a
//   multiple of 32, at most CALIBRATE_THREADS, one block per row (a grid-stride over rows);
//   exact_joint any 1-D grid (grid-stride).
// PAIR_TILE, TILE_ROWS, DIM_CHUNK and CALIBRATE_THREADS come from
// src/gpu/kernels/affinity_exact.rs as -D options.

// The mark of a pair whose c_ij + c_ji is 0 (-0.0f; no entry of P is negative): the host
// drops it, as the CPU's symmetrize drops zero weights.
#define DROPPED __int_as_float(0x80000000)

// Rows of the tile each thread of exact_distances takes (one column, rows ty + q TILE_ROWS).
#define ROWS_PER_THREAD (PAIR_TILE / TILE_ROWS)

// One tile of PAIR_TILE x PAIR_TILE squared distances, each in float in the order of the
// CPU's sq_dist (src/knn/key.rs: lanes): element t of the first d - d % 8 goes to lane t % 8,
// the lanes are combined ((0+4) + (1+5)) + ((2+6) + (3+7)), then the remaining elements'
// sum, taken in order, is added; every operation rounded on its own (no fused multiply-add),
// so that each distance equals the CPU's bit for bit. The squared difference is symmetric,
// so the distance from j to i is the distance from i to j, bit for bit, too. Both tiles'
// coordinates are staged through shared memory DIM_CHUNK dimensions at a time (a multiple
// of 8, so that lane l of a group of 8 is lane l of the CPU's).
extern "C" __global__ void __launch_bounds__(PAIR_TILE * TILE_ROWS)
    exact_distances(int n, int d, int row0, int rows, const float* __restrict__ x,
                    float* __restrict__ dist) {
    __shared__ float xr[PAIR_TILE][DIM_CHUNK + 1];  // the tile's row points
    __shared__ float xc[PAIR_TILE][DIM_CHUNK + 1];  // the tile's column points
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * PAIR_TILE + tx;
    const int r_first = blockIdx.y * PAIR_TILE;  // within the block of rows
    const long long c_first = (long long)blockIdx.x * PAIR_TILE;
    const int main_dims = d - d % 8;
    float acc[ROWS_PER_THREAD][8], tail[ROWS_PER_THREAD];
#pragma unroll
    for (int q = 0; q < ROWS_PER_THREAD; ++q) {
        tail[q] = 0.f;
#pragma unroll
        for (int l = 0; l < 8; ++l) acc[q][l] = 0.f;
    }
    for (int c = 0; c < d; c += DIM_CHUNK) {
        const int len = min(DIM_CHUNK, d - c);
        for (int e = tid; e < PAIR_TILE * DIM_CHUNK; e += PAIR_TILE * TILE_ROWS) {
            const int r = e / DIM_CHUNK, t = e % DIM_CHUNK;
            const long long gi = (long long)row0 + r_first + r, gj = c_first + r;
            xr[r][t] = (t < len && r_first + r < rows && gi < n) ? x[gi * d + c + t] : 0.f;
            xc[r][t] = (t < len && gj < n) ? x[gj * d + c + t] : 0.f;
        }
        __syncthreads();
        for (int s = 0; s < len; s += 8) {
            if (c + s < main_dims) {  // a whole group of 8, one element per lane
#pragma unroll
                for (int l = 0; l < 8; ++l) {
                    const float b = xc[tx][s + l];
#pragma unroll
                    for (int q = 0; q < ROWS_PER_THREAD; ++q) {
                        const float diff = __fsub_rn(xr[ty + q * TILE_ROWS][s + l], b);
                        acc[q][l] = __fadd_rn(acc[q][l], __fmul_rn(diff, diff));
                    }
                }
            } else {  // the last d % 8 elements, in order
                for (int l = 0; l < len - s; ++l) {
                    const float b = xc[tx][s + l];
#pragma unroll
                    for (int q = 0; q < ROWS_PER_THREAD; ++q) {
                        const float diff = __fsub_rn(xr[ty + q * TILE_ROWS][s + l], b);
                        tail[q] = __fadd_rn(tail[q], __fmul_rn(diff, diff));
                    }
                }
            }
        }
        __syncthreads();
    }
    const long long j = c_first + tx;
#pragma unroll
    for (int q = 0; q < ROWS_PER_THREAD; ++q) {
        const int r = r_first + ty + q * TILE_ROWS;
        if (r < rows && j < n) {
            const float lanes =
                __fadd_rn(__fadd_rn(__fadd_rn(acc[q][0], acc[q][4]), __fadd_rn(acc[q][1], acc[q][5])),
                          __fadd_rn(__fadd_rn(acc[q][2], acc[q][6]), __fadd_rn(acc[q][3], acc[q][7])));
            dist[(long long)r * n + j] = __fadd_rn(lanes, tail[q]);
        }
    }
}

// The smallest of v over the block (blockDim.x a multiple of 32, at most 1024), in every
// thread.
__device__ inline float block_min_all(float v) {
    __shared__ float warp_min[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int off = 16; off > 0; off >>= 1) v = fminf(v, __shfl_xor_sync(FULL_MASK, v, off));
    if (lane == 0) warp_min[warp] = v;
    __syncthreads();
    v = lane < warps ? warp_min[lane] : KNN_INF;
    for (int off = 16; off > 0; off >>= 1) v = fminf(v, __shfl_xor_sync(FULL_MASK, v, off));
    __syncthreads();
    return v;
}

// The sums of a and b over the block (blockDim.x a multiple of 32, at most 1024), the same
// bits in every thread: each butterfly step adds the same two values in every lane, so that
// every thread takes the same branch of the bisection.
__device__ inline void block_sums_all(double& a, double& b) {
    __shared__ double warp_a[32], warp_b[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int off = 16; off > 0; off >>= 1) {
        a = __dadd_rn(a, __shfl_xor_sync(FULL_MASK, a, off));
        b = __dadd_rn(b, __shfl_xor_sync(FULL_MASK, b, off));
    }
    if (lane == 0) {
        warp_a[warp] = a;
        warp_b[warp] = b;
    }
    __syncthreads();
    a = lane < warps ? warp_a[lane] : 0.0;
    b = lane < warps ? warp_b[lane] : 0.0;
    for (int off = 16; off > 0; off >>= 1) {
        a = __dadd_rn(a, __shfl_xor_sync(FULL_MASK, a, off));
        b = __dadd_rn(b, __shfl_xor_sync(FULL_MASK, b, off));
    }
    __syncthreads();
}

// (sum_j e_j, sum_j e_j d_j) over the row's n - 1 other points, e_j = exp(-beta d_j) and
// d_j = row[j] - shift (entropy_at in src/affinity/perplexity.rs), each term without fused
// multiply-adds; every thread of the block takes part and gets the sums.
__device__ inline void row_sums(const float* __restrict__ row, int n, long long i, double shift,
                                double beta, double* sum_out, double* weighted_out) {
    double sum = 0.0, weighted = 0.0;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        if (j == i) continue;
        const double dj = __dadd_rn((double)row[j], -shift);
        const double e = exp(__dmul_rn(-beta, dj));
        sum = __dadd_rn(sum, e);
        weighted = __dadd_rn(weighted, __dmul_rn(e, dj));
    }
    block_sums_all(sum, weighted);
    *sum_out = sum;
    *weighted_out = weighted;
}

// The conditional p_{j|i} at squared distance d of a row calibrated to (beta, shift, norm),
// rounded to float as the CPU rounds the conditionals before symmetrising.
__device__ inline float conditional(float d, double beta, double shift, double norm) {
    const double dj = __dadd_rn((double)d, -shift);
    return (float)(exp(__dmul_rn(-beta, dj)) / norm);
}

// One block per row i = row0 + b: the bisection on the precision beta of calibrate_row
// (src/affinity/perplexity.rs) over the row's n - 1 distances, in double: distances shifted
// by the smallest, start at 1 / mean shifted distance, doubling until the entropy falls
// below target then halving, stop when |H - target| < tol, after max_steps steps the best
// beta seen; a row whose shifted distances sum to 0 is uniform (beta 0, norm n - 1). The
// block reductions give every thread the same sums, so the block walks the path as one.
// Writes beta, shift and norm of row i (the normaliser of the final beta, as the CPU's
// conditionals are those of its last evaluation) and adds the row's conditionals, rounded
// to float, to total.
extern "C" __global__ void __launch_bounds__(CALIBRATE_THREADS)
    exact_calibrate(int n, int row0, int rows, double target, double tol, int max_steps,
                    const float* __restrict__ dist, double* __restrict__ beta_out,
                    double* __restrict__ shift_out, double* __restrict__ norm_out,
                    unsigned long long* total) {
    ExactSum local_total = exact_zero();
    const double m = (double)(n - 1);
    for (int b = blockIdx.x; b < rows; b += gridDim.x) {
        const long long i = (long long)row0 + b;
        if (i >= n) break;
        const float* row = dist + (long long)b * n;
        float dmin = KNN_INF;
        for (int j = threadIdx.x; j < n; j += blockDim.x)
            if (j != i) dmin = fminf(dmin, row[j]);
        const double shift = (double)block_min_all(dmin);
        double spread = 0.0, unused = 0.0;
        for (int j = threadIdx.x; j < n; j += blockDim.x)
            if (j != i) spread = __dadd_rn(spread, __dadd_rn((double)row[j], -shift));
        block_sums_all(spread, unused);
        spread /= m;
        double beta, norm;
        if (spread <= 0.0) {
            beta = 0.0;
            norm = m;
        } else {
            double weighted;
            bool done;
            beta = perplexity_bisect(
                spread, tol, max_steps,
                [&](double bt) {
                    row_sums(row, n, i, shift, bt, &norm, &weighted);
                    return __dadd_rn(log(norm), __dmul_rn(bt, weighted) / norm) - target;
                },
                &done);
            if (!done) {
                row_sums(row, n, i, shift, beta, &norm, &weighted);
            }
        }
        double row_total = 0.0;
        for (int j = threadIdx.x; j < n; j += blockDim.x)
            if (j != i) row_total = __dadd_rn(row_total, (double)conditional(row[j], beta, shift, norm));
        block_sums_all(row_total, unused);
        if (threadIdx.x == 0) {
            beta_out[i] = beta;
            shift_out[i] = shift;
            norm_out[i] = norm;
            exact_add(local_total, row_total);
        }
    }
    exact_block_add(local_total, total);
}

// P's rows row0 .. row0 + rows - 1 without the diagonal: entry s of row i is column
// j = s + (s >= i), P_ij = (c_ij + c_ji) * scale rounded to float (scale = 1 / (2 sum C),
// symmetrize's (v * scale) as f32), both conditionals recomputed from their rows'
// calibration at the one distance d_ij = d_ji; DROPPED where c_ij + c_ji is 0, counted in
// *dropped.
extern "C" __global__ void exact_joint(int n, int row0, int rows, double scale,
                                       const float* __restrict__ dist,
                                       const double* __restrict__ beta,
                                       const double* __restrict__ shift,
                                       const double* __restrict__ norm, float* __restrict__ p,
                                       unsigned long long* dropped) {
    const long long m = n - 1;
    unsigned long long local = 0;
    GRID_STRIDE(e, (long long)rows * m) {
        const long long b = e / m, s = e - b * m;
        const long long i = row0 + b, j = s + (s >= i);
        if (i >= n) break;
        const float d = dist[b * n + j];
        const float cij = conditional(d, beta[i], shift[i], norm[i]);
        const float cji = conditional(d, beta[j], shift[j], norm[j]);
        const double v = (double)cij + (double)cji;
        p[e] = v == 0.0 ? DROPPED : (float)(v * scale);
        local += v == 0.0;
    }
    if (local) atomicAdd(dropped, local);
}
