#!/usr/bin/env bash
# sgtsne (--backend cpu) against openTSNE and FIt-SNE on one point set with one protocol:
# perplexity 30 (k = 90), 1000 iterations of which 250 at exaggeration 12, learning rate n/12,
# PCA initialisation, THREADS threads. Per tool: wall time and peak RSS (/usr/bin/time -v, or
# Python where it is missing), and KL(P‖Q) of its embedding scored by `sgtsne kl` (one P,
# exact Z, for all three). The table "CPU backend against FIt-SNE and openTSNE" of
# benches/RESULTS.md; about 5 minutes at 2 threads on the development machine.
#
#   scripts/bench/compare_peers.sh [POINTS.npy] [THREADS] [OUT_DIR] [TOOLS...]
#
# POINTS defaults to ../shared/data/mnist/mnist70k_pca50_f32.npy, THREADS to 2, OUT_DIR
# (embeddings, logs, the summary peers.txt) to target/peers, TOOLS to `sgtsne fitsne
# opentsne`. The peers live in a throw-away venv, .bench/peers, made on first use: openTSNE
# and fitsne from PyPI (fitsne builds against FFTW: `apt-get install libfftw3-dev` first).
# The venv is large: carry .bench/bin and .bench/data, never all of .bench. Elsewhere (the
# GPU machine, no internet; scripts/bench/peers16.sh): PEERS_PYTHON names a python that
# imports the peers, SGTSNE_BIN a staged binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
points=${1:-../shared/data/mnist/mnist70k_pca50_f32.npy}
threads=${2:-2}
dir=${3:-target/peers}
shift $(($# < 3 ? $# : 3))
tools=${*:-sgtsne fitsne opentsne}
export SGTSNE_BIN=${SGTSNE_BIN:-$PWD/target/release/sgtsne} OUT=$dir BENCH_WORK=$dir
[ -x "$SGTSNE_BIN" ] || cargo build --release
# shellcheck source=scripts/bench/lib.sh
. scripts/bench/lib.sh
venv=.bench/peers
python=${PEERS_PYTHON:-$venv/bin/python}
needs_venv=false
for tool in $tools; do [ "$tool" = sgtsne ] || needs_venv=true; done
if $needs_venv && [ -z "${PEERS_PYTHON:-}" ] && [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q numpy scipy openTSNE cython setuptools wheel
  "$venv/bin/pip" install -q --no-build-isolation fitsne
fi

bench_begin peers
say "points $points, $threads threads"
for tool in $tools; do
  if [ "$tool" = sgtsne ]; then
    timed "$work/$tool.time" "$sgtsne" embed "$points" --threads "$threads" --backend cpu --quiet \
      -o "$work/$tool.npy" --report "$work/$tool.json"
  else
    timed "$work/$tool.time" "$python" scripts/bench/peers.py "$tool" "$points" "$work/$tool.npy" \
      "$threads" > "$work/$tool.log" 2>&1
  fi
  kl=$("$sgtsne" kl "$points" "$work/$tool.npy" --threads "$threads")
  say "$tool: $(python3 scripts/bench/summarize.py time "$work/$tool.time"), KL $kl"
done
[ ! -s "$work/sgtsne.json" ] || python3 scripts/bench/summarize.py line "$work" sgtsne | tee -a "$summary"
say "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
