#!/usr/bin/env bash
# Clusters on the command line: a Gaussian mixture fitted to points with `sgtsne gmm`, K given
# and K chosen by BIC; then clusters of an embedding with `embed --clusters`.
#
#   SGTSNE_BIN=path/to/sgtsne examples/clusters_cli.sh [OUT_DIR]
set -euo pipefail
sgtsne="${SGTSNE_BIN:-sgtsne}"
out="${1:-$(mktemp -d)}"
mkdir -p "$out"

"$sgtsne" gen --n 5000 --dim 10 --clusters 5 --seed 3 --threads 2 --quiet \
    -o "$out/points.npy" --labels "$out/truth.npy"

# K = 5 components; the report holds the adjusted Rand index against the true labels.
"$sgtsne" gmm "$out/points.npy" -k 5 --backend cpu --threads 2 --quiet \
    --labels "$out/truth.npy" -o "$out/gmm_labels.npy" --proba "$out/gmm_proba.npy" \
    --report "$out/gmm.json"

# K chosen by BIC among 2..8: the curve goes to a CSV and a plot.
"$sgtsne" gmm "$out/points.npy" -k auto --k-range 2..8 --backend cpu --threads 2 --quiet \
    -o "$out/gmm_auto.npy" --bic-csv "$out/bic.csv" --bic-plot "$out/bic.png"

# Clusters of the embedding itself, drawn in the plot's colours.
"$sgtsne" embed "$out/points.npy" --backend cpu --threads 2 --iters 500 --quiet \
    --clusters 5 --clusters-out "$out/embedding_clusters.npy" \
    -o "$out/tsne.npy" --plot "$out/clusters.png"

test -s "$out/gmm_labels.npy" && test -s "$out/bic.csv" && test -s "$out/clusters.png"
echo "clusters_cli: BIC curve:"; cat "$out/bic.csv"
