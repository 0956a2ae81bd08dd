#!/usr/bin/env bash
# GPU machine: `sgtsne embed --knn-from` a neighbour file of the N-point mixture (k = 90,
# made once by `sgtsne knn --knn approx` on the gpu backend) in each internal numbering of
# ORDERS ("default": no --order; otherwise the --order value): the attraction gathers
# y by P's columns, so the numbering decides its speed. One summary line a run (wall, stages,
# attraction, KL, 10-NN accuracy, preservation).
#
#   N=10000000 RUNS=1 ORDERS="default locality" scripts/bench/knn_from_order.sh
#
# One untimed warm-up embed of a 200k mixture first. At 10M about 35 s for the file and
# 50–75 s a run on one H200. Writes $OUT/knn-from-order.txt and $OUT/knn-from-order.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
n=${N:-10000000}
bench_begin knn-from-order
mixture 200000
"$sgtsne" embed "${input[@]}" --knn approx --backend gpu -o "$work/warm.npy" --quiet 2> /dev/null
mixture "$n"
neighbours=$work/neighbours.npz
logged knn-once "$sgtsne" knn "${input[0]}" -k 90 --knn approx --backend gpu -o "$neighbours" ||
  exit 1
status=0
for r in $(seq 1 "${RUNS:-1}"); do
  for order in ${ORDERS:-default locality}; do
    extra=()
    [ "$order" = default ] || extra=(--order "$order")
    embed "knn-from-$order-$r" "${input[@]}" --knn-from "$neighbours" --backend gpu \
      "${extra[@]}" || status=1
  done
done
rm -f "$neighbours"
bench_end
exit "$status"
