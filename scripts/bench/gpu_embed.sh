#!/usr/bin/env bash
# GPU machine: `sgtsne embed --backend gpu` end to end, the tables "MNIST 70k" and
# "1.3M × 50" of benches/RESULTS.md. Binaries and MNIST from .bench/ (scripts/bench/stage.sh);
# the 1.3M input is made on the machine by `sgtsne gen --n 1300000 --dim 50 --clusters 40`
# into .bench/gen/. Defaults throughout (perplexity 30, 1000 iterations, exact kNN, PCA init).
#
#   scripts/bench/gpu_embed.sh [SECTION...]        # default: mnist big
#
#   mnist  one warm-up run (kernel compile, cuFFT's kernels), then MNIST 2-D ×3 and 3-D ×1
#          (about 40 s on a fresh H100 machine)
#   big    gen, one warm-up run, then 1.3M 2-D ×$BIG_RUNS (default 5), 1-D and 3-D
#          ×$BIG_RUNS_1D3D (default 1) (about 2 minutes)
#   order  `--order input` against `--order locality`: MNIST and 1.3M 2-D, two runs each,
#          and 1.3M 1-D and 3-D with `--order locality` (about 2 minutes)
#   pca    the GPU PCA: `sgtsne gen --n 70000 --dim 784 --clusters 10`, then gpu twice and
#          cpu on all cores once (about 40 s; the first gpu run is not warmed up)
#
# All four together take about 5 minutes. Per run one line (wall, peak RSS, seconds per stage,
# attraction/repulsion split, KL, 10-NN accuracy and preservation), and the medians of the
# repeated runs, in $OUT/gpu-embed.txt; every report in $OUT/gpu-embed.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
sections=${*:-mnist big}
bench_begin gpu-embed
mnist_input

# One untimed run per input and invocation: NVRTC's cubins, cuFFT's kernels for the grid sizes.
warmed=
warm() {
  local key=$1
  shift
  case " $warmed " in *" $key "*) return ;; esac
  warmed="$warmed $key"
  embed "warmup-$key" "$@" --backend gpu
}

for section in $sections; do
  case $section in
    mnist)
      warm mnist "${mnist[@]}"
      for r in 1 2 3; do
        embed "mnist-2d-$r" "${mnist[@]}" --backend gpu
      done
      medians "MNIST 2-D gpu" mnist-2d-1 mnist-2d-2 mnist-2d-3
      embed mnist-3d "${mnist[@]}" --backend gpu --dims 3
      ;;
    big)
      big_input
      warm big "${big[@]}"
      runs=()
      for r in $(seq "${BIG_RUNS:-5}"); do
        embed "big-2d-$r" "${big[@]}" --backend gpu && runs+=("big-2d-$r")
      done
      medians "1.3M 2-D gpu" "${runs[@]}"
      for r in $(seq "${BIG_RUNS_1D3D:-1}"); do
        embed "big-1d-$r" "${big[@]}" --backend gpu --dims 1
        embed "big-3d-$r" "${big[@]}" --backend gpu --dims 3
      done
      ;;
    order)
      big_input
      warm mnist "${mnist[@]}"
      warm big "${big[@]}"
      for r in 1 2; do
        for order in input locality; do
          embed "mnist-$order-$r" "${mnist[@]}" --backend gpu --order "$order"
          embed "big-2d-$order-$r" "${big[@]}" --backend gpu --order "$order"
        done
      done
      embed big-1d-locality "${big[@]}" --backend gpu --order locality --dims 1
      embed big-3d-locality "${big[@]}" --backend gpu --order locality --dims 3
      ;;
    pca)
      # No warm-up: the first run shows what one-off set-up costs (as in the table).
      mkdir -p "$gen_dir"
      wide=$gen_dir/gen70k_d784_c10.npy
      [ -s "$wide" ] || logged gen-70k-784 "$sgtsne" gen --n 70000 --dim 784 --clusters 10 \
        -o "$wide" --labels "$gen_dir/gen70k_d784_c10_labels.npy"
      for r in 1 2; do
        embed "pca784-gpu-$r" "$wide" --labels "$gen_dir/gen70k_d784_c10_labels.npy" --backend gpu
      done
      embed pca784-cpu "$wide" --labels "$gen_dir/gen70k_d784_c10_labels.npy" --backend cpu
      ;;
    *) say "unknown section $section (mnist, big, order, pca)" ;;
  esac
done
bench_end
