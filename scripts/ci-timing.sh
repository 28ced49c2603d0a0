#!/usr/bin/env bash
# Times each target of `make ci` alone, in the order `make ci` runs them, under CI=true: the
# figures of docs/src/compare.md's CI table. Run it in a fresh clone to measure what CI pays
# (`git clone <repo> /tmp/fresh && cd /tmp/fresh && bash scripts/ci-timing.sh`); a second run
# in the same clone measures the incremental case instead. Stops at the first failing target.
set -euo pipefail
cd "$(dirname "$0")/.."
export CI=true
targets=$(awk -F': ' '/^ci:/ { sub(/ *##.*/, "", $2); print $2; exit }' Makefile)
[ -n "$targets" ] || { echo "no ci: target in the Makefile" >&2; exit 4; }
total=0
mkdir -p target
: > target/ci-timing.tsv
for t in $targets; do
    start=$(date +%s)
    make "$t"
    took=$(( $(date +%s) - start ))
    total=$(( total + took ))
    echo "ci-timing: $t ${took} s" >&2
    printf '%s\t%d s\n' "$t" "$took" >> target/ci-timing.tsv
done
echo "ci-timing: total ${total} s (each target's figure also in target/ci-timing.tsv)" >&2
