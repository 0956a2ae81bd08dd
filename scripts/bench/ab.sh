#!/usr/bin/env bash
# GPU machine: two builds compared run for run, `embed --backend gpu` with defaults. A is
# .bench/base/sgtsne (scripts/bench/stage_base.sh COMMIT), B is .bench/bin/sgtsne
# (scripts/bench/stage.sh); A_BIN and B_BIN name others. Each input gets one warm-up run per
# build (kernel compile, cuFFT), then $RUNS (default 3) runs of each, interleaved A, B, A, B …
# so that drift of the machine falls on both alike (WARMUP=0 leaves the warm-ups out, for
# inputs after one that warmed both builds). Per run one summary line; per build the
# medians of wall, total, kNN, optimisation and attraction and the range of the final KL.
#
#   scripts/bench/ab.sh [mnist] [big] [digits] [5m] [10m] [digits10m]   # default mnist big:
#                                            # about 2.5 minutes on the H100
#
#   mnist      MNIST 70k (PCA 50), 2-D
#   big        `sgtsne gen --n 1300000 --dim 50 --clusters 40`, 2-D (made once into .bench/gen)
#   digits     1.3M deformed MNIST digits (scripts/bench/stage_images.sh), 2-D
#   5m         the 5M × 50 mixture (40 clusters), 2-D: about 17 s a run
#   10m        the 10M × 50 mixture (40 clusters), 2-D: about 40 s a run
#   digits10m  10M deformed MNIST digits, 2-D: about 30 s a run
#
# A_ENV, B_ENV: NAME=VALUE settings, space-separated, for that side's runs only (e.g. the same
# binary on both sides with B_ENV="SGTSNE_FFT=cufft"; default none).
#
# GPUS=N adds `--gpus N` to every run (NCCL from the machine's wheel, as multi_gpu.sh), for
# a comparison on one GPU of a host of several (GPUS=1) or on several: inputs of 1M points
# and more otherwise take every GPU the host has.
#
# Writes $OUT/ab.txt and $OUT/ab.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
a_bin=${A_BIN:-$bench_root/.bench/base/sgtsne}
b_bin=${B_BIN:-$sgtsne}
runs=${RUNS:-3}
bench_begin ab
for side in a b; do
  bin=a_bin
  [ "$side" = a ] || bin=b_bin
  build=${!bin%/*}/BUILD
  [ -x "${!bin}" ] || { say "no binary at ${!bin}"; exit 1; }
  env_of=${side^^}_ENV
  say "$side: ${!bin} ($(head -n 1 "$build" 2> /dev/null || echo 'no BUILD file'))${!env_of:+ with ${!env_of}}"
done

gpus=()
if [ -n "${GPUS:-}" ]; then
  gpus=(--gpus "$GPUS")
  nccl_path
  say "every run with --gpus $GPUS"
fi

# side_embed SIDE NAME ARGS...: `embed NAME ARGS --backend gpu` with SIDE's binary and
# settings.
side_embed() {
  local side=$1 env_of kv
  shift
  env_of=${side^^}_ENV
  [ "$side" = a ] && sgtsne=$a_bin || sgtsne=$b_bin
  (
    for kv in ${!env_of:-}; do export "${kv?}"; done
    embed "$@" --backend gpu
  )
}

# compare NAME ARGS...: warm-ups, then interleaved runs, then the medians of each side.
compare() {
  local name=$1 side r
  shift
  set -- "$@" "${gpus[@]}"
  if [ "${WARMUP:-1}" != 0 ]; then
    for side in a b; do
      side_embed "$side" "$name-$side-warmup" "$@"
    done
  fi
  for r in $(seq "$runs"); do
    for side in a b; do
      side_embed "$side" "$name-$side-$r" "$@"
    done
  done
  for side in a b; do
    local names=()
    for r in $(seq "$runs"); do names+=("$name-$side-$r"); done
    medians "$name $side" "${names[@]}"
  done
}

[ $# -gt 0 ] || set -- mnist big
for section in "$@"; do
  case $section in
    mnist)
      mnist_input
      compare mnist-2d "${mnist[@]}"
      ;;
    big)
      big_input
      compare big-2d "${big[@]}"
      ;;
    digits)
      digits 1300000
      compare digits-2d "${input[@]}"
      ;;
    5m)
      mixture 5000000
      compare 5m-2d "${input[@]}"
      ;;
    10m)
      mixture 10000000
      compare 10m-2d "${input[@]}"
      ;;
    digits10m)
      digits 10000000
      compare digits10m-2d "${input[@]}"
      ;;
    *) say "unknown section $section (mnist, big, digits, 5m, 10m, digits10m)" ;;
  esac
done
bench_end
