#!/usr/bin/env bash
# Runs staged fuzz targets (scripts/bench/stage_fuzz.sh) on a machine of many cores, all at
# once, each in libFuzzer's fork mode with its share of the cores and the limits of
# scripts/fuzz.sh (inputs up to 4 KB, 32 KB for h5ad; an allocation beyond 256 MB or a
# process beyond 1 GB is a crash; 10 s per input). Seeds from tests/fuzz/seeds/TARGET.
#
#   scripts/bench/fuzz_staged.sh SECONDS TARGET=JOBS...     # e.g. 380 text_labels=12 h5ad=4
#
# Writes $OUT/fuzz-staged.txt: per target the executions, seconds and crashes (a crash's
# input is kept in $OUT/crashes/TARGET/).
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=$1
shift
out=${OUT:-/tmp/sgtsne-out}
work=$(mktemp -d /tmp/sgtsne-fuzz.XXXXXX)
mkdir -p "$out"
summary=$out/fuzz-staged.txt
echo "# fuzz-staged, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n), $(nproc) cores, $(cat .bench/fuzz/BUILD)" | tee "$summary"
for spec in "$@"; do
  t=${spec%%=*} jobs=${spec#*=}
  xz -dc ".bench/fuzz/$t.xz" > "$work/$t" && chmod +x "$work/$t"
  max_len=4096
  [ "$t" != h5ad ] || max_len=32768
  mkdir -p "$work/corpus-$t" "$out/crashes/$t"
  (cd "$work" && "./$t" -fork="$jobs" -ignore_crashes=0 "corpus-$t" "$OLDPWD/tests/fuzz/seeds/$t" \
    -max_total_time="$secs" -max_len="$max_len" -malloc_limit_mb=256 -rss_limit_mb=1024 \
    -timeout=10 -artifact_prefix="$out/crashes/$t/" > "$work/$t.log" 2>&1) &
done
wait
for spec in "$@"; do
  t=${spec%%=*} jobs=${spec#*=}
  last=$(grep -aE '^#[0-9]+:' "$work/$t.log" | tail -n 1)
  runs=$(echo "$last" | grep -oE '^#[0-9]+' | tr -d '#')
  crashes=$(find "$out/crashes/$t" -type f | wc -l)
  echo "$t: ${runs:-?} executions in $secs s on $jobs processes, $crashes crashes ($last)" | tee -a "$summary"
  [ "$crashes" -eq 0 ] || tail -n 30 "$work/$t.log" | tee -a "$summary"
done
