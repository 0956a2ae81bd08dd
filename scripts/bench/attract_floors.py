#!/usr/bin/env python3
"""Floors of the GPU attraction at 10M points, and a tiled kernel against them (CuPy).

The 10M mixture's P is the attraction's worst case for locality: each point's neighbours lie
at random in its cluster of 1.66M points, so no numbering of the points brings them close in
memory, and every entry of P costs a random 8-byte gather of y_j (a 32-byte sector from L2).
This script builds such a P on the device (n rows of K = 158 entries, the 10M mixture's mean,
each a random point of the row's cluster of n/6) and times, with CUDA events (median of 7
after a warm-up):

- ``ell``: the attraction over the ELL layout as ``kernels/attract_hyb.cu`` computes it in
  2-D (one thread per row, the row's slots column-major), P read with ``__ldg`` and with
  ``__ldcs`` (evict-first: P passes through L2 without pushing y out);
- ``ell half P``: the same with P's values in FP16 (2 bytes instead of 4);
- ``gather only``: the y_j gathers alone, no P read (j from a hash within the cluster): the
  floor of any kernel that gathers y_j once per entry;
- ``stream only``: P read alone, no gathers: the floor of streaming P once;
- ``tile``: P cut into tiles of R rows by C columns (entries of a row block grouped by column
  block); one block of threads per row block holds the rows' sums in shared memory, copies
  each tile's C columns of y into shared memory, and gathers y_j from there, the sums added
  with shared-memory atomics (``abl=1`` leaves the atomics out: the kernel's floor without
  them; its forces are wrong); ``tile2`` double-buffers the columns' copy with ``cp.async``;
  ``tile3`` (``tile`` compiled with ``WARP_ROWS``) gives each warp of the block its own R/32 rows (each tile's entries split by warp),
  sums each step's runs of equal rows by shuffles and adds them with plain shared-memory
  writes, no atomics.

Each tiled kernel's forces are checked against ``ell``'s (relative error printed).

Run on the GPU machine (CuPy is there): ``python3 scripts/bench/attract_floors.py`` (about a
minute, 26 GB of device memory at 10M); ``--n`` for another size, ``--clusters`` for another
number of equal clusters (default 6), ``--floors-only`` to stop before the tiled kernels.
"""
import argparse
import time

import cupy as cp
import numpy as np

K = 158
CLUSTERS = 6

