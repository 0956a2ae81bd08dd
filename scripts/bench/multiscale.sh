#!/usr/bin/env bash
# Multiscale perplexity against one perplexity on MNIST 70k (PCA 50), cpu backend: seconds,
# the run's own KL, KL against the perplexity-30 P (`sgtsne kl`, exact Z, so that the runs
# are scored on one P), 10-NN accuracy, and the classes' global arrangement (Spearman's ρ of
# class-centroid distances, scripts/bench/global_structure.py). The table "Multiscale
# perplexity" of benches/RESULTS.md.
#
#   scripts/bench/multiscale.sh [THREADS] [SHARED_DIR] [PERPLEXITIES...]
#                                   # defaults 2, ../shared, then 30 and 30,300
#
# Needs a release build (cargo build --release); writes into $OUT (default /tmp/sgtsne-out).
# Environment: BACKEND (default cpu), MNIST_DIR (the folder of the two MNIST files, instead
# of SHARED_DIR/data/mnist; .bench/data on the GPU machine), FIGURES (a folder: each run is
# also plotted there as mnist_perplexity_SPEC.png, the README's figure).
set -euo pipefail
cd "$(dirname "$0")/../.."
threads=${1:-2}
mnist=${MNIST_DIR:-${2:-../shared}/data/mnist}
backend=${BACKEND:-cpu}
figures=${FIGURES:-}
shift $(( $# < 2 ? $# : 2 ))
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(30 30,300)
bin=${SGTSNE_BIN:-target/release/sgtsne}
out=${OUT:-/tmp/sgtsne-out}
mkdir -p "$out"
points=$mnist/mnist70k_pca50_f32.npy
labels=$mnist/mnist70k_labels_u8.npy
echo "# multiscale, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n), $(nproc) cores, $threads threads, backend $backend, commit $(git rev-parse --short HEAD 2>/dev/null || head -n 1 .bench/bin/BUILD)"
echo "perplexity,k,seconds,kl_own,kl_p30,acc10,global_rho"
for spec in "${specs[@]}"; do
  tag=${spec//,/_}
  plot=()
  [ -z "$figures" ] || plot=(--plot "$figures/mnist_perplexity_$tag.png")
  "$bin" embed "$points" --labels "$labels" --backend "$backend" --threads "$threads" \
    --perplexity "$spec" -o "$out/ms-$tag.npy" --report "$out/ms-$tag.json" --quiet "${plot[@]}"
  kl=$("$bin" kl "$points" "$out/ms-$tag.npy" --perplexity 30 --threads "$threads" | tail -1)
  rho=$(python3 scripts/bench/global_structure.py "$points" "$labels" "$out/ms-$tag.npy")
  python3 - "$out/ms-$tag.json" "$spec" "$kl" "$rho" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f'"{sys.argv[2]}",{r["knn"]["k"]},{r["seconds"]["total"]:.1f},'
      f'{r["optimise"]["final_kl"]:.4f},{sys.argv[3]},'
      f'{r["quality"]["knn_accuracy_10"]:.4f},{sys.argv[4]}')
PY
done
