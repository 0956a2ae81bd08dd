#!/usr/bin/env bash
# GPU machine: the node budget of `--iters auto` (src/params.rs, `auto_grid_budget`): the
# grid held to a few nodes a point with the near field on, against the grid without a
# budget (`--near-field off`, the schedule of `--iters auto` before the budget) and against
# `--iters 1000`, on MNIST 70k and on N deformed digits. The variants of a round run in
# turn, each round starting one later, so that no variant always runs first; then the
# medians per variant. Then the force error of the near field's grids on MNIST, by
# `sgtsne sweep --config configs/sweep-mnist-2d-near.toml`.
#
#   scripts/bench/auto_budget.sh [mnist] [digits N]... [accuracy N]... [sweep]
#                                     # default: mnist sweep
#   accuracy N   N deformed digits (or `mnist`) at 1000 and 2000 iterations of the default
#                schedule, under `--iters auto`, with its coarse step begun at once
#                (`--coarse-delay 0`), and without the coarse step
#
# Environment: RUNS (rounds, default 3), PER_POINT (other budgets to run, in nodes a point,
# default "1 4"), BACKEND (default gpu).
# Needs .bench/bin (or SGTSNE_BIN) and .bench/data; digits also .bench/images
# (scripts/bench/stage_images.sh). MNIST: about a minute. Writes $OUT/auto-budget.txt.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_begin auto-budget
backend=${BACKEND:-gpu}
read -r -a per_point <<< "${PER_POINT-1 4}"

# Why run NAME stopped, and its grid's budget and near field (the summary line has the
# rest).
stop_line() {
  python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
o, p = r["optimise"], r["params"]
print("  %s: stop %s, budget %s, near field %s" % (sys.argv[2], o.get("auto_stop", "fixed"),
      p.get("grid_max_nodes"), p.get("near_field")))' "$work/$1.json" "$1" | tee -a "$summary"
}

# compare LABEL N INPUT...: the rounds of every variant on INPUT (N points), then medians.
compare() {
  local label=$1 n=$2 r i k
  shift 2
  local names=(fixed auto unbudgeted)
  local args=("--iters 1000" "--iters auto" "--iters auto --near-field off")
  for k in "${per_point[@]}"; do
    names+=("per$k")
    args+=("--iters auto --grid-max-nodes $((k * n)) --near-field on")
  done
  local count=${#names[@]}
  for r in $(seq 1 "${RUNS:-3}"); do
    for i in $(seq 0 $((count - 1))); do
      local at=$(((i + r - 1) % count))
      local name="$label-${names[$at]}-$r"
      read -r -a extra <<< "${args[$at]}"
      embed "$name" "$@" --backend "$backend" "${extra[@]}" && stop_line "$name"
    done
  done
  for name in "${names[@]}"; do
    medians "$label-$name" $(for r in $(seq 1 "${RUNS:-3}"); do echo "$label-$name-$r"; done)
  done
}

sections=("$@")
[ ${#sections[@]} -gt 0 ] || sections=(mnist sweep)
mnist_input
"$sgtsne" embed "${mnist[@]}" --backend "$backend" --iters 10 -o "$work/warm.npy" --quiet 2> /dev/null
i=0
while [ $i -lt ${#sections[@]} ]; do
  case ${sections[$i]} in
    mnist) compare mnist 70000 "${mnist[@]}" ;;
    digits)
      i=$((i + 1))
      digits "${sections[$i]}"
      compare "digits${sections[$i]}" "${sections[$i]}" "${input[@]}" ;;
    accuracy)
      # Which part of the auto schedule moves the 10-NN accuracy: 1000 and 2000 iterations
      # of the default schedule, `--iters auto`, and it with the coarse step begun at once
      # after the early phase (as before `--coarse-delay`), then without the coarse step.
      i=$((i + 1))
      if [ "${sections[$i]}" = mnist ]; then
        input=("${mnist[@]}")
      else
        digits "${sections[$i]}"
      fi
      for variant in "iters 1000" "iters 2000" "auto" "auto delay 0" "auto coarse 0"; do
        case $variant in
          "iters 1000") extra=(--iters 1000) ;;
          "iters 2000") extra=(--iters 2000) ;;
          auto) extra=(--iters auto) ;;
          "auto delay 0") extra=(--iters auto --coarse-delay 0) ;;
          *) extra=(--iters auto --coarse-boost 0) ;;
        esac
        name="accuracy${sections[$i]}-${variant// /-}"
        embed "$name" "${input[@]}" --backend "$backend" "${extra[@]}" && stop_line "$name"
      done ;;
    sweep)
      logged sweep-near "$sgtsne" sweep --config configs/sweep-mnist-2d-near.toml \
        --out "$work/sweeps" &&
        grep -h . "$work"/sweeps/*.csv | tee -a "$summary" ;;
    *) say "unknown section ${sections[$i]}"; exit 1 ;;
  esac
  i=$((i + 1))
done
bench_end
