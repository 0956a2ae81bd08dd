#!/usr/bin/env bash
# The project's test command (the README's second command): sets up what the tests need on a
# fresh machine, then runs the Rust suite, the Python package's suite and the browser tests.
#
# - One virtual environment (${SGTSNE_TEST_VENV:-~/.cache/sgtsne/test-venv}) from PyPI:
#   maturin and pytest; numpy, scipy, scikit-learn, pandas, anndata (the .h5ad round trips,
#   scikit-learn's GaussianMixture and estimator checks); NVIDIA's CUDA wheels, the package's
#   `cuda` extra, whose NVRTC compiles every kernel in the Rust tests (no GPU needed) and
#   whose libraries the Python package must find inside the environment.
# - `cargo test --release`; the Python package built by maturin into that environment and its
#   pytest suite (python/tests) against the CLI just built; the examples (examples/run_all.sh);
#   the guide's links (scripts/docs/check_links.py); the viewer's browser tests
#   (scripts/test/browser.sh installs Debian's chromium).
#
# Each SGTSNE_REQUIRE_* makes a missing tool a failure, so no check passes by skipping; GPU
# tests skip without a GPU (scripts/bench/gpu_tests.sh runs them on a GPU machine).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${SGTSNE_TEST_VENV:-$HOME/.cache/sgtsne/test-venv}
packages=(maturin==1.16.* pytest numpy scipy scikit-learn pandas anndata
  "nvidia-cuda-nvrtc==13.0.*" "nvidia-cufft==12.0.*" "nvidia-cublas==13.0.*"
  "nvidia-cusolver==12.0.*" nvidia-nccl-cu13)
if ! "$venv/bin/python" -c "import maturin, pytest, sklearn, anndata, pandas, nvidia" >/dev/null 2>&1; then
  python3 -m venv "$venv"
  if ! "$venv/bin/pip" install --quiet "${packages[@]}"; then
    echo "error: could not install the test environment from PyPI: ${packages[*]}" >&2
    exit 1
  fi
fi
nvrtc_lib=$(ls -d "$venv"/lib/python3*/site-packages/nvidia/cu13/lib)

export SGTSNE_ANNDATA_PYTHON="$venv/bin/python" SGTSNE_REQUIRE_ANNDATA=1
export SGTSNE_SKLEARN_PYTHON="$venv/bin/python" SGTSNE_REQUIRE_SKLEARN=1
export SGTSNE_REQUIRE_NVRTC=1
# For every step, not the Rust tests alone: the same environment lets the later builds
# reuse the tests' (a changed LD_LIBRARY_PATH rebuilds the crates whose build scripts read it).
export LD_LIBRARY_PATH="$nvrtc_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

echo "== Rust: cargo test --release"
cargo test --release

echo "== Python: the package (python/), built and tested"
cargo build --release --bin sgtsne
rm -rf target/wheels
(cd python && "$venv/bin/maturin" build --release --quiet -o ../target/wheels)
"$venv/bin/pip" install --quiet --force-reinstall --no-deps target/wheels/sgtsne-*.whl
SGTSNE_BIN="$PWD/target/release/sgtsne" SGTSNE_REQUIRE_CLI=1 SGTSNE_REQUIRE_CUDA_WHEELS=1 \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests

echo "== Examples: examples/run_all.sh"
SGTSNE_BIN="$PWD/target/release/sgtsne" PYTHON="$venv/bin/python" examples/run_all.sh

echo "== Docs: every relative link and anchor of the Markdown files"
"$venv/bin/python" scripts/docs/check_links.py

if [ -x scripts/test/browser.sh ]; then
  echo "== Browser: the viewer in headless Chromium"
  SGTSNE_BIN="$PWD/target/release/sgtsne" scripts/test/browser.sh
fi
