#!/usr/bin/env bash
# Exact t-SNE against its approximations on 10,000 MNIST digits (the first 10,000 rows of
# MNIST 70k PCA-50), exact P with exact repulsion (exact t-SNE), exact P with
# the FFT repulsion, the kNN P with exact repulsion, and the default (kNN P, FFT), on the
# backend BACKEND (default cpu; gpu computes the exact P on the device too). Each is
# scored by `sgtsne kl --affinities exact` (KL against the exact P, exact Z) and its 10-NN
# accuracy, with its wall seconds. The table "Exact t-SNE" of the README and RESULTS.md.
#
#   [BACKEND=gpu] scripts/bench/exact_tsne.sh [THREADS] [SHARED_DIR] [N]
#                                                 # defaults 2, ../shared, 10000
#
# Needs a release build (cargo build --release) and a Python with numpy (PYTHON, default
# python3); writes into $OUT
# (default /tmp/sgtsne-out).
set -euo pipefail
cd "$(dirname "$0")/../.."
threads=${1:-2}
mnist=${2:-../shared}/data/mnist
n=${3:-10000}
bin=${SGTSNE_BIN:-target/release/sgtsne}
backend=${BACKEND:-cpu}
py=${PYTHON:-python3}
out=${OUT:-/tmp/sgtsne-out}
work=${BENCH_WORK:-/tmp/sgtsne-bench/exact_tsne}
mkdir -p "$out" "$work"
"$py" -c "import numpy as np; np.save('$work/x.npy', np.load('$mnist/mnist70k_pca50_f32.npy')[:$n]); np.save('$work/labels.npy', np.load('$mnist/mnist70k_labels_u8.npy')[:$n])"
echo "# exact t-SNE, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n), $(nproc) cores, $threads threads, backend $backend, n $n, commit $(git rev-parse --short HEAD)"
echo "affinities,repulsion,seconds,affinities_s,optimise_s,kl_exact_p,kl_own,acc10"
for variant in "exact exact" "exact fft" "knn exact" "knn fft"; do
  read -r aff rep <<< "$variant"
  tag=$aff-$rep
  "$bin" embed "$work/x.npy" --labels "$work/labels.npy" --backend "$backend" --threads "$threads" \
    --affinities "$aff" --repulsion "$rep" -o "$work/$tag.npy" --report "$work/$tag.json" --quiet
  kl=$("$bin" kl "$work/x.npy" "$work/$tag.npy" --affinities exact --threads "$threads" | tail -1)
  "$py" - "$work/$tag.json" "$aff" "$rep" "$kl" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["seconds"]
print(f'{sys.argv[2]},{sys.argv[3]},{s["total"]:.2f},{s.get("affinities", 0):.2f},'
      f'{s.get("optimise", 0):.2f},{float(sys.argv[4]):.4f},'
      f'{r["optimise"]["final_kl"]:.4f},{r["quality"]["knn_accuracy_10"]:.4f}')
PY
done
