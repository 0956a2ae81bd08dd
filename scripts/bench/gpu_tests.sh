#!/usr/bin/env bash
# GPU machine: the whole test suite on the device, from the staged test binaries
# (scripts/bench/stage.sh): the library's unit tests with SGTSNE_REQUIRE_GPU=1, so that a GPU
# test fails instead of skipping when no device is usable, and a fresh kernel cache (every
# kernel compiled by NVRTC once); then the integration tests, those over several GPUs one at
# a time (`multi_gpu::`), and alone, one at a time, the
# two that hold the device's memory (`bad_input::device_out_of_memory_names_the_stage_and_the_estimate`,
# `exact_tsne::exact_affinities_beyond_the_gpu_s_memory_are_refused`; ignored in the suite). About a minute and a half (mostly the first kernel compiles and the
# GPU tests); exits 1 when a test fails.
#
#   scripts/bench/gpu_tests.sh [TEST_THREADS]      # default 4
#
# Writes $OUT/gpu-tests.txt (summary: counts, failures) and $OUT/gpu-tests.tgz (full logs).
# The test binaries look for configs/ and src/demo/ under the path
# they were built in and run the program from its build path (both compiled in, `root` and
# `program` in .bench/bin/BUILD); where those are missing, they are linked to this tree and
# to the staged binary.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
threads=${1:-4}
bench_begin gpu-tests

build_root=$(sed -n 's/^root //p' "$bin_dir/BUILD")
if [ -n "$build_root" ] && [ ! -e "$build_root/Cargo.toml" ]; then
  mkdir -p "$(dirname "$build_root")" && ln -sfn "$bench_root" "$build_root"
  say "linked $build_root -> $bench_root"
fi
program=$(sed -n 's/^program //p' "$bin_dir/BUILD")
program=${program:-$build_root/target/release/sgtsne}
if [ -n "$program" ] && [ ! -e "$program" ]; then
  mkdir -p "$(dirname "$program")" && ln -sf "$sgtsne" "$program"
  say "linked $program -> $sgtsne"
fi

cache=$(mktemp -d /tmp/sgtsne-test-cache.XXXXXX)
status=0
SGTSNE_REQUIRE_GPU=1 SGTSNE_CACHE=$cache logged lib-tests "$bin_dir/sgtsne-lib-tests" \
  --test-threads "$threads" || status=1
tests=lib-tests
if [ -x "$bin_dir/sgtsne-int-tests" ]; then
  SGTSNE_CACHE=$cache logged int-tests "$bin_dir/sgtsne-int-tests" --test-threads "$threads" \
    --skip multi_gpu:: || status=1
  # One at a time: a run over several GPUs cannot share them with another (one of these
  # fills a GPU on purpose; beside it another could not even make its context).
  SGTSNE_CACHE=$cache logged int-tests-multi "$bin_dir/sgtsne-int-tests" --test-threads 1 \
    multi_gpu:: || status=1
  # Alone, after the others and one at a time: they hold (nearly) all the device's memory
  # while they run.
  SGTSNE_CACHE=$cache logged int-tests-alone "$bin_dir/sgtsne-int-tests" --ignored \
    --test-threads 1 device_out_of_memory exact_affinities_beyond_the_gpu || status=1
  tests="$tests int-tests int-tests-multi int-tests-alone"
fi
for t in $tests; do
  grep -E '^test result' "$work/$t.log" | sed "s/^/$t: /" | tee -a "$summary"
  grep -E '^test .* FAILED$' "$work/$t.log" | tee -a "$summary"
done
bench_end
exit "$status"
