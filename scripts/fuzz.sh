#!/usr/bin/env bash
# Fuzzes the input readers with libFuzzer: the cargo-fuzz crate in tests/fuzz, one target per
# reader (tests/fuzz/README.md lists them).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     # default: 600 s each, every target in turn
#
# Prints one line per target: executions, seconds, crashes. A crash (a panic, or an
# allocation beyond -malloc_limit_mb) stops that target and leaves its input in
# tests/fuzz/artifacts/TARGET/; the inputs that widened coverage accumulate in
# tests/fuzz/corpus/TARGET/ (both git-ignored), seeded from tests/fuzz/seeds/TARGET/.
# Needs nightly Rust and cargo-fuzz, and installs neither: the stable test suite runs a short
# mutation pass over the same seeds instead (tests/fuzz_readers.rs). On a shared machine run
# it with `nice`.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-600}
shift || true
if ! [[ $secs =~ ^[0-9]+$ ]] || [ "$secs" -eq 0 ]; then
  echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]  (SECONDS a whole number > 0)" >&2
  exit 2
fi
if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "error: needs a nightly toolchain (rustup toolchain install nightly)" >&2
  exit 1
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "error: needs cargo-fuzz (cargo install cargo-fuzz)" >&2
  exit 1
fi

fuzz_dir=tests/fuzz
if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo +nightly fuzz list --fuzz-dir "$fuzz_dir")
fi

# Inputs of a few KB exercise every header and row path; an allocation beyond 256 MB for one
# of them is out of proportion to it, so libFuzzer reports it as a crash. The .h5ad seeds are
# ~10 KB of HDF5 metadata, hence their larger bound.
max_len() {
  case $1 in
    h5ad) echo 32768 ;;
    *) echo 4096 ;;
  esac
}

# -a: debug assertions, so an arithmetic overflow is a crash rather than a wrong size. Built
# once up front, so that each target's seconds are its fuzzing alone.
cargo +nightly fuzz build --fuzz-dir "$fuzz_dir" -a

log_dir=$(mktemp -d)
trap 'rm -rf "$log_dir"' EXIT
status=0
for t in "${targets[@]}"; do
  mkdir -p "$fuzz_dir/corpus/$t" "$fuzz_dir/artifacts/$t"
  before=$(find "$fuzz_dir/artifacts/$t" -type f | wc -l)
  start=$SECONDS
  if ! cargo +nightly fuzz run --fuzz-dir "$fuzz_dir" -a "$t" \
    "$fuzz_dir/corpus/$t" "$fuzz_dir/seeds/$t" -- \
    -max_total_time="$secs" -max_len="$(max_len "$t")" \
    -malloc_limit_mb=256 -rss_limit_mb=1024 -timeout=10 -print_final_stats=1 \
    >"$log_dir/$t.log" 2>&1; then
    status=1
  fi
  # libFuzzer's own seconds when it ran its time out; else (a crash) the wall time.
  elapsed=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log_dir/$t.log" | grep -o '[0-9]* second' | grep -o '[0-9]*' || true)
  elapsed=${elapsed:-$((SECONDS - start))}
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log_dir/$t.log" | tail -1 | grep -o '[0-9]*$' || true)
  crashes=$(($(find "$fuzz_dir/artifacts/$t" -type f | wc -l) - before))
  echo "$t: ${runs:-0} executions, $elapsed s, $crashes crashes"
  if [ "$crashes" -gt 0 ] || [ -z "$runs" ]; then
    echo "  log:" >&2
    tail -40 "$log_dir/$t.log" | sed 's/^/    /' >&2
  fi
done
exit $status
