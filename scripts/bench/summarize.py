"""Summary lines of `sgtsne embed` runs for the scripts of scripts/bench/ (lib.sh calls it).

    summarize.py line WORK NAME            one run: WORK/NAME.json (its --report) and
                                           WORK/NAME.time (/usr/bin/time -v of it)
    summarize.py medians WORK LABEL NAME...  medians of wall, report total, kNN, optimise and
                                           attraction; the range of the final KL
    summarize.py time FILE                 wall seconds and peak RSS of a /usr/bin/time file

A line holds the wall seconds and peak RSS (from the time file), the report's total and
seconds per stage, the optimisation's attraction / repulsion (S2G, G2G, G2S, Phi2Force) /
update split, replan seconds, final grid and grid changes, the final KL, the 10-NN label
accuracy and the 10-NN preservation; hybrid runs add the per-evaluation medians and the
overlap. Keys a report of an older build lacks print as "-".
"""

import json
import os
import re
import statistics
import sys

STAGES = ("load", "setup", "pca", "order", "knn", "affinities", "layout", "init", "optimise", "quality", "write")


def read_time(path):
    """(wall seconds, peak RSS GiB) of a /usr/bin/time -v file; None where missing."""
    wall = peak = None
    try:
        text = open(path).read()
    except OSError:
        return wall, peak
    m = re.search(r"Elapsed \(wall clock\)[^\n]*\): *([0-9:.]+)", text)
    if m:
        wall = 0.0
        for part in m.group(1).split(":"):
            wall = wall * 60 + float(part)
    m = re.search(r"Maximum resident set size \(kbytes\): *(\d+)", text)
    if m:
        peak = int(m.group(1)) / 1048576
    return wall, peak


def num(x, digits=2):
    return "-" if x is None else f"{x:.{digits}f}"


def load(work, name):
    with open(os.path.join(work, name + ".json")) as f:
        return json.load(f)


def stability_text(o):
    """Iterations run, the map's neighbourhood stability over the last window (kept
    fraction, KL fall) and why an `--iters auto` run stopped."""
    st = o.get("stability")
    text = f" iters {o.get('iterations', '?')}"
    if st:
        text += f" kept {st['kept']:.3f} ({st['from']}-{st['to']})"
    if o.get("auto_stop"):
        text += f" auto {o['auto_stop']}"
    return text


def line(work, name):
    r = load(work, name)
    wall, peak = read_time(os.path.join(work, name + ".time"))
    s, o, q = r.get("seconds", {}), r.get("optimise", {}), r.get("quality") or {}
    split = o.get("repulse_split") or {}
    stages = " ".join(f"{k} {num(s.get(k), 3 if k in ('affinities', 'layout') else 2)}"
                      for k in STAGES if k in s)
    repulse = " / ".join(num(split.get(k)) for k in ("s2g", "g2g", "g2s", "near", "phi2force"))
    backend = (r.get("backend") or {}).get("kind", "?")
    knn = r.get("knn") or {}
    recall = knn.get("recall_sample")
    knn_text = f" | knn {knn.get('method', '-')}" + (f" recall {recall:.4}" if recall is not None else "")
    ivf = (knn.get("ivf") or {}).get("seconds")
    if ivf:
        knn_text += " (kmeans / cells / sweep / refine / recall " + " / ".join(
            num(ivf.get(k)) for k in ("kmeans", "cells", "sweep", "refine", "recall")) + ")"
        steps = ivf.get("cell_steps")
        if steps:
            knn_text += " (cells: assign / order / plan / upload " + " / ".join(
                num(steps.get(k)) for k in ("assign", "order", "plan", "upload")) + ")"
    mem = r.get("memory") or {}
    dev = mem.get("peak_device_bytes")
    est = mem.get("estimated_device_bytes")
    dev_text = f", device {dev / 2**30:.2f} GiB (est. {est / 2**30:.2f})" if dev is not None and est else ""
    gpus = (r.get("params") or {}).get("gpus")
    gpus_text = f" ×{gpus} GPUs" if gpus and gpus > 1 else ""
    print(f"{name}: wall {num(wall)} s, peak {num(peak)} GiB{dev_text} | total {num(s.get('total'))} s: "
          f"{stages} | attract {num(o.get('attract_seconds'))} repulse "
          f"{num(o.get('repulse_seconds'))} (s2g / g2g / g2s / near / phi2force {repulse}) update "
          f"{num(o.get('update_seconds'))} replan {num(o.get('replan_seconds'))} grid "
          f"{o.get('final_grid', '-')} changes {o.get('grid_changes', '-')} | KL "
          f"{num(o.get('final_kl'), 4)} acc10 {num(q.get('knn_accuracy_10'), 4)} pres10 "
          f"{num(q.get('knn_preservation_10'), 4)}{stability_text(o)}{knn_text} | {backend}{gpus_text}, "
          f"{r.get('threads', '?')} threads, nnz {r.get('p_nnz', '?')}")
    per_gpu = o.get("per_gpu")
    if per_gpu:
        print("  per GPU (attract / repulse / update / all-gather s): " + ", ".join(
            f"{num(g.get('attract_seconds'))} / {num(g.get('repulse_seconds'))} / "
            f"{num(g.get('update_seconds'))} / {num(g.get('exchange_seconds'))}"
            for g in per_gpu))
    v = o.get("overlap")
    if v:
        iters = ((r.get("params") or {}).get("optim") or {}).get("iters")
        mean = o["attract_seconds"] / iters * 1e3 if iters else None
        print(f"  per evaluation (median ms): attract {v['attract_median'] * 1e3:.2f} repulse "
              f"{v['repulse_median'] * 1e3:.2f} wall {v['wall_median'] * 1e3:.2f} (attract mean "
              f"{num(mean)}); wall total {v['wall_seconds']:.2f} s, overlap {v['overlap']:.3f}")


def medians(work, label, names):
    walls, totals, optimise, knn, attract, kls = [], [], [], [], [], []
    for name in names:
        try:
            r = load(work, name)
        except (OSError, ValueError):
            continue
        wall, _ = read_time(os.path.join(work, name + ".time"))
        if wall is not None:
            walls.append(wall)
        totals.append(r["seconds"]["total"])
        optimise.append(r["seconds"]["optimise"])
        knn.append(r["seconds"].get("knn"))
        attract.append((r.get("optimise") or {}).get("attract_seconds"))
        kls.append((r.get("optimise") or {}).get("final_kl"))
    if not totals:
        print(f"{label}: no reports")
        return
    def med(v):
        v = [x for x in v if x is not None]
        return num(statistics.median(v)) if v else "-"

    kls = [k for k in kls if k is not None]
    kl = f"{min(kls):.4f}–{max(kls):.4f}" if kls else "-"
    print(f"{label}, median of {len(totals)}: wall {med(walls)} s, total {med(totals)} s, "
          f"knn {med(knn)} s, optimise {med(optimise)} s, attract {med(attract)} s; KL {kl}")


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "line":
        line(*args)
    elif mode == "medians":
        medians(args[0], args[1], args[2:])
    elif mode == "time":
        wall, peak = read_time(args[0])
        print(f"wall {num(wall)} s, peak {num(peak)} GiB")
    else:
        sys.exit(f"unknown mode {mode!r}: line, medians or time")


if __name__ == "__main__":
    main()
