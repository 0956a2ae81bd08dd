#!/usr/bin/env bash
# The README's heavy-tail figure: MNIST 70k (PCA 50) embedded on the cpu backend with the
# Cauchy kernel (--dof 1) and a heavier-tailed one (--dof 0.5), plotted by label, with each
# run's KL, 10-NN accuracy and seconds on stdout.
#
#   scripts/bench/dof_figure.sh [THREADS] [SHARED_DIR] [FIGURE_DIR]
#                                   # defaults 2, ../shared, benches/figures
#
# Needs a release build (cargo build --release; SGTSNE_BIN names another binary).
# Environment: BACKEND (default cpu), MNIST_DIR (the folder of the two MNIST files, instead
# of SHARED_DIR/data/mnist).
set -euo pipefail
cd "$(dirname "$0")/../.."
threads=${1:-2}
mnist=${MNIST_DIR:-${2:-../shared}/data/mnist}
backend=${BACKEND:-cpu}
figures=${3:-benches/figures}
bin=${SGTSNE_BIN:-target/release/sgtsne}
out=${OUT:-/tmp/sgtsne-out}
mkdir -p "$out" "$figures"
echo "# dof, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n), $(nproc) cores, $threads threads, backend $backend, commit $(git rev-parse --short HEAD 2>/dev/null || head -n 1 .bench/bin/BUILD)"
echo "dof,seconds,kl,acc10"
for dof in 1 0.5; do
  tag=${dof//./}
  "$bin" embed "$mnist/mnist70k_pca50_f32.npy" --labels "$mnist/mnist70k_labels_u8.npy" \
    --backend "$backend" --threads "$threads" --dof "$dof" --quiet \
    --plot "$figures/mnist_dof$tag.png" --report "$out/dof$tag.json"
  python3 - "$out/dof$tag.json" "$dof" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f'{sys.argv[2]},{r["seconds"]["total"]:.1f},{r["optimise"]["final_kl"]:.4f},'
      f'{r["quality"]["knn_accuracy_10"]:.4f}')
PY
done
