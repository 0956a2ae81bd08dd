#!/usr/bin/env bash
# Reading AnnData files: sgtsne against anndata in Python (time and peak memory), and the
# sparse PCA of a wide count matrix (the table "h5ad" of benches/RESULTS.md).
#
#   scripts/bench/h5ad.sh [N_OBSM] [N_SPARSE] [GENES] [DENSITY] [THREADS]
#       # defaults 1300000, 100000, 30000, 0.03, all cores
#
# Needs a release build (cargo build --release; SGTSNE_BIN names another binary) and a
# Python with anndata (ANNDATA_PYTHON, default python3); writes into $OUT (default
# /tmp/sgtsne-out). anndata's figures include starting Python and importing it (~0.8 s).
set -euo pipefail
cd "$(dirname "$0")/../.."
n_obsm=${1:-1300000}
n_sparse=${2:-100000}
genes=${3:-30000}
density=${4:-0.03}
threads=${5:-$(nproc)}
python=${ANNDATA_PYTHON:-python3}
bin=${SGTSNE_BIN:-target/release/sgtsne}
out=${OUT:-/tmp/sgtsne-out}
mkdir -p "$out"
obsm=$out/obsm_${n_obsm}.h5ad
sparse=$out/sparse_${n_sparse}x${genes}.h5ad
[ -s "$obsm" ] || "$python" scripts/bench/h5ad_gen.py obsm "$n_obsm" "$obsm"
[ -s "$sparse" ] || "$python" scripts/bench/h5ad_gen.py sparse "$n_sparse" "$genes" "$density" "$sparse"
echo "# h5ad, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -n), $(nproc) cores, $threads threads, commit $(git rev-parse --short HEAD)"
ls -l "$obsm" "$sparse" | awk '{printf "# %s: %.0f MB\n", $9, $5 / 1e6}'

# Wall seconds and peak RSS (GiB) of a command, from GNU time.
measure() {
  /usr/bin/time -f "%e %M" -o "$out/time.txt" "$@" >/dev/null
  awk '{printf "%.2f s, peak %.2f GiB", $1, $2 / 1048576}' "$out/time.txt"
}
for case in "obsm X_pca $obsm" "X X $sparse"; do
  set -- $case
  what=$1 rep=$2 file=$3
  ours=$(measure "$bin" info "$file" --read --use-rep "$rep")
  if [ "$rep" = X ]; then
    get="a.X"
  else
    get="a.obsm['$rep']"
  fi
  theirs=$(measure "$python" -c "import sys, anndata; a = anndata.read_h5ad(sys.argv[1]); x = $get" "$file")
  echo "read $what of $(basename "$file"): sgtsne $ours; anndata $theirs"
done

# The sparse PCA to 50 components inside embed (one iteration: the PCA and kNN dominate).
"$bin" embed "$sparse" --use-rep X --backend cpu --threads "$threads" --iters 1 \
  --early-exaggeration-iters 1 --report "$out/h5ad-sparse-pca.json" --quiet
python3 - "$out/h5ad-sparse-pca.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["seconds"]
print(f"embed {r['input']['n']} × {r['input']['d']} sparse, cpu: load {s['load']:.2f} s, "
      f"sparse PCA to 50 {s['pca']:.2f} s, kNN {s['knn']:.2f} s, "
      f"peak {r['peak_rss_bytes'] / 2**30:.2f} GiB")
PY
