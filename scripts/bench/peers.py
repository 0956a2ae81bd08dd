"""Runs one peer t-SNE (openTSNE or FIt-SNE) on an .npy point set with sgtsne's protocol and
writes the embedding as float32 .npy, for scripts/bench/compare_peers.sh.

    python scripts/bench/peers.py {opentsne,fitsne} POINTS.npy OUT.npy THREADS

Protocol (the issue's): perplexity 30 (k = 90 neighbours, each tool's default approximate
kNN), 1000 iterations of which 250 at exaggeration 12, learning rate n/12 in both phases,
PCA initialisation, FFT-interpolated repulsion, THREADS threads.
"""

import sys
import time

import numpy as np


def main():
    tool, points, out, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    x = np.load(points).astype(np.float64)
    n = x.shape[0]
    lr = n / 12.0
    t = time.perf_counter()
    if tool == "opentsne":
        from openTSNE import TSNE

        y = TSNE(
            n_components=2,
            perplexity=30,
            learning_rate=lr,
            early_exaggeration_iter=250,
            early_exaggeration=12,
            n_iter=750,
            initialization="pca",
            negative_gradient_method="fft",
            n_jobs=threads,
            random_state=0,
        ).fit(x)
    elif tool == "fitsne":
        import fitsne

        y = fitsne.FItSNE(
            np.ascontiguousarray(x),
            no_dims=2,
            perplexity=30.0,
            max_iter=1000,
            stop_early_exag_iter=250,
            early_exag_coeff=12.0,
            learning_rate=lr,
            initialization="pca",
            nthreads=threads,
            rand_seed=0,
        )
    else:
        sys.exit(f"unknown tool {tool!r}: opentsne or fitsne")
    print(f"{tool}: {time.perf_counter() - t:.1f} s in the library", file=sys.stderr)
    np.save(out, np.asarray(y, dtype=np.float32))


if __name__ == "__main__":
    main()
