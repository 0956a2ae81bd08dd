#!/usr/bin/env bash
# GPU machine: does the late phase wait on the map's growth? 1.3M deformed MNIST digits,
# `embed` (the backend `auto` picks, the GPU there): the early phase alone (`--iters 250`),
# then `--iters auto` started from its map (`--init`, no early phase of its own) scaled by
# each of SCALES, and from that map after STAGE_ITERS iterations at exaggeration
# STAGE_EXAGGERATION (below 1: the repulsion outweighs the pull, the map grows faster).
# Each run's summary line, then scripts/bench/kl_path.py's: the KL along the run and the
# first iteration within 1 % of REF_KL (a 10000-iteration run's; the continued runs count
# from the early phase's end, so add its 250 to compare them with a run from the PCA start).
#
#   scripts/bench/converge_restart.sh
#
# Environment: SCALES (default 1,2,4,8), STAGE_EXAGGERATION (0.5), STAGE_ITERS (300; 0: no
# such run), REF_KL (default 4.764, the 10000-iteration run of benches/RESULTS.md), N
# (default 1300000), EMBED_ARGS (added to every run).
# Needs .bench/bin (or SGTSNE_BIN), .bench/data and .bench/images
# (scripts/bench/stage_images.sh). About 2 minutes on one H200. Writes
# $OUT/converge-restart.txt.
set -uo pipefail
# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_begin converge-restart
read -r -a extra <<< "${EMBED_ARGS:-}"
ref=${REF_KL:-4.764}
stage_iters=${STAGE_ITERS:-300}
digits "${N:-1300000}"
path() { python3 "$bench_dir/kl_path.py" "$work/$1.json" "$ref" | tee -a "$summary"; }
embed early "${input[@]}" --iters 250 "${extra[@]}" || exit 1
IFS=, read -r -a scales <<< "${SCALES:-1,2,4,8}"
python3 - "$work/early.npy" "${scales[@]}" <<'PY'
import sys
import numpy as np
y = np.load(sys.argv[1])
print(f"early phase's map: std {np.round(y.std(0), 3)}, extent {np.round(np.ptp(y, 0), 2)}")
for s in sys.argv[2:]:
    np.save(sys.argv[1].replace("early.npy", f"early-x{s}.npy"), (y * float(s)).astype(np.float32))
PY
for s in "${scales[@]}"; do
  embed "x$s" "${input[@]}" --init "$work/early-x$s.npy" --early-exaggeration-iters 0 \
    --iters auto "${extra[@]}" && path "x$s"
done
if [ "$stage_iters" -gt 0 ]; then
  ex=${STAGE_EXAGGERATION:-0.5}
  embed "stage" "${input[@]}" --init "$work/early.npy" --early-exaggeration-iters 0 \
    --exaggeration "$ex" --iters "$stage_iters" "${extra[@]}" &&
    embed "stage-auto" "${input[@]}" --init "$work/stage.npy" --early-exaggeration-iters 0 \
      --iters auto "${extra[@]}" && path "stage-auto"
fi
bench_end
