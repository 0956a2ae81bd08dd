// One gradient step of every new point of `sgtsne transform` on the device: the twin of
// Problem::descend in src/transform/place.rs (the module doc there derives the gradient).
// Per new point i, one thread:
//   at   = y_i clamped into the grid's interpolation range (1.5 .. p - 2.5 nodes),
//   f    = the reference's fixed fields (psi, phi_0, phi_1 .. phi_D) interpolated at `at`
//          with the cubic Lagrange stencil of repulse.cuh,
//   g    = 2 [ exaggeration * sum_t p_it e(y_i - y_j) (y_i - y_j)
//              - ((at - centre) phi_0 - phi) / psi ],   e = 1 / (1 + d^2 / dof),
//   g   *= min(1, max_grad_norm / |g|),
//   v_i  = momentum v_i - learning_rate g,  y_i += v_i.
//
// Argument contract (declared in src/gpu/kernels/transform.rs): y m*D floats (updated),
// velocity m*D doubles (updated), nbr and p m*k (reference indices < n, conditional
// probabilities), ref_y n*D floats, fields (2 + D) doubles per grid node, node-major
// (flat index sum_a k_a p^a), g the fields' grid.

template <int D>
__device__ void step(int m, int k, float* __restrict__ y, double* __restrict__ velocity,
                     const int* __restrict__ nbr, const float* __restrict__ p,
                     const float* __restrict__ ref_y, const double* __restrict__ fields,
                     GridGeom g, double dof, double exaggeration, double learning_rate,
                     double momentum, double max_grad_norm) {
    GRID_STRIDE(i, m) {
        float yi[D], at[D];
#pragma unroll
        for (int a = 0; a < D; ++a) {
            yi[a] = y[i * D + a];
            float lo = g.origin[a] + 1.5f * g.h, hi = g.origin[a] + (g.p - 2.5f) * g.h;
            at[a] = fminf(fmaxf(yi[a], lo), hi);
        }
        float w[D][4];
        long long corner = locate<D>(at, g, w);
        double f[2 + D];
#pragma unroll
        for (int c = 0; c < 2 + D; ++c) f[c] = 0.0;
        for (int s = 0; s < (1 << (2 * D)); ++s) {
            float wt;
            long long idx = stencil_node<D>(s, corner, g.p, w, &wt);
#pragma unroll
            for (int c = 0; c < 2 + D; ++c) f[c] += (double)wt * fields[idx * (2 + D) + c];
        }
        double grad[D];
#pragma unroll
        for (int a = 0; a < D; ++a) grad[a] = 0.0;
        for (int t = 0; t < k; ++t) {
            long long e = (long long)i * k + t;
            const float* yj = ref_y + (long long)nbr[e] * D;
            double diff[D], d2 = 0.0;
#pragma unroll
            for (int a = 0; a < D; ++a) {
                diff[a] = (double)yi[a] - (double)yj[a];
                d2 += diff[a] * diff[a];
            }
            double wgt = exaggeration * (double)p[e] / (1.0 + d2 / dof);
#pragma unroll
            for (int a = 0; a < D; ++a) grad[a] += wgt * diff[a];
        }
        double psi = fmax(f[0], 2.2250738585072014e-308), norm2 = 0.0;
#pragma unroll
        for (int a = 0; a < D; ++a) {
            double c = (double)at[a] - (double)g.centre[a];
            grad[a] = 2.0 * (grad[a] - (c * f[1] - f[2 + a]) / psi);
            norm2 += grad[a] * grad[a];
        }
        double norm = sqrt(norm2);
        double scale = norm > max_grad_norm ? max_grad_norm / norm : 1.0;
#pragma unroll
        for (int a = 0; a < D; ++a) {
            double v = momentum * velocity[i * D + a] - learning_rate * scale * grad[a];
            velocity[i * D + a] = v;
            y[i * D + a] = (float)((double)yi[a] + v);
        }
    }
}

#define TRANSFORM_STEP(D)                                                                       \
    extern "C" __global__ void transform_step_##D##d(                                           \
        int m, int k, float* y, double* velocity, const int* nbr, const float* p,              \
        const float* ref_y, const double* fields, GridGeom g, double dof, double exaggeration,  \
        double learning_rate, double momentum, double max_grad_norm) {                         \
        step<D>(m, k, y, velocity, nbr, p, ref_y, fields, g, dof, exaggeration, learning_rate, \
                momentum, max_grad_norm);                                                       \
    }
TRANSFORM_STEP(1)
TRANSFORM_STEP(2)
TRANSFORM_STEP(3)
