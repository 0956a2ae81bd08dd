#!/usr/bin/env bash
# GPU machine: the large mixtures of the speed targets, `sgtsne gen --n N --dim 50 --clusters
# 100` (10M and 20M points, made once into .bench/gen/), 2-D, 1000 iterations, defaults
# otherwise; and what bounds them: the approximate kNN's recall against its probes, and the
# attraction's floors. Writes $OUT/big-mixtures.txt and $OUT/big-mixtures.tgz.
#
#   scripts/bench/big_mixtures.sh [SECTION...]        # default: 10m 20m
#
#   10m     10M: `embed` ×RUNS (default 2), with the run's trace (SGTSNE_TRACE) in the archive
#           (about 35 s a run on an H100)
#   20m     20M: `embed` ×1 (about 75 s on an H100; 52 GB of device memory)
#   probes  `sgtsne knn --knn approx` on 10M and 20M at 64 (the default), 32 and 16 probes,
#           and at 16 without refinement: seconds, sample recall, candidates per query
#           (about 4 minutes; each input deleted after its runs)
#   floors  scripts/bench/attract_floors.py --floors-only at 10M and 20M, 30 equal clusters
#           (about the 100-cluster mixtures' mean cluster for a point: 3 % of n): the
#           attraction over a synthetic P of 158 random neighbours a row within its
#           cluster, its gathers alone and its stream alone (CuPy; about a minute)
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_begin big-mixtures
runs=${RUNS:-2}

[ $# -gt 0 ] || set -- 10m 20m
for section in "$@"; do
  case $section in
    10m | 20m)
      n=${section%m}000000
      mixture "$n" 100
      names=()
      for r in $(seq 1 "$([ "$section" = 10m ] && echo "$runs" || echo 1)"); do
        SGTSNE_TRACE=1 embed "$section-$r" "${input[@]}" --backend gpu --iters 1000 &&
          names+=("$section-$r")
        rm -f "$work/$section-$r.npy"
      done
      [ ${#names[@]} -gt 1 ] && medians "$section, 100 clusters" "${names[@]}"
      ;;
    probes)
      for n in 10000000 20000000; do
        mixture "$n" 100
        knn "knn-$n-p64" "${input[0]}" --knn approx
        knn "knn-$n-p32" "${input[0]}" --knn approx --knn-probes 32
        knn "knn-$n-p16" "${input[0]}" --knn approx --knn-probes 16
        knn "knn-$n-p16-no-refine" "${input[0]}" --knn approx --knn-probes 16 \
          --knn-refine-below 0
        rm -f "${input[0]}"
      done
      ;;
    floors)
      for n in 10000000 20000000; do
        say "attraction floors, $n points, 30 equal clusters:"
        python3 "$bench_dir/attract_floors.py" --n "$n" --clusters 30 --floors-only 2>&1 |
          tee -a "$summary"
      done
      ;;
    *) say "unknown section $section (10m, 20m, probes, floors)" ;;
  esac
done
bench_end
