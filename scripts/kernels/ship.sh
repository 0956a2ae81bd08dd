#!/usr/bin/env bash
# Writes kernels/cubin/<arch>/<file>.zip: every kernel variant a single-precision run uses,
# compiled by NVRTC for sm_80, sm_90, sm_100 and sm_120, a zip per kernel file
# (src/gpu/shipped.rs says why and what each architecture serves).
# Run it after changing anything under kernels/ or a kernel's constants, and commit the
# archives with the change: the test gpu::shipped::tests::archives_match_the_sources fails
# until then. No GPU needed; NVRTC comes from the test environment (scripts/test.sh sets it up).
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${SGTSNE_TEST_VENV:-$HOME/.cache/sgtsne/test-venv}
if ! nvrtc_lib=$(ls -d "$venv"/lib/python3*/site-packages/nvidia/cu13/lib 2>/dev/null); then
  echo "error: no NVRTC in $venv: run scripts/test.sh once (it installs NVIDIA's wheels there)" >&2
  exit 1
fi
export LD_LIBRARY_PATH="$nvrtc_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" SGTSNE_REQUIRE_NVRTC=1
cargo test --release --lib gpu::shipped::tests::write_archives -- --ignored --exact
