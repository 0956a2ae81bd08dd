#!/usr/bin/env bash
# GPU machine: the sparse PCA of a wide count matrix on the GPU against the host, and
# `sgtsne knn` on either device (the table "h5ad" and the kNN-tool row of
# benches/RESULTS.md). Binaries from .bench/bin (scripts/bench/stage.sh), raw MNIST images
# from .bench/images (scripts/bench/stage_images.sh).
#
#   scripts/bench/sparse_pca.sh [N] [GENES] [DENSITY]   # default 100000 30000 0.03
#
#   sparse  an N × GENES CSR count matrix in an .h5ad (scripts/bench/h5ad_gen.py; anndata's
#           layout written by h5py where anndata is missing), then `embed --use-rep X
#           --iters 1` with --backend gpu twice (the first compiles the kernels) and
#           --backend cpu on all cores once: load, sparse PCA to 50 and kNN seconds, and
#           the largest difference between the GPU's and the host's PCA scores, up to sign
#   knn     `sgtsne knn` of 200,000 deformed MNIST digits (lib.sh `digits`; carry
#           .bench/images), exact on the GPU and the host and approx on the GPU: seconds and
#           the agreement of the neighbour sets
#
# About 2 minutes (generating the matrix takes most). Writes $OUT/sparse-pca.txt and
# $OUT/sparse-pca.tgz.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
n=${1:-100000}
genes=${2:-30000}
density=${3:-0.03}
bench_begin sparse-pca

sparse=$gen_dir/sparse_${n}x${genes}.h5ad
mkdir -p "$gen_dir"
[ -s "$sparse" ] || logged gen-sparse python3 scripts/bench/h5ad_gen.py sparse "$n" "$genes" \
  "$density" "$sparse" || exit 1
for run in gpu-1 gpu-2 cpu; do
  backend=${run%-*}
  logged "pca-$run" "$sgtsne" embed "$sparse" --use-rep X --backend "$backend" --iters 1 \
    --early-exaggeration-iters 1 --init pca --report "$work/pca-$run.json" \
    -o "$work/pca-$run.npy" --quiet
done
python3 - "$work" <<'PY' | tee -a "$summary"
import json, sys
import numpy as np
w = sys.argv[1]
for run in ("gpu-1", "gpu-2", "cpu"):
    r = json.load(open(f"{w}/pca-{run}.json"))
    s = r["seconds"]
    print(f"sparse {r['input']['n']} x {r['input']['d']}, {run}: load {s['load']:.2f} s, "
          f"PCA to 50 {s['pca']:.2f} s, kNN {s['knn']:.2f} s, total {s['total']:.2f} s")
PY

digits 200000
for run in gpu cpu; do
  logged "knn-exact-$run" "$sgtsne" knn "${input[0]}" --knn exact --backend "$run" \
    -o "$work/knn-exact-$run.npz" --report "$work/knn-exact-$run.json" --quiet
done
logged knn-approx-gpu "$sgtsne" knn "${input[0]}" --knn approx --backend gpu \
  -o "$work/knn-approx-gpu.npz" --report "$work/knn-approx-gpu.json" --quiet
python3 - "$work" <<'PY' | tee -a "$summary"
import json, sys
import numpy as np
w = sys.argv[1]
ref = np.load(f"{w}/knn-exact-cpu.npz")
for run in ("exact-gpu", "exact-cpu", "approx-gpu"):
    r = json.load(open(f"{w}/knn-{run}.json"))
    got = np.load(f"{w}/knn-{run}.npz")
    same = np.mean([len(set(a) & set(b)) / len(a) for a, b in zip(got["indices"], ref["indices"])])
    dd = np.abs(np.sort(got["distances"], 1) - np.sort(ref["distances"], 1)).max()
    print(f"knn 200k deformed digits k=90 {run}: {json.dumps(r.get('seconds'))}, "
          f"recall against exact cpu {same:.4f}, largest distance difference {dd:.2e}, "
          f"report recall {r['knn'].get('recall_sample')}")
PY
bench_end
