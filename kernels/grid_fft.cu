// The G2G's 2-D transforms without cuFFT: batched complex FFTs of square p x p grids whose
// side p is a product of 2, 3, 5 and 7 (the device's ladder of grid sizes, 126 ... 2016).
// cuFFT compiles kernels for every new grid shape the first time a machine plans it (30-180
// ms a shape on an H100, src/gpu/fft.rs), and a 2-D run passes through 6-8 shapes: most of a
// fresh machine's first run beyond a warm one. These kernels ship compiled with the others.
//
// A transform is two passes over the grids, each a launch of grid_fft_lines: the rows (in ->
// out), then the columns (out, in place). A block takes `lines` lines of one pass into shared
// memory and transforms them by the Stockham autosort (Govindaraju et al. 2008, "High
// performance discrete Fourier transforms on graphics processors"), one radix of p's factors
// a stage (4, then 2, 3, 5, 7), ping-ponging between two buffers; the twiddles are the p-th
// roots of unity, made once per block into shared memory. Columns are loaded `lines` at a
// time, row segment by row segment, so that the loads of a pass are whole sectors.
//
// Unnormalised, as cuFFT: `sign` = -1 forward (e^{-2 pi i jk / p}), +1 inverse.
//
// Argument contract (declared in src/gpu/kernels/grid_fft.rs): complex_t is float2, or
// double2 with -DREAL_F64 (repulse.cuh); `in` and `out` hold `batch` grids of p * p values,
// row-major (flat index = row * p + column), grid g at g * p * p; `columns` 0 is the row pass
// (in -> out; in may be out), 1 the column pass (out read and written, `in` unused); blocks:
// for rows ceil(batch * p / lines), for columns batch * ceil(p / lines); dynamic shared
// memory (2 * lines + 1) * p complex_t; p <= 4096 and p has no prime factor above 7.

