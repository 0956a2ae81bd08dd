#!/usr/bin/env bash
# GPU machine: how long the commands take to write and read their arrays, two builds run for
# run (as ab.sh: A .bench/base/sgtsne, B .bench/bin/sgtsne): `sgtsne gen` of an N × 50
# mixture (2 GB at 10M; its summary line's write), `sgtsne knn` of it (k = 90, `--knn
# approx`, the .npz of indices and distances: 14.4 GB at 10M; the report's write), `sgtsne
# embed` of it (the report's write of the n × 2 embedding) and `sgtsne embed --knn-from` a
# neighbour file of it (made once by B's `knn`; the report's load, the points' and the
# neighbours' read), each with its wall time.
#
#   A_BIN=… B_BIN=… N=10000000 RUNS=1 COMMANDS="gen knn embed knn-from" scripts/bench/io_time.sh
#
# The outputs go to the work folder (BENCH_WORK; at 10M it needs about 35 GB free) and are
# removed after each run. One untimed warm-up embed of a 200k mixture per build first.
# Writes $OUT/io-time.txt and $OUT/io-time.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
n=${N:-10000000}
runs=${RUNS:-1}
commands=${COMMANDS:-gen knn embed knn-from}
bench_begin io-time
ab_binaries
mixture 200000
for side in a b; do
  bin=${side}_bin
  "${!bin}" embed "${input[@]}" --knn approx --backend gpu -o "$work/warm.npy" --quiet 2> /dev/null
done
mixture "$n"
neighbours=$work/neighbours.npz
logged knn-once "$b_bin" knn "${input[0]}" -k 90 --knn approx --backend gpu -o "$neighbours" ||
  exit 1

# run SIDE COMMAND NAME: one timed run of COMMAND (gen, knn, embed or knn-from) with SIDE's
# build; one summary line with its wall and its write (knn-from: load) seconds.
run() {
  local side=$1 command=$2 name=$3 bin=${1}_bin
  local args
  case $command in
    gen) args=(gen --n "$n" --dim 50 --clusters 40 -o "$work/$name.npy") ;;
    knn) args=(knn "${input[0]}" -k 90 --knn approx --backend gpu -o "$work/$name.npz"
      --report "$work/$name.json" --quiet) ;;
    embed) args=(embed "${input[@]}" --knn approx --backend gpu -o "$work/$name.npy"
      --report "$work/$name.json" --quiet) ;;
    knn-from) args=(embed "${input[@]}" --knn-from "$neighbours" --backend gpu
      -o "$work/$name.npy" --report "$work/$name.json" --quiet) ;;
  esac
  /usr/bin/time -f "%e" -o "$work/$name.time" "${!bin}" "${args[@]}" > "$work/$name.log" 2>&1 ||
    { say "$name: failed"; return 1; }
  python3 - "$work/$name" "$command" << 'PY' | tee -a "$summary"
import json, os, re, sys
f, command = sys.argv[1:]
wall = float(open(f + ".time").read().split()[0])
what = "write"
if command == "gen":
    secs = float(re.search(r"write ([\d.]+) s", open(f + ".log").read())[1])
    size = os.path.getsize(f + ".npy")
elif command == "knn-from":
    what, secs = "load", json.load(open(f + ".json"))["seconds"]["load"]
    size = os.path.getsize(os.path.join(os.path.dirname(f), "neighbours.npz"))
else:
    secs = json.load(open(f + ".json"))["seconds"]["write"]
    size = os.path.getsize(f + (".npz" if command == "knn" else ".npy"))
print("%s: wall %.2f s, %s %.2f s (%.2f GB, %.2f GB/s)" % (
    f.split("/")[-1], wall, what, secs, size / 1e9, size / 1e9 / max(secs, 1e-9)))
PY
  rm -f "$work/$name.npy" "$work/$name.npz"
}

status=0
# shellcheck disable=SC2086 # the commands are words
ab_runs "$runs" $commands || status=1
rm -f "$neighbours"
bench_end
exit "$status"
