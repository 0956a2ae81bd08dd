#!/usr/bin/env bash
# Gaussian mixtures (`sgtsne gmm`) on the CPU against scikit-learn's GaussianMixture: the
# tables "Gaussian mixtures" of benches/RESULTS.md.
#
#   scripts/bench/gmm.sh [THREADS] [SHARED_DIR]      # defaults 2, ../shared
#
# 1. seed report 002's five stages at its sizes (cargo bench --bench gmm_stages);
# 2. agreement with scikit-learn started from our initial model (scripts/gmm/sklearn_check.py):
#    the digits and MNIST 70k PCA-50 with each covariance type; MNIST 60,000 × 784 (raw
#    pixels, the report's input) with full covariances, f64 and f32; 1.3M × 50 (sgtsne gen,
#    10 clusters); each with both per-iteration times;
# 3. full fits with the defaults (tol 1e-3, at most 100 iterations) on MNIST 60,000 × 784
#    and 1.3M × 50;
# 4. K = 10 on the MNIST embedding (embed --clusters 10): adjusted Rand index against the
#    digit labels, and on the data it was embedded from (--clusters-on data); `gmm` on that
#    embedding with one start and with five.
#
# Needs a release build (cargo build --release) and a Python with numpy and scikit-learn
# (SKLEARN_PYTHON, default python3); writes into $OUT (default /tmp/sgtsne-out).
set -euo pipefail
cd "$(dirname "$0")/../.."
threads=${1:-2}
shared=${2:-../shared}
bin=${SGTSNE_BIN:-target/release/sgtsne}
py=${SKLEARN_PYTHON:-python3}
out=${OUT:-/tmp/sgtsne-out}
work=${BENCH_WORK:-/tmp/sgtsne-bench/gmm}
mkdir -p "$out" "$work"
digits=$shared/data/digits/digits1797_64_u8.npy
mnist=$shared/data/mnist
check=(env RAYON_NUM_THREADS="$threads" OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads"
  "$py" scripts/gmm/sklearn_check.py "$bin")
echo "# gmm, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n), $(nproc) cores, $threads threads, commit $(git rev-parse --short HEAD)"
echo "## 1. report 002's stages"
RAYON_NUM_THREADS=$threads cargo bench --quiet --bench gmm_stages 2>/dev/null
echo "## 2. against scikit-learn from the same start"
for cov in full diag spherical; do
  "${check[@]}" "$digits" 10 --iters 30 --covariance "$cov" --threads "$threads" --timing
  "${check[@]}" "$mnist/mnist70k_pca50_f32.npy" 10 --iters 40 --covariance "$cov" --threads "$threads" --timing
done
"$py" -c "import numpy as np; np.save('$work/mnist60k.npy', np.load('$mnist/mnist70k_784_u8.npy')[:60000])"
"${check[@]}" "$work/mnist60k.npy" 10 --iters 5 --threads "$threads" --timing
"${check[@]}" "$work/mnist60k.npy" 10 --iters 5 --threads "$threads" --precision f32 || true
[ -f "$work/big.npy" ] || "$bin" gen --n 1300000 --dim 50 --clusters 10 -o "$work/big.npy" --threads "$threads" -q
"${check[@]}" "$work/big.npy" 10 --iters 10 --threads "$threads" --timing
echo "## 3. full fits with the defaults"
for input in mnist60k big; do
  "$bin" gmm "$work/$input.npy" -k 10 --threads "$threads" -o "$work/$input-labels.npy" \
    --report "$work/$input-fit.json"
done
echo "## 4. K = 10 on the MNIST embedding and on its data"
for on in embedding data; do
  "$bin" embed "$mnist/mnist70k_pca50_f32.npy" --labels "$mnist/mnist70k_labels_u8.npy" \
    --backend cpu --threads "$threads" --clusters 10 --clusters-on "$on" \
    --report "$work/embed-$on.json" -o "$work/embed-$on.npy" 2>&1 | grep -E "clusters of|KL"
done
# One start against five (what embed --clusters does on an embedding) on that embedding.
for r in 1 5; do
  "$bin" gmm "$work/embed-embedding.npy" -k 10 --restarts "$r" --threads "$threads" \
    --labels "$mnist/mnist70k_labels_u8.npy" -o "$work/embed-gmm-$r.npy" 2>&1 | grep -E "adjusted|load"
done
