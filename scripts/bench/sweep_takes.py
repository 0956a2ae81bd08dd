#!/usr/bin/env python3
"""The kNN sweep's takes in traced runs (`SGTSNE_TRACE=1`, the .err files a script keeps):
per run the sweep's wall seconds (from "knn: sweep begins" to "knn: swept"), each GPU's
takes and seconds on the device (their sum: the sweep's share each GPU was busy) and the
longest time the host took to queue a take (a stall of the host's driver calls; beyond a
take's own time on the device, the GPU runs dry).

    python3 scripts/bench/sweep_takes.py RUN.err ...
    python3 scripts/bench/sweep_takes.py DIR          # every *.err below DIR
"""
import pathlib
import re
import sys

TAKE = re.compile(
    r"trace +[\d.]+ s .*knn: GPU (\d+) take \d+ \((\d+) blocks\): plan waited ([\d.]+) ms, "
    r"queued in ([\d.]+) ms, ([\d.]+|NaN) ms on the device"
)
POINT = re.compile(r"trace +([\d.]+) s .*knn: (sweep begins|swept)$")


def takes_of(path):
    """The run's takes: per GPU their count and seconds on the device, every take's time
    to queue (ms), and the sweep's wall seconds (NaN without its trace points)."""
    busy, takes, queued, points = {}, {}, [], {}
    for line in open(path, errors="replace"):
        m = TAKE.search(line)
        if m:
            gpu = int(m[1])
            takes[gpu] = takes.get(gpu, 0) + 1
            if m[5] != "NaN":
                busy[gpu] = busy.get(gpu, 0.0) + float(m[5]) / 1e3
            queued.append(float(m[4]))
            continue
        m = POINT.search(line.rstrip())
        if m:
            points[m[2]] = float(m[1])
    wall = points.get("swept", float("nan")) - points.get("sweep begins", float("nan"))
    return takes, busy, queued, wall


def summary(path):
    takes, busy, queued, wall = takes_of(path)
    if not takes:
        return None
    gpus = ", ".join(
        f"GPU {g}: {takes[g]} takes, {busy.get(g, float('nan')):.2f} s busy" for g in sorted(takes)
    )
    return f"{path.name}: sweep {wall:.2f} s; {gpus}; longest queueing {max(queued):.0f} ms"


def main(args):
    paths = []
    for arg in args or ["."]:
        p = pathlib.Path(arg)
        paths += sorted(p.rglob("*.err")) if p.is_dir() else [p]
    for p in paths:
        line = summary(p)
        if line:
            print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
