#!/usr/bin/env bash
# GPU machine: the 3-D grid on real images, 1.3M deformed MNIST digits (lib.sh `digits`;
# carry .bench/images): the grid-size sweep configs/sweep-3d-digits.toml (relative force
# error and time per grid), then `embed --backend gpu` in 2-D (the default) and in 3-D with
# the default grid and the finer ones, for KL, 10-NN accuracy and time side by side (the
# table "3-D grid" of benches/RESULTS.md).
#
#   scripts/bench/grid3d.sh [GRID...]      # 3-D grid flags to try, each one quoted;
#                                          # default: "" "--grid-spacing 0.7" "--grid 160"
#
# About 3 minutes on the H100. Writes $OUT/grid3d.txt and $OUT/grid3d.tgz (the sweep's
# CSV, heat maps and log inside).
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
[ $# -gt 0 ] || set -- "" "--grid-spacing 0.7" "--grid 160"
bench_begin grid3d
digits 1300000
logged sweep-3d-digits "$sgtsne" sweep --config configs/sweep-3d-digits.toml --out "$work"
awk -F, 'NR == 1 || $5 == 1000' "$work/sweep-3d-digits.csv" | tee -a "$summary"
embed digits-2d "${input[@]}" --backend gpu
for grid in "$@"; do
  # shellcheck disable=SC2086 # the flags split into words on purpose
  embed "digits-3d${grid:+-}$(echo "$grid" | tr -dc 'a-z0-9.')" "${input[@]}" --backend gpu --dims 3 $grid
done
bench_end
