#!/usr/bin/env bash
# GPU machine: what the fused kNN's merges cost, against the merge threshold
# (SGTSNE_KNN_MERGE, default 24, 8 before 2026-12-07: a query's queue of candidates is
# merged into its 128-long list in global memory once it holds more than this). `sgtsne
# knn` on MNIST 70k (exact, the fused sweep over all points), the 1.3M mixture of 40
# clusters and the 10M mixture of 100 clusters (approximate, the IVF sweep), at each
# threshold in turn: seconds, the sweep's seconds, recall and candidates a query.
#
#   scripts/bench/knn_merge.sh [THRESHOLD...]     # default: 8 24 40
#
# A threshold other than 24 compiles the kernel file once (the shipped cubins hold 24): each
# is warmed up on MNIST first. About 3 minutes with the 10M input made (2 GB, in
# .bench/gen). Writes $OUT/knn-merge.txt and $OUT/knn-merge.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_begin knn-merge
[ $# -gt 0 ] || set -- 8 24 40

mnist_input
for m in "$@"; do SGTSNE_KNN_MERGE=$m knn "warm-up-$m" "${mnist[0]}" > /dev/null; done
for round in 1 2; do
  for m in "$@"; do SGTSNE_KNN_MERGE=$m knn "mnist-m$m-$round" "${mnist[0]}"; done
done
mixture 1300000
for round in 1 2; do
  for m in "$@"; do SGTSNE_KNN_MERGE=$m knn "1300k-m$m-$round" "${input[0]}" --knn approx; done
done
mixture 10000000 100
for m in "$@"; do SGTSNE_KNN_MERGE=$m knn "10m-m$m" "${input[0]}" --knn approx; done
bench_end
