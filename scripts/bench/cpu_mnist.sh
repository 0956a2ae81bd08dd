#!/usr/bin/env bash
# Development machine: MNIST 70k (PCA-50) with the CPU backend in 2, 1 and 3 dimensions, the
# table "CPU backend, 2-core development machine" of benches/RESULTS.md. Per run one line:
# wall seconds, peak RSS, seconds per stage, attraction/repulsion split, final KL, 10-NN
# accuracy and preservation. About 2.5 minutes at 2 threads (3-D is most of it).
#
#   scripts/bench/cpu_mnist.sh [DATA_DIR] [THREADS] [OUT_DIR]
#
# DATA_DIR holds mnist70k_pca50_f32.npy and mnist70k_labels_u8.npy (default
# ../shared/data/mnist; .bench/data after scripts/bench/stage.sh); THREADS defaults to 2;
# reports, plots, timings and the summary cpu-mnist.txt land in OUT_DIR (default
# target/bench-mnist). Builds the release binary if missing; SGTSNE_BIN names another.
set -euo pipefail
cd "$(dirname "$0")/../.."
threads=${2:-2}
export BENCH_DATA=${1:-../shared/data/mnist} OUT=${3:-target/bench-mnist}
export SGTSNE_BIN=${SGTSNE_BIN:-$PWD/target/release/sgtsne} BENCH_WORK=$OUT
[ -x "$SGTSNE_BIN" ] || cargo build --release
# shellcheck source=scripts/bench/lib.sh
. scripts/bench/lib.sh
bench_begin cpu-mnist
mnist_input
for dims in 2 1 3; do
  embed "mnist-${dims}d" "${mnist[@]}" --dims "$dims" --threads "$threads" --backend cpu \
    --plot "$work/mnist-${dims}d.png"
done
