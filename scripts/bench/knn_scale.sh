#!/usr/bin/env bash
# GPU machine: the approximate kNN at scale, `embed --backend gpu` on `sgtsne gen --n N
# --dim 50 --clusters 40` mixtures (made once into .bench/gen/), defaults otherwise. Per run
# one summary line (with the kNN's sample recall); the tables "kNN at scale" of
# benches/RESULTS.md.
#
#   scripts/bench/knn_scale.sh [SECTION...]        # default: 1m3 5m 10m
#
#   1m3    1.3M: warm-up, exact ×1, approx ×3 (cells order), approx in input order ×1,
#          approx at 12 and 48 probes ×1 (about 2 minutes)
#   5m     5M: approx ×2, exact ×1 (about 2.5 minutes)
#   10m    10M: approx ×2 (cells order), approx in input order ×1 (about 3 minutes)
#   digits 1.3M deformed MNIST digits (scripts/bench/stage_images.sh): warm-up, exact ×1,
#          approx ×3, approx at 64 probes ×1 (about 1.5 minutes)
#   digits10m  10M deformed MNIST digits: approx ×2 (about 3 minutes)
#   20m    20M mixture: approx ×1 on the 80 GB H100 (about 3 minutes)
#   cpu    1.3M mixture, `--backend cpu --threads 16` (`--knn auto`: approx on the host)
#   cold   1.3M deformed digits with an empty kernel cache and an empty driver cache
#          (CUDA_CACHE_PATH; a fresh machine's first run), then warm ×3 with the caches
#          that run filled, and their medians (about 40 s)
#   coldparts  1.3M deformed digits, what a first run pays for: with both caches empty (run
#          first on a fresh machine, the true first run), warm ×3 with the caches it filled,
#          both caches empty again ×2 on the now warm machine, only the kernel cache empty
#          (NVRTC), only the driver's cache empty (cuFFT's kernels); about 1 minute
#   sizes  the `--knn auto` threshold: exact and approx at 250k, 500k, 1M (about 1 minute)
#
# Writes $OUT/knn-scale.txt and $OUT/knn-scale.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_begin knn-scale

# 1.3M deformed digits: a first run with an empty kernel cache and an empty driver cache
# (where NVRTC and cuFFT keep what they compile: a fresh machine's first run), then three
# warm runs with both caches as it left them, and their median; the caches stay in
# `kernels` and `driver`.
first_then_warm() {
  digits 1300000
  kernels=$(mktemp -d /tmp/sgtsne-cold-cache.XXXXXX)
  driver=$(mktemp -d /tmp/sgtsne-cold-driver.XXXXXX)
  CUDA_CACHE_PATH=$driver SGTSNE_CACHE=$kernels embed digits-cold "${input[@]}" --backend gpu
  local r warm=()
  for r in 1 2 3; do
    CUDA_CACHE_PATH=$driver SGTSNE_CACHE=$kernels embed "digits-warm-$r" "${input[@]}" \
      --backend gpu && warm+=("digits-warm-$r")
  done
  medians "warm, 1.3M digits" "${warm[@]}"
}

[ $# -gt 0 ] || set -- 1m3 5m 10m
for section in "$@"; do
  case $section in
    1m3)
      mixture 1300000
      embed big-warmup "${input[@]}" --backend gpu --knn approx
      embed big-exact "${input[@]}" --backend gpu --knn exact
      for r in 1 2 3; do
        embed "big-approx-$r" "${input[@]}" --backend gpu --knn approx
      done
      medians "1.3M approx" big-approx-1 big-approx-2 big-approx-3
      embed big-approx-input "${input[@]}" --backend gpu --knn approx --order input
      embed big-approx-p12 "${input[@]}" --backend gpu --knn approx --knn-probes 12
      embed big-approx-p48 "${input[@]}" --backend gpu --knn approx --knn-probes 48
      ;;
    5m)
      mixture 5000000
      for r in 1 2; do
        embed "5m-approx-$r" "${input[@]}" --backend gpu --knn approx
      done
      embed 5m-exact "${input[@]}" --backend gpu --knn exact
      ;;
    10m)
      mixture 10000000
      for r in 1 2; do
        embed "10m-approx-$r" "${input[@]}" --backend gpu --knn approx
      done
      medians "10M approx" 10m-approx-1 10m-approx-2
      embed 10m-approx-input "${input[@]}" --backend gpu --knn approx --order input
      ;;
    digits)
      digits 1300000
      embed digits-warmup "${input[@]}" --backend gpu --knn approx
      embed digits-exact "${input[@]}" --backend gpu --knn exact
      for r in 1 2 3; do
        embed "digits-approx-$r" "${input[@]}" --backend gpu --knn approx
      done
      medians "1.3M digits approx" digits-approx-1 digits-approx-2 digits-approx-3
      embed digits-approx-p64 "${input[@]}" --backend gpu --knn approx --knn-probes 64
      ;;
    digits10m)
      digits 10000000
      for r in 1 2; do
        embed "digits10m-approx-$r" "${input[@]}" --backend gpu --knn approx
      done
      medians "10M digits approx" digits10m-approx-1 digits10m-approx-2
      ;;
    20m)
      mixture 20000000
      embed 20m-approx "${input[@]}" --backend gpu --knn approx
      ;;
    cpu)
      mixture 1300000
      embed cpu-1m3 "${input[@]}" --backend cpu --threads 16
      ;;
    cold)
      first_then_warm
      ;;
    coldparts)
      first_then_warm
      fresh() { mktemp -d /tmp/sgtsne-cold-fresh.XXXXXX; }
      for r in 1 2; do
        CUDA_CACHE_PATH=$(fresh) SGTSNE_CACHE=$(fresh) embed "digits-cold-both-$r" \
          "${input[@]}" --backend gpu
      done
      CUDA_CACHE_PATH=$driver SGTSNE_CACHE=$(fresh) embed digits-cold-nvrtc "${input[@]}" \
        --backend gpu
      CUDA_CACHE_PATH=$(fresh) SGTSNE_CACHE=$kernels embed digits-cold-driver "${input[@]}" \
        --backend gpu
      ;;
    sizes)
      for n in 250000 500000 1000000; do
        mixture "$n"
        embed "$n-exact" "${input[@]}" --backend gpu --knn exact
        embed "$n-approx" "${input[@]}" --backend gpu --knn approx
      done
      ;;
    *) say "unknown section $section (1m3, 5m, 10m, digits, digits10m, 20m, cpu, cold, coldparts, sizes)" ;;
  esac
done
bench_end
