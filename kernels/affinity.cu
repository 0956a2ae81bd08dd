// Affinities on the device (DESIGN §1.4): per-point perplexity calibration, then the
// symmetrisation P = (C + C^T) / sum, written straight into HYB (ELL + COO).
// The scheme is described in src/affinity/gpu/mod.rs; the kernels run in this order:
//   affinity_perplexity -> affinity_sort -> affinity_match -> affinity_count
//   -> affinity_lengths -> (host: ELL width from the histogram) -> affinity_scan_tiles
//   -> affinity_scan_sums -> affinity_scan_apply -> affinity_fill.
//
// Argument contract (declared in src/gpu/kernels/affinity.rs):
//   n rows (0 < n < 2^31), k slots per row (1 <= k <= 256); every n*k array is row-major,
//   slot s of row i at i*k + s (64-bit offsets). p2 is the next power of two >= k.
//   dist, idx: the caller's neighbours (squared distances ascending per row, indices).
//   cond: n*k floats; sidx: n*k ints; partner: n*k floats.
//   total, plp: one exact sum each (common.cuh, EXACT_WORDS words: P then does not depend
//   on the order the blocks add in), zeroed before the launch that adds to them.
//   error: one int, zeroed before affinity_sort; bit 0 set when an index is outside [0, n).
//   own_count, extra: n ints, extra zeroed before affinity_count. rank: the sval array
//   after affinity_count. hist: H + 1 ints, zeroed; nnz: one double, zeroed.
//   tile_sums: ceil(n / (blockDim.x * SCAN_ITEMS)) + 1 long longs, the same blockDim.x for
//   affinity_scan_tiles and affinity_scan_apply (grid = that count minus one), one block
//   for affinity_scan_sums. coo_off: n long longs, the exclusive scan of
//   max(len_i - K, 0). affinity_fill writes the rows lo .. lo + rows (0 and n: all of P):
//   ELL arrays K*rows entries (slot s of row i at s*rows + i - lo), COO arrays the block's
//   coo_off[lo + rows] - coo_off[lo] entries (tile_sums[nt] for all of P), coo0 =
//   coo_off[lo].
//   Launches: affinity_perplexity with blockDim.x a multiple of 32 and
//   blockDim.x * stride floats of dynamic shared memory; the warp-per-row kernels
//   (sort, count, fill) with blockDim.x a multiple of 32, affinity_sort with
//   (blockDim.x / 32) * p2 * 8 bytes of dynamic shared memory.

#define AFF_END 0x7fffffff        // sidx value of the empty slots at the end of a row
// AFF_MAX_CHUNKS (k <= 32 * AFF_MAX_CHUNKS) and SCAN_ITEMS (rows per thread of the
// COO-offset scan) come from src/gpu/kernels/affinity.rs as -D options.

__device__ inline unsigned lanemask_lt() {
    unsigned m;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
    return m;
}

// Sum of (sum exp(-beta d_j), sum exp(-beta d_j) d_j) over one row held in shared memory,
// d_j = row[j] - dmin, in the CPU's order (src/affinity/perplexity.rs: entropy_at) and
// without fused multiply-adds, so that both sides walk the same bisection path.
__device__ inline void row_sums(const float* row, int k, double dmin, double beta,
                                double* sum_out, double* weighted_out) {
    double sum = 0.0, weighted = 0.0;
    for (int j = 0; j < k; ++j) {
        double dj = __dadd_rn((double)row[j], -dmin);
        double e = exp(-beta * dj);
        sum = __dadd_rn(sum, e);
        weighted = __dadd_rn(weighted, __dmul_rn(e, dj));
    }
    *sum_out = sum;
    *weighted_out = weighted;
}

__device__ inline double entropy(const float* row, int k, double dmin, double beta) {
    double sum, weighted;
    row_sums(row, k, dmin, beta, &sum, &weighted);
    return __dadd_rn(log(sum), __dmul_rn(beta, weighted) / sum);
}

