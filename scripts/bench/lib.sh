# Sourced by the scripts of scripts/bench/ (not run on its own). It moves to the repository
# root and defines the paths and helpers they share:
#
#   bench_begin NAME     summary to $OUT/NAME.txt, reports to $BENCH_WORK (default
#                        /tmp/sgtsne-bench/NAME); prints the machine, the build, the load
#   say TEXT...          prints TEXT and appends it to the summary
#   timed FILE CMD...    runs CMD; its wall time and peak RSS go to FILE, as `/usr/bin/time -v`
#                        writes them (where /usr/bin/time is missing, the same lines from Python)
#   embed NAME ARGS...   `sgtsne embed ARGS` with a report, timed; one summary line: wall, peak
#                        RSS, seconds per stage, attraction/repulsion split, KL, 10-NN accuracy
#                        and preservation (scripts/bench/summarize.py)
#   knn NAME ARGS...     `sgtsne knn ARGS` with a report, timed; one summary line: seconds,
#                        and for the approximate kNN the sweep, refinement, recall, cells,
#                        probes and candidates a query
#   medians LABEL NAME...  medians of wall, report total and optimise over the runs NAME...
#   logged NAME CMD...   runs CMD timed, its output in the work folder; one line with the wall
#   mnist_input, big_input   set the arrays `mnist` and `big` to an input and its labels
#   mixture N [C], digits N  set the array `input` to N mixture points (C clusters, default
#                        40) or N deformed MNIST digits and their labels, generated into
#                        $BENCH_GEN on first use
#   ab_binaries          sets a_bin and b_bin (A_BIN, B_BIN; default .bench/base/sgtsne and
#                        the staged binary), says each with its BUILD line and A_ENV / B_ENV,
#                        and exits when one is missing (after bench_begin)
#   ab_runs RUNS CMD...  for each CMD, RUNS rounds of the caller's `run SIDE CMD NAME` with
#                        the two builds (a b, then b a: neither always first); fails if any
#                        run did
#   nccl_path            puts a libnccl.so on LD_LIBRARY_PATH (the pip wheel ships only
#                        libnccl.so.2), with NVLink multicast off (NCCL_NVLS_ENABLE=0)
#   bench_end            archives the work folder's reports and logs as $OUT/NAME.tgz
#
# Environment (all optional):
#   SGTSNE_BIN   the binary (default .bench/bin/sgtsne, staged by scripts/bench/stage.sh)
#   BENCH_DATA   MNIST (default .bench/data)
#   BENCH_GEN    generated inputs, made on first use (default .bench/gen, never carried)
#   OUT          where the summary and the archive go (default /tmp/sgtsne-out)
#   BENCH_WORK   reports, timings and embeddings (default /tmp/sgtsne-bench/NAME)
#   SGTSNE_CACHE the kernel cache (default /tmp/sgtsne-cache)
# shellcheck shell=bash

bench_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$bench_root" || exit 1
bench_dir=$bench_root/scripts/bench
bin_dir=$bench_root/.bench/bin
# The binaries travel packed (scripts/bench/stage.sh): unpacked here when the archive is
# newer than what is unpacked (`-m`: the files dated now, so the next script skips it).
if [ -s "$bench_root/.bench/bin.tar.xz" ] &&
  [ ! "$bin_dir/BUILD" -nt "$bench_root/.bench/bin.tar.xz" ]; then
  tar -xJmf "$bench_root/.bench/bin.tar.xz" -C "$bench_root/.bench"
fi
sgtsne=${SGTSNE_BIN:-$bin_dir/sgtsne}
data=${BENCH_DATA:-$bench_root/.bench/data}
gen_dir=${BENCH_GEN:-$bench_root/.bench/gen}
out=${OUT:-/tmp/sgtsne-out}
export SGTSNE_CACHE=${SGTSNE_CACHE:-/tmp/sgtsne-cache}
export PYTHONUNBUFFERED=1
bench_name=bench
work=/tmp/sgtsne-bench/bench
summary=/dev/null

say() { echo "$*" | tee -a "$summary"; }

