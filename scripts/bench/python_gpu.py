#!/usr/bin/env python3
"""The Python package against the CLI on one GPU (benches/RESULTS.md, Python rows).

    python3 scripts/bench/python_gpu.py SGTSNE_BIN MNIST_PCA50.npy [--big N]

Measures, on MNIST 70k (PCA 50), with the defaults:
- `TSNE(backend="gpu").fit_transform(X)` five times in one process: the first call and the
  median of the later ones (the process keeps its GPU context and compiled kernels);
- the same first call in a fresh process (the kernel cache already warm), wall of the fit and
  of the whole process;
- `SGTSNE_BIN embed` on the same file, three runs, median wall of the process;
- with --big N: N × 50 float32 points (made by `SGTSNE_BIN gen`) embedded by the CLI and by
  `fit_transform` from memory (the defaults: no map kept), each process's peak RSS.
Prints one JSON object per measure.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time

FRESH = r"""
import json, sys, time, numpy as np, sgtsne
x = np.load(sys.argv[1])
t = time.perf_counter()
sgtsne.TSNE(backend="gpu").fit_transform(x)
print(json.dumps({"fit_seconds": time.perf_counter() - t}))
"""

BIG = r"""
import json, resource, sys, time, numpy as np, sgtsne
x = np.load(sys.argv[1])
t = time.perf_counter()
model = sgtsne.TSNE(backend="gpu")
model.fit_transform(x)
print(json.dumps({"fit_seconds": time.perf_counter() - t,
                  "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                  "kl": model.kl_divergence_}))
"""


def say(**row):
    print(json.dumps(row), flush=True)


def in_process(x):
    import sgtsne

    times, kls = [], []
    for _ in range(5):
        t = time.perf_counter()
        m = sgtsne.TSNE(backend="gpu")
        m.fit_transform(x)
        times.append(time.perf_counter() - t)
        kls.append(m.kl_divergence_)
    say(measure="python, one process", first=times[0], later_median=statistics.median(times[1:]),
        later=times[1:], kl=kls[-1], seconds=m.report_["seconds"])


def fresh(path):
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", FRESH, path], check=True, capture_output=True,
                         text=True).stdout
    say(measure="python, fresh process", process=time.perf_counter() - t, **json.loads(out))


def cli(sgtsne_bin, path, tmp):
    walls = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([sgtsne_bin, "embed", path, "-o", f"{tmp}/y.npy", "--quiet",
                        "--report", f"{tmp}/r.json"], check=True)
        walls.append(time.perf_counter() - t)
    report = json.load(open(f"{tmp}/r.json"))
    say(measure="cli", walls=walls, median=statistics.median(walls),
        kl=report["optimise"]["final_kl"], seconds=report["seconds"])


def big(sgtsne_bin, n, tmp):
    path = f"{tmp}/big.npy"
    subprocess.run([sgtsne_bin, "gen", "--n", str(n), "--dim", "50", "--clusters", "100",
                    "-o", path], check=True, capture_output=True)
    subprocess.run([sgtsne_bin, "embed", path, "-o", f"{tmp}/yb.npy", "--quiet",
                    "--report", f"{tmp}/rb.json"], check=True)
    report = json.load(open(f"{tmp}/rb.json"))
    say(measure=f"cli {n} x 50", peak_rss_gib=report["peak_rss_bytes"] / 2**30,
        total=report["seconds"]["total"], kl=report["optimise"]["final_kl"])
    out = subprocess.run([sys.executable, "-c", BIG, path], check=True, capture_output=True,
                         text=True).stdout
    say(measure=f"python {n} x 50 from memory", **json.loads(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sgtsne_bin")
    ap.add_argument("mnist")
    ap.add_argument("--big", type=int)
    a = ap.parse_args()
    import numpy as np

    x = np.ascontiguousarray(np.load(a.mnist), dtype=np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        in_process(x)
        fresh(a.mnist)
        cli(a.sgtsne_bin, a.mnist, tmp)
        if a.big:
            big(a.sgtsne_bin, a.big, tmp)


if __name__ == "__main__":
    main()