// One thread per row: bisection on the precision beta (the twin of calibrate_row in
// src/affinity/perplexity.rs), conditional probabilities written to cond (f32, row-major),
// and their sum (exact) added to total. A block stages its rows' distances in shared
// memory (row r at r*stride, stride odd so that the threads of a warp hit distinct banks).
extern "C" __global__ void affinity_perplexity(int n, int k, int stride, double target,
                                               double tol, int max_steps,
                                               const float* __restrict__ dist,
                                               float* __restrict__ cond,
                                               unsigned long long* total) {
    extern __shared__ float tile[];
    ExactSum local_total = exact_zero();
    int rows = blockDim.x;
    for (long long row0 = (long long)blockIdx.x * rows; row0 < n;
         row0 += (long long)gridDim.x * rows) {
        int here = (int)min((long long)rows, n - row0);
        long long base = row0 * k;
        for (int e = threadIdx.x; e < here * k; e += blockDim.x)
            tile[(e / k) * stride + e % k] = dist[base + e];
        __syncthreads();
        if ((int)threadIdx.x < here) {
            float* row = tile + threadIdx.x * stride;
            float dmin_f = __int_as_float(0x7f800000);  // +inf
            for (int j = 0; j < k; ++j) dmin_f = fminf(dmin_f, row[j]);
            double dmin = (double)dmin_f;
            double spread = 0.0;
            for (int j = 0; j < k; ++j) spread = __dadd_rn(spread, (double)row[j] - dmin);
            spread /= (double)k;
            if (!(spread > 0.0)) {
                float u = (float)(1.0 / (double)k);
                for (int j = 0; j < k; ++j) row[j] = u;
                exact_add(local_total, (double)u * k);
            } else {
                bool done;
                const double beta = perplexity_bisect(
                    spread, tol, max_steps,
                    [&](double b) { return entropy(row, k, dmin, b) - target; }, &done);
                double sum, weighted;
                row_sums(row, k, dmin, beta, &sum, &weighted);
                for (int j = 0; j < k; ++j) {
                    double dj = __dadd_rn((double)row[j], -dmin);
                    float p = (float)(exp(-beta * dj) / sum);
                    row[j] = p;
                    exact_add(local_total, (double)p);
                }
            }
        }
        __syncthreads();
        for (int e = threadIdx.x; e < here * k; e += blockDim.x)
            cond[base + e] = tile[(e / k) * stride + e % k];
        __syncthreads();
    }
    exact_block_add(local_total, total);
}

// One warp per row: sorts the row's (index, probability) pairs by index (bitonic sort of
// 64-bit keys index << 32 | float bits in shared memory), merges repeated indices (their
// probabilities add), and writes the merged row to sidx / cond (in place) with AFF_END / 0
// after its last entry; sets the row's partner slots to NaN (no reverse edge found yet).
extern "C" __global__ void affinity_sort(int n, int k, int p2, const int* __restrict__ idx,
                                         float* cond, int* __restrict__ sidx,
                                         float* __restrict__ partner, int* error) {
    extern __shared__ unsigned long long keys_all[];
    int lane = threadIdx.x & 31;
    int warps = blockDim.x >> 5;
    unsigned long long* keys = keys_all + (threadIdx.x >> 5) * p2;
    const unsigned long long PAD = ~0ull;
    for (long long i = (long long)blockIdx.x * warps + (threadIdx.x >> 5); i < n;
         i += (long long)gridDim.x * warps) {
        long long base = i * k;
        for (int s = lane; s < p2; s += 32) {
            unsigned long long key = PAD;
            if (s < k) {
                int j = idx[base + s];
                if (j < 0 || j >= n) {
                    atomicOr(error, 1);
                } else {
                    key = ((unsigned long long)(unsigned)j << 32) |
                          (unsigned long long)__float_as_uint(cond[base + s]);
                }
            }
            keys[s] = key;
        }
        __syncwarp();
        for (int size = 2; size <= p2; size <<= 1) {
            for (int stride = size >> 1; stride > 0; stride >>= 1) {
                for (int q = lane; q < (p2 >> 1); q += 32) {
                    int a = ((q & ~(stride - 1)) << 1) | (q & (stride - 1));
                    int b = a + stride;
                    bool ascending = (a & size) == 0;
                    unsigned long long ka = keys[a], kb = keys[b];
                    if ((ka > kb) == ascending) {
                        keys[a] = kb;
                        keys[b] = ka;
                    }
                }
                __syncwarp();
            }
        }
        // Merge runs of one index and compact: the head of each run writes the run's sum.
        int written = 0;
        for (int c = 0; c < k; c += 32) {
            int s = c + lane;
            unsigned long long key = s < k ? keys[s] : PAD;
            unsigned j = (unsigned)(key >> 32);
            bool head = key != PAD && (s == 0 || (unsigned)(keys[s - 1] >> 32) != j);
            unsigned heads = __ballot_sync(FULL_MASK, head);
            if (head) {
                double v = (double)__uint_as_float((unsigned)key);
                for (int t = s + 1; t < k && keys[t] != PAD && (unsigned)(keys[t] >> 32) == j;
                     ++t)
                    v += (double)__uint_as_float((unsigned)keys[t]);
                int pos = written + __popc(heads & lanemask_lt());
                sidx[base + pos] = (int)j;
                cond[base + pos] = (float)v;
            }
            written += __popc(heads);
        }
        for (int s = written + lane; s < k; s += 32) {
            sidx[base + s] = AFF_END;
            cond[base + s] = 0.f;
        }
        for (int s = lane; s < k; s += 32) partner[base + s] = __uint_as_float(0x7fffffffu);
        __syncwarp();
    }
}

