// Exact k nearest neighbours in one pass, distances on the tensor cores and selection fused
// behind them (DESIGN §1.3): no distance tile is ever written. At d = 50 the SGEMM path
// (knn.cu) is bound by writing and re-reading its tiles, not by arithmetic; here each block
// keeps FUSED_QUERIES queries for a whole sweep over the references, computes every
// query x reference key in registers on the tensor cores, and lets through only the few
// that can enter a query's list.
//
// Ranking key, as in knn.cu: s = t_r - 2 q.r (t_r = ||r||^2 on the centred points, or the
// inner product's c on the points as given), here in 3xFP16, the half-precision twin of
// Ootomo & Yokota's 3xTF32 (2022): each row, scaled by a power of two sc so that its largest
// coordinate is 2^14, is split into an FP16 head and an FP16 tail (x sc = hi + lo to 2^-22
// |x sc|; FP16 and TF32 both keep 11 significant bits), and q.r sc^2 = hi.hi + hi.lo + lo.hi,
// three mma.sync per product, which keeps f32 accuracy (the dropped lo.lo and the splitting
// errors are below 2^-20 |q| |r|, the f32 accumulation of an SGEMM about as large). The
// scale keeps the heads below FP16's largest value and the tails normal down to coordinates
// 2^-17 of the largest (smaller ones lose bits below 2^-25 of the largest, far under the
// bound). An m16n8k16 FP16 mma does twice the work of an m16n8k8 TF32 one, at twice the
// tensor cores' TF32 rate, and the staged references take half the shared memory. One
// product alone would err by up to 2^-9 |q| |r|: on clustered data far from the mean that
// admits most of a cluster.
//
// The accumulators start at (||r||^2 - T_q) sc^2 / 2, T_q the query's current K-th best
// key, and the A operand is -q sc, so a pair can enter the list exactly where the mma output
// (the key minus T_q, times sc^2 / 2) is negative (until the list is full, every pair):
// one OR of the sign bits per lane rejects nearly every step. Survivors wait in a per-query
// queue in shared memory, merged into the query's sorted list (global memory) once it holds
// more than FUSED_MERGE entries, 32 at a time. The lists end holding the K best by this
// key, as the SGEMM path's do, and knn.cu's knn_finish recomputes their distances in
// double and keeps k.
//
// Argument contract (declared in src/gpu/kernels/knn_fused.rs):
//   hi, lo: n_pad x dp halves (FP16 bits), the key's rows' heads and tails scaled by sc
//       (knn_fused_split), zero columns up to dp (a multiple of 16, at most 64) and zero
//       rows up to n_pad (a multiple of FUSED_CHUNK); half_sc2 = sc^2 / 2 and
//       inv_half_sc2 = 2 / sc^2 (powers of two);
//   sq: n_pad floats, the rows' terms t_i (||x_i||^2 of the centred points, or c), +inf
//       past n;
//   qrows: the query slots' rows, FUSED_QUERIES per block; -1 marks an empty slot. Block b
//       of a launch holds slots FUSED_QUERIES * (block0 + b) + [0, FUSED_QUERIES);
//   runs, run_off: the references of block b of the launch are the chunks (FUSED_CHUNK
//       rows each, all below n_pad) of runs[run_off[B] .. run_off[B + 1]], B = block0 + b,
//       each run a first chunk and a count, no chunk twice; swept in that order. All chunks:
//       an exact kNN; the chunks of a few clusters: the IVF probe (src/knn/gpu/ivf.rs);
//   state_d, state_i: K = 32 kr entries per slot (1 <= kr <= 8) from slot slot0 on, sorted
//       lists: (+inf, -1) before the first sweep (a second sweep starts from the lists' K-th
//       best); the list of a slot holds rows, never the slot's own row;
//   FUSED_WARPS * 32 threads, the bytes of `layout` (FusedLayout::bytes) of dynamic shared
//   memory; the kernel knn_fused_<dp / 16>.

