// The sparse products of the randomised PCA (src/prep/sparse_pca/gpu.rs): out = A x for a
// matrix A of `rows` rows in CSR and a dense x, both products of the method (A X and A^T Y)
// taking this form, the second with the CSR of A^T. Centring is applied on the host.
//
// Argument contract (declared in src/gpu/kernels/sparse_pca.rs): indptr rows + 1 entries
// rising from 0 to nnz; indices (each < the rows of x) and data nnz entries; x row-major
// (rows of x) x l doubles; out rows x l doubles, row-major, overwritten.

// One warp per row (grid-stride over rows); the lanes cover the l columns 32 at a time, each
// summing the row's entries in stored order (the same sums on every run).
extern "C" __global__ void csr_times(const unsigned long long* __restrict__ indptr,
                                     const unsigned int* __restrict__ indices,
                                     const float* __restrict__ data, long long rows,
                                     const double* __restrict__ x, int l,
                                     double* __restrict__ out) {
    int lane = threadIdx.x & 31;
    long long warps = (long long)gridDim.x * (blockDim.x >> 5);
    for (long long i = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5; i < rows;
         i += warps) {
        unsigned long long p0 = indptr[i], p1 = indptr[i + 1];
        for (int c = lane; c - lane < l; c += 32) {
            double acc = 0.0;
            if (c < l) {
                for (unsigned long long p = p0; p < p1; ++p) {
                    acc = fma((double)data[p], x[(long long)indices[p] * l + c], acc);
                }
                out[i * l + c] = acc;
            }
        }
    }
}
