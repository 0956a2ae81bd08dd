#!/usr/bin/env python3
"""The attraction's gathers on the 10M mixture's real neighbours, in several numberings and
layouts (CuPy kernels; `scripts/bench/attract_orders.sh` makes the inputs).

`scripts/bench/attract_floors.py` bounds the attraction on a synthetic P; this script asks,
on the kNN graph `sgtsne knn` finds for the 10M mixture and the embeddings of a real run,
whether another numbering or layout of P would bring the attraction to the issue's 10 ms
per evaluation on an H100. It times, with CUDA events (median of 7 after a warm-up):

- ``order``: the gathers of y_j over the k nearest neighbours (one thread a row, slots
  column-major, as ``kernels/attract_hyb.cu`` reads ELL) in the input's numbering, in the
  clusters' (the points grouped by label, at random within; the cells' order of a run is
  close to it), and in a Morton order of the embedding at the first and the last snapshot (alone, and
  within the clusters), with the share of neighbours that lie within 4096, 32768 and 262144
  places of their row;
- ``order`` in the input's and the clusters' numberings also with y read as FP16 (4 bytes a
  point, 40 MB at 10M): whether the gathers miss L2 for want of room (a compact y would
  then gather faster), or wait on L2 hits alone;
- ``sorted``: P (the kNN graph symmetrised, as ``embed`` makes it) in ELL of width K with
  each row's slots in column order against the same rows rotated at random (a row's
  entries in no particular order, as the symmetrisation leaves them), the ELL part's time
  scaled to all of P;
- ``window``: a layout that might let the gathers read y from shared memory: rows cut into
  pieces of at most 256 entries in column order, laid out in slices of 32 (longest first
  in each block of 4096), each block of threads walking the columns in windows of 16384
  points copied to shared memory; against the same layout's gathers from global memory.

Run on the GPU machine by ``scripts/bench/attract_orders.sh``; ``python3
scripts/bench/attract_orders.py KNN.npz LABELS.npy SNAPSHOT_DIR`` alone (about 2 minutes,
45 GB of device memory at 10M points); ``PARTS=order,sorted,window`` (the default) picks the
measurements.
"""
import glob
import os
import sys

import cupy as cp
import numpy as np

GATHER = r"""
// One thread a row, slot s of row i at s * n + i, as attract_hyb.cu's ELL kernel in 2-D.
extern "C" __global__ void ell(int n, int K, const int* __restrict__ cols,
                               const float* __restrict__ vals, const float2* __restrict__ y,
                               float2* __restrict__ force) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float2 yi = __ldg(y + i);
    float ax = 0.f, ay = 0.f;
#pragma unroll 4
    for (int s = 0; s < K; ++s) {
      long long e = (long long)s * n + i;
      float p = __ldcs(vals + e);
      float2 yj = __ldg(y + __ldcs(cols + e));
      float dx = yi.x - yj.x, dy = yi.y - yj.y, w = 1.f / (1.f + dx * dx + dy * dy);
      ax += p * w * dx;
      ay += p * w * dy;
    }
    force[i] = make_float2(ax, ay);
  }
}
"""

GATHER_HALF = r"""
#include <cuda_fp16.h>
// `ell` with y read as two FP16 halves a point (4 bytes, half of y's 80 MB at 10M points),
// each gather converted to float: what a compact y would gather (its precision aside).
extern "C" __global__ void ell_half(int n, int K, const int* __restrict__ cols,
                                    const float* __restrict__ vals, const __half2* __restrict__ y,
                                    float2* __restrict__ force) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float2 yi = __half22float2(__ldg(y + i));
    float ax = 0.f, ay = 0.f;
#pragma unroll 4
    for (int s = 0; s < K; ++s) {
      long long e = (long long)s * n + i;
      float p = __ldcs(vals + e);
      float2 yj = __half22float2(__ldg(y + __ldcs(cols + e)));
      float dx = yi.x - yj.x, dy = yi.y - yj.y, w = 1.f / (1.f + dx * dx + dy * dy);
      ax += p * w * dx;
      ay += p * w * dy;
    }
    force[i] = make_float2(ax, ay);
  }
}
"""

