#!/usr/bin/env python3
"""The attraction over half of the symmetric P, in tile pairs whose coordinates and sums sit
in shared memory, against the engine's one gather per entry (CuPy).

P is symmetric (p_ij = p_ji) and a pair's two terms are opposite, so each pair i < j need be
read once, its term added to F_i and taken from F_j. Grouped by tile pair (I, J) (points cut
into tiles of T consecutive points), a block copies y of both tiles into shared memory, sums
both tiles' forces there with shared-memory atomics, and adds them to F once per tile pair: a
pair then costs its 8 bytes of P and four shared-memory atomics, and the tiles' copies and
additions are shared by the tile pair's entries. Pairs in tile pairs too sparse to pay for
the copies stay in the gathered form (both halves, ELL).

P here is built on the device like the 10M mixture's (k = 90 symmetrised: 158 entries a row;
the clusters' order puts 78 % of a point's neighbours in its cluster of 250,000 points and
the rest in the clusters beside it; ``benches/RESULTS.md``, 2026-11-27): each point draws 79
partners, 78 % in its own cluster, the rest in one of the four clusters around it. Timed with
CUDA events (median of 7 after a warm-up):

- ``ell``: both halves of P in ELL (each row's entries padded to the longest row with the
  row itself, weight 0), one thread a row, P read evict-first, as ``kernels/attract_hyb.cu``
  (``attract_floors.py``'s kernel);
- ``the rest``: the pairs of the sparse tile pairs alone, both halves in ELL, the same kernel;
- ``pairs tile``: one block per tile pair of at least m entries (F zeroed first);
- ``pairs row``: one block per tile row I, walking its tile pairs J >= I with F_I kept in
  shared memory throughout (one addition to F per tile row instead of per tile pair);
- each ``without the F_J atomics``: the floor of the same kernel with half its atomics left
  out (its forces are wrong).

Entries in a tile pair are in the order of the pairs' sort, or ``rows ascending`` (a warp's
lanes then take neighbouring rows: F_I's atomics without bank conflicts). The pair forms'
forces (tile pairs and the rest together) are checked against ``ell``'s.

Run on the GPU machine: ``python3 scripts/bench/attract_pairs.py`` (``--n`` for another size;
about 40 GB of device memory at 10M).
"""
import time

import cupy as cp
import numpy as np

from attract_floors import bench, module, setting

CLUSTER = 250_000
HALF = 79
OWN = 0.78

