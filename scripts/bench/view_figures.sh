#!/usr/bin/env bash
# The viewer's figures (docs/figures/view_*.png): the built-in digits, MNIST's 70,000 digits
# (embedded first, a few minutes on 2 cores) and the density mode on 1M blob points.
# Needs a release build and what scripts/test/browser.sh sets up; MNIST from
# ../shared/data/mnist (or $SGTSNE_MNIST).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${SGTSNE_BIN:-target/release/sgtsne}
py=${SGTSNE_BROWSER_VENV:-$HOME/.cache/sgtsne/browser-venv}/bin/python
mnist=${SGTSNE_MNIST:-../shared/data/mnist}
dir=.bench/view
mkdir -p "$dir"

"$bin" embed --demo -o "$dir/demo.npy" --quiet --view "$dir/demo.html"
"$py" scripts/bench/view_figure.py "$dir/demo.html" docs/figures/view_demo.png

[ -f "$dir/mnist.npy" ] || "$bin" embed "$mnist/mnist70k_pca50_f32.npy" -o "$dir/mnist.npy" --quiet
cp "$mnist/mnist70k_labels_u8.npy" "$dir/digit.npy"
"$bin" view "$dir/mnist.npy" --labels "$dir/digit.npy" --title "MNIST, 70,000 digits" -o "$dir/mnist.html" --quiet
"$py" scripts/bench/view_figure.py "$dir/mnist.html" docs/figures/view_mnist.png

[ -f "$dir/y1000000.npy" ] || "$py" scripts/bench/view_blobs.py 1000000 "$dir/y1000000.npy" "$dir/l1000000.npy"
cp "$dir/l1000000.npy" "$dir/blob.npy"
"$bin" view "$dir/y1000000.npy" --labels "$dir/blob.npy" --title "1M points, density mode" -o "$dir/density.html" --quiet
"$py" scripts/bench/view_figure.py "$dir/density.html" docs/figures/view_density_1m.png --density
