#!/usr/bin/env bash
# Peak memory of the PCA of wide dense input, the row "wide dense input" of
# benches/RESULTS.md: `sgtsne gen --n N --dim D` (a 40-cluster mixture, f32; 2.4 GB at the
# defaults), then `sgtsne embed --pca 50` on each backend given, timed by GNU time (peak RSS).
# The target: peak RSS at most 1.5 × the input file.
#
#   scripts/bench/wide_pca.sh [N] [D] [BACKEND...]   # default: 20000 30000 cpu
#
# Summary in $OUT/wide-pca.txt (the input's size, then per backend the usual line: wall, peak
# RSS, seconds per stage, KL, 10-NN accuracy and preservation).
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
n=${1:-20000}
d=${2:-30000}
shift 2 2> /dev/null || shift $#
backends=${*:-cpu}
bench_begin wide-pca
f=$gen_dir/gen${n}_d${d}_c40.npy
l=$gen_dir/gen${n}_d${d}_c40_labels.npy
if [ ! -s "$f" ] || [ ! -s "$l" ]; then
  mkdir -p "$gen_dir"
  logged "gen-$n-$d" "$sgtsne" gen --n "$n" --dim "$d" --clusters 40 -o "$f" --labels "$l" || exit 1
fi
bytes=$(stat -c %s "$f")
say "input: $n × $d f32, $(python3 -c "print('%.2f GiB' % ($bytes / 2**30))"); 1.5 × is $(python3 -c "print('%.2f GiB' % (1.5 * $bytes / 2**30))")"
for backend in $backends; do
  embed "wide-$backend" "$f" --labels "$l" --pca 50 --backend "$backend"
done
bench_end
