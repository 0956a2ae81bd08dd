// One gradient-descent step on the device (DESIGN §1.7), fused: gradient
// g = alpha * F_attr - F_rep, gains (delta-bar-delta, floor min_gain), momentum update,
// each point's update shortened to max_step where longer (openTSNE's max_step_norm;
// INFINITY: no limit), y += update, and the column sums of the new y for re-centring.
//
// With boost > 0 the gradient is first g + boost * the mean gradient of the point's coarse
// cell (src/optim/coarse.rs: the coarse step), from the cells' sums coarse_sums made.
//
// Argument contract (declared in src/gpu/kernels/optim.rs): attr, rep, y, update, gains: n*D
// floats; sums: D exact sums (common.cuh: D * EXACT_WORDS words, zeroed before the launch,
// so that the mean does not depend on the order the blocks add in); records: cells^D records
// of D + 1 words (the fixed-point sums of the steps eta * g, then the count; read only when
// boost > 0); blockDim.x a multiple of 32.

// The coarse cell of point yi: cells per axis of side 1 / inv_cell centred on the origin,
// points beyond in the edge cells; in float as src/optim/coarse.rs's cell_of, whose mirror
// this is (NaN goes to cell 0 on each axis there as here).
template <int D>
__device__ inline int boost_cell(const float* __restrict__ yi, float inv_cell, int cells) {
    int c = 0, stride = 1;
#pragma unroll
    for (int k = 0; k < D; ++k) {
        float a = floorf(yi[k] * inv_cell) + (float)(cells / 2);
        c += (int)fminf(fmaxf(a, 0.f), (float)(cells - 1)) * stride;
        stride *= cells;
    }
    return c;
}

// One step coordinate eta * g in the cells' fixed point (coarse.rs: fixed, UNIT, MAX_STEP).
#define BOOST_UNIT (1.0 / 4294967296.0)
#define BOOST_MAX_STEP 1024.0
__device__ inline long long boost_term(double step) {
    return llrint(fmin(fmax(step, -BOOST_MAX_STEP), BOOST_MAX_STEP) / BOOST_UNIT);
}

// The steps eta * g of the points summed per coarse cell in fixed point, with the points per
// cell (records zeroed before the launch); the lanes of a warp that share a cell add their
// terms first, and one lane adds them with one atomic a word.
template <int D>
__device__ void coarse_sums(int n, float alpha, float eta, float inv_cell, int cells,
                            const float* __restrict__ attr, const float* __restrict__ rep,
                            const float* __restrict__ y, long long* records) {
    const int lane = threadIdx.x & 31;
    long long warp0 = (blockIdx.x * (long long)blockDim.x + threadIdx.x) - lane;
    for (long long base = warp0; base < n; base += (long long)gridDim.x * blockDim.x) {
        long long i = base + lane;
        int key = i < n ? boost_cell<D>(y + i * D, inv_cell, cells) : -1;
        long long v[D];
#pragma unroll
        for (int k = 0; k < D; ++k) {
            long long t = i * D + k;
            v[k] = i < n ? boost_term((double)eta * (double)(alpha * attr[t] - rep[t])) : 0;
        }
        unsigned peers = __match_any_sync(FULL_MASK, key);
        long long acc[D];
#pragma unroll
        for (int k = 0; k < D; ++k) acc[k] = 0;
        for (int src = 0; src < 32; ++src) {
#pragma unroll
            for (int k = 0; k < D; ++k) {
                long long other = __shfl_sync(FULL_MASK, v[k], src);
                if (peers >> src & 1) acc[k] += other;
            }
        }
        if (key >= 0 && lane == __ffs(peers) - 1) {
            unsigned long long* at =
                reinterpret_cast<unsigned long long*>(records + (long long)key * (D + 1));
#pragma unroll
            for (int k = 0; k < D; ++k) atomicAdd(at + k, (unsigned long long)acc[k]);
            atomicAdd(at + D, (unsigned long long)__popc(peers));
        }
    }
}

