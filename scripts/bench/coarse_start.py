#!/usr/bin/env python3
"""The coarse-to-fine start as a lever of `--iters auto` (benches/RESULTS.md, convergence).

    python3 scripts/bench/coarse_start.py POINTS.npy LABELS.npy [VARIANT ...]

On one GPU, through the Python package: every variant embeds all of POINTS with
`TSNE(backend="gpu", max_iter="auto")` and prints its iterations, KL, 10-NN accuracy and
preservation, seconds, and the kept fraction of each window of the stopping rule.

A variant is `base` (the defaults: PCA start, early phase of 250 iterations) or
`FRACTION[:OPTION...]`, a coarse start: a seeded FRACTION of the points embedded under
`max_iter="auto"` with their own kNN and P (`keep_map=True`), every other point placed by
`transform(max_iter=0)` (the median of its 25 nearest sampled points), and all points
optimised from there. Options: `sS` scales the start by S; `eE` sets the early phase to E
iterations (0: none); `r` rescales the start to the PCA start's size (`init_rescale`), so
that the early phase runs as from a PCA start. The coarse stage's seconds are printed beside
each run (made once per fraction).

    python3 scripts/bench/coarse_start.py digits.npy labels.npy base 0.1:s3.16:e0 0.1:r
"""

import sys
import time

import numpy as np

import sgtsne


def coarse(x, fraction, seed=0):
    """The coarse start of a seeded `fraction` of x, and the seconds it took."""
    t = time.perf_counter()
    n = len(x)
    rows = np.sort(np.random.default_rng(seed).choice(n, int(n * fraction), replace=False))
    sample = sgtsne.TSNE(backend="gpu", max_iter="auto", keep_map=True, random_state=0)
    sample.fit(x[rows])
    fitted = time.perf_counter()
    rest = np.setdiff1d(np.arange(n), rows)
    y = np.empty((n, sample.embedding_.shape[1]), np.float32)
    y[rows] = sample.embedding_
    y[rest] = sample.transform(x[rest], max_iter=0)
    seconds = time.perf_counter() - t
    print(f"coarse {fraction}: sample {fitted - t:.2f} s ({sample.n_iter_} iterations), "
          f"placing {seconds - (fitted - t):.2f} s", flush=True)
    return y, seconds


def options(variant, starts, x):
    """TSNE's parameters for `variant`, and the seconds of its coarse stage."""
    name, *opts = variant.split(":")
    params = {"backend": "gpu", "max_iter": "auto", "random_state": 0}
    if name == "base":
        return params, 0.0
    fraction = float(name)
    if fraction not in starts:
        starts[fraction] = coarse(x, fraction)
    y, seconds = starts[fraction]
    scale = 1.0
    for o in opts:
        if o[0] == "s":
            scale = float(o[1:])
        elif o[0] == "e":
            params["early_exaggeration_iter"] = int(o[1:])
        elif o == "r":
            params["init_rescale"] = True
        else:
            sys.exit(f"unknown option {o!r} in {variant!r}")
    params["init"] = y * scale
    return params, seconds


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    x, labels = np.load(sys.argv[1]), np.load(sys.argv[2])
    starts = {}
    for variant in sys.argv[3:] or ["base", "0.1:r"]:
        params, before = options(variant, starts, x)
        t = time.perf_counter()
        model = sgtsne.TSNE(**params).fit(x, labels)
        wall = time.perf_counter() - t
        o, q = model.report_["optimise"], model.report_["quality"]
        print(f"{variant}: {o['iterations']} iterations ({o.get('auto_stop')}), "
              f"KL {o['final_kl']:.4f}, acc. {q['knn_accuracy_10']:.4f}, "
              f"pres. {q['knn_preservation_10']:.4f}, fit {wall:.2f} s "
              f"(+ coarse stage {before:.2f} s)", flush=True)
        windows = [(w["to"], round(w["kept"], 3)) for w in o.get("stability_history", [])]
        print(f"  windows: {windows}", flush=True)


if __name__ == "__main__":
    main()