SOURCE = r"""
__device__ inline float2 term(float2 a, float2 b, float p) {
  float dx = a.x - b.x, dy = a.y - b.y, w = 1.f / (1.f + dx * dx + dy * dy);
  return make_float2(p * w * dx, p * w * dy);
}

// Tile `t`'s coordinates into ys and its sums zeroed; returns its number of points.
__device__ inline int load_tile(long long t, int n, const float2* __restrict__ y, float2* ys,
                                float* fx, float* fy) {
  long long p0 = t * TILE;
  int cnt = (int)min((long long)TILE, n - p0);
  for (int r = threadIdx.x; r < TILE; r += blockDim.x) {
    ys[r] = r < cnt ? __ldcg(y + p0 + r) : make_float2(0.f, 0.f);
    fx[r] = fy[r] = 0.f;
  }
  return cnt;
}

// A tile's sums added to F.
__device__ inline void flush_tile(long long t, int cnt, const float* fx, const float* fy,
                                  float* __restrict__ force) {
  long long p0 = t * TILE;
  for (int r = threadIdx.x; r < cnt; r += blockDim.x) {
    float a = fx[r], b = fy[r];
    if (a != 0.f || b != 0.f) {
      atomicAdd(force + 2 * (p0 + r), a);
      atomicAdd(force + 2 * (p0 + r) + 1, b);
    }
  }
}

// Entries [begin, end) of one tile pair: li, lj packed as (li << 16) | lj.
__device__ inline void pair_entries(long long begin, long long end, const unsigned* __restrict__ packed,
    const float* __restrict__ vals, const float2* yi, const float2* yj, float* fix, float* fiy,
    float* fjx, float* fjy) {
  for (long long e0 = begin + threadIdx.x; e0 < end; e0 += UNROLL * blockDim.x) {
    unsigned q[UNROLL];
    float p[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      long long e = e0 + (long long)u * blockDim.x;
      q[u] = e < end ? __ldcs(packed + e) : 0u;
      p[u] = e < end ? __ldcs(vals + e) : 0.f;
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      if (p[u] == 0.f) continue;
      int li = q[u] >> 16, lj = q[u] & 0xffff;
      float2 t = term(yi[li], yj[lj], p[u]);
      atomicAdd(fix + li, t.x);
      atomicAdd(fiy + li, t.y);
#if !NO_J
      atomicAdd(fjx + lj, -t.x);
      atomicAdd(fjy + lj, -t.y);
#endif
    }
  }
}

// One block per tile pair (I, J), I <= J: tile pair b's entries ts[b] .. ts[b + 1].
extern "C" __global__ void __launch_bounds__(THREADS) pairs_tile(int n, const int2* __restrict__ tp,
    const long long* __restrict__ ts, const unsigned* __restrict__ packed,
    const float* __restrict__ vals, const float2* __restrict__ y, float* __restrict__ force) {
  extern __shared__ float2 sm[];
  float2 *yi = sm, *yj = sm + TILE;
  float *fix = (float*)(sm + 2 * TILE), *fiy = fix + TILE, *fjx = fiy + TILE, *fjy = fjx + TILE;
  int2 t = tp[blockIdx.x];
  bool diag = t.x == t.y;
  int ci = load_tile(t.x, n, y, yi, fix, fiy), cj = 0;
  if (!diag) cj = load_tile(t.y, n, y, yj, fjx, fjy);
  __syncthreads();
  if (diag) pair_entries(ts[blockIdx.x], ts[blockIdx.x + 1], packed, vals, yi, yi, fix, fiy, fix, fiy);
  else pair_entries(ts[blockIdx.x], ts[blockIdx.x + 1], packed, vals, yi, yj, fix, fiy, fjx, fjy);
  __syncthreads();
  flush_tile(t.x, ci, fix, fiy, force);
  if (!diag) flush_tile(t.y, cj, fjx, fjy, force);
}

// One block per tile row: row `rows[b]`'s tile pairs are tiles rs[b] .. rs[b + 1] of tp/ts,
// the diagonal first.
extern "C" __global__ void __launch_bounds__(THREADS) pairs_row(int n, const int* __restrict__ order,
    const int* __restrict__ rs, const int2* __restrict__ tp, const long long* __restrict__ ts,
    const unsigned* __restrict__ packed, const float* __restrict__ vals,
    const float2* __restrict__ y, float* __restrict__ force) {
  extern __shared__ float2 sm[];
  float2 *yi = sm, *yj = sm + TILE;
  float *fix = (float*)(sm + 2 * TILE), *fiy = fix + TILE, *fjx = fiy + TILE, *fjy = fjx + TILE;
  int b = order[blockIdx.x];
  int first = rs[b], last = rs[b + 1];
  int ci = load_tile(tp[first].x, n, y, yi, fix, fiy);
  for (int k = first; k < last; ++k) {
    int2 t = tp[k];
    bool diag = t.x == t.y;
    int cj = 0;
    if (!diag) cj = load_tile(t.y, n, y, yj, fjx, fjy);
    __syncthreads();
    if (diag) pair_entries(ts[k], ts[k + 1], packed, vals, yi, yi, fix, fiy, fix, fiy);
    else pair_entries(ts[k], ts[k + 1], packed, vals, yi, yj, fix, fiy, fjx, fjy);
    __syncthreads();
    if (!diag) flush_tile(t.y, cj, fjx, fjy, force);
    __syncthreads();
  }
  flush_tile(tp[first].x, ci, fix, fiy, force);
}

"""


