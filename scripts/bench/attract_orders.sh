#!/usr/bin/env bash
# The attraction's gathers on the 10M mixture's real neighbours in other numberings and
# layouts (scripts/bench/attract_orders.py says what it times): the kNN graph of `sgtsne knn
# --knn approx` (k = 90) and the embeddings of an `embed --backend gpu` run every 250
# iterations, then the CuPy kernels (the first and the last embedding). About 4 minutes on the H100 machine (disk: 11 GB for
# the kNN's .npz).
#   scripts/bench/attract_orders.sh [N]     (default N = 10000000)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
n=${1:-10000000}
bench_begin attract_orders
mixture "$n"
knn=$gen_dir/knn${n}_k90.npz
[ -s "$knn" ] || logged knn "$sgtsne" knn "${input[0]}" -k 90 --index-type u32 --knn approx -o "$knn"
mkdir -p "$work/snapshots"
embed embed "${input[@]}" --backend gpu --knn approx --snapshot-every 250 --snapshots "$work/snapshots"
python3 "$bench_dir/attract_orders.py" "$knn" "${input[2]}" "$work/snapshots" 2>&1 | tee -a "$summary"
bench_end
