#!/usr/bin/env python3
"""sgtsne from Python against its CLI, openTSNE and scikit-learn on MNIST, CPU threads only
(benches/RESULTS.md, Python rows).

    python3 scripts/bench/python_cpu.py SGTSNE_BIN MNIST_PCA50.npy [--threads 2]
        [--tools python,cli,opentsne,sklearn]

Each tool embeds the same 70,000 × 50 points with its defaults on `--threads` threads; each
embedding is scored by `sgtsne.kl_divergence` on one P (perplexity 30, exact neighbours), so
the KLs compare. sgtsne runs twice from Python (the median is reported) and twice as
`SGTSNE_BIN embed --backend cpu`; openTSNE and scikit-learn's TSNE once each (minutes).
`--tools` picks which (default: all four, in that order). Prints one JSON object per tool;
in-process tools also give `cpu_seconds` (the process's CPU time over the run): a wall time
well above `cpu_seconds / threads` says the machine was shared and the time is not clean.
"""

import argparse
import json
import statistics
import subprocess
import tempfile
import time

import numpy as np


def say(**row):
    print(json.dumps(row), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sgtsne_bin")
    ap.add_argument("mnist")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tools", default="python,cli,opentsne,sklearn")
    a = ap.parse_args()
    import sgtsne

    x = np.ascontiguousarray(np.load(a.mnist), dtype=np.float32)
    score = lambda y: sgtsne.kl_divergence(x, y, n_jobs=a.threads)  # noqa: E731

    tools = a.tools.split(",")
    walls, y = [], None
    for _ in range(2 if "python" in tools else 0):
        t, c = time.perf_counter(), time.process_time()
        y = sgtsne.TSNE(backend="cpu", n_jobs=a.threads).fit_transform(x)
        walls.append(time.perf_counter() - t)
        cpu = time.process_time() - c
    if walls:
        say(tool="sgtsne (Python)", seconds=statistics.median(walls), runs=walls,
            cpu_seconds=cpu, kl=score(y))

    with tempfile.TemporaryDirectory() as tmp:
        walls, cli_y = [], None
        for _ in range(2 if "cli" in tools else 0):
            t = time.perf_counter()
            subprocess.run([a.sgtsne_bin, "embed", a.mnist, "-o", f"{tmp}/y.npy", "--quiet",
                            "--backend", "cpu", "--threads", str(a.threads)], check=True)
            walls.append(time.perf_counter() - t)
            cli_y = np.load(f"{tmp}/y.npy")
    if walls:
        say(tool="sgtsne (CLI)", seconds=statistics.median(walls), runs=walls, kl=score(cli_y),
            same_as_python=y is not None and bool(np.array_equal(cli_y, y)))

    if "opentsne" in tools:
        import openTSNE

        t, c = time.perf_counter(), time.process_time()
        y = np.asarray(openTSNE.TSNE(n_jobs=a.threads, random_state=0).fit(x))
        say(tool=f"openTSNE {openTSNE.__version__}", seconds=time.perf_counter() - t,
            cpu_seconds=time.process_time() - c, kl=score(y))

    if "sklearn" not in tools:
        return
    import sklearn
    from sklearn.manifold import TSNE
    from threadpoolctl import threadpool_limits

    with threadpool_limits(a.threads):
        t, c = time.perf_counter(), time.process_time()
        y = TSNE(n_jobs=a.threads, random_state=0).fit_transform(x)
    say(tool=f"scikit-learn {sklearn.__version__}", seconds=time.perf_counter() - t,
        cpu_seconds=time.process_time() - c, kl=score(y.astype(np.float32)))


if __name__ == "__main__":
    main()