WINDOW = r"""
#define END 2147483647
// Pieces (rows cut at CAP entries) in slices of 32: piece q's slot s at wbase[q / 32] +
// q % 32 + 32 s. `win` walks its block's columns in windows of NB points (window w holds
// columns w NB .. (w + 1) NB): a window the block reads often enough (dense[block][w], the
// caller's threshold) is copied to shared memory and its entries read there; the entries of
// the other windows gather y from global memory, each thread on its own up to the next
// dense window. `gat` reads y from global memory throughout. Both add each piece's sum to
// its row with atomics. Dynamic shared memory: NB float2, then W ints.
extern "C" __global__ void __launch_bounds__(NT, 1)
win(long long nv, int n, int W, const long long* __restrict__ wbase, const int* __restrict__ vlen,
    const int* __restrict__ vrow, const int* __restrict__ ecol, const float* __restrict__ eval,
    const unsigned char* __restrict__ dense, const float2* __restrict__ y,
    float* __restrict__ force) {
  extern __shared__ float2 sy[];
  int* stop = reinterpret_cast<int*>(sy + NB);  // stop[w]: the first dense window after w (W: none)
  __shared__ int least;
  const unsigned char* mine = dense + (long long)blockIdx.x * W;
  if (threadIdx.x == 0) {
    int next = W;
    for (int w = W - 1; w >= 0; --w) {
      stop[w] = next;
      if (mine[w]) next = w;
    }
  }
  long long at[RPT];
  int s[RPT], len[RPT], next[RPT], row[RPT];
  float ax[RPT], ay[RPT];
  float2 yi[RPT];
  long long base = (long long)blockIdx.x * (NT * RPT);
#pragma unroll
  for (int q = 0; q < RPT; ++q) {
    long long v = base + q * NT + threadIdx.x;
    ax[q] = ay[q] = 0.f;
    s[q] = 0;
    bool in = v < nv;
    at[q] = in ? wbase[v >> 5] + (v & 31) : 0;
    len[q] = in ? vlen[v] : 0;
    row[q] = in ? vrow[v] : -1;
    yi[q] = in ? y[row[q]] : make_float2(0.f, 0.f);
    next[q] = len[q] > 0 ? __ldg(ecol + at[q]) : END;
  }
  for (;;) {
    int m = END;
#pragma unroll
    for (int q = 0; q < RPT; ++q) m = min(m, next[q]);
    m = __reduce_min_sync(0xffffffffu, m);
    if (threadIdx.x == 0) least = END;
    __syncthreads();
    if ((threadIdx.x & 31) == 0) atomicMin(&least, m);
    __syncthreads();
    if (least == END) break;
    int w = least / NB;
    bool shared = mine[w];
    int w0 = w * NB;
    int w1 = shared ? min(w0 + NB, n) : (stop[w] == W ? n : stop[w] * NB);
    if (shared)
      for (int t = threadIdx.x; t < w1 - w0; t += NT) sy[t] = y[w0 + t];
    __syncthreads();
    for (bool any = true; any;) {
      any = false;
#pragma unroll
      for (int q = 0; q < RPT; ++q) {
        if (next[q] < w1) {
          any = true;
          float2 yj = shared ? sy[next[q] - w0] : __ldg(y + next[q]);
          float p = __ldg(eval + at[q] + 32LL * s[q]);
          float dx = yi[q].x - yj.x, dy = yi[q].y - yj.y, w = 1.f / (1.f + dx * dx + dy * dy);
          ax[q] += p * w * dx;
          ay[q] += p * w * dy;
          ++s[q];
          next[q] = s[q] < len[q] ? __ldg(ecol + at[q] + 32LL * s[q]) : END;
        }
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int q = 0; q < RPT; ++q)
    if (row[q] >= 0) {
      atomicAdd(force + 2 * row[q], ax[q]);
      atomicAdd(force + 2 * row[q] + 1, ay[q]);
    }
}

extern "C" __global__ void gat(long long nv, int n, const long long* __restrict__ wbase,
                               const int* __restrict__ vlen, const int* __restrict__ vrow,
                               const int* __restrict__ ecol, const float* __restrict__ eval,
                               const float2* __restrict__ y, float* __restrict__ force) {
  long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (v >= nv) return;
  long long at = wbase[v >> 5] + (v & 31);
  int len = vlen[v], r = vrow[v];
  float2 yi = y[r];
  float ax = 0.f, ay = 0.f;
  for (int s = 0; s < len; ++s) {
    float p = __ldcs(eval + at + 32LL * s);
    float2 yj = __ldg(y + __ldcs(ecol + at + 32LL * s));
    float dx = yi.x - yj.x, dy = yi.y - yj.y, w = 1.f / (1.f + dx * dx + dy * dy);
    ax += p * w * dx;
    ay += p * w * dy;
  }
  atomicAdd(force + 2 * r, ax);
  atomicAdd(force + 2 * r + 1, ay);
}
"""