template <int D>
__device__ void step(int n, float alpha, float momentum, float eta, float min_gain,
                     float max_step, const float* __restrict__ attr, const float* __restrict__ rep,
                     float* __restrict__ y, float* __restrict__ update,
                     float* __restrict__ gains, unsigned long long* sums, float boost,
                     float inv_cell, int cells, const long long* __restrict__ records) {
    ExactSum local[D];
#pragma unroll
    for (int k = 0; k < D; ++k) local[k] = exact_zero();
    GRID_STRIDE(i, n) {
        float u[D];
        float norm2 = 0.f;
        const long long* cell = nullptr;
        if (boost > 0.f) cell = records + (long long)boost_cell<D>(y + i * D, inv_cell, cells) * (D + 1);
#pragma unroll
        for (int k = 0; k < D; ++k) {
            long long t = i * D + k;
            float g = alpha * attr[t] - rep[t];
            // src/optim/coarse.rs's mean_of, in its order of operations.
            if (cell) g += boost * (float)((double)cell[k] * BOOST_UNIT / (double)cell[D] / (double)eta);
            float last = update[t];
            // The last update went against this gradient: the descent goes on.
            bool continuing = (g > 0.f) != (last > 0.f);
            float gain = fmaxf(continuing ? gains[t] + 0.2f : gains[t] * 0.8f, min_gain);
            gains[t] = gain;
            u[k] = momentum * last - eta * gain * g;
            norm2 += u[k] * u[k];
        }
        float norm = sqrtf(norm2);
        float scale = norm > max_step ? max_step / norm : 1.f;
#pragma unroll
        for (int k = 0; k < D; ++k) {
            long long t = i * D + k;
            float uk = u[k] * scale;
            update[t] = uk;
            float yn = y[t] + uk;
            y[t] = yn;
            exact_add(local[k], (double)yn);
        }
    }
#pragma unroll
    for (int k = 0; k < D; ++k) exact_block_add(local[k], sums + k * EXACT_WORDS);
}

// Subtracts the mean (sum k) / total from coordinate k of the n rows (total: the points of
// every GPU's block when the sums were added up over several, n otherwise).
template <int D>
__device__ void recentre(int n, long long total, float* __restrict__ y,
                         const unsigned long long* __restrict__ sums) {
    float mean[D];
#pragma unroll
    for (int k = 0; k < D; ++k)
        mean[k] = (float)(exact_value(sums + k * EXACT_WORDS) / (double)total);
    GRID_STRIDE(i, n) {
#pragma unroll
        for (int k = 0; k < D; ++k) y[i * D + k] -= mean[k];
    }
}

#define OPTIM_INSTANCES(D)                                                                    \
    extern "C" __global__ void optim_step_##D##d(                                             \
        int n, float alpha, float momentum, float eta, float min_gain, float max_step,        \
        const float* attr, const float* rep, float* y, float* update, float* gains,           \
        unsigned long long* sums, float boost, float inv_cell, int cells,                     \
        const long long* records) {                                                           \
        step<D>(n, alpha, momentum, eta, min_gain, max_step, attr, rep, y, update, gains,     \
                sums, boost, inv_cell, cells, records);                                       \
    }                                                                                         \
    extern "C" __global__ void optim_coarse_sums_##D##d(                                      \
        int n, float alpha, float eta, float inv_cell, int cells, const float* attr,          \
        const float* rep, const float* y, long long* records) {                               \
        coarse_sums<D>(n, alpha, eta, inv_cell, cells, attr, rep, y, records);                \
    }                                                                                         \
    extern "C" __global__ void optim_recentre_##D##d(int n, long long total, float* y,        \
                                                      const unsigned long long* sums) {       \
        recentre<D>(n, total, y, sums);                                                       \
    }
OPTIM_INSTANCES(1)
OPTIM_INSTANCES(2)
OPTIM_INSTANCES(3)
