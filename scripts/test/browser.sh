#!/usr/bin/env bash
# The browser tests of `sgtsne view` (tests/browser/): the pages it writes, opened in
# headless Chromium with software WebGL (SwiftShader), driven by Playwright from pytest.
#
# Sets up what they need on a fresh Debian machine (as root, for apt-get): the system's
# `chromium` package when missing, and a venv with pytest, playwright (whose wheel carries
# its driver; the browser is the system's, no download) and numpy + pillow.
# Builds nothing: the binary is $SGTSNE_BIN (default target/release/sgtsne).
# Extra arguments go to pytest (e.g. -k hover).
set -euo pipefail
cd "$(dirname "$0")/../.."

export SGTSNE_BIN=${SGTSNE_BIN:-target/release/sgtsne}
if [ ! -x "$SGTSNE_BIN" ]; then
  echo "error: $SGTSNE_BIN is not an executable sgtsne (build it: cargo build --release)" >&2
  exit 1
fi

export SGTSNE_CHROMIUM=${SGTSNE_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$SGTSNE_CHROMIUM" ]; then
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }; then
    echo "error: could not install Debian's chromium (apt-get); the browser tests need it" >&2
    exit 1
  fi
fi

venv=${SGTSNE_BROWSER_VENV:-$HOME/.cache/sgtsne/browser-venv}
if ! "$venv/bin/python" -c "import pytest, playwright, numpy, PIL" >/dev/null 2>&1; then
  python3 -m venv "$venv"
  if ! "$venv/bin/pip" install --quiet pytest playwright numpy pillow; then
    echo "error: could not install pytest, playwright, numpy and pillow (pip); the browser tests need them" >&2
    exit 1
  fi
fi

exec "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/browser "$@"
