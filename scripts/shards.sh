#!/usr/bin/env bash
# make shards: one broker-under-test; one harness process at the profile's rate; three shards of
# the same profile on one --start-at, merged; one process again. Prints each table and the
# comparison of the first single run with the merge. Loopback only; every run is bounded by
# the profile's schedule and a timeout.
set -euo pipefail
BIN=${BIN:-target/release}
OUT=${OUT:-results/shards}
PROFILE=${PROFILE:-profiles/shards.toml}
SHARDS=${SHARDS:-3}
for b in broker-under-test harness; do
  [ -x "$BIN/$b" ] || { echo "shards: $BIN/$b missing; run 'make build' first" >&2; exit 3; }
done
rm -rf "$OUT"; mkdir -p "$OUT"
broker_pid=
cleanup() { [ -n "$broker_pid" ] && kill -INT "$broker_pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$OUT/store"; }
trap cleanup EXIT
printf 'listenPort=0\nstorePathRootDir=%s/store\nmappedFileSizeCommitLog=67108864\n' "$OUT" >"$OUT/broker.conf"
"$BIN/broker-under-test" --strict -c "$OUT/broker.conf" >"$OUT/broker.out" 2>"$OUT/broker.log" &
broker_pid=$!
for _ in $(seq 1 100); do
  grep -q '^listening on ' "$OUT/broker.out" 2>/dev/null && break
  sleep 0.05
done
addr=$(sed -n 's/^listening on //p' "$OUT/broker.out")
[ -n "$addr" ] || { echo "shards: the broker did not start:" >&2; cat "$OUT/broker.log" >&2; exit 1; }
run() { timeout 300 "$BIN/harness" run "$PROFILE" --target "$addr" --broker-pid "$broker_pid" "$@"; }

echo "== one process"
run --out "$OUT/single-before" | tail -4
start_at=$(date -u -d '+3 sec' +%Y-%m-%dT%H:%M:%SZ)
echo "== $SHARDS shards from $start_at"
pids=()
for i in $(seq 0 $((SHARDS - 1))); do
  run --shard "$i/$SHARDS" --start-at "$start_at" --out "$OUT/shard-$i" >"$OUT/shard-$i.out" 2>&1 &
  pids+=($!)
done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=1; done
[ "$failed" = 0 ] || { echo "shards: a shard failed; see $OUT/shard-*.out" >&2; exit 4; }
"$BIN/harness" merge $(for i in $(seq 0 $((SHARDS - 1))); do echo "$OUT/shard-$i"; done) --out "$OUT/merged"
echo "== one process again"
run --out "$OUT/single-after" | tail -4
echo "== one process (before) vs the merge"
"$BIN/harness" compare "$OUT/single-before" "$OUT/merged"
