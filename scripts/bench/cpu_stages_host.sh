#!/usr/bin/env bash
# The criterion benches of the CPU optimisation's stages (benches/stages.rs) on another
# machine's cores, e.g. the GPU machine's host, for builds side by side.
#
# On the development machine, per build (the working tree at that build's commit):
#   cargo bench --bench stages --no-run      # prints the bench binary's path
#   strip -o .bench/st/NAME <that path>
# then carry .bench/st to the machine and run there:
#   scripts/bench/cpu_stages_host.sh THREADS RUNS FILTER NAME...
# e.g. `scripts/bench/cpu_stages_host.sh 16 2 '1M/(attract|s2g|g2s)' old new`: each build's
# matching benches RUNS times, builds interleaved, on THREADS rayon workers. About 40 s per
# build and run at 1M (the setup: the layout's kNN and P). Writes $OUT/cpu-stages.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
threads=${1:?threads} runs=${2:?runs} filter=${3:?filter}
shift 3
out=${OUT:-.}/cpu-stages.txt
{
  echo "# cpu stages, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $threads threads, filter $filter"
  lscpu | grep -E "Model name" || true
  for r in $(seq 1 "$runs"); do
    for name in "$@"; do
      echo "== $name, run $r"
      RAYON_NUM_THREADS=$threads ".bench/st/$name" --bench "$filter" --warm-up-time 1 \
        --measurement-time 3 2>&1 | grep -E "^stages|time:"
    done
  done
} 2>&1 | tee "$out"
