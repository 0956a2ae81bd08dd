#!/usr/bin/env bash
# GPU machine: what a first run costs against warm runs, MNIST 70k 2-D, defaults, with the
# caches a fresh machine lacks emptied: the driver's (CUDA_CACHE_PATH, where the driver keeps
# the cuFFT kernels it compiles) and the program's (SGTSNE_CACHE: kernels NVRTC compiled and
# the record of warm FFT plans). The machine's own first driver start is not repeated.
#
#   scripts/bench/first_run.sh            # RUNS rounds (default 3), about 30 s
#
# Each round: a cold run with the helper processes that compile cuFFT's kernels (the
# default), a cold run without them (SGTSNE_FFT_HELPERS=0), in turn first; then RUNS warm
# runs. Each run's line has its wall and stages; the trace's kNN stage and the optimisation's
# start show where a cold run waits. Writes $OUT/first-run.txt and $OUT/first-run.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_begin first-run
runs=${RUNS:-3}
mnist_input
caches=$work/caches
rm -rf "$caches"

# traced NAME ARGS...: `embed NAME ARGS` with SGTSNE_TRACE=1, then when the kNN stage and
# the optimisation began and what the helpers were given, from the trace.
traced() {
  local name=$1
  shift
  SGTSNE_TRACE=1 embed "$name" "${mnist[@]}" --backend gpu --iters 1000 "$@" || return 1
  python3 - "$work/$name.err" <<'PY' | tee -a "$summary"
import re, sys
at = {}
helpers = ""
for line in open(sys.argv[1]):
    m = re.match(r"trace\s+([0-9.]+) s\s+\S+\s+(.*?)(?:\s+\[rss .*)?$", line)
    if not m:
        continue
    t, what = float(m.group(1)), m.group(2).strip()
    for key in ("CUDA libraries probed", "GPU 0: the driver started", "GPU 0: ready",
                "stage knn", "stage optimise", "end"):
        if what.startswith(key) and key not in at:
            at[key] = t
    if what.startswith("cuFFT:"):
        helpers = what
print("   trace: " + ", ".join(f"{k} {v:.3f} s" for k, v in at.items()) + (f"; {helpers}" if helpers else ""))
PY
}

for r in $(seq 1 "$runs"); do
  order=("helpers" "alone")
  [ $((r % 2)) -eq 0 ] && order=("alone" "helpers")
  for side in "${order[@]}"; do
    dir=$caches/$side-$r
    mkdir -p "$dir/cuda" "$dir/sgtsne"
    helpers=8
    [ "$side" = alone ] && helpers=0
    CUDA_CACHE_PATH=$dir/cuda SGTSNE_CACHE=$dir/sgtsne SGTSNE_FFT_HELPERS=$helpers \
      traced "cold-$side-$r"
  done
done
# Warm: the caches of the last cold run with helpers, now filled, with its record of warm
# plans (so that no helper starts).
dir=$caches/helpers-$runs
say "the record of warm plans: $(cat "$dir"/sgtsne/fft-plans/*.txt 2> /dev/null | wc -l) plans"
for r in $(seq 1 "$runs"); do
  CUDA_CACHE_PATH=$dir/cuda SGTSNE_CACHE=$dir/sgtsne traced "warm-$r"
done
names=()
for r in $(seq 1 "$runs"); do names+=("warm-$r"); done
medians "MNIST warm" "${names[@]}"
bench_end