def timed(launch, force):
    times = []
    for _ in range(8):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        force.fill(0)
        launch()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return float(np.median(times[1:]))


def morton(y):
    """Morton codes of 2-D points quantised to 16 bits an axis over their bounding box."""
    lo, hi = y.min(0), y.max(0)
    q = ((y - lo) / (hi - lo + 1e-12) * 65535).astype(np.uint64)

    def spread(v):
        v = v & 0xFFFF
        v = (v | (v << 8)) & 0x00FF00FF
        v = (v | (v << 4)) & 0x0F0F0F0F
        v = (v | (v << 2)) & 0x33333333
        return (v | (v << 1)) & 0x55555555

    return spread(q[:, 0]) | (spread(q[:, 1]) << 1)


def renumbered(idx, order):
    """The neighbour lists with row r = point order[r], neighbours renumbered alike."""
    inv = np.empty(len(order), np.int32)
    inv[order] = np.arange(len(order), dtype=np.int32)
    return inv[idx[order]]


def orders(idx, labels, snapshots, y_last):
    n, k = idx.shape
    kernel = cp.RawKernel(GATHER, "ell")
    rng = np.random.default_rng(0)
    cases = [("input", np.arange(n)), ("clusters", np.lexsort((rng.random(n), labels)))]
    for name, y in snapshots:
        code = morton(y)
        cases.append((f"Morton of {name}", np.argsort(code, kind="stable")))
        cases.append((f"clusters, Morton of {name} within", np.lexsort((code, labels))))
    half = cp.RawKernel(GATHER_HALF, "ell_half")
    vals = cp.full((k, n), 1e-8, cp.float32)
    for name, order in cases:
        local = renumbered(idx, order)
        rows = np.arange(0, n, 97)
        spread = np.abs(local[rows] - rows[:, None])
        near = ", ".join(f"{np.mean(spread <= w):.3f}" for w in (4096, 32768, 262144))
        cols = cp.asarray(np.ascontiguousarray(local.T))
        y = cp.asarray(np.ascontiguousarray(y_last[order]))
        force = cp.empty((n, 2), cp.float32)
        ms = timed(
            lambda: kernel(((n + 255) // 256,), (256,), (np.int32(n), np.int32(k), cols, vals, y, force)),
            force,
        )
        print(f"order | {name} | {ms:.2f} ms for k = {k} | within 4096 / 32768 / 262144 places: {near}", flush=True)
        if name in ("input", "clusters"):
            yh = y.astype(cp.float16)
            ms = timed(
                lambda: half(((n + 255) // 256,), (256,), (np.int32(n), np.int32(k), cols, vals, yh, force)),
                force,
            )
            print(f"order | {name}, y in FP16 | {ms:.2f} ms for k = {k}", flush=True)
            del yh
        del cols, y, force
        cp.get_default_memory_pool().free_all_blocks()


def symmetrised(idx, labels):
    """P's pattern in the clusters' numbering: rows' columns sorted, and each row's start and length."""
    n, k = idx.shape
    order = np.lexsort((np.random.default_rng(0).random(n), labels))
    local = cp.asarray(renumbered(idx, order))
    rows = cp.repeat(cp.arange(n, dtype=cp.uint64), k)
    cols = local.ravel().astype(cp.uint64)
    del local
    keys = cp.concatenate([(rows << 32) | cols, (cols << 32) | rows])
    del rows, cols
    keys.sort()
    keep = cp.empty(keys.size, cp.bool_)
    keep[0] = True
    keep[1:] = keys[1:] != keys[:-1]
    keys = keys[keep]
    del keep
    cols = (keys & 0xFFFFFFFF).astype(cp.int32)
    row_of = (keys >> 32).astype(cp.int32)
    del keys
    length = cp.bincount(row_of, minlength=n).astype(cp.int64)
    vals = ((1.0 / length)[row_of] / n).astype(cp.float32)
    del row_of
    start = cp.cumsum(length) - length
    cp.get_default_memory_pool().free_all_blocks()
    return order, cols, vals, start, length


def sorted_rows(n, cols, vals, start, length, y):
    kernel = cp.RawKernel(GATHER, "ell")
    nnz = cols.size
    rng = np.random.default_rng(1)
    for width in (96, 128, 160):
        held = int(cp.minimum(length, width).sum())
        for name in ("rotated", "sorted"):
            shift = cp.asarray(rng.integers(0, 1 << 30, n)) if name == "rotated" else cp.zeros(n, cp.int64)
            ell_cols = cp.empty((width, n), cp.int32)
            ell_vals = cp.empty((width, n), cp.float32)
            own = cp.arange(n, dtype=cp.int32)
            for s in range(width):
                live = s < length
                at = start + cp.where(live, (s + shift) % length, 0)
                ell_cols[s] = cp.where(live, cols[at], own)
                ell_vals[s] = cp.where(live, vals[at], 0.0)
            force = cp.empty((n, 2), cp.float32)
            ms = timed(
                lambda: kernel(
                    ((n + 255) // 256,), (256,), (np.int32(n), np.int32(width), ell_cols, ell_vals, y, force)
                ),
                force,
            )
            print(
                f"sorted | K = {width}, {name} | {ms:.2f} ms for the ELL part ({held / nnz:.3f} of P) | "
                f"{ms * nnz / held:.2f} ms scaled to all of P",
                flush=True,
            )
            del ell_cols, ell_vals, force
            cp.get_default_memory_pool().free_all_blocks()


def window(n, cols, vals, start, length, y, cap=256, threads=1024, per_thread=4, points=16384):
    """The pieces' layout, then `win` with every window in shared memory, and with only the
    windows a block reads at least points / 8, / 4, / 2 times (the rest gathered), against `gat`."""
    per_block = threads * per_thread
    pieces = (length + cap - 1) // cap
    ends = cp.cumsum(pieces)
    nv = int(ends[-1])
    vrow = cp.searchsorted(ends, cp.arange(nv, dtype=cp.int64), side="right").astype(cp.int32)
    first = start[vrow] + (cp.arange(nv, dtype=cp.int64) - (ends - pieces)[vrow]) * cap
    vlen = cp.minimum(cap, start[vrow] + length[vrow] - first)
    by_length = cp.lexsort(cp.stack([-vlen, cp.arange(nv, dtype=cp.int64) // per_block]))
    vrow, first, vlen = vrow[by_length], first[by_length], vlen[by_length]
    slices = (nv + 31) // 32
    padded = cp.zeros(slices * 32, cp.int64)
    padded[:nv] = vlen
    width = padded.reshape(slices, 32).max(1)
    wbase = cp.cumsum(32 * width) - 32 * width
    total = int((32 * width).sum())
    ecol = cp.zeros(total, cp.int32)
    eval_ = cp.zeros(total, cp.float32)
    v = cp.arange(nv, dtype=cp.int64)
    at0 = wbase[v >> 5] + (v & 31)
    blocks = (nv + per_block - 1) // per_block
    windows = (n + points - 1) // points
    counts = cp.zeros(blocks * windows, cp.int64)
    for s in range(int(vlen.max())):
        live = vlen > s
        c = cols[first[live] + s]
        ecol[at0[live] + 32 * s] = c
        eval_[at0[live] + 32 * s] = vals[first[live] + s]
        counts += cp.bincount(v[live] // per_block * windows + c // points, minlength=blocks * windows)
    vlen = vlen.astype(cp.int32)
    module = cp.RawModule(
        code=WINDOW, options=(f"-DNT={threads}", f"-DRPT={per_thread}", f"-DNB={points}", "-std=c++17")
    )
    force = cp.zeros(2 * n, cp.float32)
    gat = module.get_function("gat")
    args = (np.int64(nv), np.int32(n), wbase, vlen, vrow, ecol, eval_, y, force)
    t_gat = timed(lambda: gat(((nv + 255) // 256,), (256,), args), force)
    want = force.copy()
    win = module.get_function("win")
    smem = points * 8 + windows * 4
    win.max_dynamic_shared_size_bytes = smem
    print(f"window | pieces of {cap} (padding {total / cols.size:.3f}), gathered from global memory | {t_gat:.2f} ms", flush=True)
    for share in (0, 8, 4, 2):
        dense = (counts >= (points // share if share else 0)).astype(cp.uint8)
        held = float(counts[dense.astype(cp.bool_)].sum()) / cols.size
        args = (np.int64(nv), np.int32(n), np.int32(windows), wbase, vlen, vrow, ecol, eval_, dense, y, force)
        t_win = timed(lambda: win((blocks,), (threads,), args, shared_mem=smem), force)
        err = float(cp.abs(force - want).max() / cp.abs(want).max())
        rule = f"windows read >= {points // share} times" if share else "every window"
        print(
            f"window | {threads} threads x {per_thread} pieces, windows of {points}, {rule} in shared memory "
            f"({held:.3f} of P read there) | {t_win:.2f} ms (difference {err:.1e})",
            flush=True,
        )


def main():
    knn_path, labels_path, snap_dir = sys.argv[1:4]
    idx = np.load(knn_path)["indices"].astype(np.int32)
    labels = np.load(labels_path)
    files = sorted(glob.glob(os.path.join(snap_dir, "*.npy")))
    files = [files[0], files[-1]] if len(files) > 1 else files
    snapshots = [(os.path.basename(f)[:-4], np.load(f).astype(np.float32)) for f in files]
    y_last = snapshots[-1][1]
    n, k = idx.shape
    print(f"{n} points, k = {k}; snapshots {[name for name, _ in snapshots]}", flush=True)
    parts = os.environ.get("PARTS", "order,sorted,window").split(",")
    if "order" in parts:
        orders(idx, labels, snapshots, y_last)
    order, cols, vals, start, length = symmetrised(idx, labels)
    del idx
    print(
        f"P: {cols.size} entries, {cols.size / n:.1f} a row, the longest {int(length.max())}; rows over 256: "
        f"{int((length > 256).sum())} holding {float(length[length > 256].sum()) / cols.size:.3f} of P",
        flush=True,
    )
    y = cp.asarray(np.ascontiguousarray(y_last[order]))
    if "sorted" in parts:
        sorted_rows(n, cols, vals, start, length, y)
    if "window" in parts:
        window(n, cols, vals, start, length, y)


if __name__ == "__main__":
    main()
