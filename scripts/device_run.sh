#!/usr/bin/env bash
# Runs on the GPU machine over a copy of the tree: the GPU tests, then the GPU benchmarks of
# benches/RESULTS.md. Expects prebuilt binaries in .dev/bin (sgtsne and the library's test
# binary, built on the development machine) and MNIST in .dev/data; writes under $OUT.
#
#   scripts/device_run.sh [tests|bench|hybrid|all]
#
# `hybrid` is the three-backend comparison of benches/RESULTS.md (MNIST with cpu, gpu and
# hybrid f32/f64; 1.3M in 2-D and 3-D with gpu and hybrid, and the per-evaluation repulsion
# times of the CPU and the GPU at the final embeddings' extent).
set -uo pipefail
what=${1:-all}
bin=.dev/bin
data=.dev/data
out=${OUT:-/tmp/sgtsne-out}
reports=/tmp/sgtsne-reports
mkdir -p "$out" "$reports"
export SGTSNE_CACHE=/tmp/sgtsne-cache
log="$out/summary.txt"

{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  "$bin/sgtsne" info
} | tee "$log"

if [ "$what" = tests ] || [ "$what" = all ]; then
  # Every GPU test of the library against its CPU twin (names contain "gpu").
  "$bin/sgtsne-lib-tests" gpu --test-threads 2 > "$out/tests.txt" 2>&1
  echo "gpu tests exit $?" | tee -a "$log"
  grep -E "^test |test result" "$out/tests.txt" | tee -a "$log"
fi

# One run: prints the stage split of its report to the summary.
embed() {
  local name=$1; shift
  /usr/bin/time -f "%e s wall, %M KiB peak" "$bin/sgtsne" embed "$@" --report "$reports/$name.json" \
    -o "/tmp/$name.npy" -q 2> "/tmp/$name.time" || { echo "$name FAILED" | tee -a "$log"; cat "/tmp/$name.time" | tee -a "$log"; return; }
  python3 - "$reports/$name.json" "$name" "$(tail -n 1 /tmp/$name.time)" <<'PY' | tee -a "$log"
import json, sys
r = json.load(open(sys.argv[1])); s = r["seconds"]; o = r["optimise"]; q = r["quality"]
acc = q.get("knn_accuracy_10"); pres = q.get("knn_preservation_10")
print(f"{sys.argv[2]}: total {s['total']:.2f} s | pca {s['pca']:.2f} knn {s['knn']:.2f} aff {s['affinities']:.3f} "
      f"layout {s['layout']:.3f} init {s['init']:.2f} optimise {s['optimise']:.2f} quality {s['quality']:.2f} | "
      f"attract {o['attract_seconds']:.2f} repulse {o['repulse_seconds']:.2f} (s2g {o['repulse_split']['s2g']:.2f} "
      f"g2g {o['repulse_split']['g2g']:.2f} g2s {o['repulse_split']['g2s']:.2f} phi2force {o['repulse_split']['phi2force']:.2f}) "
      f"update {o['update_seconds']:.2f} grid {o['final_grid']} | KL {o['final_kl']:.4f} acc10 {acc} pres10 {pres} "
      f"nnz {r['p_nnz']} threads {r['threads']} | {sys.argv[3]}")
v = o.get("overlap")
if v:
    print(f"  per evaluation (median ms): attract {v['attract_median']*1e3:.2f} repulse {v['repulse_median']*1e3:.2f} "
          f"wall {v['wall_median']*1e3:.2f} (attract mean {o['attract_seconds']/r['params']['optim']['iters']*1e3:.2f}); "
          f"wall total {v['wall_seconds']:.2f} s, overlap {v['overlap']:.3f}")
PY
}

if [ "$what" = bench ] || [ "$what" = all ]; then
  embed demo-gpu --demo --backend gpu
  for r in 1 2 3; do
    embed "mnist-gpu-$r" "$data/mnist70k_pca50_f32.npy" --labels "$data/mnist70k_labels_u8.npy" --backend gpu
  done
  embed mnist-gpu-3d "$data/mnist70k_pca50_f32.npy" --labels "$data/mnist70k_labels_u8.npy" --backend gpu --dims 3
  "$bin/sgtsne" gen --n 1300000 --dim 50 --clusters 40 -o /tmp/big.npy --labels /tmp/big_labels.npy 2>&1 | tee -a "$log"
  for dims in 2 1 3; do
    for r in 1 2 3; do
      embed "big-${dims}d-$r" /tmp/big.npy --labels /tmp/big_labels.npy --backend gpu --dims "$dims"
    done
  done
fi

mnist=("$data/mnist70k_pca50_f32.npy" --labels "$data/mnist70k_labels_u8.npy")
if [ "$what" = bench ] || [ "$what" = all ]; then
  for p in f32 f64; do
    embed "mnist-hybrid-$p" "${mnist[@]}" --backend hybrid --precision "$p"
  done
  # 1.3M hybrid: 68 ms per iteration on the CSB attraction; 200 iterations give the
  # per-iteration medians (1000 take 231 s end to end in 2-D).
  for dims in 2 3; do
    embed "big-${dims}d-hybrid-200it" /tmp/big.npy --labels /tmp/big_labels.npy --backend hybrid \
      --dims "$dims" --iters 200 --exaggeration-iters 50
  done
fi

if [ "$what" = hybrid ]; then
  embed mnist-cpu "${mnist[@]}" --backend cpu
  embed mnist-gpu "${mnist[@]}" --backend gpu
  for p in f32 f64; do
    embed "mnist-hybrid-$p" "${mnist[@]}" --backend hybrid --precision "$p"
  done
  # One core left to the GPU's driving thread: do the attraction's slow evaluations go away?
  embed mnist-hybrid-f32-15threads "${mnist[@]}" --backend hybrid --threads 15
  "$bin/sgtsne" gen --n 1300000 --dim 50 --clusters 40 -o /tmp/big.npy --labels /tmp/big_labels.npy 2>&1 | tee -a "$log"
  big=(/tmp/big.npy --labels /tmp/big_labels.npy)
  embed big-2d-gpu "${big[@]}" --backend gpu
  embed big-3d-gpu "${big[@]}" --backend gpu --dims 3
  for dims in 2 3; do
    embed "big-${dims}d-hybrid-200it" "${big[@]}" --backend hybrid --dims "$dims" --iters 200 \
      --exaggeration-iters 50
  done
  for y in /tmp/big-2d-gpu.npy /tmp/big-3d-gpu.npy; do
    SGTSNE_STAGE_Y=$y "$bin/sgtsne-lib-tests" hybrid::tests::repulsion_stage_bench --ignored --nocapture 2>&1 |
      grep -E "cpu fft|gpu F" | tee -a "$log"
  done
fi

# Every run report in one archive (the device tool returns at most 8 files).
tar czf "$out/reports.tgz" -C "$reports" .
