#!/usr/bin/env bash
# GPU machine: the approximate kNN alone, its settings against its time and recall (the
# table "approximate kNN settings" of benches/RESULTS.md): the ignored library test
# `approx_settings`, one JSON line per setting, probes/refine/fan[/lists[/spread[/max
# probes]]] at k = 90 (lists 0: auto; 64/2/16 is today's default, 64/2/16/0/0 the same
# without the spread rule).
#
#   scripts/bench/knn_settings.sh [SECTION...]      # default: digits 10m
#
#   digits  1.3M deformed MNIST digits (needs scripts/bench/stage_images.sh)
#   10m     the 10M mixture
#   5m      the 5M mixture
#   digits10m  10M deformed MNIST digits
#
# SETTINGS overrides each section's list of settings. Writes $OUT/knn-settings.txt.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_begin knn-settings

# settings FILE LIST: runs the settings LIST on the points FILE.
settings() {
  local file=$1 list=${SETTINGS:-$2}
  say "## $(basename "$file"): $list"
  SGTSNE_BENCH_POINTS=$file SGTSNE_BENCH_SETTINGS=$list "$bin_dir/sgtsne-lib-tests" \
    knn::gpu::ivf::tests::approx_settings --ignored --nocapture --test-threads 1 2>&1 |
    grep -o '{"n".*' | tee -a "$summary"
}

[ $# -gt 0 ] || set -- digits 10m
for section in "$@"; do
  case $section in
    digits)
      digits 1300000
      settings "${input[0]}" "24/1/16 48/0/16 48/1/16 48/2/16 64/1/16 64/2/16 96/1/16"
      ;;
    10m)
      mixture 10000000
      settings "${input[0]}" "64/2/16 64/2/16/0/0"
      ;;
    5m)
      mixture 5000000
      settings "${input[0]}" "24/1/16 12/2/16"
      ;;
    digits10m)
      digits 10000000
      settings "${input[0]}" "64/2/16 64/2/16/0/0"
      ;;
    *) say "unknown section $section (digits, 10m, 5m, digits10m)" ;;
  esac
done
bench_end
