#!/usr/bin/env python3
"""The near field's split on a real 3-D embedding, in numpy (development machine, a minute).

The relative repulsive-force error of a cubic-interpolation grid (as src/repulse/ builds it)
against exact sums on 1000 random targets, with the whole Cauchy kernel on the grid and with
its split (src/repulse/near/mod.rs): the long part on the grid, the short part summed over
the pairs within the cutoff R. The figures quoted in src/repulse/near/mod.rs come from:

    sgtsne embed ../shared/data/mnist/mnist70k_pca50_f32.npy --dims 3 --backend cpu -o mnist3d.npy
    python3 scripts/bench/near_split.py mnist3d.npy 1.35,2.0,1.0 1.1,1.5,1.85 4,5,6

Arguments: the embedding (.npy, n x 3), grid spacings h, widths s/h, and cutoff exponents
t0 (1 + R^2) (t0 = 1/s^2), each comma-separated.
"""
import sys

import numpy as np


def lagrange(t):
    """Cubic Lagrange weights of the nodes at offsets 0..3 for t in [1, 2)."""
    return np.stack([-(t - 1) * (t - 2) * (t - 3) / 6, t * (t - 2) * (t - 3) / 2,
                     -t * (t - 1) * (t - 3) / 2, t * (t - 1) * (t - 2) / 6], -1)


def grid_potentials(y, targets, h, g1, g2):
    """psi = G1 * 1, phi_0 = G2 * 1, phi_a = G2 * y_a at the targets, through a grid."""
    n = len(y)
    lo = y.min(0) - 1.5 * h
    p = int(np.ceil((y.max(0) - lo).max() / h)) + 3
    f = (y - lo) / h
    base = np.floor(f).astype(int) - 1
    w = lagrange(f - base)
    charges = np.stack([np.ones(n), y[:, 0], y[:, 1], y[:, 2]], 1)
    grid = np.zeros((4, p, p, p))
    for a in range(4):
        for b in range(4):
            for c in range(4):
                wt = w[:, 0, a] * w[:, 1, b] * w[:, 2, c]
                at = (base[:, 0] + a, base[:, 1] + b, base[:, 2] + c)
                for ch in range(4):
                    np.add.at(grid[ch], at, wt * charges[:, ch])
    m = 2 * p
    off = np.arange(m)
    off = np.minimum(off, m - off) * h
    d2 = off[:, None, None] ** 2 + off[None, :, None] ** 2 + off[None, None, :] ** 2
    axes = (0, 1, 2)
    k1, k2 = np.fft.rfftn(g1(d2)), np.fft.rfftn(g2(d2))
    spectra = [np.fft.rfftn(grid[ch], s=(m, m, m), axes=axes) for ch in range(4)]
    psi = np.fft.irfftn(spectra[0] * k1, s=(m, m, m), axes=axes)[:p, :p, :p]
    phi = [np.fft.irfftn(spectra[ch] * k2, s=(m, m, m), axes=axes)[:p, :p, :p] for ch in range(4)]
    out = np.zeros((len(targets), 5))
    wt_t, base_t = w[targets], base[targets]
    for a in range(4):
        for b in range(4):
            for c in range(4):
                wt = wt_t[:, 0, a] * wt_t[:, 1, b] * wt_t[:, 2, c]
                at = (base_t[:, 0] + a, base_t[:, 1] + b, base_t[:, 2] + c)
                out[:, 0] += wt * psi[at]
                for ch in range(4):
                    out[:, 1 + ch] += wt * phi[ch][at]
    return out


def main():
    y = np.load(sys.argv[1]).astype(np.float64)
    spacings, widths, cutoffs = ([float(v) for v in a.split(',')] for a in sys.argv[2:5])
    targets = np.random.default_rng(0).choice(len(y), 1000, replace=False)
    d2 = ((y[targets, None, :] - y[None, :, :]) ** 2).sum(-1)
    u = 1 + d2
    yt = y[targets]

    def sums(g1, g2):
        return np.stack([g1.sum(1), g2.sum(1), *[(g2 * y[None, :, a]).sum(1) for a in range(3)]], 1)

    def force(pot):
        return yt * pot[:, 1:2] - pot[:, 2:5]

    exact = force(sums(1 / u, 1 / u ** 2))

    def error(pot):
        return np.sqrt(((force(pot) - exact) ** 2).sum() / (exact ** 2).sum())

    print(f"{len(y)} points, extent {np.ptp(y, 0).max():.1f}")
    for h in spacings:
        whole = grid_potentials(y, targets, h, lambda q: 1 / (1 + q), lambda q: 1 / (1 + q) ** 2)
        print(f"h {h}: whole kernel {error(whole):.2e}", flush=True)
        for ratio in widths:
            t0 = 1 / (ratio * h) ** 2
            far = grid_potentials(
                y, targets, h,
                lambda q: (1 - np.exp(-t0 * (1 + q))) / (1 + q),
                lambda q: (1 - np.exp(-t0 * (1 + q)) * (1 + t0 * (1 + q))) / (1 + q) ** 2)
            for x in cutoffs:
                inside = d2 < x / t0 - 1
                e = np.exp(-t0 * u) * inside
                near = sums(e / u, e * (1 + t0 * u) / u ** 2)
                print(f"  s = {ratio} h, t0 (1 + R^2) = {x}: {error(far + near):.2e}"
                      f" ({inside.sum(1).mean():.0f} neighbours a point)", flush=True)


if __name__ == "__main__":
    main()
