#!/usr/bin/env bash
# Handwritten digits on the command line: the built-in 1,797 digits embedded and drawn, then a
# generated Gaussian mixture written as a file and embedded from it.
#
#   SGTSNE_BIN=path/to/sgtsne examples/digits_cli.sh [OUT_DIR]
set -euo pipefail
sgtsne="${SGTSNE_BIN:-sgtsne}"
out="${1:-$(mktemp -d)}"
mkdir -p "$out"

# The digits compiled into the binary: the embedding, a plot coloured by digit, the run report.
"$sgtsne" embed --demo --backend cpu --threads 2 --quiet \
    -o "$out/digits.npy" --plot "$out/digits.png" --report "$out/digits.json"

# A file of points: 3,000 points in 20 dimensions from 8 clusters, with their labels.
"$sgtsne" gen --n 3000 --dim 20 --clusters 8 --seed 1 --threads 2 --quiet \
    -o "$out/mixture.npy" --labels "$out/mixture_labels.npy"
"$sgtsne" embed "$out/mixture.npy" --labels "$out/mixture_labels.npy" \
    --backend cpu --threads 2 --iters 500 --quiet \
    -o "$out/mixture_tsne.csv" --plot "$out/mixture.png"

test -s "$out/digits.png" && test -s "$out/mixture.png"
head -2 "$out/mixture_tsne.csv"
echo "digits_cli: wrote $out/digits.npy, digits.png, mixture_tsne.csv, mixture.png"
