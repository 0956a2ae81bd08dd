#!/usr/bin/env bash
# GPU machine with several GPUs: `embed --backend gpu --gpus N` (issue 18). NCCL from the
# machine's pip wheel (lib.sh `nccl_path`), NVLink multicast off.
#
#   scripts/bench/multi_gpu.sh [SECTION...]      # default: tests 10m
#
#   tests      the multi-GPU library tests (the split kNN sweep's, the G2G's pattern shares,
#              P's blocks made on their GPUs, the quality measure's shares of the points,
#              the staged copies too) and the integration
#              tests `multi_gpu::`, with SGTSNE_REQUIRE_GPUS=2 (a host with fewer GPUs fails
#              them), about 1 minute
#   (1m3, 10m, 10m1 and digits10m first embed a 200k mixture once on each GPU count, untimed:
#   the timed runs find the kernels compiled and cuFFT's kernels in the driver's cache)
#   1m3        1.3M × 50 mixture: 1 GPU, then 2 … all GPUs, once each (about 1 minute)
#   10m        10M × 50 mixture (40 clusters): 1 GPU ×RUNS, then 2 … all GPUs ×RUNS each
#              (RUNS=2 by default: about 5 minutes on 2 GPUs); `--knn approx`, KL and timings
#              per run, medians from 2 runs; COUNTS="1 4" runs those GPU counts only
#   10m1       10M × 50 mixture: 1 GPU, then all GPUs, once each (about 1.5 minutes on 4)
#   load       10M × 50 mixture read by numpy and by `sgtsne info` (twice each), then
#              embedded on 1 GPU and on all, once each: the load stage alone against the
#              same read beside the GPUs' warm-up (about 1.5 minutes)
#   digits10m  10M deformed MNIST digits: 1 GPU, then all GPUs, once each; carry
#              .bench/images (about 4 minutes)
#   peers      peer-copy bandwidth GPU 0 → 1 with the devices' memory pools open to each
#              other (as the copies leave them) and closed: the ignored library test
#              gpu::memory::tests::peer_copy_bandwidth, 1 and 4 GiB (seconds)
#   nccl       10M × 50 mixture on all GPUs, traced, once with NCCL's defaults and once per
#              setting of NCCL_VARIANTS (default "NCCL_CUMEM_ENABLE=0 NCCL_CUMEM_ENABLE=1"),
#              NCCL's set-up log (NCCL_DEBUG=INFO, INIT and ALLOC) kept: what its set-up
#              beside the kNN sweep stalls (sweep_takes.py's summary); about 1 minute a run
#   50m        50M × 50 mixture on all GPUs, once, with each GPU's memory sampled every
#              second (nvidia-smi, $OUT/…/50m-smi.csv): the issue's largest run
#
# Writes $OUT/multi-gpu.txt and $OUT/multi-gpu.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_begin multi-gpu
nccl_path
gpus=$(nvidia-smi --list-gpus | wc -l)
say "gpus: $gpus"

# Once per script, before the first timed run: an embed of a 200k mixture on each GPU count,
# so that a fresh machine's kernel compiles and cuFFT planning (a first 10M run took 43.5 s
# against 38.6 s warm on 2×H100) stay out of the timings.
warmed=0
warm_up() {
  [ "$warmed" = 1 ] && return
  warmed=1
  local g saved=("${input[@]}")
  mixture 200000
  for g in ${COUNTS:-$(seq 1 "$gpus")}; do
    embed "warm-up-g$g" "${input[@]}" --knn approx --backend gpu --gpus "$g" || true
  done
  input=("${saved[@]}")
}

# One embed per GPU count, `runs` times each: NAME-gK-r (after the warm-up).
scaling() {
  local name=$1 runs=$2 g r names
  shift 2
  warm_up
  for g in ${COUNTS:-$(seq 1 "$gpus")}; do
    names=()
    for r in $(seq 1 "$runs"); do
      embed "$name-g$g-$r" "$@" --backend gpu --gpus "$g" && names+=("$name-g$g-$r")
    done
    [ "$runs" -lt 2 ] || medians "$name on $g GPUs" "${names[@]}"
  done
}