SOURCE = r"""
#ifndef LOADP
#define LOADP __ldg
#endif

// One thread per row: its K entries' terms p e (y_i - y_j), e = 1/(1+|y_i-y_j|^2), summed;
// `entry(i, s, p, yj)` gives slot s's value and y_j (as each kernel below reads them).
template <class Entry>
__device__ inline void per_row(int n, int K, const float2* __restrict__ y, float2* __restrict__ force,
                               float scale, Entry entry) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float2 yi = y[i];
    float ax = 0.f, ay = 0.f;
#pragma unroll 4
    for (int s = 0; s < K; ++s) {
      float p;
      float2 yj;
      entry(i, s, p, yj);
      float dx = yi.x - yj.x, dy = yi.y - yj.y, w = 1.f / (1.f + dx * dx + dy * dy);
      ax += p * w * dx;
      ay += p * w * dy;
    }
    force[i] = make_float2(ax * scale, ay * scale);
  }
}

extern "C" __global__ void __launch_bounds__(256, 8) ell(int n, int K, const int* __restrict__ cols,
    const float* __restrict__ vals, const float2* __restrict__ y, float2* __restrict__ force) {
  per_row(n, K, y, force, 1.f, [&](long long i, int s, float& p, float2& yj) {
    long long e = (long long)s * n + i;
    p = LOADP(vals + e);
    yj = __ldg(y + LOADP(cols + e));
  });
}

extern "C" __global__ void __launch_bounds__(256, 8) ell_half(int n, int K, const int* __restrict__ cols,
    const unsigned short* __restrict__ vals, float scale, const float2* __restrict__ y,
    float2* __restrict__ force) {
  per_row(n, K, y, force, scale, [&](long long i, int s, float& p, float2& yj) {
    long long e = (long long)s * n + i;
    unsigned short ph = __ldcs(vals + e);
    asm("cvt.f32.f16 %0, %1;" : "=f"(p) : "h"(ph));
    yj = __ldg(y + __ldcs(cols + e));
  });
}

// j from a hash of (i, s) within the row's cluster of nc points; p = 1.
extern "C" __global__ void __launch_bounds__(256, 8) gather_only(int n, int K, int nc,
    const float2* __restrict__ y, float2* __restrict__ force) {
  per_row(n, K, y, force, 1.f, [&](long long i, int s, float& p, float2& yj) {
    unsigned h = (unsigned)i * 2654435761u + (unsigned)s * 40503u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    long long j = (i / nc) * nc + (h % (unsigned)nc);
    p = 1.f;
    yj = __ldg(y + (j < n ? j : i));
  });
}

// y_j made from the column number: P read, nothing gathered.
extern "C" __global__ void __launch_bounds__(256, 8) stream_only(int n, int K, const int* __restrict__ cols,
    const float* __restrict__ vals, const float2* __restrict__ y, float2* __restrict__ force) {
  per_row(n, K, y, force, 1.f, [&](long long i, int s, float& p, float2& yj) {
    long long e = (long long)s * n + i;
    p = __ldcs(vals + e);
    yj = make_float2((float)__ldcs(cols + e), 0.f);
  });
}

// The tiled kernels' arguments: row block b's tiles tb[b] .. tb[b + 1], tile t's column block
// tcol[t], its entries from ts[t] (with WARP_ROWS, each (tile, warp)'s from ts[32 t + w]).
#define TILE_PARAMS                                                                          \
  int n, const int* __restrict__ tb, const int* __restrict__ tcol,                           \
      const long long* __restrict__ ts, const unsigned* __restrict__ packed,                 \
      const float* __restrict__ vals, const float2* __restrict__ y, float2* __restrict__ force

// A row block's sums in shared memory (the first R floats of each coordinate), zeroed.
struct Sums {
  float* ax;
  float* ay;
  long long row0;
  int rows;
};
__device__ inline Sums zero_sums(float2* sm, int n) {
  Sums k{(float*)sm, (float*)sm + R, (long long)blockIdx.x * R, 0};
  k.rows = (int)min((long long)R, n - k.row0);
  for (int r = threadIdx.x; r < k.rows; r += blockDim.x) k.ax[r] = k.ay[r] = 0.f;
  return k;
}

// Tile t's C columns of y into shared memory, 4 loads a thread in flight, between barriers.
__device__ inline void copy_columns(float2* cols, const float2* __restrict__ y, long long col0, int n) {
  __syncthreads();
  int cnt = min((long long)C, n - col0);
  for (int c0 = threadIdx.x; c0 < cnt; c0 += 4 * blockDim.x) {
    float2 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      int c = c0 + u * blockDim.x;
      if (c < cnt) v[u] = __ldcg(y + col0 + c);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      int c = c0 + u * blockDim.x;
      if (c < cnt) cols[c] = v[u];
    }
  }
  __syncthreads();
}

// One tile's entries: U per thread in flight, y_i from global memory (entries sorted by row
// within a tile), y_j from the shared copy `cols`, the terms added to the shared sums.
__device__ inline void tile_entries(long long begin, long long end, const unsigned* __restrict__ packed,
    const float* __restrict__ vals, const float2* __restrict__ y, long long row0, const float2* cols,
    float* ax, float* ay, float& sx, float& sy) {
  for (long long e0 = begin + threadIdx.x; e0 < end; e0 += U * blockDim.x) {
    unsigned q[U];
    float p[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      long long e = e0 + (long long)u * blockDim.x;
      bool in = e < end;
      q[u] = in ? __ldcs(packed + e) : 0u;
      p[u] = in ? __ldcs(vals + e) : 0.f;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (p[u] == 0.f) continue;
      int r = q[u] >> CBITS, c = q[u] & ((1u << CBITS) - 1);
      float2 a = __ldg(y + row0 + r), o = cols[c];
      float dx = a.x - o.x, dy = a.y - o.y, w = p[u] / (1.f + dx * dx + dy * dy);
#if NO_ATOMICS
      sx += w * dx;
      sy += w * dy;
#else
      atomicAdd(ax + r, w * dx);
      atomicAdd(ay + r, w * dy);
#endif
    }
  }
}

// Warp-owned rows (WARP_ROWS): warp w of the block owns the rows [w R/32, (w+1) R/32) of its
// row block, and a tile's entries (sorted by row) of those rows lie in [begin, end) =
// [wo[32 t + w], wo[32 t + w + 1]). Each step of 32 entries sums runs of equal rows by
// shuffles, and each run's first lane adds to the row's shared sum with a plain read and
// write: no other warp writes that row.
__device__ inline void warp_entries(long long begin, long long end, const unsigned* __restrict__ packed,
    const float* __restrict__ vals, const float2* __restrict__ y, long long row0, const float2* cols,
    float* ax, float* ay) {
  const int lane = threadIdx.x & 31;
  for (long long e0 = begin + lane; e0 - lane < end; e0 += U * 32) {
    unsigned q[U];
    float p[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      long long e = e0 + u * 32;
      bool in = e < end;
      q[u] = in ? __ldcs(packed + e) : 0xffffffffu;
      p[u] = in ? __ldcs(vals + e) : 0.f;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (e0 - lane + u * 32 >= end) break;
      bool in = q[u] != 0xffffffffu;
      int r = in ? (int)(q[u] >> CBITS) : -1, c = q[u] & ((1u << CBITS) - 1);
      float vx = 0.f, vy = 0.f;
      if (in) {
        float2 a = __ldg(y + row0 + r), o = cols[c];
        float dx = a.x - o.x, dy = a.y - o.y, w = p[u] / (1.f + dx * dx + dy * dy);
        vx = w * dx;
        vy = w * dy;
      }
#pragma unroll
      for (int off = 1; off < 32; off <<= 1) {
        int other = __shfl_down_sync(0xffffffffu, r, off);
        bool same = lane + off < 32 && other == r;
        if (!__any_sync(0xffffffffu, same)) break;
        float ox = __shfl_down_sync(0xffffffffu, vx, off), oy = __shfl_down_sync(0xffffffffu, vy, off);
        if (same) { vx += ox; vy += oy; }
      }
      int prev = __shfl_up_sync(0xffffffffu, r, 1);
      if (in && (lane == 0 || prev != r)) { ax[r] += vx; ay[r] += vy; }
    }
  }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1) tile(TILE_PARAMS) {
  extern __shared__ float2 sm[];
  const Sums k = zero_sums(sm, n);
  float2* cols = sm + R;
  float *ax = k.ax, *ay = k.ay;
  const int b = blockIdx.x;
  const long long row0 = k.row0;
  float sx = 0.f, sy = 0.f;
  for (int t = tb[b]; t < tb[b + 1]; ++t) {
    copy_columns(cols, y, (long long)tcol[t] * C, n);
#if WARP_ROWS
    const int warp = threadIdx.x >> 5;
    warp_entries(ts[32LL * t + warp], ts[32LL * t + warp + 1], packed, vals, y, row0, cols, ax, ay);
#else
    tile_entries(ts[t], ts[t + 1], packed, vals, y, row0, cols, ax, ay, sx, sy);
#endif
  }
  if (sx == 12345.f) ax[0] = sy;  // keeps the no-atomics variant's sums alive
  __syncthreads();
  for (int r = threadIdx.x; r < k.rows; r += blockDim.x) force[row0 + r] = make_float2(ax[r], ay[r]);
}

__device__ inline void copy_async(float2* dst, const float2* __restrict__ y, long long col0, int cnt) {
  for (int c = threadIdx.x; c < cnt; c += blockDim.x) {
    unsigned a = (unsigned)__cvta_generic_to_shared(dst + c);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(a), "l"(y + col0 + c));
  }
  asm volatile("cp.async.commit_group;\n" ::);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1) tile2(TILE_PARAMS) {
  extern __shared__ float2 sm[];
  const Sums k = zero_sums(sm, n);
  float2* buf[2] = {sm + R, sm + R + C};
  float *ax = k.ax, *ay = k.ay;
  const int b = blockIdx.x;
  const long long row0 = k.row0;
  float sx = 0.f, sy = 0.f;
  int t0 = tb[b], t1 = tb[b + 1];
  if (t0 < t1) {
    long long c0 = (long long)tcol[t0] * C;
    copy_async(buf[0], y, c0, min((long long)C, n - c0));
  }
  for (int t = t0; t < t1; ++t) {
    asm volatile("cp.async.wait_group 0;\n" ::);
    __syncthreads();
    if (t + 1 < t1) {
      long long c0 = (long long)tcol[t + 1] * C;
      copy_async(buf[(t + 1 - t0) & 1], y, c0, min((long long)C, n - c0));
    }
    tile_entries(ts[t], ts[t + 1], packed, vals, y, row0, buf[(t - t0) & 1], ax, ay, sx, sy);
    __syncthreads();
  }
  if (sx == 12345.f) ax[0] = sy;
  __syncthreads();
  for (int r = threadIdx.x; r < k.rows; r += blockDim.x) force[row0 + r] = make_float2(ax[r], ay[r]);
}

"""


