#!/usr/bin/env bash
# GPU machine: where an MNIST iteration's time goes. Three warm `embed --backend gpu` runs
# (their summary lines: stages, attraction / repulsion split); where Nsight Compute (`ncu`)
# is installed, the kernels of about one iteration late in a run (NCU_SKIP launches skipped,
# NCU_COUNT timed, default 20000 and 60), each timed alone with the caches as the run left
# them (`--cache-control none`; ncu's default flush makes L2-resident grids look 2-3x
# slower); then, where Nsight Systems
# (`nsys`) is installed, one run under it: the kernels' summed device time, count and mean,
# and the CUDA API calls the host made (count and summed time), so that the optimiser's
# seconds can be told apart into device work and the host's launches and waits.
#
#   scripts/bench/loop_profile.sh [EXTRA EMBED FLAGS...]
#
# About 15 s without nsys, 40 s with. Writes $OUT/loop-profile.txt and $OUT/loop-profile.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_begin loop-profile
mnist_input
"$sgtsne" embed "${mnist[@]}" --backend gpu -o "$work/warm.npy" --quiet "$@"
for r in 1 2 3; do
  embed "mnist-$r" "${mnist[@]}" --backend gpu "$@"
done
medians mnist mnist-1 mnist-2 mnist-3

# One iteration's kernels, late in the run, each timed alone by Nsight Compute (`ncu`,
# CUDA's toolkit): their device time, summed per kernel name.
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2> /dev/null | head -n 1)
if [ -n "$ncu" ]; then
  say "## one iteration's kernels (ncu: launches ${NCU_SKIP:=20000} .. +${NCU_COUNT:=60})"
  "$ncu" --launch-skip "$NCU_SKIP" --launch-count "$NCU_COUNT" --metrics gpu__time_duration.sum \
    --cache-control none \
    --csv --page raw --print-units base \
    "$sgtsne" embed "${mnist[@]}" --backend gpu -o "$work/ncu.npy" --quiet "$@" \
    > "$work/ncu.csv" 2> "$work/ncu.log" || say "ncu failed: $(tail -n 2 "$work/ncu.log")"
  python3 - "$work/ncu.csv" << 'PY' | tee -a "$summary"
import collections, csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
head = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
name, t = rows[head].index("Kernel Name"), rows[head].index("gpu__time_duration.sum")
sums, counts = collections.Counter(), collections.Counter()
for r in rows[head + 1:]:
    try:
        ns = float(r[t].replace(",", ""))  # ncu writes thousands with commas
    except (ValueError, IndexError):
        continue  # the units row
    key = r[name].split("(")[0][:60]
    sums[key] += ns
    counts[key] += 1
total = sum(sums.values())
for key, ns in sums.most_common():
    print(f"{ns / 1e3:9.1f} us  {counts[key]:3d}x  {key}")
print(f"{total / 1e3:9.1f} us in all")
PY
fi

nsys=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2> /dev/null | head -n 1)
if [ -z "$nsys" ]; then
  say "no nsys on this machine: the stages above are all there is"
  bench_end
  exit 0
fi
say "nsys: $nsys ($("$nsys" --version 2> /dev/null | head -n 1))"
"$nsys" profile --trace=cuda --sample=none --cpuctxsw=none -o "$work/mnist" --force-overwrite true \
  "$sgtsne" embed "${mnist[@]}" --backend gpu -o "$work/profiled.npy" --quiet "$@" \
  > "$work/nsys.log" 2>&1 || { say "nsys failed:"; tail -n 5 "$work/nsys.log" | tee -a "$summary"; }
for report in cuda_gpu_kern_sum cuda_api_sum cuda_gpu_mem_time_sum; do
  say "## $report"
  "$nsys" stats --report "$report" --format csv "$work/mnist.nsys-rep" 2> /dev/null |
    python3 -c '
import csv, sys
rows = [r for r in csv.reader(sys.stdin) if r]
head = next((i for i, r in enumerate(rows) if "Time (%)" in r), None)
if head is None:
    sys.exit("no table")
names = rows[head]
col = {n: names.index(n) for n in names}
for r in rows[head + 1 : head + 41]:
    print(f"{float(r[col[\"Time (%)\"]]):5.1f} %  {int(r[col[\"Total Time (ns)\"]]) / 1e6:9.2f} ms"
          f"  {int(r[col[\"Instances\" if \"Instances\" in col else \"Num Calls\" if \"Num Calls\" in col else \"Count\"]]):8d}"
          f"  {float(r[col[\"Avg (ns)\"]]) / 1e3:8.2f} us  {r[col[\"Name\" if \"Name\" in col else \"Operation\"]][:90]}")
' 2>&1 | tee -a "$summary"
done
bench_end
