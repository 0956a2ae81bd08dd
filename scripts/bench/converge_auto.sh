#!/usr/bin/env bash
# GPU machine: the convergence measures and `--iters auto` against fixed iteration counts
# (benches/RESULTS.md, convergence), `embed --backend gpu`: MNIST 70k and 1.3M deformed
# MNIST digits at several counts, then `--iters auto` with the default rule, and a run with
# an unreachable rule (--auto-stability 1 --auto-kl-drop 0) whose report holds every
# window of the run up to its cap. Each line gives iterations, KL, 10-NN accuracy and
# preservation, the last window's kept fraction and the seconds; the windows of the auto
# runs follow as JSON (iteration, kept, KL fall).
#
#   scripts/bench/converge_auto.sh [mnist] [digits] [digits10m]   # default: mnist digits
#   digits10m  10M deformed digits, 1000 and 5000 iterations and auto (about 5 minutes)
#
# Environment: MNIST_ITERS (default 1000,2000,4000; empty: none), DIGITS_ITERS (default
# 1000,3000,10000; empty: none), RUNS (of `--iters auto`, default 1), CAP (the unreachable
# rule's cap; default 4000 and 10000; 0: no such run), EMBED_ARGS (added to every run, e.g.
# "--momentum 0.9" or "--grid-spacing 0.5"), REF_KL (a long run's KL: each auto run then also
# gets scripts/bench/kl_path.py's line, the first iteration within 1 % of it).
# Needs .bench/bin (or SGTSNE_BIN), .bench/data and .bench/images
# (scripts/bench/stage_images.sh). About 4 minutes. Writes $OUT/converge-auto.txt.
# BACKEND (default gpu) runs them on another backend, e.g. cpu.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_begin converge-auto
sections=("$@")
[ ${#sections[@]} -gt 0 ] || sections=(mnist digits)
read -r -a extra <<< "${EMBED_ARGS:-}"
mnist_input
backend=${BACKEND:-gpu}
"$sgtsne" embed "${mnist[@]}" --backend "$backend" --iters 10 -o "$work/warm.npy" --quiet 2> /dev/null
windows() {
  python3 -c 'import json, sys
o = json.load(open(sys.argv[1]))["optimise"]
print("  windows:", json.dumps([(s["to"], round(s["kept"], 3), None if s.get("kl_drop") is None
      else round(s["kl_drop"], 4)) for s in o.get("stability_history", [])]))' "$work/$1.json" |
    tee -a "$summary"
  [ -z "${REF_KL:-}" ] || python3 "$bench_dir/kl_path.py" "$work/$1.json" "$REF_KL" | tee -a "$summary"
}
runs() {
  local name=$1 counts=$2 cap=$3 iters
  shift 3
  local list=()
  [ -z "$counts" ] || IFS=, read -r -a list <<< "$counts"
  for iters in "${list[@]}"; do
    embed "$name-$iters" "$@" --backend "$backend" --iters "$iters" "${extra[@]}"
  done
  for r in $(seq 1 "${RUNS:-1}"); do
    embed "$name-auto-$r" "$@" --backend "$backend" --iters auto "${extra[@]}" && windows "$name-auto-$r"
  done
  [ "$cap" -gt 0 ] || return 0
  embed "$name-all" "$@" --backend "$backend" --iters auto --iters-cap "$cap" \
    --auto-stability 1 --auto-kl-drop 0 "${extra[@]}" && windows "$name-all"
}
for section in "${sections[@]}"; do
  case $section in
    mnist) runs mnist "${MNIST_ITERS-1000,2000,4000}" "${CAP:-4000}" "${mnist[@]}" ;;
    digits)
      digits 1300000
      runs digits1m3 "${DIGITS_ITERS-1000,3000,10000}" "${CAP:-10000}" "${input[@]}" ;;
    digits10m)
      digits 10000000
      runs digits10m "${DIGITS_ITERS-1000,5000}" "${CAP:-0}" "${input[@]}" --knn approx ;;
    *) say "unknown section $section (mnist, digits, digits10m)"; exit 2 ;;
  esac
done
bench_end