__device__ inline complex_t fft_mul(complex_t a, complex_t b) {
    return make_complex(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

__device__ inline complex_t fft_add(complex_t a, complex_t b) { return make_complex(a.x + b.x, a.y + b.y); }

__device__ inline complex_t fft_sub(complex_t a, complex_t b) { return make_complex(a.x - b.x, a.y - b.y); }

// z times dir * i (the radix-4 butterfly's quarter turn, w = e^{dir i pi / 2}).
__device__ inline complex_t fft_quarter(complex_t z, real dir) { return make_complex(-dir * z.y, dir * z.x); }

// cos and sin of 2 pi m / R, for the odd radices (R = 3, 5, 7; 0 <= m < R), from constants.
__device__ inline void fft_root(int R, int m, real* c, real* s) {
    const bool lower = 2 * m > R;
    const int q = lower ? R - m : m;
    double cc = 1.0, ss = 0.0;
    if (R == 3 && q == 1) cc = -0.5, ss = 0.86602540378443864676;
    if (R == 5 && q == 1) cc = 0.30901699437494742410, ss = 0.95105651629515357212;
    if (R == 5 && q == 2) cc = -0.80901699437494742410, ss = 0.58778525229247312917;
    if (R == 7 && q == 1) cc = 0.62348980185873353053, ss = 0.78183148246802980871;
    if (R == 7 && q == 2) cc = -0.22252093395631440429, ss = 0.97492791218182360702;
    if (R == 7 && q == 3) cc = -0.90096886790241912624, ss = 0.43388373911755812048;
    *c = (real)cc;
    *s = (real)(lower ? -ss : ss);
}

// The R-point DFT of v in place, sign dir.
template <int R>
__device__ inline void fft_dft(complex_t v[R], real dir) {
    if (R == 2) {
        const complex_t a = v[0], b = v[1];
        v[0] = fft_add(a, b);
        v[1] = fft_sub(a, b);
    } else if (R == 4) {
        const complex_t s02 = fft_add(v[0], v[2]), d02 = fft_sub(v[0], v[2]);
        const complex_t s13 = fft_add(v[1], v[3]), d13 = fft_quarter(fft_sub(v[1], v[3]), dir);
        v[0] = fft_add(s02, s13);
        v[1] = fft_add(d02, d13);
        v[2] = fft_sub(s02, s13);
        v[3] = fft_sub(d02, d13);
    } else {
        complex_t out[R];
#pragma unroll
        for (int q = 0; q < R; ++q) {
            complex_t acc = v[0];
#pragma unroll
            for (int r = 1; r < R; ++r) {
                real c, s;
                fft_root(R, (r * q) % R, &c, &s);
                acc = fft_add(acc, fft_mul(v[r], make_complex(c, dir * s)));
            }
            out[q] = acc;
        }
#pragma unroll
        for (int q = 0; q < R; ++q) v[q] = out[q];
    }
}

// One radix-R stage of the Stockham transform of the block's `lines` lines, from a to b:
// butterfly j of a line reads a[j + r p / R], twists by w_{Ns R}^{k r} (k = j mod Ns; an
// index k r p / (Ns R) < p into the roots), and writes b[(j / Ns) Ns R + k + r Ns].
template <int R>
__device__ inline void fft_stage(const complex_t* a, complex_t* b, const complex_t* roots,
                                 int p, int lines, int Ns, real dir) {
    const int m = p / R, step = m / Ns;
    for (int t = threadIdx.x; t < lines * m; t += blockDim.x) {
        const int line = t / m, j = t - line * m;
        const complex_t* src = a + line * p;
        complex_t* dst = b + line * p;
        const int k = j % Ns;
        complex_t v[R];
#pragma unroll
        for (int r = 0; r < R; ++r) v[r] = src[j + r * m];
#pragma unroll
        for (int r = 1; r < R; ++r) {
            complex_t w = roots[k * r * step];
            w.y *= dir;
            v[r] = fft_mul(v[r], w);
        }
        fft_dft<R>(v, dir);
        const int d = (j / Ns) * Ns * R + k;
#pragma unroll
        for (int r = 0; r < R; ++r) dst[d + r * Ns] = v[r];
    }
}

extern "C" __global__ void grid_fft_lines(int p, int batch, int lines, int columns, int sign,
                                          const complex_t* in, complex_t* out) {
    const real dir = (real)sign;
    extern __shared__ __align__(16) unsigned char grid_fft_shared[];
    complex_t* a = reinterpret_cast<complex_t*>(grid_fft_shared);
    complex_t* b = a + lines * p;
    complex_t* roots = b + lines * p;
    // roots[m] = (cos 2 pi m / p, sin 2 pi m / p), which a stage conjugates for dir = -1; in
    // double, then rounded: float's rounding of 2m / p alone would double the error.
    for (int m = threadIdx.x; m < p; m += blockDim.x) {
        double s, c;
        sincospi((double)(2 * m) / (double)p, &s, &c);
        roots[m] = make_complex((real)c, (real)s);
    }
    // The block's lines: rows first_row .. + lines of all batch * p rows, or columns
    // first_col .. + lines of grid g. Lines past the end are transformed as zeros, not stored.
    const long long pp = (long long)p * p;
    const int groups = (p + lines - 1) / lines;
    const long long first_row = (long long)blockIdx.x * lines;
    const int g = blockIdx.x / groups, first_col = (blockIdx.x - g * groups) * lines;
    const complex_t* src = columns ? out : in;
    for (int t = threadIdx.x; t < lines * p; t += blockDim.x) {
        int line, e;
        long long at;
        bool inside;
        if (columns) {
            e = t / lines, line = t - e * lines;
            inside = first_col + line < p;
            at = g * pp + (long long)e * p + first_col + line;
        } else {
            line = t / p, e = t - line * p;
            inside = first_row + line < (long long)batch * p;
            at = (first_row + line) * p + e;
        }
        a[line * p + e] = inside ? src[at] : make_complex(0, 0);
    }
    __syncthreads();
    int Ns = 1, rest = p;
    while (rest > 1) {
        if (rest % 4 == 0) {
            fft_stage<4>(a, b, roots, p, lines, Ns, dir), Ns *= 4, rest /= 4;
        } else if (rest % 2 == 0) {
            fft_stage<2>(a, b, roots, p, lines, Ns, dir), Ns *= 2, rest /= 2;
        } else if (rest % 3 == 0) {
            fft_stage<3>(a, b, roots, p, lines, Ns, dir), Ns *= 3, rest /= 3;
        } else if (rest % 5 == 0) {
            fft_stage<5>(a, b, roots, p, lines, Ns, dir), Ns *= 5, rest /= 5;
        } else {
            fft_stage<7>(a, b, roots, p, lines, Ns, dir), Ns *= 7, rest /= 7;
        }
        __syncthreads();
        complex_t* swap = a;
        a = b;
        b = swap;
    }
    for (int t = threadIdx.x; t < lines * p; t += blockDim.x) {
        if (columns) {
            const int e = t / lines, line = t - e * lines;
            if (first_col + line < p) out[g * pp + (long long)e * p + first_col + line] = a[line * p + e];
        } else {
            const int line = t / p, e = t - line * p;
            if (first_row + line < (long long)batch * p) out[(first_row + line) * p + e] = a[line * p + e];
        }
    }
}
