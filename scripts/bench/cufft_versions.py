#!/usr/bin/env python3
"""GPU machine: what each cuFFT on the machine costs to plan the repulsion's 2-D grids, with
the driver's kernel cache empty (a fresh machine) and then filled (every later run).

The adaptive grid of a 2-D run on the GPU passes through the sparse ladder's shapes (126² to
1440² complex grids, batched two to a transform); a cuFFT that compiles its kernels when it
plans a new shape makes a machine's first run pay for each. This finds every libcufft the
machine has (the dynamic loader's, CUDA toolkits', and NVIDIA's pip wheels in this Python,
e.g. those a PyTorch install brought), and for each, in fresh processes (the driver reads
CUDA_CACHE_PATH once per process), times cufftMakePlanMany per shape: cold (an empty cache
folder) then warm (the same folder).

    python3 scripts/bench/cufft_versions.py [LIBCUFFT ...]   # default: every one found

One line per (library, cache state): the library's version, each shape's milliseconds and
their total. Needs only the driver and ctypes.
"""

import ctypes
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

SHAPES = [126, 180, 252, 360, 504, 720, 1008, 1440]
BATCH = 2
CUFFT_C2C = 0x29


def found():
    """Every distinct libcufft file on the machine, newest name first."""
    paths = set()
    for pattern in [
        "/usr/local/cuda*/lib64/libcufft.so.*",
        "/usr/local/cuda*/targets/*/lib/libcufft.so.*",
        "/usr/lib/x86_64-linux-gnu/libcufft.so.*",
    ]:
        paths.update(glob.glob(pattern))
    for site in sys.path:
        paths.update(glob.glob(os.path.join(site, "nvidia", "*", "lib", "libcufft.so.*")))
    real = {}
    for p in sorted(paths):
        if os.path.isfile(p):
            real.setdefault(os.path.realpath(p), p)
    return sorted(real.values())


def plan_all(lib):
    """In this process: the library's version and the milliseconds of each shape's plan."""
    cufft = ctypes.CDLL(lib)
    version = ctypes.c_int()
    cufft.cufftGetVersion(ctypes.byref(version))
    handle = ctypes.c_int()
    # The first handle starts the runtime's context: timed apart.
    t = time.perf_counter()
    cufft.cufftCreate(ctypes.byref(handle))
    start_ms = (time.perf_counter() - t) * 1e3
    cufft.cufftDestroy(handle)
    times = {}
    for n in SHAPES:
        dims = (ctypes.c_int * 2)(n, n)
        work = ctypes.c_size_t()
        t = time.perf_counter()
        cufft.cufftCreate(ctypes.byref(handle))
        status = cufft.cufftMakePlanMany(
            handle, 2, dims, None, 1, n * n, None, 1, n * n, CUFFT_C2C, BATCH,
            ctypes.byref(work))
        times[n] = round((time.perf_counter() - t) * 1e3, 1) if status == 0 else f"error {status}"
        cufft.cufftDestroy(handle)
    return {"version": version.value, "start_ms": round(start_ms, 1), "plans_ms": times}


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(plan_all(sys.argv[2])))
        return
    libs = sys.argv[1:] or found()
    if not libs:
        print("cufft_versions: no libcufft found")
        return
    for lib in libs:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, CUDA_CACHE_PATH=cache)
            for state in ["cold", "warm"]:
                out = subprocess.run([sys.executable, __file__, "--child", lib], env=env,
                                     capture_output=True, text=True)
                if out.returncode != 0:
                    print(f"{lib} {state}: failed: {out.stderr.strip()[-300:]}")
                    break
                r = json.loads(out.stdout)
                plans = r["plans_ms"]
                total = sum(v for v in plans.values() if isinstance(v, float))
                shapes = " ".join(f"{n}:{v}" for n, v in plans.items())
                print(f"{lib} v{r['version']} {state}: start {r['start_ms']} ms; "
                      f"plans {shapes}; total {total:.0f} ms", flush=True)


if __name__ == "__main__":
    main()
