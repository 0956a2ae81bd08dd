#!/usr/bin/env bash
# Gaussian mixtures on the GPU (`sgtsne gmm --backend gpu`): the table "Gaussian mixtures on
# the GPU" of benches/RESULTS.md, on the GPU machine, from what scripts/bench/stage.sh and
# scripts/bench/stage_images.sh staged (carry .bench/bin, .bench/data and .bench/images).
#
#   scripts/bench/gmm_gpu.sh [THREADS [PART...]]   # THREADS: the CPU's, default all cores
#
# PARTS (default all, in this order):
#   stages  seed report 002's five stages at its sizes, on the GPU (the library's test
#           `gmm::gpu::tests::bench_gmm_stages`, CUDA events);
#   check   agreement with scikit-learn from the same start (scripts/gmm/sklearn_check.py,
#           the GPU fit against scikit-learn on THREADS cores), each with the per-iteration
#           times: the digits and MNIST 70k PCA-50 with each covariance type, MNIST 60,000 ×
#           784 (raw pixels) full in f64; then MNIST 60,000 × 784 in f32 timed alone;
#   big     the same check on 1.3M × 50 (sgtsne gen, 10 clusters);
#   fits    full fits with the defaults (tol 1e-3, at most 100 iterations) on MNIST 60,000 ×
#           784 and 1.3M × 50, on the GPU and on THREADS cores.
source "$(dirname "$0")/lib.sh"
threads=${1:-$(nproc)}
shift || true
parts=" ${*:-stages check big fits} "
bench_begin gmm_gpu
mkdir -p "$gen_dir"
images=$gen_dir/mnist70k_784_u8.npy
[ -s "$images" ] || gunzip -c "$bench_root/.bench/images/mnist70k_784_u8.npy.gz" > "$images"
python3 -c "import numpy as np; np.save('$work/mnist60k.npy', np.load('$images')[:60000])"
[ -s "$work/big.npy" ] || "$sgtsne" gen --n 1300000 --dim 50 --clusters 10 -o "$work/big.npy" -q
digits=$bench_root/src/demo/digits1797_64_u8.npy
check=(env OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads"
  python3 scripts/gmm/sklearn_check.py "$sgtsne" --backend gpu)
if [[ $parts == *" stages "* ]]; then
  say "## report 002's stages on the GPU"
  "$bin_dir/sgtsne-lib-tests" --ignored --nocapture --exact gmm::gpu::tests::bench_gmm_stages 2>&1 |
    grep -E "stage|\(" | tee -a "$summary"
fi
if [[ $parts == *" check "* ]]; then
  say "## the GPU against scikit-learn from the same start ($threads threads for scikit-learn)"
  for cov in full diag spherical; do
    "${check[@]}" "$digits" 10 --iters 30 --covariance "$cov" --timing 2>&1 | tee -a "$summary"
    "${check[@]}" "$data/mnist70k_pca50_f32.npy" 10 --iters 40 --covariance "$cov" --timing 2>&1 |
      tee -a "$summary"
  done
  "${check[@]}" "$work/mnist60k.npy" 10 --iters 5 --timing 2>&1 | tee -a "$summary"
  "$sgtsne" gmm "$work/mnist60k.npy" -k 10 --iters 5 --tol 0 --precision f32 --backend gpu \
    -o "$work/mnist60k-f32.npy" 2>&1 | grep -E "components|s \(load|note" |
    sed "s/^/mnist60k f32 gpu: /" | tee -a "$summary"
fi
if [[ $parts == *" big "* ]]; then
  say "## the GPU against scikit-learn on 1.3M × 50 ($threads threads for scikit-learn)"
  "${check[@]}" "$work/big.npy" 10 --iters 10 --timing 2>&1 | tee -a "$summary"
fi
if [[ $parts == *" fits "* ]]; then
  say "## full fits with the defaults, gpu and cpu ($threads threads)"
  for input in mnist60k big; do
    for backend in gpu cpu; do
      "$sgtsne" gmm "$work/$input.npy" -k 10 --backend "$backend" --threads "$threads" \
        -o "$work/$input-$backend.npy" --report "$work/$input-$backend.json" 2>&1 |
        grep -E "components|s \(load" | sed "s/^/$input $backend: /" | tee -a "$summary"
    done
  done
fi
bench_end
