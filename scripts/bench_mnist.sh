#!/usr/bin/env bash
# Embeds MNIST 70k (PCA-50) with the CPU backend in 1, 2 and 3 dimensions and prints, per
# run: wall seconds, seconds per stage, final KL, 10-NN accuracy and peak memory.
#
#   scripts/bench_mnist.sh [DATA_DIR] [THREADS] [OUT_DIR]
#
# DATA_DIR holds mnist70k_pca50_f32.npy and mnist70k_labels_u8.npy (default
# ../shared/data/mnist); reports and /usr/bin/time logs land in OUT_DIR (default
# target/bench-mnist).
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-../shared/data/mnist}
threads=${2:-2}
out=${3:-target/bench-mnist}
mkdir -p "$out"
bin=target/release/sgtsne
[ -x "$bin" ] || cargo build --release

printf '%-4s %8s %7s %7s %7s %9s %8s %8s %9s\n' dims wall_s pca_s knn_s aff_s optim_s KL acc10 peak_GiB
for dims in 2 1 3; do
  /usr/bin/time -v "$bin" embed "$data/mnist70k_pca50_f32.npy" --labels "$data/mnist70k_labels_u8.npy" \
    --dims "$dims" --threads "$threads" --backend cpu --quiet \
    -o "$out/mnist-${dims}d.npy" --plot "$out/mnist-${dims}d.png" --report "$out/mnist-${dims}d.json" \
    2> "$out/mnist-${dims}d.time"
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$out/mnist-${dims}d.time" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  rss_kib=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$out/mnist-${dims}d.time")
  jq -r --arg d "$dims" --arg w "$wall" --arg r "$rss_kib" \
    '[$d, $w, .seconds.pca, .seconds.knn, .seconds.affinities, .seconds.optimise, .optimise.final_kl, .quality.knn_accuracy_10, ($r|tonumber/1048576)]
     | "\(.[0]) \(.[1]) \(.[2]*100|round/100) \(.[3]*100|round/100) \(.[4]*100|round/100) \(.[5]*100|round/100) \(.[6]*10000|round/10000) \(.[7]*10000|round/10000) \(.[8]*100|round/100)"' \
    "$out/mnist-${dims}d.json" | awk '{printf "%-4s %8s %7s %7s %7s %9s %8s %8s %9s\n", $1,$2,$3,$4,$5,$6,$7,$8,$9}'
done