def half_p(n, rng):
    """HALF partners a point, i < j kept as (i, j); weights at random."""
    clusters = -(-n // CLUSTER)
    i = cp.repeat(cp.arange(n, dtype=cp.int32), HALF)
    own = i // CLUSTER
    shift = cp.where(rng.random(len(i), dtype=cp.float32) < OWN, 0,
                     cp.array([-2, -1, 1, 2], dtype=cp.int32)[rng.integers(0, 4, len(i))])
    c = cp.clip(own + shift, 0, clusters - 1).astype(cp.int64)
    start = c * CLUSTER
    size = cp.minimum(CLUSTER, n - start)
    j = (start + (rng.random(len(i), dtype=cp.float32) * size).astype(cp.int64)
         .clip(0, size - 1)).astype(cp.int32)
    del own, shift, c, start, size
    keep = i != j
    i, j = i[keep], j[keep]
    lo, hi = cp.minimum(i, j), cp.maximum(i, j)
    del i, j, keep
    v = (rng.random(len(lo), dtype=cp.float32) / (n * 2 * HALF)).astype(cp.float32)
    return lo, hi, v


FILL = r"""
extern "C" __global__ void fill(long long m, int n, const int* lo, const int* hi, const float* v,
                                int* cursor, int* cols, float* vals) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < m;
       e += (long long)gridDim.x * blockDim.x) {
    int a = lo[e], b = hi[e];
    long long s = atomicAdd(cursor + a, 1);
    cols[s * n + a] = b;
    vals[s * n + a] = v[e];
    s = atomicAdd(cursor + b, 1);
    cols[s * n + b] = a;
    vals[s * n + b] = v[e];
  }
}
"""


def ell_of(n, lo, hi, v):
    """Both halves in ELL, padded to the longest row with (i, 0)."""
    counts = cp.bincount(lo, minlength=n) + cp.bincount(hi, minlength=n)
    K = int(counts.max())
    del counts
    ell_cols = cp.repeat(cp.arange(n, dtype=cp.int32)[None, :], K, axis=0)
    ell_vals = cp.zeros((K, n), dtype=cp.float32)
    cursor = cp.zeros(n, dtype=cp.int32)
    fill = cp.RawModule(code=FILL).get_function("fill")
    fill((4096,), (256,), (np.int64(len(v)), np.int32(n), lo, hi, v, cursor, ell_cols, ell_vals))
    return K, ell_cols, ell_vals


def tile_pairs(n, lo, hi, v, T, least, by_row=False):
    """Pairs grouped by tile pair (I, J) (by row within one with `by_row`); those of tile
    pairs with fewer than `least` entries left apart."""
    nt = -(-n // T)
    key = (lo // T).astype(cp.int64) * nt + (hi // T)
    order = cp.argsort(key * T + lo % T) if by_row else cp.argsort(key)
    key, lo, hi, v = key[order], lo[order], hi[order], v[order]
    del order
    head = cp.concatenate([cp.ones(1, dtype=cp.bool_), key[1:] != key[:-1]])
    first = cp.nonzero(head)[0]
    del head
    keys = key[first]
    counts = cp.diff(cp.concatenate([first, cp.array([len(key)], dtype=first.dtype)]))
    dense = counts >= least
    in_dense = cp.repeat(dense, counts.astype(cp.int64))
    del key
    dk, dcount = keys[dense], counts[dense]
    ts = cp.concatenate([cp.zeros(1, dtype=cp.int64), cp.cumsum(dcount)])
    tp = cp.stack([(dk // nt).astype(cp.int32), (dk % nt).astype(cp.int32)], axis=1)
    packed = (((lo[in_dense] % T).astype(cp.uint32) << 16) | (hi[in_dense] % T).astype(cp.uint32))
    pv = v[in_dense]
    rlo, rhi, rv = lo[~in_dense], hi[~in_dense], v[~in_dense]
    # Tile rows: the tile pairs of each I (the diagonal first: keys ascend within a row).
    rows_of = tp[:, 0]
    rfirst = cp.nonzero(cp.concatenate([cp.ones(1, dtype=cp.bool_),
                                        rows_of[1:] != rows_of[:-1]]))[0]
    rs = cp.concatenate([rfirst.astype(cp.int32), cp.array([len(tp)], dtype=cp.int32)])
    work = ts[rs[1:]] - ts[rs[:-1]] + (rs[1:] - rs[:-1]) * (T // 4)
    row_order = cp.argsort(-work).astype(cp.int32)
    return dict(tp=cp.ascontiguousarray(tp), ts=ts, packed=packed, vals=pv, rest=(rlo, rhi, rv),
                rs=rs, row_order=row_order, dense_share=float(len(pv)) / len(v))


def main():
    args, dev, sms, rng = setting(__doc__)
    n = args.n
    t0 = time.time()
    lo, hi, v = half_p(n, rng)
    y = (rng.standard_normal((n, 2), dtype=cp.float32) * 30).astype(cp.float32)
    force = cp.zeros((n, 2), dtype=cp.float32)
    K, ell_cols, ell_vals = ell_of(n, lo, hi, v)
    dev.synchronize()
    print(f"P: {n} points, {len(v)} pairs ({2 * len(v) / n:.1f} entries a row, ELL width {K}); "
          f"built in {time.time() - t0:.1f} s")
    # attract_floors.py's ELL kernel, P read evict-first (its `R` and `C` unused by it).
    f = module(8192, 8192, extra=("-DLOADP=__ldcs",)).get_function("ell")
    grid = (min(-(-n // 256), sms * 32),)
    ms = bench(lambda: f(grid, (256,), (np.int32(n), np.int32(K), ell_cols, ell_vals, y, force)))
    want = force.copy()
    print(f"{'ell (both halves, padded)':34s} {ms:7.2f} ms")
    del ell_cols, ell_vals
    cp.get_default_memory_pool().free_all_blocks()
    for T, least, threads, by_row in [(2048, 256, 512, False), (2048, 256, 512, True),
                                      (4096, 1024, 1024, False), (4096, 1024, 1024, True)]:
        t0 = time.time()
        tiles = tile_pairs(n, lo, hi, v, T, least, by_row)
        dev.synchronize()
        m = len(tiles["rest"][0])
        print(f"T = {T}, tile pairs of >= {least}{', rows ascending' if by_row else ''}: "
              f"{len(tiles['tp'])} tile pairs holding {tiles['dense_share']:.3f} of the pairs, "
              f"{m} left; grouped in {time.time() - t0:.1f} s")
        rlo, rhi, rv = tiles["rest"]
        rest_ell = ell_of(n, rlo, rhi, rv)
        ms_rest = bench(lambda: f(grid, (256,), (np.int32(n), np.int32(rest_ell[0]), rest_ell[1],
                                                 rest_ell[2], y, force)))
        print(f"  the rest, both halves in ELL (width {rest_ell[0]}): {ms_rest:.2f} ms")
        rest_force = force.copy()
        for no_j in (0, 1):
            mod = cp.RawModule(code=SOURCE, options=(f"-DTILE={T}", "-DUNROLL=4",
                                                     f"-DTHREADS={threads}", f"-DNO_J={no_j}"))
            smem = 32 * T
            for kind in ("tile", "row"):
                fn = mod.get_function(f"pairs_{kind}")
                fn.max_dynamic_shared_size_bytes = smem
                if kind == "tile":
                    launch = lambda: fn((len(tiles["tp"]),), (threads,),
                                        (np.int32(n), tiles["tp"], tiles["ts"], tiles["packed"],
                                         tiles["vals"], y, force), shared_mem=smem)
                else:
                    launch = lambda: fn((len(tiles["row_order"]),), (threads,),
                                        (np.int32(n), tiles["row_order"], tiles["rs"], tiles["tp"],
                                         tiles["ts"], tiles["packed"], tiles["vals"], y, force),
                                        shared_mem=smem)
                ms_dense = bench(lambda: (force.fill(0), launch()))
                check = ""
                if not no_j:
                    err = cp.linalg.norm(force + rest_force - want) / cp.linalg.norm(want)
                    check = f", with the rest's forces rel. err {float(err):.1e}"
                print(f"  pairs {kind:4s}{' without the F_J atomics' if no_j else ''}: "
                      f"tile pairs {ms_dense:.2f} ms (zeroing F included){check}")
        del tiles, rest_ell, rest_force
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
