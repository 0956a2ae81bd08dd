#!/usr/bin/env bash
# sgtsne (--backend cpu) against openTSNE and FIt-SNE on one point set with one protocol:
# perplexity 30 (k = 90), 1000 iterations of which 250 at exaggeration 12, learning rate n/12,
# PCA initialisation, THREADS threads. Per tool: wall time and peak RSS from /usr/bin/time -v,
# and KL(P‖Q) of its embedding scored by `sgtsne kl` (one P, exact Z, for all three).
#
#   scripts/compare_peers.sh [POINTS.npy] [THREADS] [OUT_DIR] [TOOLS...]
#
# The peers live in a throw-away venv, .dev/peers, made on first use: openTSNE and fitsne
# from PyPI (fitsne builds against FFTW: `apt-get install libfftw3-dev` first).
# TOOLS defaults to `sgtsne fitsne opentsne`. Elsewhere (the GPU host, no internet):
# PEERS_PYTHON names a python that imports the peers, SGTSNE_BIN a carried binary.
set -euo pipefail
cd "$(dirname "$0")/.."
points=${1:-../shared/data/mnist/mnist70k_pca50_f32.npy}
threads=${2:-2}
out=${3:-target/peers}
shift $(( $# < 3 ? $# : 3 ))
tools=${*:-sgtsne fitsne opentsne}
mkdir -p "$out"
bin=${SGTSNE_BIN:-target/release/sgtsne}
[ -x "$bin" ] || cargo build --release
venv=.dev/peers
python=${PEERS_PYTHON:-$venv/bin/python}
needs_venv=false
for tool in $tools; do [ "$tool" = sgtsne ] || needs_venv=true; done
if $needs_venv && [ -z "${PEERS_PYTHON:-}" ] && [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q numpy scipy openTSNE cython setuptools wheel
  "$venv/bin/pip" install -q --no-build-isolation fitsne
fi

# /usr/bin/time -v, or where it is missing the two lines of it read below, from Python.
timed() {
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -v "$@"
  else
    python3 -c 'import resource, subprocess, sys, time
t = time.time(); rc = subprocess.call(sys.argv[1:]); w = time.time() - t
print("\tElapsed (wall clock) time (h:mm:ss or m:ss): %d:%05.2f" % (w // 60, w % 60), file=sys.stderr)
print("\tMaximum resident set size (kbytes): %d" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(rc)' "$@"
  fi
}
seconds() { awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$1" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }'; }
rss_gib() { awk -F': ' '/Maximum resident set size/ {printf "%.2f", $2/1048576}' "$1"; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-9s %8s %9s %8s\n' tool wall_s peak_GiB KL
for tool in $tools; do
  if [ "$tool" = sgtsne ]; then
    timed "$bin" embed "$points" --threads "$threads" --backend cpu --quiet \
      -o "$out/$tool.npy" --report "$out/$tool.json" 2> "$out/$tool.time"
  else
    timed "$python" scripts/peers.py "$tool" "$points" "$out/$tool.npy" "$threads" \
      > "$out/$tool.log" 2> "$out/$tool.time"
  fi
  kl=$("$bin" kl "$points" "$out/$tool.npy" --threads "$threads")
  printf '%-9s %8s %9s %8s\n' "$tool" "$(seconds "$out/$tool.time")" "$(rss_gib "$out/$tool.time")" "$kl"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
