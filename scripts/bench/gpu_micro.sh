#!/usr/bin/env bash
# GPU machine: the micro-benchmarks kept as ignored tests of the library, run through the
# staged test binary (scripts/bench/stage.sh) as `sgtsne-lib-tests NAME --ignored
# --nocapture --exact`; their printed timings go to the summary. About 3 minutes.
#
#   scripts/bench/gpu_micro.sh [NAME...]     # default: knn fused plans
#
#   knn     knn::gpu::tests::knn_gpu_bench: cuBLAS SGEMM rates, then exact kNN (k = 90) of
#           70k and 1M uniform points × 50 on the fused 3xTF32 path and the SGEMM +
#           selection path (median of 3), the "exact kNN" rows of benches/RESULTS.md
#   fused   knn::gpu::fused::tests::fused_split_bench: the fused sweep at 1M from empty
#           lists, from the final lists, and the products alone
#   plans   gpu::fft::tests::plan_cost_bench: cuFFT plan cost per 2-D grid size, first and
#           second pass (run it on a fresh machine to see the first-time cost)
#   lengths gpu::fft::tests::plan_cost_by_length: plan cost of every FFT-friendly length
#           32–1024 in 1-D and 2-D (with an empty CUDA_CACHE_PATH: which lengths cuFFT
#           compiles kernels for on first use)
#   affinities  affinity::gpu::tests::bench_affinities: perplexity and symmetrisation at 1.3M
#
# The repulsion stage bench (backend::hybrid::tests::repulsion_stage_bench) needs embeddings
# and runs in scripts/bench/hybrid.sh. Output: $OUT/gpu-micro.txt and $OUT/gpu-micro.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
names=${*:-knn fused plans}
bench_begin gpu-micro

for name in $names; do
  case $name in
    knn) test=knn::gpu::tests::knn_gpu_bench ;;
    fused) test=knn::gpu::fused::tests::fused_split_bench ;;
    plans) test=gpu::fft::tests::plan_cost_bench ;;
    lengths) test=gpu::fft::tests::plan_cost_by_length ;;
    affinities) test=affinity::gpu::tests::bench_affinities ;;
    *) say "unknown benchmark $name (knn, fused, plans, lengths, affinities)"; continue ;;
  esac
  SGTSNE_REQUIRE_GPU=1 logged "$name" "$bin_dir/sgtsne-lib-tests" "$test" --ignored --nocapture --exact
  grep -vE '^(running [0-9]+ test|test result|$)' "$work/$name.log" | tee -a "$summary"
  grep -q '^test result: ok. 1 passed' "$work/$name.log" || say "$name: $test did not run (see $name.log)"
done
bench_end
