#!/usr/bin/env bash
# Stages what the GPU machine needs, on the development machine, into the git-ignored
# folder .bench/ (nothing is fetched there: the machine gets the repository and .bench):
#
#   .bench/bin/sgtsne             the release binary, stripped
#   .bench/bin/sgtsne-lib-tests   the library's unit-test binary (GPU tests, micro-benchmarks)
#   .bench/bin/sgtsne-int-tests   the integration-test binary (tests/main.rs)
#   .bench/bin/BUILD              the commit, whether src/ had local changes, date, build root
#   .bench/bin.tar.xz             the four above, packed: what travels instead of .bench/bin
#   .bench/data/mnist70k_pca50_f32.npy, mnist70k_labels_u8.npy   MNIST 70k (PCA 50) and labels
#
#   scripts/bench/stage.sh [SHARED_DIR]        # SHARED_DIR default ../shared
#
# SHARED_DIR is the folder beside the repository that holds data/mnist/. The raw 784-pixel
# MNIST stays behind (55 MB); .bench/bin.tar.xz and .bench/data together must stay under
# 60 MiB, since they travel with the tree. Builds in release first: 3–5 minutes on 2 cores from
# scratch. The peers' wheels for scripts/bench/peers16.sh are staged apart, by
# scripts/bench/stage_peers.sh. How the GPU machine's scripts are then run: scripts/bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
shared=${1:-../shared}
mnist=$shared/data/mnist
for f in mnist70k_pca50_f32.npy mnist70k_labels_u8.npy; do
  [ -s "$mnist/$f" ] || { echo "stage: $mnist/$f is missing (SHARED_DIR: $shared)" >&2; exit 1; }
done

cargo build --release
json=$(mktemp)
trap 'rm -f "$json"' EXIT
cargo test --release --no-run --message-format=json > "$json"

# The executable of target NAME of kind KIND (lib, test, bin), from cargo's JSON messages:
# a test binary (TEST=1) or the program itself (TEST=0).
artifact() {
  python3 - "$json" "$1" "$2" "$3" <<'PY'
import json, sys
found = None
for line in open(sys.argv[1]):
    m = json.loads(line)
    t = m.get("target", {})
    if (m.get("reason") == "compiler-artifact" and t.get("name") == sys.argv[2]
            and sys.argv[3] in t.get("kind", [])
            and bool(m.get("profile", {}).get("test")) == (sys.argv[4] == "1")
            and m.get("executable")):
        found = m["executable"]
if found:
    print(found)
else:
    print(f"stage: no executable for {sys.argv[2]} ({sys.argv[3]}) in cargo's output",
          file=sys.stderr)
PY
}
lib_tests=$(artifact sgtsne lib 1)
int_tests=$(artifact main test 1)  # absent in commits before tests/main.rs
# The path the integration tests run the program from (compiled in; cargo resolves links
# in the target directory), linked to the staged binary on the GPU machine.
program=$(artifact sgtsne bin 0)
[ -n "$lib_tests" ] || exit 1

mkdir -p .bench/bin .bench/data
strip -o .bench/bin/sgtsne target/release/sgtsne
strip -o .bench/bin/sgtsne-lib-tests "$lib_tests"
rm -f .bench/bin/sgtsne-int-tests
[ -z "$int_tests" ] || strip -o .bench/bin/sgtsne-int-tests "$int_tests"
install -m 0644 "$mnist/mnist70k_pca50_f32.npy" "$mnist/mnist70k_labels_u8.npy" .bench/data/
changes=
[ -z "$(git status --porcelain -- src kernels tests Cargo.toml Cargo.lock)" ] ||
  changes=" + uncommitted changes to the sources"
{
  echo "commit $(git rev-parse --short HEAD)$changes"
  echo "built $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -n)"
  # The test binaries find configs/ and src/demo/ under this path and run the program
  # from the next (both compiled in); scripts/bench/gpu_tests.sh links them to the tree
  # and the binary where they run.
  echo "root $PWD"
  [ -z "$program" ] || echo "program $program"
} > .bench/bin/BUILD

# What travels: the binaries xz-compressed (61 MiB as they are, about 16 MiB packed),
# unpacked on the GPU machine by scripts/bench/lib.sh at a script's start.
tar -C .bench -cf - bin | xz -T0 -6 > .bench/bin.tar.xz
ls -l .bench/bin .bench/bin.tar.xz .bench/data
mib=$(du -smc .bench/bin.tar.xz .bench/data | tail -n 1 | cut -f1)
echo "stage: .bench/bin.tar.xz + .bench/data = $mib MiB ($(cut -c8- .bench/bin/BUILD | head -n 1))"
if [ "$mib" -gt 60 ]; then
  echo "stage: over 60 MiB; the tree and the carried files must stay under 64 MiB" >&2
  exit 1
fi
