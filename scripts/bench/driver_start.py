#!/usr/bin/env python3
"""What the CUDA driver's start costs a process, before any program of its own runs.

In a fresh Python process (ctypes, no CUDA library but the driver): ``dlopen`` of
``libcuda.so.1``, ``cuInit``, the primary context of device 0 made current, and a first 1 MiB
allocation, each timed with ``time.perf_counter``. Every command-line run of ``sgtsne`` on
the GPU pays at least this before its first kernel (its own set-up shows as ``GPU 0:
set-up`` to ``GPU 0: ready`` under ``SGTSNE_TRACE=1``).

Run on the GPU machine: ``python3 scripts/bench/driver_start.py [RUNS]`` (default 3 fresh
processes; about a second each).
"""
import subprocess
import sys

CHILD = r"""
import ctypes, time
t0 = time.perf_counter()
cu = ctypes.CDLL("libcuda.so.1")
t1 = time.perf_counter()
assert cu.cuInit(0) == 0, "cuInit failed"
t2 = time.perf_counter()
dev = ctypes.c_int()
assert cu.cuDeviceGet(ctypes.byref(dev), 0) == 0, "no device 0"
ctx = ctypes.c_void_p()
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0, "no primary context"
assert cu.cuCtxSetCurrent(ctx) == 0
t3 = time.perf_counter()
ptr = ctypes.c_uint64()
assert cu.cuMemAlloc_v2(ctypes.byref(ptr), 1 << 20) == 0, "allocation failed"
t4 = time.perf_counter()
print(f"driver start: dlopen {t1 - t0:.3f} s, cuInit {t2 - t1:.3f} s, primary context "
      f"{t3 - t2:.3f} s, first allocation {t4 - t3:.3f} s; in all {t4 - t0:.3f} s")
"""


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for _ in range(runs):
        rc = subprocess.run([sys.executable, "-c", CHILD], check=False).returncode
        if rc != 0:
            sys.exit(f"driver_start: the child process failed (exit {rc}): no CUDA driver here?")


if __name__ == "__main__":
    main()
