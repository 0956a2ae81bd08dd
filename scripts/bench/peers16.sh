#!/usr/bin/env bash
# GPU machine, CPU only: scripts/bench/compare_peers.sh with 16 threads on MNIST 70k (the
# 16-thread table "CPU backend against FIt-SNE and openTSNE" of benches/RESULTS.md). The
# machine has python3 (3.12, with numpy, scipy and scikit-learn) and no internet, so the
# peers come as cp312 wheels staged on the development machine by
# scripts/bench/stage_peers.sh into .bench/whl/ (openTSNE's from PyPI, fitsne's built against
# FFTW, libfftw3.so.3 in .bench/whl/lib/); they are installed into /tmp/peers-site. About
# 6 minutes (sgtsne 15 s, FIt-SNE and openTSNE near 3 minutes each).
#
#   scripts/bench/peers16.sh [THREADS]        # default 16
#
# Carry .bench/bin, .bench/data and .bench/whl. Output: $OUT/peers16.txt and .tgz. The GPU
# backend with `--order locality` against `--order input`, which this script ran before, is
# `scripts/bench/gpu_embed.sh order`.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
threads=${1:-16}
bench_begin peers16
mnist_input
whl=$bench_root/.bench/whl
site=/tmp/peers-site
if ! python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target "$site" "$whl"/*.whl; then
  say "no peers' wheels in $whl: run scripts/bench/stage_peers.sh on the development machine"
  exit 1
fi
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$whl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
SGTSNE_BIN=$sgtsne PEERS_PYTHON=python3 "$bench_dir/compare_peers.sh" "${mnist[0]}" "$threads" \
  "$work" sgtsne fitsne opentsne 2>&1 | tee -a "$summary"
bench_end
