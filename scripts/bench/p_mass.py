#!/usr/bin/env python3
"""How P's mass spreads over its entries, for one Gaussian cluster like the mixture's.

    python3 scripts/bench/p_mass.py [--n 40000] [--dim 50] [--k 90] [--perplexity 30]

n points of a standard normal in `dim` dimensions (the mixture's clusters are such, with no
low-dimensional structure), their exact k nearest neighbours, each row's conditional
p_j|i calibrated to the perplexity by bisection (as the engine's affinities), symmetrised
(p_ij = (p_j|i + p_i|j) / 2n). Prints the median conditional of the 1st, 30th, 60th and
90th neighbour, P's entries per row, and how many entries a row holds 99.9 / 99.5 / 99 /
98 % of P's mass: what dropping the smallest entries would save of the attraction's
gathers, and at what cost. numpy only; about 30 s at the defaults on 2 cores.
"""
import argparse

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=40000)
    ap.add_argument("--dim", type=int, default=50)
    ap.add_argument("--k", type=int, default=90)
    ap.add_argument("--perplexity", type=float, default=30.0)
    a = ap.parse_args()
    n, k = a.n, a.k
    x = np.random.default_rng(0).standard_normal((n, a.dim)).astype(np.float32)
    sq = (x * x).sum(1)
    idx = np.empty((n, k), np.int64)
    dist = np.empty((n, k), np.float64)
    step = 2000
    for s in range(0, n, step):
        d2 = sq[s:s + step, None] + sq[None, :] - 2 * x[s:s + step] @ x.T
        d2[np.arange(d2.shape[0]), np.arange(s, s + d2.shape[0])] = np.inf
        part = np.argpartition(d2, k, axis=1)[:, :k]
        dd = np.take_along_axis(d2, part, 1)
        order = np.argsort(dd, 1)
        idx[s:s + step] = np.take_along_axis(part, order, 1)
        dist[s:s + step] = np.take_along_axis(dd, order, 1)
    # Bisection on each row's precision for the perplexity's entropy.
    target = np.log(a.perplexity)
    lo, hi, beta = np.zeros(n), np.full(n, np.inf), np.ones(n)
    shifted = dist - dist[:, :1]
    for _ in range(100):
        w = np.exp(-shifted * beta[:, None])
        p = w / w.sum(1)[:, None]
        entropy = -(p * np.log(np.maximum(p, 1e-300))).sum(1)
        wide = entropy > target
        lo = np.where(wide, beta, lo)
        hi = np.where(wide, hi, beta)
        beta = np.where(np.isinf(hi), beta * 2, (lo + hi) / 2)
    print("conditional of neighbour 1 / 30 / 60 / 90 (median):",
          " / ".join("%.5f" % v for v in np.median(p[:, [0, 29, 59, 89]], 0)))
    rows = np.repeat(np.arange(n), k)
    cols = idx.ravel()
    key = np.minimum(rows, cols) * n + np.maximum(rows, cols)
    pairs, inverse = np.unique(key, return_inverse=True)
    sym = np.bincount(inverse, weights=p.ravel()) / (2 * n)
    print("P's entries per row: %.1f" % (2 * len(pairs) / n))
    mass = np.cumsum(np.sort(sym)[::-1]) / sym.sum()
    for share in (0.999, 0.995, 0.99, 0.98):
        m = np.searchsorted(mass, share) + 1
        print("%.1f %% of the mass in %.3f of the entries (%.1f a row)"
              % (100 * share, m / len(pairs), 2 * m / n))


if __name__ == "__main__":
    main()
