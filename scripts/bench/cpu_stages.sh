#!/usr/bin/env bash
# Development machine: the criterion benches of the CPU optimisation's stages
# (benches/stages.rs: attraction in input and locality order, S2G, G2G, G2S on the default
# 2-D grid, synthetic clustered layout), the "criterion" figures of benches/RESULTS.md.
#
#   scripts/bench/cpu_stages.sh [70k|1M|all]     # default 70k
#
# 70k: a few minutes on 2 cores (after the bench's build). 1M: about 70 s of setup and
# samples, 4.5 GiB peak. Threads: rayon's default (all cores). Criterion's output is kept in
# target/bench-stages/<size>.txt (and its own target/criterion/).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p target/bench-stages
sizes=${1:-70k}
[ "$sizes" != all ] || sizes="70k 1M"
for size in $sizes; do
  cargo bench --bench stages -- --bench "$size" --warm-up-time 1 --measurement-time 4 2>&1 |
    tee "target/bench-stages/$size.txt"
done
