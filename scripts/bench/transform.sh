#!/usr/bin/env bash
# Development machine: new points into an existing map. MNIST 70k (PCA-50) split into a
# reference (90 %) and every 10th point held out (7,000); the reference is embedded on the
# CPU with --save-model, the held-out points placed with `sgtsne transform`. Reports the
# held-out points' 10-NN label accuracy against the reference map (target ≥ 0.95), the
# reference map's own 10-NN accuracy, and the transform time against the reference run's.
#
#   scripts/bench/transform.sh [DATA_DIR] [THREADS] [OUT_DIR]
#
# DATA_DIR holds mnist70k_pca50_f32.npy and mnist70k_labels_u8.npy (default
# ../shared/data/mnist); THREADS defaults to 2; the split, the model, the embeddings, the
# reports and the summary transform.txt land in OUT_DIR (default target/bench-transform).
# Needs python3 with numpy for the split. SGTSNE_BIN names another binary; BACKEND (default
# cpu) where both runs go.
set -euo pipefail
cd "$(dirname "$0")/../.."
data=${1:-../shared/data/mnist}
backend=${BACKEND:-cpu}
threads=${2:-2}
out=${3:-target/bench-transform}
bin=${SGTSNE_BIN:-${CARGO_TARGET_DIR:-target}/release/sgtsne}
[ -x "$bin" ] || cargo build --release
mkdir -p "$out"
python3 - "$data" "$out" <<'PY'
import sys
import numpy as np
data, out = sys.argv[1], sys.argv[2]
x = np.load(f"{data}/mnist70k_pca50_f32.npy")
y = np.load(f"{data}/mnist70k_labels_u8.npy")
held = np.arange(len(x)) % 10 == 0
np.save(f"{out}/ref.npy", x[~held])
np.save(f"{out}/ref_labels.npy", y[~held])
np.save(f"{out}/new.npy", x[held])
np.save(f"{out}/new_labels.npy", y[held])
PY
"$bin" embed "$out/ref.npy" --labels "$out/ref_labels.npy" --backend "$backend" --threads "$threads" \
  -o "$out/ref_emb.npy" --save-model "$out/ref.sgtsne" --report "$out/ref.json" --quiet
"$bin" transform "$out/ref.sgtsne" "$out/new.npy" -o "$out/new_emb.npy" --threads "$threads" \
  --backend "$backend" \
  --labels "$out/new_labels.npy" --reference-labels "$out/ref_labels.npy" \
  --report "$out/transform.json" --quiet
python3 - "$out" <<'PY' | tee "$out/transform.txt"
import json, sys
out = sys.argv[1]
ref = json.load(open(f"{out}/ref.json"))
tr = json.load(open(f"{out}/transform.json"))
rs, ts = ref["seconds"]["total"], tr["seconds"]
print(f"reference: {ref['input']['n']} points, {rs:.1f} s, 10-NN accuracy "
      f"{ref['quality']['knn_accuracy_10']:.4f}")
print(f"transform: {tr['n_new']} points, {ts['total']:.2f} s "
      f"(kNN {ts['knn']:.2f}, fields {ts['fields']:.2f}, optimise {ts['optimise']:.2f}) = "
      f"{ts['total'] / rs:.3f} of the reference run")
print(f"held-out 10-NN accuracy against the reference map: {tr['knn_accuracy']:.4f}, "
      f"mean shift from the median start {tr['mean_shift']:.3f}")
PY