// FUSED_WARPS, FUSED_QUERIES (= 32 FUSED_WARPS), FUSED_CHUNK (references per step),
// FUSED_MERGE, FUSED_QUEUE (= FUSED_MERGE + FUSED_CHUNK), FUSED_STAGES and FUSED_ROW_PAD come
// from src/gpu/kernels/knn_fused.rs as -D options.

// Where each part of the dynamic shared memory starts, in 4-byte words, as
// src/gpu/kernels/knn_fused.rs lays it out (FusedLayout there):
//   stage   FUSED_STAGES x 2 x FUSED_CHUNK x (dp + FUSED_ROW_PAD) halves at word 0: heads,
//           then tails, of a step's references; rows 4 mod 8 words apart, so each
//           ldmatrix phase hits 32 different banks
//   sqs     FUSED_STAGES x FUSED_CHUNK floats  ||r||^2 of the step's references
//   queue_d, queue_i  FUSED_QUERIES x FUSED_QUEUE floats, then as many ints
//   qcount, thr  FUSED_QUERIES ints / floats   queue lengths, K-th best keys
//   scratch FUSED_WARPS x scratch_per_warp words (4 K + 32)  merge_queue's lists and batch
struct FusedLayout {
    int sqs, queue_d, queue_i, qcount, thr, scratch, scratch_per_warp;
};

// The FP16 mma.sync and cp.async need sm_80 here; older devices never launch these kernels
// (src/knn/gpu/fused.rs checks), but the file must still compile for them.
#if __CUDA_ARCH__ >= 800
#define FUSED_MMA 1
#endif

// x rounded to FP16 (nearest, ties to even), as its bits; and back, exactly.
__device__ __forceinline__ unsigned short to_half(float x) {
    unsigned short r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(x));
    return r;
}
__device__ __forceinline__ float from_half(unsigned short h) {
    float r;
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
    return r;
}

// c += a b for one m16 x n8 x k16 tile (PTX ISA, mma.m16n8k16 .f16): with g = lane / 4 and
// t = lane % 4, a's words hold A[g][2t..2t+1], A[g+8][2t..2t+1], A[g][2t+8..2t+9],
// A[g+8][2t+8..2t+9] (lower index in the low half); b's B[2t..2t+1][g], B[2t+8..2t+9][g];
// c holds C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1].
__device__ __forceinline__ void mma_f16(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                        unsigned b1) {
#ifdef FUSED_MMA
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    __trap();
#endif
}

// Four 8 x 8 matrices of halves from shared memory: lane l gives the address of row l % 8 of
// matrix l / 8 and receives, of each matrix, the halves at row l / 4, columns 2 (l % 4) and
// 2 (l % 4) + 1: one word of the B fragment layout of mma_f16.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
#ifdef FUSED_MMA
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
#else
    __trap();
#endif
}

// 16 bytes global -> shared without a trip through registers (sm_80+).
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
#ifdef FUSED_MMA
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src));
#else
    *reinterpret_cast<float4*>(dst) = *reinterpret_cast<const float4*>(src);
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#ifdef FUSED_MMA
    asm volatile("cp.async.commit_group;");
#endif
}
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#ifdef FUSED_MMA
    asm volatile("cp.async.wait_group %0;" ::"n"(N));
#endif
}

// Sorts the warp's 32 (key, index) pairs, one per lane, ascending by (key, index)
// (bitonic network over shuffles).
__device__ __forceinline__ void warp_sort32(float& key, int& idx, int lane) {
#pragma unroll
    for (int k = 2; k <= 32; k <<= 1) {
#pragma unroll
        for (int j = k >> 1; j > 0; j >>= 1) {
            const float ok = __shfl_xor_sync(FULL_MASK, key, j);
            const int oi = __shfl_xor_sync(FULL_MASK, idx, j);
            const bool other_first = ok < key || (ok == key && (unsigned)oi < (unsigned)idx);
            const bool keep_min = ((lane & j) == 0) == ((lane & k) == 0);
            if (other_first == keep_min) {
                key = ok;
                idx = oi;
            }
        }
    }
}

