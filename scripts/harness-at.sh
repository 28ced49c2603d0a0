#!/usr/bin/env bash
# scripts/harness-at.sh REV: builds the harness as it was at git revision REV (release) and prints
# the path of the binary, for every measured.md row that compares against an older harness:
#   BEFORE=$(scripts/harness-at.sh 700d95b) make floor
# REV is checked out into its own worktree under target/at/ (your work tree is never touched) and
# built with target/at/build as cargo's target folder (the first build takes 5-15 minutes on two
# cores; later ones reuse the compiled dependencies). The binary is kept as
# target/at/harness-<full sha>: a second call for the same revision builds nothing.
# Progress goes to stderr; stdout is only the path. Exit 3 for a revision git does not know.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
rev=${1:?usage: scripts/harness-at.sh REV   (e.g. BEFORE=\$(scripts/harness-at.sh 700d95b) make floor)}
sha=$(git -C "$ROOT" rev-parse --verify --quiet "$rev^{commit}") || {
  echo "harness-at: git knows no revision '$rev' (git log --oneline | grep ... to find one)" >&2
  exit 3
}
AT="$ROOT/target/at"
bin="$AT/harness-$sha"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$AT"
# One build at a time: two calls for the same revision must not share a half-built tree.
exec 9>"$AT/.lock"
flock 9
if [ ! -x "$bin" ]; then
  tree="$AT/src-$sha"
  rm -rf "$tree"
  git -C "$ROOT" worktree prune
  git -C "$ROOT" worktree add --detach --force "$tree" "$sha" >&2
  trap 'git -C "$ROOT" worktree remove --force "$tree" >/dev/null 2>&1 || true' EXIT
  echo "harness-at: building the harness at ${sha:0:12} (cargo build --release -p harness)" >&2
  (cd "$tree" && cargo build --release -p harness --target-dir "$AT/build" >&2)
  cp "$AT/build/release/harness" "$bin.part"
  mv "$bin.part" "$bin"
fi
echo "$bin"
