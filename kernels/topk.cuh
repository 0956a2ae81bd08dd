// Sorted top-K lists held by a warp in registers, shared by the kNN kernels (knn.cu,
// knn_fused.cu): slot p = 32 r + lane of the list holds (v[r], id[r]), ascending by v,
// +inf / -1 where empty; the K-th best (the list's threshold) sits in lane 31's v[KR - 1].

#define KNN_INF __int_as_float(0x7f800000)  // NVRTC has no math.h

// Inserts (x, xi) into the warp's sorted list: slot p = 32 * r + lane holds (v[r], id[r]).
// Every lane takes part; x is warp-uniform. Entries equal to x stay in front of it.
template <int KR>
__device__ __forceinline__ void topk_insert(float (&v)[KR], int (&id)[KR], float x, int xi,
                                            int lane) {
    float up[KR];
    int upi[KR];
    // up = the entry one slot lower (slot p - 1), -inf below slot 0.
#pragma unroll
    for (int r = 0; r < KR; ++r) {
        float a = __shfl_up_sync(FULL_MASK, v[r], 1);
        int ai = __shfl_up_sync(FULL_MASK, id[r], 1);
        float b = -KNN_INF;
        int bi = -1;
        if (r > 0) {
            b = __shfl_sync(FULL_MASK, v[r - 1], 31);
            bi = __shfl_sync(FULL_MASK, id[r - 1], 31);
        }
        up[r] = lane == 0 ? b : a;
        upi[r] = lane == 0 ? bi : ai;
    }
#pragma unroll
    for (int r = 0; r < KR; ++r) {
        bool keep = v[r] <= x;  // before the insertion point
        bool put = up[r] <= x;  // at it (given !keep)
        float nv = keep ? v[r] : (put ? x : up[r]);
        int ni = keep ? id[r] : (put ? xi : upi[r]);
        v[r] = nv;
        id[r] = ni;
    }
}

// Loads the warp's sorted list (slot 32 r + lane in v[r], id[r]) of query row q.
template <int KR>
__device__ __forceinline__ void load_list(const float* sd, const int* si, float (&v)[KR],
                                          int (&id)[KR], int lane) {
#pragma unroll
    for (int r = 0; r < KR; ++r) {
        v[r] = sd[r * 32 + lane];
        id[r] = si[r * 32 + lane];
    }
}

template <int KR>
__device__ __forceinline__ void store_list(float* sd, int* si, const float (&v)[KR],
                                           const int (&id)[KR], int lane) {
#pragma unroll
    for (int r = 0; r < KR; ++r) {
        sd[r * 32 + lane] = v[r];
        si[r * 32 + lane] = id[r];
    }
}