// Merges a query's queue (cnt exact keys and indices in shared memory) into its sorted list
// of K = 32 KR in global memory, 32 candidates at a time: the batch is sorted across the
// warp, then every list entry and every candidate finds its rank in the merged order by a
// binary search in the other (ties: the list's entry first) and moves there if the rank is
// below K. scratch: 2 K keys, 2 K indices and 32 keys of the warp's shared memory. The
// list's new K-th best goes to *thr_out. Called by a whole warp.
__device__ void merge_queue(float* sd, int* si, const float* qd, const int* qi, int cnt, int kr,
                            float* thr_out, float* scratch, int lane) {
    const int K = 32 * kr;
    float* ld = scratch;
    float* nd = scratch + K;
    int* li = reinterpret_cast<int*>(scratch + 2 * K);
    int* ni = li + K;
    float* bk = scratch + 4 * K;
    for (int r = 0; r < kr; ++r) {
        ld[r * 32 + lane] = sd[r * 32 + lane];
        li[r * 32 + lane] = si[r * 32 + lane];
    }
    for (int base = 0; base < cnt; base += 32) {
        const int c = base + lane;
        float key = c < cnt ? qd[c] : KNN_INF;
        int idx = c < cnt ? qi[c] : -1;
        warp_sort32(key, idx, lane);
        bk[lane] = key;
        __syncwarp();
        int lo = 0, hi = K;  // list entries <= key come first
        while (lo < hi) {
            const int mid = (lo + hi) >> 1;
            if (ld[mid] <= key) lo = mid + 1;
            else hi = mid;
        }
        // Every entry reads its old slot before any writes its new one (nd is not ld).
        for (int r = 0; r < kr; ++r) {
            const int p = r * 32 + lane;
            const float v = ld[p];
            int blo = 0, bhi = 32;  // candidates < v come first
            while (blo < bhi) {
                const int mid = (blo + bhi) >> 1;
                if (bk[mid] < v) blo = mid + 1;
                else bhi = mid;
            }
            if (p + blo < K) {
                nd[p + blo] = v;
                ni[p + blo] = li[p];
            }
        }
        if (lane + lo < K) {
            nd[lane + lo] = key;
            ni[lane + lo] = idx;
        }
        __syncwarp();
        float* td = ld;
        ld = nd;
        nd = td;
        int* ti = li;
        li = ni;
        ni = ti;
    }
    for (int r = 0; r < kr; ++r) {
        sd[r * 32 + lane] = ld[r * 32 + lane];
        si[r * 32 + lane] = li[r * 32 + lane];
    }
    if (lane == 0) *thr_out = ld[K - 1];
    __syncwarp();
}

// Walks the chunks of a block's runs in order; every thread keeps its own copy (the runs
// are block-uniform).
struct RunCursor {
    const int2* run;
    const int2* end;
    int chunk, left;

    __device__ RunCursor(const int2* first, const int2* last) : run(first), end(last), chunk(0), left(0) {
        settle();
    }
    // Moves past exhausted (or empty) runs.
    __device__ void settle() {
        while (left == 0 && run < end) {
            chunk = run->x;
            left = run->y;
            ++run;
        }
    }
    __device__ int next() {
        const int c = chunk++;
        --left;
        settle();
        return c;
    }
};

