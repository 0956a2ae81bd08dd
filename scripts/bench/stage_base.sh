#!/usr/bin/env bash
# Stages the release binary of another commit as .bench/base/sgtsne (with .bench/base/BUILD),
# the "A" of scripts/bench/ab.sh. The commit is checked out in a git worktree under
# target/ab-worktree and built there with its own target folder (3–5 minutes on 2 cores the
# first time, less after); the worktree is removed afterwards.
#
#   scripts/bench/stage_base.sh COMMIT
set -euo pipefail
cd "$(dirname "$0")/../.."
commit=${1:?usage: scripts/bench/stage_base.sh COMMIT}
rev=$(git rev-parse --short "$commit^{commit}")
tree=$PWD/target/ab-worktree
git worktree remove --force "$tree" 2> /dev/null || true
git worktree add --detach "$tree" "$rev"
trap 'git worktree remove --force "$tree"' EXIT
(cd "$tree" && CARGO_TARGET_DIR=$PWD/../ab-target cargo build --release)
mkdir -p .bench/base
strip -o .bench/base/sgtsne target/ab-target/release/sgtsne
{
  echo "commit $rev"
  echo "built $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -n)"
} > .bench/base/BUILD
ls -l .bench/base
