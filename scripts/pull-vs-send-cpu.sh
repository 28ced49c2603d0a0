#!/usr/bin/env bash
# The broker's CPU per message on its send path and on its pull path, in one broker process:
# the harness sends a backlog (closed loop, profiles/floor.toml, 4 queues), then the minimal
# puller (floor-puller: 4 pulls in flight, BATCH a pull, long polling off) drains it. The
# broker's user + system CPU (/proc/<pid>/stat) is read before, between and after; each phase's
# CPU-seconds over its messages is its cost. CPU time, not rates: the machine may be busy.
set -euo pipefail
BIN=${BIN:-target/release}
SIZE=${SIZE:-128}
BATCH=${BATCH:-32}
SEND_FOR=${SEND_FOR:-3s}
for b in broker-under-test floor-puller harness; do
  [ -x "$BIN/$b" ] || { echo "pull-vs-send-cpu: $BIN/$b missing; run 'make build' first" >&2; exit 3; }
done
tmp=$(mktemp -d)
broker_pid=
cleanup() { [ -n "$broker_pid" ] && kill "$broker_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN/broker-under-test" --set listenPort="$port" --set storePathRootDir="$tmp/store" \
  --set maxTransferCountOnMessageInMemory="$BATCH" >"$tmp/broker.log" 2>&1 &
broker_pid=$!
for _ in $(seq 1 200); do
  (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.05
done
ticks() { awk '{ print $14 + $15 }' "/proc/$broker_pid/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks)
"$BIN/harness" run profiles/floor.toml --target "127.0.0.1:$port" --out "$tmp/send" \
  --set workload.duration="$SEND_FOR" --set workload.message_size="$SIZE" \
  --set workload.concurrency=64 --set workload.max_in_flight=64 >"$tmp/send.log" 2>&1 \
  || { cat "$tmp/send.log" >&2; exit 1; }
t1=$(ticks)
col=$(head -1 "$tmp/send/timeseries.csv" | tr ',' '\n' | grep -nx ok | cut -d: -f1)
sent=$(awk -F, -v c="$col" 'NR > 1 { s += $c } END { print s + 0 }' "$tmp/send/timeseries.csv")
line=$("$BIN/floor-puller" --target "127.0.0.1:$port" --queues 4 --batch "$BATCH" --warmup 0s --duration 120s)
t2=$(ticks)
pulled=$(sed -n 's/.* total=\([0-9]*\).*/\1/p' <<<"$line")
awk -v s="$sent" -v p="$pulled" -v a=$((t1 - t0)) -v b=$((t2 - t1)) -v hz="$hz" -v size="$SIZE" -v batch="$BATCH" 'BEGIN {
  su = a / hz * 1e6 / s; pu = b / hz * 1e6 / p;
  printf "%d-byte messages: send %d messages, broker %.2f CPU-s, %.2f us/msg | pull (%d a pull) %d messages, broker %.2f CPU-s, %.2f us/msg | pull/send %.2f\n",
    size, s, a / hz, su, batch, p, b / hz, pu, pu / su
}'
echo "puller: $line"
