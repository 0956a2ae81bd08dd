#!/usr/bin/env bash
# GPU machine: `--max-step-norm` (the longest step a point takes in one iteration, default
# 5) against `none` on MNIST 70k and 1.3M (or 10M) deformed digits, `embed --backend gpu`, the two
# settings interleaved RUNS times (3 by default) after warm-ups on MNIST; each run's summary line
# (KL, 10-NN accuracy and preservation, G2G seconds, grid and its changes) and
# scripts/bench/spread.py's line (the embedding's spread). The 10M mixture's runs are
# `scripts/bench/kl_spread.sh` with and without EMBED_ARGS="--max-step-norm none".
#
#   RUNS=3 scripts/bench/step_limit.sh [mnist] [digits] [digits3d] [digits10m]
#                                                      # default: mnist digits
#   digits3d   1.3M deformed digits in 3-D (about 15 s a run)
#   digits10m  10M deformed digits (`--knn approx`; about 1 minute a run)
#
# Needs .bench/bin and .bench/images (scripts/bench/stage_images.sh) for the digits, and
# .bench/data for MNIST. About 2 minutes. Writes $OUT/step-limit.txt and $OUT/step-limit.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_begin step-limit
sections=("$@")
[ ${#sections[@]} -gt 0 ] || sections=(mnist digits)
mnist_input
for knn in exact approx; do
  "$sgtsne" embed "${mnist[@]}" --backend gpu --knn "$knn" -o "$work/warm.npy" --quiet 2> /dev/null
done
both() {
  local name=$1 r s
  shift
  for r in $(seq 1 "${RUNS:-3}"); do
    for s in 5 none; do
      embed "$name-$s-$r" "$@" --backend gpu --max-step-norm "$s" && spread "$name-$s-$r"
    done
  done
}
for section in "${sections[@]}"; do
  case $section in
    mnist) both mnist "${mnist[@]}" ;;
    digits) digits 1300000; both digits1m3 "${input[@]}" ;;
    digits3d)
      "$sgtsne" embed "${mnist[@]}" --backend gpu --dims 3 -o "$work/warm.npy" --quiet 2> /dev/null
      digits 1300000
      both digits1m3-3d "${input[@]}" --dims 3 ;;
    digits10m) digits 10000000; both digits10m "${input[@]}" --knn approx ;;
    *) say "unknown section $section (mnist, digits, digits3d, digits10m)"; exit 2 ;;
  esac
done
bench_end
