#!/usr/bin/env bash
# GPU machine: levers of the optimiser that might reach a converged map in fewer iterations
# (issue of converged maps; benches/RESULTS.md, convergence), on 1.3M deformed MNIST digits
# and on MNIST 70k, `embed --backend gpu`, one run each: the defaults at ITERS (default
# 1000,3000), then each lever at the same counts. Each run's summary line gives KL, 10-NN
# accuracy and preservation and the seconds.
#
#   ITERS=1000,3000 scripts/bench/converge_levers.sh [mnist] [digits]   # default: both
#
# Levers (flags of `sgtsne embed`): --momentum 0.9; --max-step-norm none; a longer early
# phase (--early-exaggeration-iters 500); --learning-rate n/4.
# Needs .bench/bin (or SGTSNE_BIN), .bench/data and .bench/images
# (scripts/bench/stage_images.sh). About 3 minutes. Writes $OUT/converge-levers.txt.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_begin converge-levers
sections=("$@")
[ ${#sections[@]} -gt 0 ] || sections=(mnist digits)
IFS=, read -r -a counts <<< "${ITERS:-1000,3000}"
mnist_input
"$sgtsne" embed "${mnist[@]}" --backend gpu -o "$work/warm.npy" --quiet 2> /dev/null
levers() {
  local name=$1 n=$2 iters
  shift 2
  for iters in "${counts[@]}"; do
    embed "$name-base-$iters" "$@" --backend gpu --iters "$iters"
    embed "$name-mom09-$iters" "$@" --backend gpu --iters "$iters" --momentum 0.9
    embed "$name-nostep-$iters" "$@" --backend gpu --iters "$iters" --max-step-norm none
    embed "$name-ee500-$iters" "$@" --backend gpu --iters "$iters" --early-exaggeration-iters 500
    embed "$name-lr4-$iters" "$@" --backend gpu --iters "$iters" --learning-rate $((n / 4))
  done
}
for section in "${sections[@]}"; do
  case $section in
    mnist) levers mnist 70000 "${mnist[@]}" ;;
    digits) digits 1300000; levers digits1m3 1300000 "${input[@]}" ;;
    *) say "unknown section $section (mnist, digits)"; exit 2 ;;
  esac
done
bench_end