def module(rows, cols, threads=1024, unroll=4, no_atomics=0, extra=(), warp_rows=0):
    cbits = int(np.ceil(np.log2(cols)))
    assert rows <= 1 << (32 - cbits), "row and column numbers must pack into 32 bits"
    options = ("-std=c++17", f"-DR={rows}", f"-DC={cols}", f"-DCBITS={cbits}",
               f"-DTHREADS={threads}", f"-DU={unroll}", f"-DNO_ATOMICS={no_atomics}",
               f"-DWARP_ROWS={warp_rows}") + extra
    return cp.RawModule(code=SOURCE, options=options)


def bench(launch, reps=7):
    launch()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        launch()
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    return float(np.median(times))


def clustered_p(n, rng, clusters=CLUSTERS):
    """K random neighbours per row in the row's cluster of n/clusters points, ELL slot-major."""
    nc = -(-n // clusters)
    rows = cp.arange(n, dtype=cp.int64)
    start = (rows // nc) * nc
    size = cp.minimum(nc, n - start)
    cols = cp.empty((K, n), dtype=cp.int32)
    for s in range(K):
        pick = (rng.random(n, dtype=cp.float32) * size).astype(cp.int64)
        cols[s] = (start + cp.minimum(pick, size - 1)).astype(cp.int32)
    vals = (rng.random((K, n), dtype=cp.float32) / (n * K)).astype(cp.float32)
    return nc, cols, vals


def tiles(cols, vals, n, rows, width):
    """The entries grouped by (row block, column block), rows ascending within a tile."""
    cbits = int(np.ceil(np.log2(width)))
    blocks, col_blocks = -(-n // rows), -(-n // width)
    packed, tvals, tcol, start, per_block = [], [], [], [], [0]
    offset = 0
    step = max(1, 40_000_000 // (rows * K))
    for b0 in range(0, blocks, step):
        b1 = min(blocks, b0 + step)
        r0, r1 = b0 * rows, min(n, b1 * rows)
        c = cols[:, r0:r1].T.reshape(-1).astype(cp.int64)
        v = vals[:, r0:r1].T.reshape(-1)
        r = cp.repeat(cp.arange(r0, r1, dtype=cp.int64), K)
        key = (r // rows) * col_blocks + c // width
        order = cp.argsort(key, kind="stable")
        c, v, r, key = c[order], v[order], r[order], key[order]
        packed.append((((r % rows) << cbits) | (c % width)).astype(cp.uint32))
        tvals.append(v)
        keys, first = cp.unique(key, return_index=True)
        tcol.append((keys % col_blocks).astype(cp.int32))
        start.append(first.astype(cp.int64) + offset)
        counts = cp.bincount((keys // col_blocks - b0).astype(cp.int64), minlength=b1 - b0)
        per_block.extend((per_block[-1] + cp.cumsum(counts)).get().tolist())
        offset += len(c)
    start.append(cp.array([offset], dtype=cp.int64))
    start = cp.concatenate(start)
    packed = cp.concatenate(packed)
    # Each tile's entries split by the warp owning their rows (32 warps, R/32 rows each).
    shift = int(np.log2(rows // 32)) + cbits
    tile_of = cp.zeros(len(packed), dtype=cp.int32)
    tile_of[start[1:-1]] = 1
    tile_of = cp.cumsum(tile_of, dtype=cp.int32)
    wkey = tile_of * 32 + (packed >> shift).astype(cp.int32)
    del tile_of
    warp_off = cp.searchsorted(wkey, cp.arange(32 * (len(start) - 1) + 1, dtype=cp.int32))
    del wkey
    return (blocks, cp.array(per_block, dtype=cp.int32), cp.concatenate(tcol),
            start, packed, cp.concatenate(tvals), warp_off.astype(cp.int64))


def setting(doc, flags=None):
    """The command line's --n (10M by default) and the flags `flags(parser)` adds, parsed;
    the device (announced), its SMs and a seeded generator."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    if flags:
        flags(ap)
    args = ap.parse_args()
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    print(f"device: {cp.cuda.runtime.getDeviceProperties(dev.id)['name'].decode()}, {sms} SMs")
    return args, dev, sms, cp.random.default_rng(1)


def floors_flags(ap):
    """This script's own flags beside --n."""
    ap.add_argument("--clusters", type=int, default=CLUSTERS)
    ap.add_argument("--floors-only", action="store_true")


def main():
    args, dev, sms, rng = setting(__doc__, floors_flags)
    n = args.n
    nc, cols, vals = clustered_p(n, rng, args.clusters)
    y = (rng.standard_normal((n, 2), dtype=cp.float32) * 30).astype(cp.float32)
    force = cp.zeros((n, 2), dtype=cp.float32)
    print(f"P: {n} rows x {K} entries ({n * K / 1e9:.2f}e9), clusters of {nc} points; "
          f"stream {n * K * 8 / 1e9:.1f} GB")
    grid = (min(-(-n // 256), sms * 32),)
    args_ell = (np.int32(n), np.int32(K), cols, vals, y, force)
    plain = module(8192, 8192).get_function("ell")
    ms = bench(lambda: plain(grid, (256,), args_ell))
    want = force.copy()
    print(f"{'ell, P by __ldg':40s} {ms:7.2f} ms")
    evict = module(8192, 8192, extra=("-DLOADP=__ldcs",)).get_function("ell")
    print(f"{'ell, P by __ldcs':40s} {bench(lambda: evict(grid, (256,), args_ell)):7.2f} ms")
    floors = module(8192, 8192)
    half = (vals * (n * K)).astype(cp.float16).view(cp.uint16)
    eh = floors.get_function("ell_half")
    ms = bench(lambda: eh(grid, (256,), (np.int32(n), np.int32(K), cols, half,
                                         np.float32(1.0 / (n * K)), y, force)))
    err = float(cp.linalg.norm(force - want) / cp.linalg.norm(want))
    print(f"{'ell, half P by __ldcs':40s} {ms:7.2f} ms  (rel. err {err:.1e})")
    del half
    g = floors.get_function("gather_only")
    ms = bench(lambda: g(grid, (256,), (np.int32(n), np.int32(K), np.int32(nc), y, force)))
    print(f"{'gather only (floor of per-entry gathers)':40s} {ms:7.2f} ms")
    st = floors.get_function("stream_only")
    print(f"{'stream only (floor of reading P)':40s} "
          f"{bench(lambda: st(grid, (256,), args_ell)):7.2f} ms")
    if args.floors_only:
        return
    # (kernel, rows R, columns C, threads, entries in flight per thread, no atomics)
    configs = [("tile", 8192, 12288, 1024, 4, 0), ("tile", 16384, 12288, 1024, 4, 0),
               ("tile", 16384, 12288, 1024, 4, 1), ("tile3", 16384, 12288, 1024, 4, 0),
               ("tile3", 16384, 12288, 1024, 8, 0), ("tile3", 16384, 12288, 1024, 2, 0),
               ("tile2", 16384, 6144, 1024, 4, 0)]
    built = {}
    for kernel, rows, width, threads, unroll, no_atomics in configs:
        if (rows, width) not in built:
            built.clear()
            cp.get_default_memory_pool().free_all_blocks()
            t0 = time.time()
            built[(rows, width)] = tiles(cols, vals, n, rows, width)
            dev.synchronize()
            blocks, _, tcol, *_ = built[(rows, width)]
            print(f"tiles {rows} x {width}: {len(tcol)} tiles, {n * K / len(tcol):.0f} entries "
                  f"each, grouped in {time.time() - t0:.1f} s")
        blocks, tb, tcol, ts, packed, tvals, warp_off = built[(rows, width)]
        if kernel == "tile3":
            ts = warp_off
        warp_rows = int(kernel == "tile3")
        f = module(rows, width, threads, unroll, no_atomics, warp_rows=warp_rows).get_function(
            "tile" if warp_rows else kernel)
        smem = (rows + width * (2 if kernel == "tile2" else 1)) * 8
        f.max_dynamic_shared_size_bytes = smem
        force[:] = 0
        ms = bench(lambda: f((blocks,), (threads,),
                             (np.int32(n), tb, tcol, ts, packed, tvals, y, force), shared_mem=smem))
        err = float(cp.linalg.norm(force - want) / cp.linalg.norm(want))
        label = f"{kernel} {rows}x{width}, {unroll} in flight{', no atomics' if no_atomics else ''}"
        print(f"{label:40s} {ms:7.2f} ms  (rel. err {err:.1e})")


if __name__ == "__main__":
    main()