bench_begin() {
  bench_name=$1
  work=${BENCH_WORK:-/tmp/sgtsne-bench/$bench_name}
  mkdir -p "$work" "$out"
  summary=$out/$bench_name.txt
  : > "$summary"
  say "# $bench_name, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
  if [ -r "$bin_dir/BUILD" ] && [ "$sgtsne" = "$bin_dir/sgtsne" ]; then
    say "binaries: $(head -n 1 "$bin_dir/BUILD"), $(sed -n 2p "$bin_dir/BUILD")"
  else
    say "binary: $sgtsne"
  fi
  if command -v nvidia-smi > /dev/null; then
    say "gpu: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -n 1)"
  fi
  [ -x "$sgtsne" ] || { say "no binary at $sgtsne: run scripts/bench/stage.sh first"; exit 1; }
  "$sgtsne" info 2>&1 | tee -a "$summary"
}

timed() {
  local file=$1
  shift
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -v -o "$file" "$@"
  else
    python3 -c 'import resource, subprocess, sys, time
t = time.time(); rc = subprocess.call(sys.argv[2:]); w = time.time() - t
with open(sys.argv[1], "w") as f:
    print("\tElapsed (wall clock) time (h:mm:ss or m:ss): %d:%05.2f" % (w // 60, w % 60), file=f)
    print("\tMaximum resident set size (kbytes): %d" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=f)
sys.exit(rc)' "$file" "$@"
  fi
}

embed() {
  local name=$1
  shift
  if ! timed "$work/$name.time" "$sgtsne" embed "$@" --report "$work/$name.json" \
    -o "$work/$name.npy" --quiet 2> "$work/$name.err"; then
    say "$name: FAILED ($*)"
    tail -n 5 "$work/$name.err" | tee -a "$summary"
    return 1
  fi
  python3 "$bench_dir/summarize.py" line "$work" "$name" | tee -a "$summary"
}

knn() {
  local name=$1
  shift
  if ! timed "$work/$name.time" "$sgtsne" knn "$@" -o "$work/$name.npz" --index-type u32 \
    --report "$work/$name.json" --quiet 2> "$work/$name.err"; then
    say "$name: FAILED ($*)"
    tail -n 5 "$work/$name.err" | tee -a "$summary"
    return 1
  fi
  rm -f "$work/$name.npz"
  python3 - "$work/$name.json" "$name" <<'PY' | tee -a "$summary"
import json, sys
r = json.load(open(sys.argv[1]))
k = r["knn"]
line = f"{sys.argv[2]}: kNN {r['seconds']['knn']:.3f} s ({k['method']})"
iv = k.get("ivf")
if iv:
    s = iv.get("seconds", {})
    line += (f", sweep {s.get('sweep', 0):.2f} s, refine {s.get('refine', 0):.2f} s, recall "
             f"{k.get('recall_sample') or 0:.4f} (after the sweep {iv.get('recall_sweep') or 0:.4f}), "
             f"{iv.get('lists')} cells, {iv.get('probes')} probes, "
             f"{iv.get('candidates', 0):.0f} candidates a query")
print(line)
PY
}

# spread NAME: scripts/bench/spread.py's line for `embed NAME`'s embedding and report.
spread() {
  python3 "$bench_dir/spread.py" "$work/$1.npy" "$work/$1.json" | tee -a "$summary"
}

medians() {
  python3 "$bench_dir/summarize.py" medians "$work" "$@" | tee -a "$summary"
}

logged() {
  local name=$1 rc=0
  shift
  timed "$work/$name.time" "$@" > "$work/$name.log" 2>&1 || rc=$?
  say "$name: exit $rc, $(python3 "$bench_dir/summarize.py" time "$work/$name.time")"
  return "$rc"
}

mnist_input() {
  local f
  for f in mnist70k_pca50_f32.npy mnist70k_labels_u8.npy; do
    [ -s "$data/$f" ] || { say "no $data/$f: run scripts/bench/stage.sh first"; exit 1; }
  done
  # shellcheck disable=SC2034 # used by the scripts that source this file
  mnist=("$data/mnist70k_pca50_f32.npy" --labels "$data/mnist70k_labels_u8.npy")
}

# The 1.3M × 50 mixture of 40 clusters (seed 0) of every large benchmark, made once.
big_input() {
  local f=$gen_dir/gen1300k_d50_c40.npy l=$gen_dir/gen1300k_d50_c40_labels.npy
  if [ ! -s "$f" ] || [ ! -s "$l" ]; then
    mkdir -p "$gen_dir"
    logged gen-1300k "$sgtsne" gen --n 1300000 --dim 50 --clusters 40 -o "$f" --labels "$l" || exit 1
  fi
  # shellcheck disable=SC2034
  big=("$f" --labels "$l")
}

# mixture N [C]: sets the array `input` to the N × 50 mixture of C clusters (default 40;
# seed 0) and its labels, made on first use.
mixture() {
  local n=$1 c=${2:-40}
  local f=$gen_dir/gen${n}_d50_c$c.npy l=$gen_dir/gen${n}_d50_c${c}_labels.npy
  if [ ! -s "$f" ] || [ ! -s "$l" ]; then
    mkdir -p "$gen_dir"
    logged "gen-$n" "$sgtsne" gen --n "$n" --dim 50 --clusters "$c" -o "$f" --labels "$l" || exit 1
  fi
  input=("$f" --labels "$l")
}

# digits N: sets the array `input` to N deformed MNIST digits (the 70k images, then
# deformed copies; PCA 50; seed 0) and their labels, made on first use from the images that
# scripts/bench/stage_images.sh staged.
digits() {
  local n=$1 f=$gen_dir/digits${1}_d50.npy l=$gen_dir/digits${1}_d50_labels.npy
  local images=$gen_dir/mnist70k_784_u8.npy staged=$bench_root/.bench/images
  if [ ! -s "$f" ] || [ ! -s "$l" ]; then
    mkdir -p "$gen_dir"
    if [ ! -s "$images" ]; then
      [ -s "$staged/mnist70k_784_u8.npy.gz" ] ||
        { say "no $staged/mnist70k_784_u8.npy.gz: run scripts/bench/stage_images.sh first"; exit 1; }
      gunzip -c "$staged/mnist70k_784_u8.npy.gz" > "$images"
    fi
    logged "digits-$n" "$sgtsne" gen --deform-images "$images" \
      --image-labels "$staged/mnist70k_labels_u8.npy" --n "$n" --dim 50 --seed 0 \
      -o "$f" --labels "$l" || exit 1
  fi
  input=("$f" --labels "$l")
}

ab_binaries() {
  a_bin=${A_BIN:-$bench_root/.bench/base/sgtsne}
  b_bin=${B_BIN:-$sgtsne}
  local side bin env_of
  for side in a b; do
    bin=${side}_bin env_of=${side^^}_ENV
    [ -x "${!bin}" ] || { say "no binary at ${!bin}"; exit 1; }
    say "$side: ${!bin} ($(head -n 1 "${!bin%/*}/BUILD" 2> /dev/null || echo 'no BUILD file'))${!env_of:+ with ${!env_of}}"
  done
}

ab_runs() {
  local runs=$1 command r side sides status=0
  shift
  for command in "$@"; do
    for r in $(seq 1 "$runs"); do
      sides="a b"
      [ $((r % 2)) -eq 0 ] && sides="b a"
      for side in $sides; do
        run "$side" "$command" "$command-$side-$r" || status=1
      done
    done
  done
  return "$status"
}

nccl_path() {
  export NCCL_NVLS_ENABLE=0
  local lib link=/tmp/sgtsne-nccl
  lib=$(python3 -c 'import glob, os, nvidia.nccl as m
print((glob.glob(os.path.join(list(m.__path__)[0], "lib", "libnccl.so*")) or [""])[0])' 2> /dev/null)
  if [ -n "$lib" ]; then
    mkdir -p "$link" && ln -sf "$lib" "$link/libnccl.so"
    export LD_LIBRARY_PATH=$link${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    say "nccl: $lib"
  else
    say "nccl: no NCCL wheel found (python3 -m pip show nvidia-nccl-cu13)"
  fi
}

bench_end() {
  tar czf "$out/$bench_name.tgz" -C "$work" --exclude='*.npy' .
  say "reports: $out/$bench_name.tgz; summary: $summary"
}
