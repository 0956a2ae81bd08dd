#!/usr/bin/env bash
# GPU machine with several GPUs: the run's start over 2 and all GPUs, two builds run for run
# (A .bench/base/sgtsne from scripts/bench/stage_base.sh COMMIT, B .bench/bin/sgtsne; A_BIN
# and B_BIN name others). A 70k mixture, where the start is most of the run, embedded with
# SGTSNE_TRACE=1 on 2 GPUs, then on all, RUNS times (default 3) a build, interleaved A, B,
# after one untimed run of each: per run the times since the process began at which GPU 0
# and the last GPU were ready and the kNN stage began, and the wall. About 1 minute.
#
# Writes $OUT/gpu-start.txt (with the last run's whole trace) and $OUT/gpu-start.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
a_bin=${A_BIN:-$bench_root/.bench/base/sgtsne}
b_bin=${B_BIN:-$sgtsne}
runs=${RUNS:-3}
bench_begin gpu-start
nccl_path
gpus=$(nvidia-smi --list-gpus | wc -l)
say "a: $a_bin; b: $b_bin; gpus: $gpus"
mixture 70000
for bin in "$a_bin" "$b_bin"; do
  "$bin" embed "${input[@]}" --backend gpu --gpus "$gpus" -o "$work/warm.npy" --quiet
done
for g in $(printf '%s\n' 2 "$gpus" | sort -nu); do
  for r in $(seq 1 "$runs"); do
    for side in a b; do
      bin=${side}_bin
      trace=$work/trace-g$g-$r-$side.txt
      t0=$(date +%s.%N)
      SGTSNE_TRACE=1 "${!bin}" embed "${input[@]}" --backend gpu --gpus "$g" \
        -o "$work/out.npy" --quiet 2> "$trace"
      t1=$(date +%s.%N)
      ready=$(grep -m1 "GPU 0: ready" "$trace" | awk '{print $2}')
      last=$(grep "GPU [0-9]*: ready" "$trace" | awk '{print $2}' | sort -n | tail -n 1)
      knn=$(grep -m1 "stage knn" "$trace" | awk '{print $2}')
      wall=$(python3 -c "print(round($t1 - $t0, 3))")
      say "$side, $g GPUs, run $r: GPU 0 ready $ready s, the last $last s, kNN stage $knn s, wall $wall s"
    done
  done
done
say "the last run's trace:"
grep "^trace" "$trace" | tee -a "$summary"
bench_end
