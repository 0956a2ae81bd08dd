#!/usr/bin/env python3
"""The path of a run's KL, from its report's `optimise.kl_history` (every 50 iterations):
the KL at a few iteration counts and the first iteration from which it lies within a
tolerance of a reference KL (a long run's), so that two schedules can be compared by the
iterations each needs rather than by where a stopping rule ended them.

    kl_path.py REPORT.json [REF_KL] [--tolerance 0.01] [--at 1000,2000,3000,4000,5000]

One line: the report's name, its iterations, the KL at each count it reached, and "within
1 % of REF from N" (or "never") when REF_KL is given.
"""
import argparse
import json
import os


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report")
    ap.add_argument("ref", nargs="?", type=float)
    ap.add_argument("--tolerance", type=float, default=0.01)
    ap.add_argument("--at", default="1000,2000,3000,4000,5000")
    a = ap.parse_args()
    o = json.load(open(a.report))["optimise"]
    path = {int(i): kl for i, kl in o.get("kl_history", [])}
    name = os.path.splitext(os.path.basename(a.report))[0]
    counts = [int(c) for c in a.at.split(",") if c]
    shown = ", ".join(f"{c}: {path[c]:.4f}" for c in counts if c in path)
    line = f"{name}: {o.get('iterations')} iterations; KL at {shown or '-'}"
    if a.ref is not None:
        bound = a.ref * (1 + a.tolerance)
        within = [i for i, kl in sorted(path.items()) if kl <= bound]
        line += (f"; within {a.tolerance:.0%} of {a.ref} (≤ {bound:.4f}) from "
                 f"{within[0] if within else 'never'}")
    print(line)


if __name__ == "__main__":
    main()
