#!/usr/bin/env bash
# On the GPU host (16 cores, no internet): scripts/compare_peers.sh with 16 threads, the peers
# from carried cp312 wheels (openTSNE's from PyPI, fitsne's built on the development machine
# against FFTW, libfftw3.so.3 beside them) over the host's python3 (numpy, scipy and
# scikit-learn are there), then the GPU backend with and without the locality order.
#
# The device runs the session's main checkout, so everything travels in one ignored folder,
# CARRY (default .dev/cpu), laid out as: scripts/{device_peers.sh,compare_peers.sh,peers.py},
# bin/sgtsne, whl/*.whl, whl/lib/libfftw3.so.3; MNIST in .dev/data:
#
#   run(command="bash .dev/cpu/scripts/device_peers.sh", carry=[".dev/cpu", ".dev/data"])
set -uo pipefail
root=$PWD
carry=$root/${CARRY:-.dev/cpu}
data=$root/.dev/data/mnist70k_pca50_f32.npy
export SGTSNE_CACHE=/tmp/sgtsne-cache PYTHONUNBUFFERED=1
out=${OUT:-/tmp/out}
work=/tmp/peers
mkdir -p "$work" "$out"
echo "cores: $(nproc), $(python3 --version), load: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$carry"/whl/*.whl
export PYTHONPATH=/tmp/site LD_LIBRARY_PATH=$carry/whl/lib:${LD_LIBRARY_PATH:-}
bin=$carry/bin/sgtsne
SGTSNE_BIN=$bin PEERS_PYTHON=python3 "$carry/scripts/compare_peers.sh" "$data" 16 "$work" \
  sgtsne fitsne opentsne 2>&1 | tee "$out/peers16.txt"
for order in locality input locality input; do
  "$bin" embed "$data" --backend gpu --order "$order" --quiet --report "$work/gpu-$order.json"
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); s=r['seconds']; o=r['optimise']; \
print(sys.argv[2], 'total', round(s['total'],3), 'order', round(s['order'],3), 'knn', round(s['knn'],3), \
'optimise', round(s['optimise'],3), 'attract', round(o['attract_seconds'],3), 'repulse', \
round(o['repulse_seconds'],3), 'KL', round(o['final_kl'],4))" "$work/gpu-$order.json" "$order" \
    | tee -a "$out/gpu-order.txt"
done
tar czf "$out/peers16.tgz" -C "$work" --exclude='*.npy' .
