#!/usr/bin/env bash
# Development machine (or the GPU machine's host): the CPU's kNN methods on deformed MNIST
# digits, `embed --backend cpu` stopped after one iteration so that the kNN dominates; one
# line per run with the kNN seconds and the sample recall (the table "CPU approximate kNN"
# of benches/RESULTS.md).
#
#   scripts/bench/cpu_knn.sh [N] [THREADS] [SHARED_DIR]    # defaults 300000, 2, ../shared
#
# Needs a release build (cargo build --release); writes into $OUT (default /tmp/sgtsne-out).
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-300000}
threads=${2:-2}
mnist=${3:-../shared}/data/mnist
bin=target/release/sgtsne
out=${OUT:-/tmp/sgtsne-out}
mkdir -p "$out"
points=$out/digits${n}_d50.npy
labels=$out/digits${n}_d50_labels.npy
[ -s "$points" ] || "$bin" gen --deform-images "$mnist/mnist70k_784_u8.npy" \
  --image-labels "$mnist/mnist70k_labels_u8.npy" --n "$n" --dim 50 --seed 0 \
  -o "$points" --labels "$labels" --quiet
echo "# cpu-knn, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n), $(nproc) cores, $threads threads, commit $(git rev-parse --short HEAD)"
for method in approx exact; do
  "$bin" embed "$points" --labels "$labels" --backend cpu --threads "$threads" --knn "$method" \
    --iters 1 --early-exaggeration-iters 1 --report "$out/cpu-knn-$method.json" --quiet
  python3 - "$out/cpu-knn-$method.json" "$method" "$n" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
k = r["knn"]
ivf = k.get("ivf") or {}
steps = ", ".join(f"{s} {v:.2f}" for s, v in (ivf.get("seconds") or {}).items())
rec = k.get("recall_sample")
print(f"{sys.argv[3]} points, {sys.argv[2]}: kNN {r['seconds']['knn']:.2f} s"
      + (f", recall {rec:.4f} (after the sweep {ivf['recall_sweep']:.4f}; {steps})" if rec else ""))
PY
done
