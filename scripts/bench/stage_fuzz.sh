#!/usr/bin/env bash
# Builds the fuzz targets (tests/fuzz, as scripts/fuzz.sh does: libFuzzer, AddressSanitizer,
# debug assertions) and stages them stripped into .bench/fuzz/TARGET.xz (about 1.5 MB each),
# for scripts/bench/fuzz_staged.sh on a machine of many cores without Rust.
#
#   scripts/bench/stage_fuzz.sh TARGET...
#
# Needs nightly Rust and cargo-fuzz; the instrumented build takes 10–15 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -gt 0 ] || { echo "usage: scripts/bench/stage_fuzz.sh TARGET..." >&2; exit 2; }
cargo +nightly fuzz build --fuzz-dir tests/fuzz -a
mkdir -p .bench/fuzz
for t in "$@"; do
  bin=tests/fuzz/target/x86_64-unknown-linux-gnu/release/$t
  [ -x "$bin" ] || { echo "stage_fuzz: no target $t" >&2; exit 1; }
  strip -o ".bench/fuzz/$t" "$bin"
  xz -f -T2 -6 ".bench/fuzz/$t"
done
echo "commit $(git rev-parse --short HEAD)" > .bench/fuzz/BUILD
ls -l .bench/fuzz
