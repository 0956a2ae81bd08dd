// G2G: Phi_m = sum_n K(h |m - n|) V_n on a p^D grid by the zero-padding-free method
// (Pitsianis et al. 2019, SG-t-SNE-Pi; DESIGN §2.2): for each of the 2^D parity patterns b
// (bit a set = axis a odd), with mu_b(m) = prod_{a odd} exp(-i pi m_a / p),
//     Phi += (1/2^D) Re( conj(mu_b) . IFFT( FFT(k_b) . FFT(mu_b . V) ) ),
// where k_b is the (2p)^D circulant embedding of K folded onto [0,p)^D with sign -1 for each
// odd axis on which the wrapped image was taken, times mu_b. Flat index m = sum_a m_a p^a.
// The charges come node-major (repulse.cuh: charge_stride), as S2G adds them.
// All 2^D patterns go through each step at once (one launch, one batched FFT), so a call
// costs five launches however many patterns there are: the grids are small (10^5 nodes at
// 1.3M points) and per-pattern launches left the device mostly waiting between them. A run
// over several GPUs shares the patterns out: each kernel takes the `count` patterns from
// `first`, its complex arrays hold those alone, and `phi` is their part of the sum (the
// GPUs' parts are then added).
//
// Real grids travel through the transforms two to a complex grid (the two-for-one FFT of
// real data): the convolution is linear, and each pattern's demodulated output of a real
// grid is real (its frequencies of parity b are closed under negation, where the spectrum
// of real data is Hermitian), so for a complex grid u + i v the real part of the output is
// u's and the imaginary part v's. Per pattern the PACKED = 1 + (D + 1) / 2 grids are the
// charge alone, whose two outputs share one grid ((G1 + i G2) X0 -> psi + i phi_0), then
// the coordinate channels two by two (y^1 + i y^2, y^3 -> phi_1 + i phi_2, phi_3): in 2-D 2
// forward and 2 inverse transforms per pattern instead of 3 and 4. Pairs are of one
// magnitude (two coordinates; psi and phi_0, both of the charge), so neither's rounding
// swamps the other's.
//
// Argument contract (declared in src/gpu/kernels/g2g.rs): len = p^D; P = 2^D patterns; complex arrays are
// complex_t (re, im; float2, or double2 with --precision f64: repulse.cuh), pattern-major:
// packed grid q of the i-th pattern taken (b = first + i) at (i * PACKED + q) * len. `in`
// charge_stride(D)*len real, node-major (node m's charge 1, y^1..y^D at m*charge_stride(D));
// `x` count*PACKED*len complex; spectra count*2*len complex (per pattern G1 then G2); `yhat`
// count*PACKED*len complex; `phi` (2 + D)*len real, node-major (node m's psi, phi_0,
// phi_1..phi_D at m*(2 + D)); len < 2^31.

// Complex grids per pattern for D dimensions (see above).
__device__ inline int packed_grids(int D) { return 1 + (D + 1) / 2; }

// Per-axis node indices of flat index m, in 32 bits: a grid holds at most 2^22 nodes
// (src/repulse/grid.rs, MAX_TOTAL_NODES), and a 64-bit division is a long software routine
// on the GPU (the modulation and demodulation were bound by their arithmetic, not memory).
__device__ inline void node_of(long long m, int p, int D, int j[3]) {
    unsigned rest = (unsigned)m;
    j[0] = j[1] = j[2] = 0;
    for (int a = 0; a < D; ++a) {
        j[a] = (int)(rest % (unsigned)p);
        rest /= (unsigned)p;
    }
}

// Sum of the node's indices on the odd axes of `pattern`, for the kernels' modulation.
__device__ inline int odd_sum(const int j[3], int D, int pattern) {
    int s = 0;
    for (int a = 0; a < D; ++a)
        if (pattern >> a & 1) s += j[a];
    return s;
}

// mu_b of node j, e^{sign i pi s / p} with s the sum of its indices on b's odd axes: one
// sincospi of the sum (a product of per-axis factors rounds worse, and a far pair's Z, a
// small difference of potentials near 1, showed it), none for the even pattern.
__device__ inline complex_t pattern_phase(const int j[3], int p, int D, int pattern, real sign) {
    if (pattern == 0) return make_complex(1, 0);
    real s, c;
    sincospi(sign * (real)odd_sum(j, D, pattern) / p, &s, &c);
    return make_complex(c, s);
}

// Node m's charges (node-major, charge_stride(D) reals) into v: one 8- or 16-byte load
// with float grids.
__device__ inline void load_charges(const real* __restrict__ in, long long m, int D, real v[4]) {
    const real* at = in + m * charge_stride(D);
#ifndef REAL_F64
    if (D == 1) {
        const float2 c = __ldg(reinterpret_cast<const float2*>(at));
        v[0] = c.x, v[1] = c.y, v[2] = v[3] = 0;
    } else {
        const float4 c = __ldg(reinterpret_cast<const float4*>(at));
        v[0] = c.x, v[1] = c.y, v[2] = c.z, v[3] = c.w;
    }
#else
    for (int c = 0; c < 4; ++c) v[c] = c < charge_stride(D) ? at[c] : 0;
#endif
}

