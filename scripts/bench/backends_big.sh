#!/usr/bin/env bash
# GPU machine: the three backends on the 1.3M × 50 mixture (`sgtsne gen --n 1300000 --dim 50
# --clusters 40`, made into .bench/gen/), the tables "the three backends at 1.3M" of
# benches/RESULTS.md. After one short gpu warm-up run (20 iterations): gpu and hybrid with
# the default 1000 iterations, and cpu with exact kNN and 100 iterations (25 exaggerated;
# its kNN alone takes about 110 s on 16 cores), compared per iteration. `--order auto`:
# input on gpu, locality on hybrid and cpu. About 5 minutes per dimension on the H100
# machine (hybrid about 2, cpu about 2.5): one dimension at a time stays under 10 minutes.
#
#   scripts/bench/backends_big.sh [DIMS]        # 2 (default) or 3
#
# Output: $OUT/backends-big-<DIMS>d.txt and .tgz (hybrid lines add the per-evaluation
# medians and the overlap).
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
dims=${1:-2}
bench_begin "backends-big-${dims}d"
big_input
embed warmup "${big[@]}" --backend gpu --iters 20 --early-exaggeration-iters 5
embed "big-${dims}d-gpu" "${big[@]}" --backend gpu --dims "$dims"
embed "big-${dims}d-hybrid" "${big[@]}" --backend hybrid --dims "$dims"
embed "big-${dims}d-cpu-100it" "${big[@]}" --backend cpu --dims "$dims" --knn exact \
  --iters 100 --early-exaggeration-iters 25
bench_end
