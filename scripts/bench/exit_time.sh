#!/usr/bin/env bash
# GPU machine: how long `sgtsne knn` and `sgtsne gmm` on the GPU take to end after their
# work, two builds run for run (as ab.sh: A .bench/base/sgtsne, B .bench/bin/sgtsne): each
# run traced (SGTSNE_TRACE=1), its wall time (/usr/bin/time) against its last trace point
# ("end", as `main` returns): what is left is the process's exit, where the driver tears
# down each GPU's context unless the command ended them beside its writing.
#
#   A_BIN=… B_BIN=… RUNS=2 GPUS=1 scripts/bench/exit_time.sh
#
# knn: the 1.3M mixture, k = 90, `--knn approx` on GPUS GPUs (at 10M a run took 68 s on one
# H100, 50 s of it writing the 14.4 GB .npz, 34 s since 089aaec; the exit does not grow
# with n); gmm: a 1M × 10 mixture, K = 10, `--backend gpu` (a few seconds). One untimed
# warm-up of each command and build first. Writes $OUT/exit-time.txt and $OUT/exit-time.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
runs=${RUNS:-2}
gpus=${GPUS:-1}
bench_begin exit-time
ab_binaries
nccl_path
mixture 1300000
knn_input=${input[0]}
small=$gen_dir/gen1000000_d10_c10.npy
[ -s "$small" ] || logged gen-small "$sgtsne" gen --n 1000000 --dim 10 --clusters 10 -o "$small"

# run SIDE COMMAND NAME: one traced run of COMMAND (knn or gmm) with SIDE's build; one
# summary line: wall, last trace point, and the seconds between them.
run() {
  local side=$1 command=$2 name=$3 bin=${1}_bin
  local args
  case $command in
    knn) args=(knn "$knn_input" -k 90 --knn approx --backend gpu --gpus "$gpus" -o "$work/$name.npz") ;;
    gmm) args=(gmm "$small" -k 10 --backend gpu -o "$work/$name.npy") ;;
  esac
  SGTSNE_TRACE=1 /usr/bin/time -f "%e" -o "$work/$name.time" "${!bin}" "${args[@]}" --quiet \
    2> "$work/$name.err" || { say "$name: failed"; return 1; }
  python3 - "$work/$name" << 'PY' | tee -a "$summary"
import re, sys
f = sys.argv[1]
wall = float(open(f + ".time").read().split()[0])
last = 0.0
for line in open(f + ".err", errors="replace"):
    m = re.match(r"trace\s+([\d.]+) s", line)
    if m:
        last = max(last, float(m[1]))
print("%s: wall %.2f s, last trace point %.2f s, exit %.2f s" % (f.split("/")[-1], wall, last, wall - last))
PY
  # The archive keeps the traces, not the outputs (a 1.3M run's .npz is 1.9 GB).
  rm -f "$work/$name.npz"
}

status=0
for command in knn gmm; do
  run a "$command" "warm-$command-a" > /dev/null || status=1
  run b "$command" "warm-$command-b" > /dev/null || status=1
done
ab_runs "$runs" knn gmm || status=1
bench_end
exit "$status"
