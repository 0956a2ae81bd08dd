#!/usr/bin/env bash
# GPU machine: the points' internal order with the exact kNN, `--order input` against
# `--order locality` (a PCA tree's leaf order, `--order auto` there), `embed --backend gpu`,
# interleaved RUNS times (3 by default) after a warm-up on MNIST: MNIST 70k, 250k and
# 400k deformed digits (the exact kNN's sizes under `--knn auto`) and 1.3M with `--knn
# exact`. Each run's summary line (wall, the order's, kNN's and optimisation's seconds,
# attraction, KL, 10-NN accuracy and preservation).
#
#   RUNS=3 scripts/bench/order_gpu.sh [mnist] [digits] [digits1m3]   # default: all three
#
# Needs .bench/bin and .bench/images (scripts/bench/stage_images.sh) for the digits, and
# .bench/data for MNIST. About 2 minutes. Writes $OUT/order-gpu.txt and $OUT/order-gpu.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_begin order-gpu
sections=("$@")
[ ${#sections[@]} -gt 0 ] || sections=(mnist digits digits1m3)
mnist_input
"$sgtsne" embed "${mnist[@]}" --backend gpu -o "$work/warm.npy" --quiet 2> /dev/null
both() {
  local name=$1 r o
  shift
  for r in $(seq 1 "${RUNS:-3}"); do
    for o in input locality; do
      embed "$name-$o-$r" "$@" --backend gpu --knn exact --order "$o"
    done
  done
  medians "$name input" $(for r in $(seq 1 "${RUNS:-3}"); do echo "$name-input-$r"; done)
  medians "$name locality" $(for r in $(seq 1 "${RUNS:-3}"); do echo "$name-locality-$r"; done)
}
for section in "${sections[@]}"; do
  case $section in
    mnist) both mnist "${mnist[@]}" ;;
    digits)
      for n in 250000 400000; do digits "$n"; both "digits$n" "${input[@]}"; done ;;
    digits1m3) digits 1300000; both digits1m3 "${input[@]}" ;;
    *) say "unknown section $section (mnist, digits, digits1m3)"; exit 2 ;;
  esac
done
bench_end