// First index in the sorted row of length k that is >= x (k if none).
__device__ inline int lower_bound(const int* __restrict__ row, int k, int x) {
    int lo = 0, hi = k;
    while (lo < hi) {
        int mid = (lo + hi) >> 1;
        if (row[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// One thread per edge i -> j with i < j: looks for i in row j. When found at slot t,
// partner[j*k + t] = c_{j->i}'s partner c_{i->j} and partner[e] = c_{j->i}; each pair is
// searched once, from its smaller end. A self-edge is its own partner.
extern "C" __global__ void affinity_match(int n, int k, const int* __restrict__ sidx,
                                          const float* __restrict__ sval,
                                          float* __restrict__ partner) {
    GRID_STRIDE(e, (long long)n * k) {
        int j = sidx[e];
        if (j == AFF_END) continue;
        int i = (int)(e / k);
        if (j == i) {
            partner[e] = sval[e];
        } else if (i < j) {
            long long row = (long long)j * k;
            int t = lower_bound(sidx + row, k, i);
            if (t < k && sidx[row + t] == i) {
                partner[row + t] = sval[e];
                partner[e] = sval[row + t];
            }
        }
    }
}

// One warp per row: the symmetric value of each entry, p = (c_ij + c_ji) * scale with
// scale = 1 / (2 * total) (only c_ij when i is not in row j), encoded in place in own:
// NaN = no entry (zero weight: dropped, as the CPU does), sign bit set = row j lacks i,
// so the entry must also be appended to row j; then sval's slot is overwritten with the
// entry's rank among row j's appended entries (int bits). own_count[i] = entries of row i
// from its own slots; extra[j] counts the appended ones; *plp += sum p ln p over P.
extern "C" __global__ void affinity_count(int n, int k, const unsigned long long* total,
                                          const int* __restrict__ sidx, float* sval,
                                          float* own, int* __restrict__ own_count, int* extra,
                                          unsigned long long* plp) {
    int lane = threadIdx.x & 31;
    int warps = blockDim.x >> 5;
    double scale = 1.0 / (2.0 * exact_value(total));
    ExactSum local = exact_zero();
    for (long long i = (long long)blockIdx.x * warps + (threadIdx.x >> 5); i < n;
         i += (long long)gridDim.x * warps) {
        long long base = i * k;
        int count = 0;
        for (int c = 0; c < k; c += 32) {
            int s = c + lane;
            bool keep = false;
            if (s < k) {
                int j = sidx[base + s];
                float enc = __uint_as_float(0x7fffffffu);
                if (j != AFF_END) {
                    float b = own[base + s];
                    bool mutual = !isnan(b);
                    double v = (double)sval[base + s] + (mutual ? (double)b : 0.0);
                    if (v > 0.0) {
                        keep = true;
                        float p = (float)(v * scale);
                        enc = mutual ? p : __uint_as_float(__float_as_uint(p) | 0x80000000u);
                        if (p > 0.f) exact_add(local, (mutual ? 1.0 : 2.0) * (double)p * log((double)p));
                        if (!mutual) sval[base + s] = __int_as_float(atomicAdd(&extra[j], 1));
                    }
                }
                own[base + s] = enc;
            }
            count += __popc(__ballot_sync(FULL_MASK, keep));
        }
        if (lane == 0) own_count[i] = count;
    }
    exact_block_add(local, plp);
}

// Entry number `slot` of row `row` in the HYB of rows lo .. lo + rows (the whole P when
// lo = 0 and rows = n): ELL when slot < K, else COO, whose part starts at entry coo0 of
// the whole's. Rows outside the block are not written.
__device__ inline void put(int lo, int rows, int K, const long long* __restrict__ coo_off,
                           long long coo0, int row, int slot, int col, float val,
                           int* __restrict__ ell_cols, float* __restrict__ ell_vals,
                           int* __restrict__ coo_rows, int* __restrict__ coo_cols,
                           float* __restrict__ coo_vals) {
    int r = row - lo;
    if (r < 0 || r >= rows) return;
    if (slot < K) {
        long long e = (long long)slot * rows + r;
        ell_cols[e] = col;
        ell_vals[e] = val;
    } else {
        long long e = coo_off[row] - coo0 + (slot - K);
        coo_rows[e] = row;
        coo_cols[e] = col;
        coo_vals[e] = val;
    }
}

// One warp per row i: the entries appended from other rows take slots 0..extra[i]-1 (each
// at the rank affinity_count gave it), the row's own entries the following slots (in
// column order), and the ELL slots from len_i = own_count[i] + extra[i] up to K get the
// padding (column i, value 0). No atomics: every slot is known from the counts. Only the
// rows lo .. lo + rows are written (a GPU's block of P, `put`); every row is read, as the
// entries appended to a block's rows come from any row.
extern "C" __global__ void affinity_fill(int n, int k, int K, int lo, int rows, long long coo0,
                                         const int* __restrict__ sidx,
                                         const float* __restrict__ own,
                                         const float* __restrict__ rank,
                                         const int* __restrict__ own_count,
                                         const int* __restrict__ extra,
                                         const long long* __restrict__ coo_off,
                                         int* __restrict__ ell_cols,
                                         float* __restrict__ ell_vals,
                                         int* __restrict__ coo_rows, int* __restrict__ coo_cols,
                                         float* __restrict__ coo_vals) {
    int lane = threadIdx.x & 31;
    int warps = blockDim.x >> 5;
    for (long long il = (long long)blockIdx.x * warps + (threadIdx.x >> 5); il < n;
         il += (long long)gridDim.x * warps) {
        int i = (int)il;
        long long base = il * k;
        int written = extra[i];
        for (int c = 0; c < k; c += 32) {
            int s = c + lane;
            float enc = s < k ? own[base + s] : __uint_as_float(0x7fffffffu);
            bool keep = !isnan(enc);
            unsigned kept = __ballot_sync(FULL_MASK, keep);
            if (keep) {
                int j = sidx[base + s];
                float p = fabsf(enc);
                put(lo, rows, K, coo_off, coo0, i, written + __popc(kept & lanemask_lt()), j,
                    p, ell_cols, ell_vals, coo_rows, coo_cols, coo_vals);
                if (signbit(enc))
                    put(lo, rows, K, coo_off, coo0, j, __float_as_int(rank[base + s]), i, p,
                        ell_cols, ell_vals, coo_rows, coo_cols, coo_vals);
            }
            written += __popc(kept);
        }
        if (i < lo || i - lo >= rows) continue;
        for (int s = written + lane; s < K; s += 32) {
            long long e = (long long)s * rows + (i - lo);
            ell_cols[e] = i;
            ell_vals[e] = 0.f;
        }
    }
}

// Histogram of the row lengths len_i = own_count[i] + extra[i], lengths >= H in bin H
// (hist: H + 1 ints, zeroed; H + 1 ints of dynamic shared memory), and *nnz += sum len_i.
extern "C" __global__ void affinity_lengths(int n, int H, const int* __restrict__ own_count,
                                            const int* __restrict__ extra, int* hist,
                                            double* nnz) {
    extern __shared__ int local_hist[];
    for (int b = threadIdx.x; b <= H; b += blockDim.x) local_hist[b] = 0;
    __syncthreads();
    double local = 0.0;
    GRID_STRIDE(i, n) {
        int len = own_count[i] + extra[i];
        atomicAdd(&local_hist[min(len, H)], 1);
        local += (double)len;
    }
    __syncthreads();
    for (int b = threadIdx.x; b <= H; b += blockDim.x)
        if (local_hist[b]) atomicAdd(&hist[b], local_hist[b]);
    double s = block_sum(local);
    if (threadIdx.x == 0) atomicAdd(nnz, s);
}

__device__ inline long long overflow(int i, int n, int K, const int* own_count,
                                     const int* extra) {
    return i < n ? (long long)max(own_count[i] + extra[i] - K, 0) : 0;
}

// COO offsets, step 1: tile t (blockDim.x * SCAN_ITEMS rows) sums its rows' overflow
// max(len_i - K, 0) into tile_sums[t].
extern "C" __global__ void affinity_scan_tiles(int n, int K, const int* __restrict__ own_count,
                                               const int* __restrict__ extra,
                                               long long* tile_sums) {
    long long row0 = (long long)blockIdx.x * blockDim.x * SCAN_ITEMS;
    long long v = 0;
    for (int r = 0; r < SCAN_ITEMS; ++r) {
        long long i = row0 + (long long)r * blockDim.x + threadIdx.x;
        if (i < n) v += overflow((int)i, n, K, own_count, extra);
    }
    long long total;
    block_exclusive_scan(v, &total);
    if (threadIdx.x == 0) tile_sums[blockIdx.x] = total;
}

// Step 2 (one block): exclusive scan of the nt tile sums in place; tile_sums[nt] = total.
extern "C" __global__ void affinity_scan_sums(int nt, long long* tile_sums) {
    long long carry = 0;
    for (int c = 0; c < nt; c += blockDim.x) {
        int t = c + threadIdx.x;
        long long v = t < nt ? tile_sums[t] : 0, total;
        long long excl = block_exclusive_scan(v, &total);
        if (t < nt) tile_sums[t] = carry + excl;
        carry += total;
    }
    if (threadIdx.x == 0) tile_sums[nt] = carry;
}

// Step 3: coo_off[i] = tile offset + exclusive scan of the overflow inside the tile (each
// thread takes SCAN_ITEMS consecutive rows).
extern "C" __global__ void affinity_scan_apply(int n, int K, const int* __restrict__ own_count,
                                               const int* __restrict__ extra,
                                               const long long* __restrict__ tile_sums,
                                               long long* __restrict__ coo_off) {
    long long row0 = (long long)blockIdx.x * blockDim.x * SCAN_ITEMS +
                     (long long)threadIdx.x * SCAN_ITEMS;
    long long v[SCAN_ITEMS], sum = 0;
#pragma unroll
    for (int r = 0; r < SCAN_ITEMS; ++r) {
        long long i = row0 + r;
        v[r] = i < n ? overflow((int)i, n, K, own_count, extra) : 0;
        sum += v[r];
    }
    long long total;
    long long off = tile_sums[blockIdx.x] + block_exclusive_scan(sum, &total);
#pragma unroll
    for (int r = 0; r < SCAN_ITEMS; ++r) {
        long long i = row0 + r;
        if (i < n) coo_off[i] = off;
        off += v[r];
    }
}

// Fills n words with `value` (tests poison outputs with it so that unwritten entries show).
extern "C" __global__ void affinity_poison(long long n, unsigned* out, unsigned value) {
    GRID_STRIDE(e, n) out[e] = value;
}
