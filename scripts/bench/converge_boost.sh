#!/usr/bin/env bash
# GPU machine: the coarse step's settings (--coarse-boost β, --coarse-cell H) on MNIST 70k,
# 1.3M and 10M deformed digits at fixed iteration counts with momentum 0.9, each run's KL
# path against a long run's KL by kl_path.py (the first iteration within 1 % of it, and the
# KL at 1000, 1500, … iterations). A variant is β:H, or 0 for no coarse step.
#
#   VARIANTS="0 1.5:20 3:20 3:40" ITERS=4000 scripts/bench/converge_boost.sh
#   MNIST_VARIANTS="0 3:20" (2000 iterations)  VARIANTS10="0 3:20" ITERS10=2500
#   REF_KL (default 4.764, the 1.3M digits' 10000-iteration KL), REF_KL10 (6.397, 10M's 5000)
# EMBED_ARGS is added to every run. Writes $OUT/converge-boost.txt.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_begin converge-boost
read -r -a extra <<< "${EMBED_ARGS:-}"
mnist_input
"$sgtsne" embed "${mnist[@]}" --iters 10 -o "$work/warm.npy" --quiet 2> /dev/null
path() {
  python3 "$bench_dir/kl_path.py" "$work/$1.json" "$2" --at 1000,1500,2000,2500,3000,3500,4000 | tee -a "$summary"
}
variant() { # variant NAME VARIANT REF ARGS...: the run with the variant's coarse step
  local name=$1 v=$2 ref=$3 boost=(--coarse-boost 0)
  shift 3
  [ "$v" = 0 ] || boost=(--coarse-boost "${v%%:*}" --coarse-cell "${v##*:}")
  embed "$name" "$@" "${boost[@]}" && path "$name" "$ref"
}
for v in ${MNIST_VARIANTS-0}; do
  variant "mnist-${v//:/_}" "$v" 2.40 "${mnist[@]}" --iters 2000 --momentum 0.9 "${extra[@]}"
done
if [ -n "${VARIANTS-0}" ]; then
  digits 1300000
  for v in ${VARIANTS-0}; do
    variant "digits-${v//:/_}" "$v" "${REF_KL:-4.764}" "${input[@]}" --iters "${ITERS:-4000}" --momentum 0.9 "${extra[@]}"
  done
fi
if [ -n "${VARIANTS10-}" ]; then
  digits 10000000
  for v in $VARIANTS10; do
    variant "digits10m-${v//:/_}" "$v" "${REF_KL10:-6.397}" "${input[@]}" --knn approx --iters "${ITERS10:-2500}" --momentum 0.9 "${extra[@]}"
  done
fi
bench_end