template <int KS>
__device__ void fused_sweep(const unsigned short* __restrict__ hi,
                            const unsigned short* __restrict__ lo, float half_sc2,
                            float inv_half_sc2, const float* __restrict__ sq,
                            const int* __restrict__ qrows,
                            const int2* __restrict__ runs, const int* __restrict__ run_off,
                            int kr, float* __restrict__ state_d, int* __restrict__ state_i,
                            long long slot0, int block0, FusedLayout layout) {
    constexpr int DP = 16 * KS, ST = DP + FUSED_ROW_PAD;  // halves
    const int K = 32 * kr;
    extern __shared__ __align__(16) unsigned char smem[];
    float* words = reinterpret_cast<float*>(smem);
    unsigned short* stage = reinterpret_cast<unsigned short*>(smem);
    float* sqs = words + layout.sqs;
    float* queue_d = words + layout.queue_d;
    int* queue_i = reinterpret_cast<int*>(words + layout.queue_i);
    int* qcount = reinterpret_cast<int*>(words + layout.qcount);
    float* thr = words + layout.thr;
    float* scratch = words + layout.scratch + (threadIdx.x >> 5) * layout.scratch_per_warp;

    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const long long sbase = (long long)(block0 + blockIdx.x) * FUSED_QUERIES;  // first slot
    const int* rows = qrows + sbase;
    float* list_d = state_d + (sbase - slot0) * K;
    int* list_i = state_i + (sbase - slot0) * K;

    for (int r = tid; r < FUSED_QUERIES; r += blockDim.x) {
        qcount[r] = 0;
        // The list's K-th best (+inf while it is not full); empty slots take nothing.
        thr[r] = rows[r] >= 0 ? list_d[r * K + K - 1] : -KNN_INF;
    }

    // The warp's 32 queries as A fragments of -q sc (the sign bits flipped), head and tail,
    // held for the whole sweep; lane's slots are mt * 16 + h * 8 + g (mt, h in {0, 1}), their
    // rows in own[mt][h] (a list never takes its query's own row).
    unsigned ah[2][KS][4], al[2][KS][4];
    long long own[2][2];
    const int wq = w * 32;
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) own[mt][h] = rows[wq + mt * 16 + h * 8 + g];
#pragma unroll
        for (int ks = 0; ks < KS; ++ks) {
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                const long long row = own[mt][u & 1];
                const long long at = (row * DP + ks * 16 + 2 * t + (u >> 1) * 8) / 2;
                const unsigned* h2 = reinterpret_cast<const unsigned*>(hi);
                const unsigned* l2 = reinterpret_cast<const unsigned*>(lo);
                ah[mt][ks][u] = row >= 0 ? h2[at] ^ 0x80008000u : 0u;
                al[mt][ks][u] = row >= 0 ? l2[at] ^ 0x80008000u : 0u;
            }
        }
    }

    // References in steps of FUSED_CHUNK, the chunks of the block's runs in order. A ring of
    // FUSED_STAGES buffers filled with cp.async, two steps ahead: one cursor fetches, one
    // follows it for the rows of the step being computed.
    const int2* run_first = runs + run_off[block0 + blockIdx.x];
    const int2* run_last = runs + run_off[block0 + blockIdx.x + 1];
    int steps = 0;
    for (const int2* r = run_first; r < run_last; ++r) steps += r->y;
    RunCursor fetching(run_first, run_last), computing(run_first, run_last);
    constexpr int PER_ROW = DP / 8, PIECES = FUSED_CHUNK * PER_ROW;  // 16-byte pieces
    auto fetch = [&](int j) {  // step j of the sweep into buffer j % FUSED_STAGES
        if (j < steps) {
            unsigned short* dst = stage + (j % FUSED_STAGES) * 2 * FUSED_CHUNK * ST;
            const long long r0 = (long long)fetching.next() * FUSED_CHUNK;
            for (int e = tid; e < 2 * PIECES; e += FUSED_WARPS * 32) {
                const int part = e >= PIECES, pe = e - part * PIECES;
                const int r = pe / PER_ROW, c8 = pe - r * PER_ROW;
                cp_async16(dst + (part * FUSED_CHUNK + r) * ST + c8 * 8,
                           (part ? lo : hi) + r0 * DP + pe * 8);
            }
            if (tid < FUSED_CHUNK / 4)
                cp_async16(sqs + (j % FUSED_STAGES) * FUSED_CHUNK + 4 * tid, sq + r0 + 4 * tid);
        }
        cp_async_commit();  // an empty group past the end keeps the counting uniform
    };
    fetch(0);
    fetch(1);
    cp_async_wait<1>();
    __syncthreads();

    float sink = 0.f;
    for (int j = 0; j < steps; ++j) {
        fetch(j + 2);
        const bool more = j + 1 < steps;
        const int buf = j % FUSED_STAGES;
        const unsigned short* sb = stage + buf * 2 * FUSED_CHUNK * ST;
        const float* sqb = sqs + buf * FUSED_CHUNK;
        const long long r0 = (long long)computing.next() * FUSED_CHUNK;

        // A list that is not full yet (K-th best +inf) takes every key: its accumulators
        // start from ||r||^2 alone and its bound is +inf; empty slots have bound -inf.
        float tq[2][2], lim[2][2];
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float th = thr[wq + mt * 16 + h * 8 + g];
                const bool finite = fabsf(th) < KNN_INF;
                tq[mt][h] = finite ? th : 0.f;
                lim[mt][h] = finite ? 0.f : th;
            }
        float acc[2][4][4];
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
            const float2 a2 = *reinterpret_cast<const float2*>(sqb + nt * 8 + 2 * t);