[ $# -gt 0 ] || set -- tests 10m
status=0
for section in "$@"; do
  case $section in
    tests)
      build_root=$(sed -n 's/^root //p' "$bin_dir/BUILD")
      if [ -n "$build_root" ] && [ ! -e "$build_root/Cargo.toml" ]; then
        mkdir -p "$(dirname "$build_root")" && ln -sfn "$bench_root" "$build_root"
      fi
      program=$(sed -n 's/^program //p' "$bin_dir/BUILD")
      if [ -n "$program" ] && [ ! -e "$program" ]; then
        mkdir -p "$(dirname "$program")" && ln -sf "$sgtsne" "$program"
      fi
      SGTSNE_REQUIRE_GPU=1 logged lib-multi "$bin_dir/sgtsne-lib-tests" backend::multi split_sweep \
        sparse::hyb repulse::g2g gpu::memory affinity::gpu::tests::gpu_affinity_blocks \
        quality::gpu || status=1
      SGTSNE_REQUIRE_GPUS=2 logged int-multi "$bin_dir/sgtsne-int-tests" multi_gpu:: \
        --test-threads 1 --nocapture || status=1
      for t in lib-multi int-multi; do
        grep -E '^test result' "$work/$t.log" | sed "s/^/$t: /" | tee -a "$summary"
        grep -E '^test .* FAILED$|panicked|^first step|^KL after|^NCCL' "$work/$t.log" |
          tee -a "$summary"
      done
      ;;
    peers)
      SGTSNE_REQUIRE_GPU=1 logged peers "$bin_dir/sgtsne-lib-tests" \
        gpu::memory::tests::peer_copy_bandwidth --ignored --nocapture --exact || status=1
      grep -E 'GiB|one GPU' "$work/peers.log" | tee -a "$summary"
      ;;
    1m3)
      mixture 1300000
      scaling 1m3 1 "${input[@]}" --knn approx
      ;;
    10m)
      mixture 10000000
      scaling 10m "${RUNS:-2}" "${input[@]}" --knn approx
      ;;
    10m1)
      mixture 10000000
      warm_up
      embed 10m-g1 "${input[@]}" --knn approx --backend gpu --gpus 1
      embed "10m-g$gpus" "${input[@]}" --knn approx --backend gpu --gpus "$gpus"
      ;;
    load)
      mixture 10000000
      for r in 1 2; do
        logged "load-numpy-$r" python3 -c 'import numpy, sys; numpy.load(sys.argv[1])' "${input[0]}"
        logged "load-info-$r" "$sgtsne" info "${input[0]}"
      done
      embed load-g1 "${input[@]}" --knn approx --backend gpu --gpus 1
      embed "load-g$gpus" "${input[@]}" --knn approx --backend gpu --gpus "$gpus"
      ;;
    digits10m)
      digits 10000000
      scaling digits10m 1 "${input[@]}" --knn approx
      ;;
    50m)
      mixture 50000000
      nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits -l 1 \
        > "$work/50m-smi.csv" 2> /dev/null &
      smi=$!
      embed "50m-g$gpus" "${input[@]}" --knn approx --backend gpu --gpus "$gpus" || status=1
      kill "$smi" 2> /dev/null
      python3 - "$work/50m-smi.csv" <<'PY' | tee -a "$summary"
import sys
peak = {}
for line in open(sys.argv[1]):
    gpu, used = (int(v) for v in line.split(","))
    peak[gpu] = max(peak.get(gpu, 0), used)
print("peak memory per GPU (MiB):", ", ".join(f"{g}: {m}" for g, m in sorted(peak.items())))
PY
      ;;
    nccl)
      # What NCCL's set-up beside the kNN sweep costs it: the 10M mixture on all GPUs,
      # traced, with NCCL's defaults and then with each setting of NCCL_VARIANTS, NCCL's
      # own log of its set-up (INIT, ALLOC) beside each run's trace; the sweep's takes
      # summed (sweep_takes.py: each GPU's seconds busy, the longest stall of the host).
      mixture 10000000
      warm_up
      n=0
      for variant in "" ${NCCL_VARIANTS:-NCCL_CUMEM_ENABLE=0 NCCL_CUMEM_ENABLE=1}; do
        n=$((n + 1))
        say "nccl-$n: ${variant:-defaults}"
        (
          export SGTSNE_TRACE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ALLOC
          export NCCL_DEBUG_FILE=$work/nccl-$n.%h.%p.log
          [ -z "$variant" ] || export "${variant?}"
          embed "nccl-$n" "${input[@]}" --knn approx --backend gpu --gpus "$gpus"
        ) || status=1
      done
      python3 "$bench_dir/sweep_takes.py" "$work"/nccl-*.err | tee -a "$summary"
      ;;
    *) say "unknown section $section"; status=1 ;;
  esac
done
bench_end
exit "$status"
