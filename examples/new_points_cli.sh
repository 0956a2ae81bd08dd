#!/usr/bin/env bash
# New points into an existing map on the command line: embed a reference set, save the map
# with --save-model, then place held-out points into it with `sgtsne transform`.
#
#   SGTSNE_BIN=path/to/sgtsne PYTHON=python examples/new_points_cli.sh [OUT_DIR]
set -euo pipefail
sgtsne="${SGTSNE_BIN:-sgtsne}"
python="${PYTHON:-python3}"
out="${1:-$(mktemp -d)}"
mkdir -p "$out"

# 4,000 points from 6 clusters; every 10th point is held out as "new".
"$sgtsne" gen --n 4000 --dim 30 --clusters 6 --seed 2 --threads 2 --quiet \
    -o "$out/all.npy" --labels "$out/all_labels.npy"
"$python" - "$out" <<'PY'
import sys, numpy as np
out = sys.argv[1]
X, y = np.load(f"{out}/all.npy"), np.load(f"{out}/all_labels.npy")
new = np.arange(len(X)) % 10 == 0
np.save(f"{out}/ref.npy", X[~new]); np.save(f"{out}/ref_labels.npy", y[~new])
np.save(f"{out}/new.npy", X[new]); np.save(f"{out}/new_labels.npy", y[new])
PY

# The reference map, saved for later.
"$sgtsne" embed "$out/ref.npy" --labels "$out/ref_labels.npy" --backend cpu --threads 2 \
    --iters 500 --quiet -o "$out/ref_tsne.npy" --save-model "$out/ref.sgtsne"

# The new points, placed into it; the report says how often their 10 nearest reference
# points in the map share their label.
"$sgtsne" transform "$out/ref.sgtsne" "$out/new.npy" --backend cpu --threads 2 --quiet \
    --labels "$out/new_labels.npy" --reference-labels "$out/ref_labels.npy" \
    -o "$out/new_tsne.npy" --report "$out/transform.json"

"$python" - "$out" <<'PY'
import sys, json, numpy as np
out = sys.argv[1]
Y = np.load(f"{out}/new_tsne.npy")
assert Y.shape == (400, 2), Y.shape
print("new_points_cli:", Y.shape[0], "new points placed;",
      "10-NN label accuracy against the map:", json.load(open(f"{out}/transform.json"))["knn_accuracy"])
PY
