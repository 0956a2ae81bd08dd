#!/usr/bin/env python3
"""The spread of an embedding beside its run's KL and grid: whether a few points far from
the bulk stretched the repulsion's grid (the grid covers the embedding's bounding box, so
its nodes, or its spacing once the node cap is reached, follow the farthest point).

    python3 scripts/bench/spread.py Y.npy REPORT.json

Prints one line: KL, the final grid's nodes per axis and its changes, the bounding box's
sides, the distance from the median point at the 50th / 99th / 99.99th percentile and the
largest, how many points lie beyond 2× and 4× the 99.99th percentile's distance, and the
report's 10-NN accuracy and preservation.
"""
import json
import sys

import numpy as np


def main():
    y = np.load(sys.argv[1])
    report = json.load(open(sys.argv[2]))
    opt = report["optimise"]
    quality = {k: v for k, v in report.get("quality", {}).items() if v is not None}
    r = np.linalg.norm(y - np.median(y, axis=0), axis=1)
    p50, p99, p9999, top = np.percentile(r, [50, 99, 99.99, 100])
    sides = " × ".join(f"{s:.0f}" for s in y.max(axis=0) - y.min(axis=0))
    print(f"KL {opt['final_kl']:.4f}, grid {opt['final_grid']} ({opt['grid_changes']} changes), "
          f"box {sides}, distance from the median p50 {p50:.1f} / p99 {p99:.1f} / "
          f"p99.99 {p9999:.1f} / max {top:.1f}, beyond 2× p99.99: {int((r > 2 * p9999).sum())}, "
          f"4×: {int((r > 4 * p9999).sum())}, 10-NN acc. {quality.get('knn_accuracy_10', float('nan')):.4f}, "
          f"preservation {quality.get('knn_preservation_10', float('nan')):.4f}")


if __name__ == "__main__":
    main()
