#!/usr/bin/env bash
# GPU machine: what a first run costs against warm runs, MNIST 70k 2-D, defaults, with the
# caches a fresh machine lacks emptied: the driver's (CUDA_CACHE_PATH, where the driver keeps
# the cuFFT kernels it compiles) and the program's (SGTSNE_CACHE: kernels NVRTC compiled).
# The machine's own first driver start is not repeated.
#
#   scripts/bench/first_run.sh            # RUNS rounds (default 3), about 30 s
#
# RUNS cold runs, each with new empty caches, then RUNS warm runs on the last one's. Each
# run's line has its wall and stages; the trace's kNN stage and the optimisation's start
# show where a cold run waits. Writes $OUT/first-run.txt and $OUT/first-run.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_begin first-run
runs=${RUNS:-3}
mnist_input
caches=$work/caches
rm -rf "$caches"

# traced NAME ARGS...: `embed NAME ARGS` with SGTSNE_TRACE=1, then when the kNN stage and
# the optimisation began, from the trace.
traced() {
  local name=$1
  shift
  SGTSNE_TRACE=1 embed "$name" "${mnist[@]}" --backend gpu --iters 1000 "$@" || return 1
  python3 - "$work/$name.err" <<'PY' | tee -a "$summary"
import re, sys
at = {}
for line in open(sys.argv[1]):
    m = re.match(r"trace\s+([0-9.]+) s\s+\S+\s+(.*?)(?:\s+\[rss .*)?$", line)
    if not m:
        continue
    t, what = float(m.group(1)), m.group(2).strip()
    for key in ("CUDA libraries probed", "GPU 0: the driver started", "GPU 0: ready",
                "stage knn", "stage optimise", "end"):
        if what.startswith(key) and key not in at:
            at[key] = t
print("   trace: " + ", ".join(f"{k} {v:.3f} s" for k, v in at.items()))
PY
}

for r in $(seq 1 "$runs"); do
  dir=$caches/cold-$r
  mkdir -p "$dir/cuda" "$dir/sgtsne"
  CUDA_CACHE_PATH=$dir/cuda SGTSNE_CACHE=$dir/sgtsne traced "cold-$r"
done
# Warm: the last cold run's caches, now filled.
for r in $(seq 1 "$runs"); do
  CUDA_CACHE_PATH=$dir/cuda SGTSNE_CACHE=$dir/sgtsne traced "warm-$r"
done
names=()
for r in $(seq 1 "$runs"); do names+=("warm-$r"); done
medians "MNIST warm" "${names[@]}"
bench_end
