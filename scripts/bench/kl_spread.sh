#!/usr/bin/env bash
# GPU machine: the run-to-run spread of KL on the 10M × 50 mixture, and whether the runs
# with a higher KL are those whose embedding stretched the repulsion's grid (a few points far
# from the bulk): RUNS runs (4 by default) of `embed --backend gpu --knn approx --gpus GPUS`
# (1 by default), each with its summary line and scripts/bench/spread.py's line.
#
#   RUNS=4 GPUS=1 scripts/bench/kl_spread.sh
#   EMBED_ARGS="--max-step-norm none" scripts/bench/kl_spread.sh    # more flags for each run
#
# One untimed warm-up embed of a 200k mixture first. About 45 s a run on one H100.
# Writes $OUT/kl-spread.txt and $OUT/kl-spread.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_begin kl-spread
gpus=${GPUS:-1}
read -r -a extra <<< "${EMBED_ARGS:-}"
mixture 200000
"$sgtsne" embed "${input[@]}" --knn approx --backend gpu --gpus "$gpus" -o "$work/warm.npy" \
  --quiet 2> /dev/null
mixture 10000000
for r in $(seq 1 "${RUNS:-4}"); do
  embed "10m-g$gpus-$r" "${input[@]}" --backend gpu --knn approx --gpus "$gpus" "${extra[@]}" &&
    spread "10m-g$gpus-$r"
done
bench_end
