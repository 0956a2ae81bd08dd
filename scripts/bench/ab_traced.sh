#!/usr/bin/env bash
# GPU machine: two builds run for run on the 10M × 50 mixture over several GPUs, traced
# (SGTSNE_TRACE=1) with NCCL's set-up timings (NCCL_DEBUG=INFO, INIT): per run the wall,
# the report's stages, each GPU's seconds busy in the kNN's sweep and the host's longest
# stall queueing it, the trace's times of NCCL's set-up and of the sweep, and NCCL's "Init
# timings" (kernels, bootstrap, connections …) of every communicator.
#
#   A_BIN=… B_BIN=… ORDER="2:a 2:b 2:a 2:b 1:b" scripts/bench/ab_traced.sh
#
# A_BIN, B_BIN   the two binaries (default .bench/base/sgtsne and .bench/bin/sgtsne)
# A_ENV, B_ENV   NAME=VALUE settings, space-separated, for that side's runs only (e.g. the
#                same binary on both sides with B_ENV="NCCL_CUMEM_ENABLE=0"; default none)
# ORDER          the runs, each GPUS:BUILD, in order (default "2:a 2:b 2:a 2:b 2:a 2:b 1:b")
#
# One untimed warm-up embed of a 200k mixture on 1 GPU and on the most GPUs of ORDER first
# (kernel compile, cuFFT). About 25 s a two-GPU run and 35 s a one-GPU run on 2×H100.
# Writes $OUT/ab-traced.txt and $OUT/ab-traced.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
order=${ORDER:-2:a 2:b 2:a 2:b 2:a 2:b 1:b}
bench_begin ab-traced
ab_binaries
nccl_path
export SGTSNE_TRACE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT

most=1
for gv in $order; do [ "${gv%:*}" -le "$most" ] || most=${gv%:*}; done
mixture 200000
for g in 1 "$most"; do
  "$a_bin" embed "${input[@]}" --knn approx --backend gpu --gpus "$g" -o "$work/warm.npy" \
    --quiet 2> /dev/null
  "$b_bin" embed "${input[@]}" --knn approx --backend gpu --gpus "$g" -o "$work/warm.npy" \
    --quiet 2> /dev/null
done
mixture 10000000

# summary RUN: one line from RUN's report, trace and time, then NCCL's timings.
summary_of() {
  python3 - "$1" "$bench_dir" << 'PY'
import json, re, sys
f = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from sweep_takes import takes_of
r = json.load(open(f + ".json"))
s, k = r["seconds"], r["knn"]["ivf"]["seconds"]
_, busy, stall, _ = takes_of(f + ".err")
marks = {}
names = {"NCCL: loading its kernels on GPU 0": "kernels from",
         "NCCL: kernels loaded on GPU 0": "kernels loaded",
         "knn: points assigned": "assigned", "knn: sweep begins": "sweep",
         "knn: swept": "swept", "NCCL: communicators made": "made"}
for line in open(f + ".err"):
    # The event, without the memory trace lines end with since `6ff9712`.
    m = re.match(r"trace\s+([\d.]+) s\s+\S+\s+(.*?)(?:  \[rss .*)?$", line)
    if m and m[2].strip() in names:
        marks[names[m[2].strip()]] = float(m[1])
    if m and re.match(r"NCCL: \d+ communicators", m[2]):
        marks["NCCL from"] = float(m[1])
wall = open(f + ".time").read().split()[0]
print("%s: wall %s total %.2f knn %.2f sweep %.2f (busy per GPU %s, longest queueing %.0f ms) "
      "affinities %.2f optimise %.2f quality %.2f KL %.4f | %s" % (
          f.split("/")[-1], wall, s["total"], s["knn"], k["sweep"],
          " / ".join("%.2f" % v for _, v in sorted(busy.items())), max(stall or [0]),
          s["affinities"], s["optimise"], s["quality"], r["optimise"]["final_kl"],
          ", ".join("%s %.2f" % kv for kv in sorted(marks.items(), key=lambda kv: kv[1]))))
PY
}

status=0
for gv in $order; do
  g=${gv%:*} side=${gv#*:}
  bin=${side}_bin env_of=${side^^}_ENV
  side_env=${!env_of:-}
  r=$(find "$work" -maxdepth 1 -name "10m-$side-g$g-*.json" | wc -l)
  name=10m-$side-g$g-$r
  NCCL_DEBUG_FILE=$work/$name.nccl.%p /usr/bin/time -f "%e" -o "$work/$name.time" \
    env ${side_env:+$side_env} "${!bin}" embed "${input[@]}" --knn approx --backend gpu --gpus "$g" \
    -o "$work/$name.npy" --report "$work/$name.json" --quiet 2> "$work/$name.err" ||
    { say "$name: failed"; status=1; continue; }
  summary_of "$work/$name" | tee -a "$summary"
  grep -ho 'Init timings.*' "$work/$name".nccl.* 2> /dev/null | sed 's/^/    /' |
    tee -a "$summary"
done
bench_end
exit "$status"
