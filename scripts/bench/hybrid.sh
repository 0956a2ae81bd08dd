#!/usr/bin/env bash
# GPU machine: the hybrid backend (CPU attraction overlapped with the GPU repulsion) against
# cpu and gpu on all cores, the "hybrid" tables of benches/RESULTS.md. About 4 minutes.
#
#   scripts/bench/hybrid.sh [SECTION...]      # default: mnist big
#
#   mnist  MNIST 70k 2-D: cpu, gpu, hybrid f32 and f64, hybrid f32 with 15 threads (one
#          core left to the GPU's driving thread)
#   big    1.3M × 50 (`sgtsne gen`, made into .bench/gen/): gpu 2-D and 3-D (1000
#          iterations), hybrid 2-D and 3-D with 200 iterations (50 exaggerated) for the
#          per-iteration medians, then backend::hybrid::tests::repulsion_stage_bench on the
#          gpu embeddings: the repulsion's seconds per evaluation on the CPU and on the GPU at
#          the final embeddings' extent
#
# Hybrid runs print the per-evaluation medians, the attraction's mean and the overlap.
# The full-length 1.3M runs of all three backends: scripts/bench/backends_big.sh.
# Output: $OUT/hybrid.txt and $OUT/hybrid.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
sections=${*:-mnist big}
bench_begin hybrid
mnist_input
embed warmup-mnist "${mnist[@]}" --backend gpu

for section in $sections; do
  case $section in
    mnist)
      embed mnist-cpu "${mnist[@]}" --backend cpu
      embed mnist-gpu "${mnist[@]}" --backend gpu
      for p in f32 f64; do
        embed "mnist-hybrid-$p" "${mnist[@]}" --backend hybrid --precision "$p"
      done
      embed mnist-hybrid-f32-15threads "${mnist[@]}" --backend hybrid --threads 15
      ;;
    big)
      big_input
      embed big-2d-gpu "${big[@]}" --backend gpu
      embed big-3d-gpu "${big[@]}" --backend gpu --dims 3
      for dims in 2 3; do
        embed "big-${dims}d-hybrid-200it" "${big[@]}" --backend hybrid --dims "$dims" \
          --iters 200 --early-exaggeration-iters 50
      done
      for dims in 2 3; do
        SGTSNE_STAGE_Y=$work/big-${dims}d-gpu.npy logged "repulsion-stage-${dims}d" \
          "$bin_dir/sgtsne-lib-tests" backend::hybrid::tests::repulsion_stage_bench \
          --ignored --nocapture --exact
        grep -E 'cpu|gpu' "$work/repulsion-stage-${dims}d.log" | grep -v '^test ' | tee -a "$summary"
      done
      ;;
    *) say "unknown section $section (mnist, big)" ;;
  esac
done
bench_end
