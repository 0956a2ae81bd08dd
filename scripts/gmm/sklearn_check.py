#!/usr/bin/env python3
"""Checks `sgtsne gmm` against scikit-learn's GaussianMixture, iteration by iteration.

    python scripts/gmm/sklearn_check.py SGTSNE POINTS.npy K [--covariance full|diag|spherical]
        [--iters N] [--rows R] [--pca M] [--threads T] [--reg R] [--backend cpu|gpu]
        [--ours DIR]

Runs `SGTSNE gmm` for exactly N EM iterations (--tol 0) with --model, then starts scikit-learn
from the same initial model (weights_init, means_init, precisions_init = Σ⁻¹ of our
`initial`) and steps it one iteration at a time (max_iter=1, warm_start=True), reading its
`lower_bound_` after each step: the mean log-likelihood at the start of that iteration, which
is what our `log_likelihood_history` holds. Prints both curves' largest relative difference,
the final scores, and whether the final labels agree up to a permutation of the components.
Exits 1 when the difference exceeds 1e-8 or a label differs.

--ours DIR takes our side from a fit made elsewhere (a GPU machine without scikit-learn,
scripts/bench/gmm_gpu.sh): DIR/model.json, DIR/report.json and DIR/labels.npy of `SGTSNE gmm`
run with the same flags on the same POINTS; SGTSNE is then not run.

--rows R keeps the first R rows (60000 for MNIST's training set). Both sides fit the same
values, so reduce the points beforehand (e.g. ../shared/data/mnist/mnist70k_pca50_f32.npy).
Needs numpy and scikit-learn (e.g. a venv: python -m venv v && v/bin/pip install scikit-learn).
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture


def run_ours(a, x, tmp):
    """Fits x with `SGTSNE gmm` for exactly a.iters iterations; its model, report, labels and
    wall seconds."""
    src = f"{tmp}/x.npy"
    np.save(src, x)
    cmd = [a.sgtsne, "gmm", src, "-k", str(a.k), "--covariance", a.covariance,
           "--iters", str(a.iters), "--tol", "0", "--reg", repr(a.reg),
           "-o", f"{tmp}/labels.npy", "--model", f"{tmp}/model.json",
           "--report", f"{tmp}/report.json", "--quiet", "--backend", a.backend]
    if a.threads:
        cmd += ["--threads", str(a.threads)]
    if a.precision != "f64":
        cmd += ["--precision", a.precision]
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    ours_s = time.perf_counter() - t
    return (json.load(open(f"{tmp}/model.json")), json.load(open(f"{tmp}/report.json")),
            np.load(f"{tmp}/labels.npy"), ours_s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sgtsne")
    ap.add_argument("points")
    ap.add_argument("k", type=int)
    ap.add_argument("--covariance", default="full")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rows", type=int)
    ap.add_argument("--threads", type=int)
    ap.add_argument("--reg", type=float, default=1e-6)
    ap.add_argument("--precision", default="f64")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--ours", help="read our fit from this folder instead of running SGTSNE")
    ap.add_argument("--timing", action="store_true",
                    help="also time one scikit-learn fit of N iterations from the same start")
    a = ap.parse_args()

    x = np.load(a.points)
    if a.rows:
        x = x[: a.rows]
    x = np.ascontiguousarray(x)
    if a.ours:
        model = json.load(open(f"{a.ours}/model.json"))
        report = json.load(open(f"{a.ours}/report.json"))
        ours_labels = np.load(f"{a.ours}/labels.npy")
        ours_s = report["seconds"]["total"]
    else:
        with tempfile.TemporaryDirectory() as tmp:
            model, report, ours_labels, ours_s = run_ours(a, x, tmp)

    # The values sgtsne fitted: the file's, through float32, in float64.
    x = x.astype(np.float32).astype(np.float64)
    init = model["initial"]
    # Weights fitted in f32 sum to 1 in f32 only: scikit-learn checks them in f64.
    init["weights"] = list(np.asarray(init["weights"]) / np.sum(init["weights"]))
    cov = np.asarray(init["covariances"], dtype=np.float64)
    if a.covariance == "full":
        # Σ⁻¹ = L⁻ᵀ L⁻¹ from the Cholesky factor, symmetrised: np.linalg.inv of an
        # ill-conditioned Σ (MNIST's constant pixels, floored by reg) is not symmetric enough
        # for scikit-learn's check.
        inv_l = np.linalg.inv(np.linalg.cholesky(cov))
        precisions = np.transpose(inv_l, (0, 2, 1)) @ inv_l
        precisions = 0.5 * (precisions + np.transpose(precisions, (0, 2, 1)))
    else:
        precisions = 1.0 / cov
    gm = GaussianMixture(
        n_components=a.k, covariance_type=a.covariance, reg_covar=a.reg, max_iter=1,
        warm_start=True, tol=0.0, init_params="random_from_data",
        weights_init=np.asarray(init["weights"]), means_init=np.asarray(init["means"]),
        precisions_init=precisions)
    theirs = []
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for _ in range(a.iters):
            gm.fit(x)
            theirs.append(gm.lower_bound_)
    sk_s = time.perf_counter() - t
    ours = np.asarray(model["log_likelihood_history"])
    theirs = np.asarray(theirs)
    rel = np.abs(ours - theirs) / np.abs(theirs)
    sk_labels = gm.predict(x)
    sk_score = gm.score(x)

    # Labels equal up to a permutation: the contingency table has one non-zero per row.
    table = np.zeros((a.k, a.k), dtype=np.int64)
    np.add.at(table, (ours_labels, sk_labels), 1)
    mapping = table.argmax(axis=1)
    mismatches = int(len(sk_labels) - table.max(axis=1).sum())
    bijective = len(set(mapping.tolist())) == a.k
    print(f"{a.points} rows {len(x)} × {x.shape[1]}, K {a.k}, {a.covariance}, {a.iters} iterations, "
          f"ours on {report.get('backend', 'cpu')} in {report.get('precision', 'f64')}")
    print(f"  mean log-likelihood, first / last iteration: ours {ours[0]:.12f} / {ours[-1]:.12f}, "
          f"scikit-learn {theirs[0]:.12f} / {theirs[-1]:.12f}")
    print(f"  largest relative difference over the iterations: {rel.max():.3e} (at iteration {rel.argmax()})")
    print(f"  final score: ours {report['mean_log_likelihood']:.12f}, scikit-learn {sk_score:.12f}, "
          f"relative difference {abs(report['mean_log_likelihood'] - sk_score) / abs(sk_score):.3e}")
    print(f"  labels: {mismatches} of {len(x)} differ after matching components "
          f"({'a permutation' if bijective else 'not a permutation'})")
    sec = report["seconds"]
    print(f"  seconds: ours {ours_s:.2f} (whole command: init {sec['init']:.2f}, EM {sec['em']:.2f}, "
          f"{sec['iteration_median']:.3f} per iteration), scikit-learn {sk_s:.2f} ({a.iters} "
          f"warm-started single steps)")
    if a.timing:
        one = GaussianMixture(
            n_components=a.k, covariance_type=a.covariance, reg_covar=a.reg, max_iter=a.iters,
            tol=0.0, init_params="random_from_data", weights_init=np.asarray(init["weights"]),
            means_init=np.asarray(init["means"]), precisions_init=precisions)
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            one.fit(x)
        one_s = time.perf_counter() - t
        # Its fit: a first M-step, N iterations and a last E-step, about N + 1 iterations.
        print(f"  timing: scikit-learn fit of {a.iters} iterations from the same start {one_s:.2f} s, "
              f"{one_s / (a.iters + 1):.3f} s per iteration; ours {sec['iteration_median']:.3f} s "
              f"per iteration (ratio {one_s / (a.iters + 1) / sec['iteration_median']:.1f})")
    ok = rel.max() <= 1e-8 and mismatches == 0 and bijective
    print("  PASS" if ok else "  FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