#pragma unroll
            for (int mt = 0; mt < 2; ++mt)
#pragma unroll
                for (int u = 0; u < 4; ++u)
                    acc[mt][nt][u] = ((u & 1 ? a2.y : a2.x) - tq[mt][u >> 1]) * half_sc2;
        }
        const unsigned base_addr = (unsigned)__cvta_generic_to_shared(sb);
#pragma unroll
        for (int ks = 0; ks < KS; ++ks) {
            // Matrix m = lane / 8 of an ldmatrix: n-tile 2 np + m / 2, k half m % 2.
            const int m = lane >> 3;
            unsigned bh[2][4], bl[2][4];
#pragma unroll
            for (int np = 0; np < 2; ++np) {
                const int row = (np * 2 + (m >> 1)) * 8 + (lane & 7);
                const unsigned at = base_addr + 2 * (row * ST + ks * 16 + (m & 1) * 8);
                ldmatrix_x4(bh[np], at);
                ldmatrix_x4(bl[np], at + 2 * FUSED_CHUNK * ST);
            }
            // Small terms first; eight independent accumulators between dependent mma.
#pragma unroll
            for (int term = 0; term < 3; ++term)
#pragma unroll
                for (int np = 0; np < 2; ++np)
#pragma unroll
                    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
                        for (int half = 0; half < 2; ++half) {
                            const unsigned(&aa)[4] = term == 1 ? al[mt][ks] : ah[mt][ks];
                            const unsigned* bb = term == 0 ? bl[np] : bh[np];
                            mma_f16(acc[mt][2 * np + half], aa, bb[2 * half], bb[2 * half + 1]);
                        }
        }

#ifdef FUSED_MMA_ONLY  // timing split (src/knn/gpu/fused.rs tests): products alone
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
            for (int nt = 0; nt < 4; ++nt)
#pragma unroll
                for (int u = 0; u < 4; ++u) sink += acc[mt][nt][u];
        cp_async_wait<1>();
        __syncthreads();
        continue;
#endif
        // Which of the lane's 32 outputs are below the bound: a sign-bit OR over each (mt,
        // nt) group of four says where to look, and only groups with a negative (or an open
        // list) are examined. Key = output 2 / sc^2 + T_q, into the query's queue (never the
        // query's own row). Most steps of most lanes end at the eight ORs.
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
            const bool look = lim[mt][0] > 0.f || lim[mt][1] > 0.f;  // a list not yet full
