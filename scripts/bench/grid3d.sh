#!/usr/bin/env bash
# GPU machine: the 3-D grid on real images, 1.3M deformed MNIST digits (lib.sh `digits`;
# carry .bench/images): the grid-size sweeps configs/sweep-3d-digits.toml (the whole kernel
# on the grid) and configs/sweep-3d-digits-near.toml (with the near field) — relative force
# error and time per grid — then `embed --backend gpu` in 2-D (the default) and in 3-D with
# the default grid and the others asked for, for KL, 10-NN accuracy and time side by side
# (the table "3-D grid" of benches/RESULTS.md).
#
#   scripts/bench/grid3d.sh [GRID...]      # 3-D grid flags to try, each one quoted;
#                                          # default: "" "--near-field off"
#   SWEEPS="sweep-3d-digits-near" scripts/bench/grid3d.sh   # the sweeps to run (both)
#   RUNS=1 scripts/bench/grid3d.sh      # embeds of each kind (3), with their medians
#   scripts/bench/grid3d.sh 10m          # the default's force error on 10M digits
#   scripts/bench/grid3d.sh 10m-embed    # 3-D embeds of them, with and without the near field
#   scripts/bench/grid3d.sh budget       # 3-D's node budget (4 a point, src/params.rs) against
#                                        # the 160³ cap: MNIST, 250k and 500k deformed digits,
#                                        # each beside its 2-D run (RUNS=3 rounds on MNIST)
#
# About 6 minutes on the H100. Writes $OUT/grid3d.txt and $OUT/grid3d.tgz (the sweeps'
# CSVs, heat maps and logs inside).
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ $# -gt 0 ] || set -- "" "--near-field off"
bench_begin grid3d
if [ "$1" = budget ]; then
  # The default 3-D grid (held to 4 nodes a point where that is below the cap) against
  # --grid-max-nodes 4194304 (the cap alone, the default before), with the 2-D run beside.
  cap=(--grid-max-nodes 4194304)
  mnist_input
  embed mnist-warmup "${mnist[@]}" --backend gpu --dims 3
  for r in $(seq "${RUNS:-3}"); do
    embed "mnist-2d-$r" "${mnist[@]}" --backend gpu
    embed "mnist-3d-$r" "${mnist[@]}" --backend gpu --dims 3
    embed "mnist-3d-cap-$r" "${mnist[@]}" --backend gpu --dims 3 "${cap[@]}"
  done
  for kind in 2d 3d 3d-cap; do
    medians "MNIST $kind" $(for r in $(seq "${RUNS:-3}"); do echo "mnist-$kind-$r"; done)
  done
  for n in 250000 500000; do
    digits "$n"
    embed "digits$n-2d" "${input[@]}" --backend gpu
    embed "digits$n-3d" "${input[@]}" --backend gpu --dims 3
    embed "digits$n-3d-cap" "${input[@]}" --backend gpu --dims 3 "${cap[@]}"
  done
  bench_end
  exit
fi
if [ "$1" = 10m ] || [ "$1" = 10m-embed ]; then
  # 10M deformed digits: the default grid's force error at iteration 1000
  # (configs/sweep-3d-digits10m-near.toml; about 4 minutes, most of it the exact Z), or 3-D
  # embeds with the defaults and without the near field (10m-embed, about 5 minutes).
  digits 10000000
  if [ "$1" = 10m ]; then
    logged sweep-3d-digits10m-near "$sgtsne" sweep \
      --config configs/sweep-3d-digits10m-near.toml --out "$work"
    awk -F, 'NR == 1 || $5 == 1000' "$work/sweep-3d-digits10m-near.csv" | tee -a "$summary"
  else
    embed digits10m-3d "${input[@]}" --backend gpu --dims 3
    embed digits10m-3d-nearfieldoff "${input[@]}" --backend gpu --dims 3 --near-field off
  fi
  bench_end
  exit
fi
digits 1300000
for sweep in ${SWEEPS:-sweep-3d-digits sweep-3d-digits-near}; do
  logged "$sweep" "$sgtsne" sweep --config "configs/$sweep.toml" --out "$work"
  echo "$sweep:" | tee -a "$summary"
  awk -F, 'NR == 1 || $5 == 1000' "$work/$sweep.csv" | tee -a "$summary"
done
runs=${RUNS:-3}
for r in $(seq "$runs"); do
  embed "digits-2d-$r" "${input[@]}" --backend gpu
done
medians "2-D" $(for r in $(seq "$runs"); do echo "digits-2d-$r"; done)
for grid in "$@"; do
  name="digits-3d${grid:+-}$(echo "$grid" | tr -dc 'a-z0-9.')"
  for r in $(seq "$runs"); do
    # shellcheck disable=SC2086 # the flags split into words on purpose
    embed "$name-$r" "${input[@]}" --backend gpu --dims 3 $grid
  done
  medians "3-D ${grid:-(defaults)}" $(for r in $(seq "$runs"); do echo "$name-$r"; done)
done
bench_end
