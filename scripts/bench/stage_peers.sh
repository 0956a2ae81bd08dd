#!/usr/bin/env bash
# Stages the peers of scripts/bench/peers16.sh on the development machine, into .bench/whl/
# (git-ignored, about 5 MiB; carried to the GPU machine beside .bench/bin and .bench/data):
#
#   .bench/whl/openTSNE-1.0.4-cp312-*.whl   from PyPI
#   .bench/whl/fitsne-1.2.1-cp312-*.whl     built here against FFTW
#   .bench/whl/lib/libfftw3.so.3            the FFTW that wheel links to
#
#   scripts/bench/stage_peers.sh [PYTHON]     # a Python 3.12, default python3.12
#
# The GPU machine's python3 is 3.12 and has numpy, scipy and scikit-learn, so only the two
# peers travel. Needs FFTW's headers here (`apt-get install libfftw3-dev`) and PyPI.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${1:-python3.12}
"$py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' ||
  { echo "stage_peers: $py is not Python 3.12, the GPU machine's" >&2; exit 1; }
fftw=$(ldconfig -p | awk '/libfftw3\.so\.3 / {print $NF; exit}')
if [ -z "$fftw" ] || [ ! -e /usr/include/fftw3.h ]; then
  echo "stage_peers: FFTW missing: apt-get install libfftw3-dev" >&2
  exit 1
fi
mkdir -p .bench/whl/lib
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .bench/whl "openTSNE==1.0.4"
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
"$py" -m venv "$build/venv"
"$build/venv/bin/pip" install -q numpy cython setuptools wheel
"$build/venv/bin/pip" wheel -q --no-deps --no-build-isolation -w .bench/whl "fitsne==1.2.1"
cp -L "$fftw" .bench/whl/lib/libfftw3.so.3
ls -l .bench/whl .bench/whl/lib
du -sh .bench/whl