#pragma unroll
            for (int nt = 0; nt < 4; ++nt) {
                const unsigned any = __float_as_uint(acc[mt][nt][0]) | __float_as_uint(acc[mt][nt][1]) |
                                     __float_as_uint(acc[mt][nt][2]) | __float_as_uint(acc[mt][nt][3]);
                if ((any >> 31) || look) {
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        const int ql = wq + mt * 16 + (u >> 1) * 8 + g;
                        const long long r = r0 + nt * 8 + 2 * t + (u & 1);
                        if (acc[mt][nt][u] < lim[mt][u >> 1] && r != own[mt][u >> 1]) {
                            const int s = atomicAdd(&qcount[ql], 1);
                            queue_d[ql * FUSED_QUEUE + s] =
                                acc[mt][nt][u] * inv_half_sc2 + tq[mt][u >> 1];
                            queue_i[ql * FUSED_QUEUE + s] = (int)r;
                        }
                    }
                }
            }
        }
        __syncwarp();

        // Merge the queues that could overflow at the next step (all of them at the end).
        unsigned due = __ballot_sync(FULL_MASK, qcount[wq + lane] > (more ? FUSED_MERGE : 0));
        while (due) {
            const int ql = wq + __ffs(due) - 1;
            due &= due - 1;
            merge_queue(list_d + ql * K, list_i + ql * K, queue_d + ql * FUSED_QUEUE,
                        queue_i + ql * FUSED_QUEUE, qcount[ql], kr, thr + ql, scratch, lane);
            if (lane == 0) qcount[ql] = 0;
            __syncwarp();
        }

        cp_async_wait<1>();  // step j + 1 has landed
        __syncthreads();
    }
    if (sink == 1.2345f) list_d[0] = sink;  // keeps FUSED_MMA_ONLY's products alive
}

// The key's rows xc (n x d; the centred points for the squared distance) times sc (a power
// of two) split into FP16 heads and tails, padded with zero columns up to dp and zero rows
// up to n_pad; sq = their terms norms (squared norms, or c), +inf past n (never selected).
extern "C" __global__ void knn_fused_split(const float* __restrict__ xc,
                                           const float* __restrict__ norms, long long n, int d,
                                           int dp, long long n_pad, float sc,
                                           unsigned short* __restrict__ hi,
                                           unsigned short* __restrict__ lo,
                                           float* __restrict__ sq) {
    GRID_STRIDE(e, n_pad * dp) {
        const long long i = e / dp;
        const int c = (int)(e - i * dp);
        const float v = i < n && c < d ? xc[i * d + c] * sc : 0.f;
        const unsigned short h = to_half(v);
        hi[e] = h;
        lo[e] = to_half(v - from_half(h));
        if (c == 0) sq[i] = i < n ? norms[i] : KNN_INF;
    }
}

#define FUSED_INSTANCE(KS)                                                                   \
    extern "C" __global__ void __launch_bounds__(FUSED_WARPS * 32)                          \
        knn_fused_##KS(const unsigned short* hi, const unsigned short* lo, float half_sc2,    \
                       float inv_half_sc2, const float* sq, const int* qrows, const int2* runs, \
                       const int* run_off, int kr, float* state_d, int* state_i,              \
                       long long slot0, int block0, FusedLayout layout) {                     \
        fused_sweep<KS>(hi, lo, half_sc2, inv_half_sc2, sq, qrows, runs, run_off, kr, state_d, \
                        state_i, slot0, block0, layout);                                     \
    }
// FUSED_KS (src/knn/gpu/fused.rs, `sweep_variant`) compiles the one sweep a run uses: each
// instance is a large unrolled kernel, and compiling all of them took most of a first run's
// wait for NVRTC. Without it (the declarations' check, the benchmarks) all are compiled.
#define FUSED_INSTANCE_OF(KS) FUSED_INSTANCE(KS)
#ifdef FUSED_KS
FUSED_INSTANCE_OF(FUSED_KS)
#else
FUSED_INSTANCE(1)
FUSED_INSTANCE(2)
FUSED_INSTANCE(3)
FUSED_INSTANCE(4)
#endif
