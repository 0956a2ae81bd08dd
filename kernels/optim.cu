// One gradient-descent step on the device (DESIGN §1.7), fused: gradient
// g = alpha * F_attr - F_rep, gains (delta-bar-delta, floor min_gain), momentum update,
// each point's update shortened to max_step where longer (openTSNE's max_step_norm;
// INFINITY: no limit), y += update, and the column sums of the new y for re-centring.
//
// Argument contract (declared in src/gpu/kernels/optim.rs): attr, rep, y, update, gains: n*D
// floats; sums: D exact sums (common.cuh: D * EXACT_WORDS words, zeroed before the launch,
// so that the mean does not depend on the order the blocks add in); blockDim.x a multiple
// of 32.

template <int D>
__device__ void step(int n, float alpha, float momentum, float eta, float min_gain,
                     float max_step, const float* __restrict__ attr, const float* __restrict__ rep,
                     float* __restrict__ y, float* __restrict__ update,
                     float* __restrict__ gains, unsigned long long* sums) {
    ExactSum local[D];
#pragma unroll
    for (int k = 0; k < D; ++k) local[k] = exact_zero();
    GRID_STRIDE(i, n) {
        float u[D];
        float norm2 = 0.f;
#pragma unroll
        for (int k = 0; k < D; ++k) {
            long long t = i * D + k;
            float g = alpha * attr[t] - rep[t];
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
        unsigned long long* sums) {                                                           \
        step<D>(n, alpha, momentum, eta, min_gain, max_step, attr, rep, y, update, gains,     \
                sums);                                                                        \
    }                                                                                         \
    extern "C" __global__ void optim_recentre_##D##d(int n, long long total, float* y,        \
                                                      const unsigned long long* sums) {       \
        recentre<D>(n, total, y, sums);                                                       \
    }
OPTIM_INSTANCES(1)
OPTIM_INSTANCES(2)
OPTIM_INSTANCES(3)
