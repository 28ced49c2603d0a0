#!/usr/bin/env bash
# make test-busy: `make test` RUNS times in a row in a fresh clone of HEAD, while a second clone
# rebuilds the workspace from clean over and over beside it (the "machine kept busy by a parallel
# cargo build" of issue 28). Tests that pass or fail by timing show up here and not on a quiet
# machine. Every run uses --no-fail-fast, so one failure does not hide the rest.
# Prints one line per run and the failing tests; exits 1 if any run failed.
set -uo pipefail
RUNS=${RUNS:-5}
OUT=${OUT:-results/test-busy}
repo=$(git rev-parse --show-toplevel)
commit=$(git rev-parse HEAD)
work=$(mktemp -d)
OUT=$(mkdir -p "$OUT" && cd "$OUT" && pwd)
rm -f "$OUT"/run*.log "$OUT/summary"
load_pid=
cleanup() {
  rm -f "$work/load-on"
  [ -n "$load_pid" ] && { kill -- -"$load_pid" 2>/dev/null || kill "$load_pid" 2>/dev/null; wait "$load_pid" 2>/dev/null; }
  rm -rf "$work"
}
trap cleanup EXIT
# A bare trap would run cleanup and carry on with the next run.
trap 'exit 130' INT TERM
git clone -q "$repo" "$work/tests" && git -C "$work/tests" checkout -q "$commit"
git clone -q "$repo" "$work/load" && git -C "$work/load" checkout -q "$commit"
touch "$work/load-on"
# The load: clean and rebuild every target, at most 40 times, until the runs are over.
set -m
( cd "$work/load"
  for i in $(seq 1 40); do
    [ -f "$work/load-on" ] || break
    cargo clean -q
    cargo build -q --workspace --all-targets >/dev/null 2>&1
    echo "load build $i done $(date +%T)" >>"$OUT/load.log"
  done ) &
load_pid=$!
set +m
echo "test-busy: $RUNS runs of make test at $commit, a parallel cargo build as load; logs in $OUT"
failed_runs=0
for i in $(seq 1 "$RUNS"); do
  start=$(date +%s)
  (cd "$work/tests" && make test EXTRA_CARGO_ARGS=--no-fail-fast) >"$OUT/run$i.log" 2>&1
  rc=$?
  # make test's closing line: "tests: N passed, N failed, N skipped" (scripts/run-tests.py).
  sum() { grep '^tests: ' "$OUT/run$i.log" | tail -1 | grep -o "[0-9]* $1" | awk '{ s += $1 } END { print s + 0 }'; }
  line="run $i: exit $rc in $(( $(date +%s) - start )) s, load $(cut -d' ' -f1-3 /proc/loadavg), $(sum passed) passed, $(sum failed) failed, $(sum skipped) ignored"
  echo "$line" | tee -a "$OUT/summary"
  grep -E '^test .* FAILED$' "$OUT/run$i.log" | sort -u | sed 's/^/  /' | tee -a "$OUT/summary"
  [ "$rc" -eq 0 ] || failed_runs=$((failed_runs + 1))
done
echo "test-busy: $((RUNS - failed_runs)) of $RUNS runs passed" | tee -a "$OUT/summary"
[ "$failed_runs" -eq 0 ]