// x_{b,q} = mu_b . (in_re + i in_im) for every pattern b taken and packed grid q.
extern "C" __global__ void g2g_modulate(long long len, int p, int D, int first, int count,
                                        const real* __restrict__ in,
                                        complex_t* __restrict__ x) {
    const int packed = packed_grids(D);
    GRID_STRIDE(m, len) {
        int j[3];
        node_of(m, p, D, j);
        real re[3], im[3], v[4];
        load_charges(in, m, D, v);
        re[0] = v[0];
        im[0] = 0;
        for (int q = 1; q < packed; ++q) {
            re[q] = v[2 * q - 1];
            im[q] = 2 * q <= D ? v[2 * q] : (real)0;
        }
        for (int i = 0; i < count; ++i) {
            const complex_t mu = pattern_phase(j, p, D, first + i, (real)-1);
            for (int q = 0; q < packed; ++q)
                x[(i * packed + q) * len + m] = make_complex(re[q] * mu.x - im[q] * mu.y,
                                                             re[q] * mu.y + im[q] * mu.x);
        }
    }
}

// k_b for G1 = (1+d^2/dof)^-dof (slot 2i) and G2 = G1^(1+1/dof) (slot 2i + 1; dof 1:
// 1/(1+d^2) and its square) of every pattern b = first + i taken, before their forward FFT.
// With t0 > 0 (a near field, dof 1: src/repulse/near/mod.rs) the long parts instead: less
// the short parts e^{-t0 u}/u and e^{-t0 u}(1 + t0 u)/u^2, u = 1 + d^2.
extern "C" __global__ void g2g_kernel(long long len, int p, int D, int first, int count,
                                      float h, double dof, double t0,
                                      complex_t* __restrict__ k) {
    GRID_STRIDE(m, len) {
        int j[3];
        node_of(m, p, D, j);
        for (int i = 0; i < count; ++i) {
            const int pattern = first + i;
            double g1 = 0.0, g2 = 0.0;
            // Images e in {0,1}^D: axis a at distance j_a (e_a = 0) or p - j_a (e_a = 1, only
            // for j_a != 0: the embedding's entry at index p is zero).
            for (int e = 0; e < (1 << D); ++e) {
                double d2 = 0.0;
                int sign = 1;
                bool zero = false;
                for (int a = 0; a < D; ++a) {
                    int da = j[a];
                    if (e >> a & 1) {
                        if (j[a] == 0) zero = true;
                        da = p - j[a];
                        if (pattern >> a & 1) sign = -sign;
                    }
                    d2 += (double)da * da;
                }
                if (zero) continue;
                double w1, w2;
                student_t(d2 * (double)h * (double)h, dof, &w1, &w2);
                if (t0 > 0.0) {
                    const double u = 1.0 + d2 * (double)h * (double)h, x = t0 * u;
                    const double e = exp(-x) / u;
                    w1 -= e;
                    w2 -= e * (1.0 + x) / u;
                }
                g1 += sign * w1;
                g2 += sign * w2;
            }
            double s, c;
            sincospi(-(double)odd_sum(j, D, pattern) / p, &s, &c);
            k[2 * i * len + m] = make_complex((real)(g1 * c), (real)(g1 * s));
            k[(2 * i + 1) * len + m] = make_complex((real)(g2 * c), (real)(g2 * s));
        }
    }
}

__device__ inline complex_t cmul(complex_t a, complex_t b) {
    return make_complex(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// yhat_b: (K1 + i K2) X0 (psi + i phi_0), then K2 times each coordinate pair, for every
// pattern b taken; scaled by 1/len for the inverse FFT.
extern "C" __global__ void g2g_multiply(long long len, int D, int count,
                                        const complex_t* __restrict__ xhat,
                                        const complex_t* __restrict__ spectra,
                                        complex_t* __restrict__ yhat) {
    real scale = (real)1 / (real)len;
    const int packed = packed_grids(D);
    GRID_STRIDE(m, len) {
        for (int b = 0; b < count; ++b) {
            const complex_t* xb = xhat + (long long)b * packed * len;
            complex_t* yb = yhat + (long long)b * packed * len;
            complex_t k1 = spectra[2 * b * len + m], k2 = spectra[(2 * b + 1) * len + m];
            k1.x *= scale; k1.y *= scale; k2.x *= scale; k2.y *= scale;
            yb[m] = cmul(make_complex(k1.x - k2.y, k1.y + k2.x), xb[m]);
            for (int q = 1; q < packed; ++q) yb[q * len + m] = cmul(k2, xb[q * len + m]);
        }
    }
}

// phi = sum_b conj(mu_b) y_b / 2^D over the patterns taken, each packed grid's real and
// imaginary parts to their channels (psi, phi_0; phi_1, phi_2; phi_3), node-major: node m's
// 2 + D channels side by side at m * (2 + D), so that G2S reads a stencil node's potentials
// in one request (in 2-D one 16-byte load) instead of one per channel.
extern "C" __global__ void g2g_demodulate(long long len, int p, int D, int first, int count,
                                          const complex_t* __restrict__ y,
                                          real* __restrict__ phi) {
    real weight = (real)1 / (real)(1 << D);
    const int packed = packed_grids(D), channels = 2 + D;
    GRID_STRIDE(m, len) {
        int j[3];
        node_of(m, p, D, j);
        real acc[6] = {0, 0, 0, 0, 0, 0};
        for (int i = 0; i < count; ++i) {
            const complex_t mu = pattern_phase(j, p, D, first + i, (real)1);
            for (int q = 0; q < packed; ++q) {
                complex_t v = y[(i * packed + q) * len + m];
                acc[2 * q] += v.x * mu.x - v.y * mu.y;
                acc[2 * q + 1] += v.x * mu.y + v.y * mu.x;
            }
        }
        for (int ch = 0; ch < channels; ++ch) phi[m * channels + ch] = acc[ch] * weight;
    }
}
