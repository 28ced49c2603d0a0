#!/usr/bin/env bash
# make floor: the minimal pipelined sender and the harness against the same null responder,
# back to back, the responder pinned to one core and the sender to the other.
# Prints both rates and their ratio (goal: >= 0.35).
set -euo pipefail
BIN=${BIN:-target/release}
OUT=${OUT:-results/floor}
GOAL=${GOAL:-0.35}
cpus=$(nproc)
if [ "$cpus" -ge 2 ]; then GEN_CPU=0; RESP_CPU=1; else GEN_CPU=0; RESP_CPU=0; fi
for b in null-responder floor-sender harness; do
  [ -x "$BIN/$b" ] || { echo "floor: $BIN/$b missing; run 'make build' first" >&2; exit 3; }
done
tmp=$(mktemp -d)
responder_pid=
cleanup() { [ -n "$responder_pid" ] && kill "$responder_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
taskset -c "$RESP_CPU" "$BIN/null-responder" --for 5m >"$tmp/responder.out" 2>"$tmp/responder.err" &
responder_pid=$!
for _ in $(seq 1 100); do
  grep -q '^listening on ' "$tmp/responder.out" 2>/dev/null && break
  sleep 0.05
done
addr=$(sed -n 's/^listening on //p' "$tmp/responder.out")
[ -n "$addr" ] || { echo "floor: the null responder did not start:" >&2; cat "$tmp/responder.err" >&2; exit 1; }
echo "null responder on $addr (cpu $RESP_CPU); senders on cpu $GEN_CPU"

minimal=$(taskset -c "$GEN_CPU" "$BIN/floor-sender" --target "$addr" --in-flight 512 --message-size 128 --warmup 1s --duration 5s)
min_rate=$(sed -n 's/^rate=\([0-9.]*\).*/\1/p' <<<"$minimal")
echo "minimal sender : $minimal"

rm -rf "$OUT"
taskset -c "$GEN_CPU" "$BIN/harness" run profiles/floor.toml --target "$addr" --out "$OUT" >"$tmp/harness.out" 2>&1 \
  || { cat "$tmp/harness.out" >&2; echo "floor: harness run failed" >&2; exit 1; }
col=$(head -1 "$OUT/summary.csv" | tr ',' '\n' | grep -nx 'achieved_rate' | cut -d: -f1)
[ -n "$col" ] || { echo "floor: $OUT/summary.csv has no achieved_rate column" >&2; exit 1; }
h_rate=$(sed -n 2p "$OUT/summary.csv" | cut -d, -f"$col")
echo "harness        : rate=$h_rate (closed loop, every histogram on; $OUT)"
awk -v h="$h_rate" -v m="$min_rate" -v g="$GOAL" 'BEGIN {
  r = h / m;
  printf "ratio          : %.3f  (goal >= %s: %s)\n", r, g, (r >= g ? "met" : "NOT met")
}'
