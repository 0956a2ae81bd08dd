#!/usr/bin/env bash
# GPU machine: what `--deterministic` costs and what varies without it, the table
# "deterministic runs" of benches/RESULTS.md. Binaries and MNIST from .bench/
# (scripts/bench/stage.sh); the 1.3M input is made on the machine (see lib.sh's big_input).
#
#   scripts/bench/deterministic.sh [SECTION...]     # default: mnist big
#
#   mnist  one warm-up run, then MNIST 2-D on gpu ×RUNS (default 5) without the flag and
#          ×RUNS with it (about 30 s)
#   big    gen, one warm-up run, then 1.3M 2-D ×BIG_RUNS (default 3) each way (about 90 s)
#
# Per run the summary line of lib.sh's `embed` and the embedding's md5; per set the medians
# and how many distinct embeddings (1 = bit for bit the same) and the spread of the final
# KL, in $OUT/deterministic.txt.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
sections=${*:-mnist big}
bench_begin deterministic

# runs LABEL COUNT NAME ARGS...: COUNT runs NAME-1..COUNT, then their medians, distinct
# embeddings and KL spread.
runs() {
  local label=$1 count=$2 name=$3
  shift 3
  local done=()
  for r in $(seq "$count"); do
    embed "$name-$r" "$@" && done+=("$name-$r")
  done
  medians "$label" "${done[@]}"
  local sums kls
  sums=$(for n in "${done[@]}"; do md5sum < "$work/$n.npy"; done | sort -u | wc -l)
  kls=$(for n in "${done[@]}"; do
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["optimise"]["final_kl"])' "$work/$n.json"
  done | python3 -c 'import sys; v=[float(x) for x in sys.stdin]; print("KL min %.6f max %.6f spread %.2e" % (min(v), max(v), max(v)-min(v)))')
  say "$label: ${#done[@]} runs, $sums distinct embeddings, $kls"
}

for section in $sections; do
  case $section in
    mnist)
      mnist_input
      embed warmup-mnist "${mnist[@]}" --backend gpu
      embed warmup-mnist-det "${mnist[@]}" --backend gpu --deterministic
      runs "MNIST 2-D gpu" "${RUNS:-5}" mnist "${mnist[@]}" --backend gpu
      runs "MNIST 2-D gpu --deterministic" "${RUNS:-5}" mnist-det "${mnist[@]}" --backend gpu --deterministic
      ;;
    big)
      big_input
      embed warmup-big "${big[@]}" --backend gpu --deterministic
      runs "1.3M 2-D gpu" "${BIG_RUNS:-3}" big "${big[@]}" --backend gpu
      runs "1.3M 2-D gpu --deterministic" "${BIG_RUNS:-3}" big-det "${big[@]}" --backend gpu --deterministic
      ;;
    *) say "unknown section $section" ;;
  esac
done
bench_end
