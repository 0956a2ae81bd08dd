// Phi2Force: F_rep,i^k = ((y_i^k - c^k) phi_0,i - phi_k,i) / Z (DESIGN §2.2; the charges
// were taken relative to the grid centre c, which leaves the forces unchanged).
//
// Argument contract (declared in src/gpu/kernels/phi2force.rs): y, force n*D floats; pot n*(2+D) reals from
// g2s_gather; z the exact sum (common.cuh) holding Z.

template <int D>
__device__ void forces(int n, float c0, float c1, float c2, const float* __restrict__ y,
                       const real* __restrict__ pot, const unsigned long long* __restrict__ z,
                       float* __restrict__ force) {
    const int C = 2 + D;
    real inv_z = (real)(1.0 / exact_value(z));
    float c[3] = {c0, c1, c2};
    GRID_STRIDE(i, n) {
        real phi0 = pot[i * C + 1];
#pragma unroll
        for (int a = 0; a < D; ++a)
            force[i * D + a] =
                (float)((((real)y[i * D + a] - (real)c[a]) * phi0 - pot[i * C + 2 + a]) * inv_z);
    }
}

extern "C" __global__ void phi2force_1d(int n, float c0, float c1, float c2, const float* y, const real* pot, const unsigned long long* z, float* force) { forces<1>(n, c0, c1, c2, y, pot, z, force); }
extern "C" __global__ void phi2force_2d(int n, float c0, float c1, float c2, const float* y, const real* pot, const unsigned long long* z, float* force) { forces<2>(n, c0, c1, c2, y, pot, z, force); }
extern "C" __global__ void phi2force_3d(int n, float c0, float c1, float c2, const float* y, const real* pot, const unsigned long long* z, float* force) { forces<3>(n, c0, c1, c2, y, pot, z, force); }
