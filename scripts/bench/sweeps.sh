#!/usr/bin/env bash
# GPU machine: the grid-size sweeps of benches/sweeps/ (`sgtsne sweep --config
# configs/sweep-NAME.toml`), run from the repository root so that the MNIST configs find
# .bench/data/mnist70k_pca50_f32.npy (their data path is relative to the working directory).
#
#   scripts/bench/sweeps.sh [NAME...]
#
# NAME: mnist-2d (about 15 s on the H100), mnist-2d-shared (2 s), 2d (50 s), 1d (85 s),
# 3d (2 minutes), 2d-refine (45 s); default all six, about 6 minutes with the kernel compile.
# Each writes NAME.csv, the heat maps NAME-{error,time,s2g,g2g}.png, NAME-fit.json and its
# progress log; all go into $OUT/sweeps.tgz (unpack into benches/sweeps/ to update the
# committed ones), the last lines of each log into $OUT/sweeps.txt.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
names=${*:-mnist-2d mnist-2d-shared 2d 1d 3d 2d-refine}
bench_begin sweeps
for name in $names; do
  logged "sweep-$name" "$sgtsne" sweep --config "configs/sweep-$name.toml" --out "$work"
  tail -n 4 "$work/sweep-$name.log" | tee -a "$summary"
done
bench_end
