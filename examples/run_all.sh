#!/usr/bin/env bash
# Runs every example; exits non-zero when any fails.
#
#   SGTSNE_BIN=target/release/sgtsne PYTHON=.venv/bin/python examples/run_all.sh [OUT_DIR]
#
# SGTSNE_BIN is the command-line binary; PYTHON a Python with the sgtsne package (and
# scikit-learn, anndata) installed. Each example writes into its own folder of OUT_DIR
# (default: a temporary folder). Each takes seconds on two cores.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${SGTSNE_BIN:?set SGTSNE_BIN to the sgtsne binary}"
: "${PYTHON:?set PYTHON to a python with the sgtsne package installed}"
SGTSNE_BIN="$(command -v "$SGTSNE_BIN")" || { echo "run_all: SGTSNE_BIN not found" >&2; exit 2; }
export SGTSNE_BIN PYTHON
out="${1:-$(mktemp -d)}"
mkdir -p "$out"

failed=()
run() {
    local name="$1"; shift
    echo "=== $name"
    local start=$SECONDS
    if "$@" "$out/$name"; then
        echo "--- $name: ok ($((SECONDS - start)) s)"
    else
        echo "--- $name: FAILED (status $?)"
        failed+=("$name")
    fi
}

run digits_cli       bash "$here/digits_cli.sh"
run new_points_cli   bash "$here/new_points_cli.sh"
run clusters_cli     bash "$here/clusters_cli.sh"
run sklearn_pipeline "$PYTHON" "$here/sklearn_pipeline.py"
run h5ad_anndata     "$PYTHON" "$here/h5ad_anndata.py"
run new_points       "$PYTHON" "$here/new_points.py"
run clusters         "$PYTHON" "$here/clusters.py"

if ((${#failed[@]})); then
    echo "run_all: ${#failed[@]} failed: ${failed[*]}" >&2
    exit 1
fi
echo "run_all: every example ran (outputs in $out)"
