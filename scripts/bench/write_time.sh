#!/usr/bin/env bash
# GPU machine: how long the commands take to write their arrays, two builds run for run (as
# ab.sh: A .bench/base/sgtsne, B .bench/bin/sgtsne): `sgtsne gen` of an N × 50 mixture (2 GB
# at 10M; its summary line's write), `sgtsne knn` of it (k = 90, `--knn approx`, the .npz of
# indices and distances: 14.4 GB at 10M; the report's write) and `sgtsne embed` of it (the
# report's write of the n × 2 embedding), each with its wall time.
#
#   A_BIN=… B_BIN=… N=10000000 RUNS=1 scripts/bench/write_time.sh
#
# The outputs go to the work folder (BENCH_WORK; at 10M it needs about 35 GB free) and are
# removed after each run. One untimed warm-up embed of a 200k mixture per build first.
# Writes $OUT/write-time.txt and $OUT/write-time.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
n=${N:-10000000}
runs=${RUNS:-1}
bench_begin write-time
ab_binaries
mixture 200000
for side in a b; do
  bin=${side}_bin
  "${!bin}" embed "${input[@]}" --knn approx --backend gpu -o "$work/warm.npy" --quiet 2> /dev/null
done
mixture "$n"

# run SIDE COMMAND NAME: one timed run of COMMAND (gen, knn or embed) with SIDE's build; one
# summary line with its wall and write seconds.
run() {
  local side=$1 command=$2 name=$3 bin=${1}_bin
  local args
  case $command in
    gen) args=(gen --n "$n" --dim 50 --clusters 40 -o "$work/$name.npy") ;;
    knn) args=(knn "${input[0]}" -k 90 --knn approx --backend gpu -o "$work/$name.npz"
      --report "$work/$name.json" --quiet) ;;
    embed) args=(embed "${input[@]}" --knn approx --backend gpu -o "$work/$name.npy"
      --report "$work/$name.json" --quiet) ;;
  esac
  /usr/bin/time -f "%e" -o "$work/$name.time" "${!bin}" "${args[@]}" > "$work/$name.log" 2>&1 ||
    { say "$name: failed"; return 1; }
  python3 - "$work/$name" "$command" << 'PY' | tee -a "$summary"
import json, os, re, sys
f, command = sys.argv[1:]
wall = float(open(f + ".time").read().split()[0])
if command == "gen":
    write = float(re.search(r"write ([\d.]+) s", open(f + ".log").read())[1])
    size = os.path.getsize(f + ".npy")
else:
    write = json.load(open(f + ".json"))["seconds"]["write"]
    size = os.path.getsize(f + (".npz" if command == "knn" else ".npy"))
print("%s: wall %.2f s, write %.2f s (%.2f GB, %.2f GB/s)" % (
    f.split("/")[-1], wall, write, size / 1e9, size / 1e9 / max(write, 1e-9)))
PY
  rm -f "$work/$name.npy" "$work/$name.npz"
}

status=0
ab_runs "$runs" gen knn embed || status=1
bench_end
exit "$status"
