#!/usr/bin/env bash
# Stages the raw MNIST images for the deformed-digits benchmarks (`sgtsne gen
# --deform-images`) into the git-ignored .bench/images/: the 70000 × 784 images gzipped
# (23 MB; the raw 55 MB would not travel) and their labels. Carry .bench/bin and
# .bench/images (not .bench/data: the three would pass 64 MiB); the scripts unpack the
# images on the GPU machine (lib.sh `digits`).
#
#   scripts/bench/stage_images.sh [SHARED_DIR]     # SHARED_DIR default ../shared
set -euo pipefail
cd "$(dirname "$0")/../.."
mnist=${1:-../shared}/data/mnist
for f in mnist70k_784_u8.npy mnist70k_labels_u8.npy; do
  [ -s "$mnist/$f" ] || { echo "stage_images: $mnist/$f is missing" >&2; exit 1; }
done
mkdir -p .bench/images
gzip -c "$mnist/mnist70k_784_u8.npy" > .bench/images/mnist70k_784_u8.npy.gz
install -m 0644 "$mnist/mnist70k_labels_u8.npy" .bench/images/
du -smc .bench/bin .bench/images | tail -n 1 | cut -f1 | xargs -I{} echo "stage_images: .bench/bin + .bench/images = {} MiB"
