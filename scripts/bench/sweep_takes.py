#!/usr/bin/env python3
"""The kNN sweep's takes in traced runs (`SGTSNE_TRACE=1`, the .err files a script keeps): per
run the sweep's wall seconds (from "knn: sweep begins" to "knn: swept"), each GPU's takes
and seconds on the device (their sum: the sweep's share each GPU was busy), how long after
the sweep began each GPU beyond the first joined it (the last one: once it has searched the
recall sample), the longest time the host took to queue a take (a stall of the host's driver
calls; beyond a take's own time on the device, the GPU runs dry), and each GPU's idle
seconds between its joining and its last take, with the part of them inside NCCL's making of
the run's communicators ("NCCL: N communicators" to "NCCL: communicators made").

A take's trace line is written when the host has seen it end (it queues the next take
first, so the device goes on), so the take began on the device its own seconds before
the line; the GPU was idle from the end of the take before (or from its joining: "joins
the sweep", "searched the recall sample", "GPU 0 sweeps") to that beginning.

    python3 scripts/bench/sweep_takes.py RUN.err ...
    python3 scripts/bench/sweep_takes.py DIR          # every *.err below DIR
"""
import math
import pathlib
import re
import sys

TAKE = re.compile(
    r"trace +([\d.]+) s .*knn: GPU (\d+) take \d+ \((\d+) blocks\): plan waited ([\d.]+) ms, "
    r"queued in ([\d.]+) ms, ([\d.]+|NaN) ms on the device"
)
POINT = re.compile(r"trace +([\d.]+) s .*knn: (sweep begins|swept)$")
JOINED = re.compile(
    r"trace +([\d.]+) s .*knn: GPU (\d+) "
    r"(joins the sweep|searched the recall sample|sweeps, the GPUs (?:up|started) have joined)"
)
NCCL = re.compile(r"trace +([\d.]+) s .*NCCL: (\d+ communicators|communicators made)$")


def read_trace(path):
    """The sweep's trace lines of one run, read once: every take as (GPU, time of its line,
    seconds on the device or NaN, ms to queue), when each GPU joined, the trace points of
    the sweep ("sweep begins", "swept") and of NCCL's making of the communicators ("from",
    "made")."""
    takes, joined, points, nccl = [], {}, {}, {}
    for line in open(path, errors="replace"):
        m = TAKE.search(line)
        if m:
            on_device = float("nan") if m[6] == "NaN" else float(m[6]) / 1e3
            takes.append((int(m[2]), float(m[1]), on_device, float(m[5])))
            continue
        m = JOINED.search(line)
        if m:
            joined[int(m[2])] = float(m[1])
            continue
        # A trace line ends with the process's memory ("  [rss … GiB, peak …]") since
        # `6ff9712`; the anchored patterns match the event before it.
        line = line.split("  [rss ")[0].rstrip()
        m = NCCL.search(line)
        if m:
            nccl["made" if m[2] == "communicators made" else "from"] = float(m[1])
            continue
        m = POINT.search(line)
        if m:
            points[m[2]] = float(m[1])
    return takes, joined, points, nccl


def takes_of(path, trace=None):
    """The run's takes: per GPU their count and seconds on the device, every take's time
    to queue (ms), and the sweep's wall seconds (NaN without its trace points)."""
    records, _, points, _ = trace or read_trace(path)
    busy, takes, queued = {}, {}, []
    for gpu, _, on_device, queueing in records:
        takes[gpu] = takes.get(gpu, 0) + 1
        if not math.isnan(on_device):
            busy[gpu] = busy.get(gpu, 0.0) + on_device
        queued.append(queueing)
    wall = points.get("swept", float("nan")) - points.get("sweep begins", float("nan"))
    return takes, busy, queued, wall


def idle_of(path, trace=None):
    """Per GPU: its idle seconds between joining the sweep and its last take's end, the part
    of them inside NCCL's making of the communicators (0 without its trace points), and when
    it joined, in seconds after the sweep began (NaN without the trace points)."""
    records, joined, points, nccl = trace or read_trace(path)
    began_at = points.get("sweep begins", float("nan"))
    window = (nccl.get("from", 0.0), nccl.get("made", 0.0))
    ends = {}
    for gpu, end, on_device, _ in records:
        if not math.isnan(on_device):
            ends.setdefault(gpu, []).append((end, on_device))
    idle = {}
    for gpu, takes in ends.items():
        total = inside = 0.0
        before = joined.get(gpu)
        for end, seconds in takes:
            began = end - seconds
            if before is not None and began > before:
                total += began - before
                inside += max(0.0, min(began, window[1]) - max(before, window[0]))
            before = end
        idle[gpu] = (total, inside, joined.get(gpu, float("nan")) - began_at)
    return idle


def summary(path):
    trace = read_trace(path)
    takes, busy, queued, wall = takes_of(path, trace)
    if not takes:
        return None
    idle = idle_of(path, trace)

    def gpu(g):
        total, inside, joined = idle.get(g, (0.0, 0.0, float("nan")))
        line = f"GPU {g}: {takes[g]} takes, {busy.get(g, float('nan')):.2f} s busy, "
        if g > 0:
            line += f"joined after {joined:.2f} s, "
        return line + f"{total:.2f} s idle ({inside:.2f} in NCCL's set-up)"

    gpus = ", ".join(gpu(g) for g in sorted(takes))
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
