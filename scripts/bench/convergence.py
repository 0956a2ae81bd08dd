#!/usr/bin/env python3
"""The convergence measure of the run report against iterations (benches/RESULTS.md): the
KL's relative decrease over the last tenth of a run, beside the KL and the 10-NN
preservation, for MNIST and a generated mixture at several iteration counts.

    python3 scripts/bench/convergence.py SGTSNE_BIN MNIST_PCA50.npy [--n 1300000] [--iters 1000,3000]

Prints one JSON object per run.
"""

import argparse
import json
import subprocess
import tempfile


def run(sgtsne, path, iters, tmp):
    subprocess.run([sgtsne, "embed", path, "-o", f"{tmp}/y.npy", "--quiet", "--iters",
                    str(iters), "--report", f"{tmp}/r.json"], check=True)
    r = json.load(open(f"{tmp}/r.json"))
    c = r["optimise"].get("convergence") or {}
    print(json.dumps({
        "input": r["input"]["name"], "n": r["input"]["n"], "iters": iters,
        "kl": r["optimise"]["final_kl"], "kl_drop_last_tenth": c.get("kl_drop"),
        "preservation_10": r["quality"]["knn_preservation_10"],
        "seconds": r["seconds"]["total"],
    }), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sgtsne")
    ap.add_argument("mnist")
    ap.add_argument("--n", type=int, default=1_300_000)
    ap.add_argument("--iters", default="1000,3000")
    a = ap.parse_args()
    counts = [int(i) for i in a.iters.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        for iters in counts:
            run(a.sgtsne, a.mnist, iters, tmp)
        big = f"{tmp}/mixture.npy"
        subprocess.run([a.sgtsne, "gen", "--n", str(a.n), "--dim", "50", "--clusters", "40",
                        "-o", big], check=True, capture_output=True)
        for iters in counts:
            run(a.sgtsne, big, iters, tmp)


if __name__ == "__main__":
    main()
