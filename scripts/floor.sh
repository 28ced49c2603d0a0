#!/usr/bin/env bash
# make floor: the harness against minimal peers, on the same null responder and pinned cores
# (the responder on one core, the measured side on the other), alternating RUNS times:
#   send:    floor-sender (minimal pipelined sender)  vs  harness run profiles/floor.toml
#   consume: floor-puller (minimal puller)            vs  harness run profiles/consume-floor.toml
# Prints every run's rates and the median of the per-run ratios (goal: >= GOAL each).
# The machine may be busy: alternating runs in one command make the ratios comparable, the
# absolute rates are not.
set -euo pipefail
BIN=${BIN:-target/release}
OUT=${OUT:-results/floor}
GOAL=${GOAL:-0.5}
RUNS=${RUNS:-5}
DURATION=${DURATION:-5s}
cpus=$(nproc)
if [ "$cpus" -ge 2 ]; then GEN_CPU=0; RESP_CPU=1; else GEN_CPU=0; RESP_CPU=0; fi
for b in null-responder floor-sender floor-puller harness; do
  [ -x "$BIN/$b" ] || { echo "floor: $BIN/$b missing; run 'make build' first" >&2; exit 3; }
done
tmp=$(mktemp -d)
responder_pid=
cleanup() { [ -n "$responder_pid" ] && kill "$responder_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
taskset -c "$RESP_CPU" "$BIN/null-responder" --for 30m --message-size 128 >"$tmp/responder.out" 2>"$tmp/responder.err" &
responder_pid=$!
for _ in $(seq 1 100); do
  grep -q '^listening on ' "$tmp/responder.out" 2>/dev/null && break
  sleep 0.05
done
addr=$(sed -n 's/^listening on //p' "$tmp/responder.out")
[ -n "$addr" ] || { echo "floor: the null responder did not start:" >&2; cat "$tmp/responder.err" >&2; exit 1; }
echo "null responder on $addr (cpu $RESP_CPU); measured side on cpu $GEN_CPU; $RUNS alternating runs of $DURATION"

# column VALUE of summary.csv's first row
column_of() {
  local csv=$1 name=$2 col
  col=$(head -1 "$csv" | tr ',' '\n' | grep -nx "$name" | cut -d: -f1)
  [ -n "$col" ] || { echo "floor: $csv has no $name column" >&2; exit 1; }
  sed -n 2p "$csv" | cut -d, -f"$col"
}

harness_run() { # profile out column
  rm -rf "$2"
  taskset -c "$GEN_CPU" "$BIN/harness" run "$1" --target "$addr" --out "$2" \
    --set workload.duration="$DURATION" >"$tmp/harness.out" 2>&1 \
    || { cat "$tmp/harness.out" >&2; echo "floor: harness run $1 failed" >&2; exit 1; }
  column_of "$2/summary.csv" "$3"
}

: >"$tmp/send" ; : >"$tmp/consume"
for i in $(seq 1 "$RUNS"); do
  line=$(taskset -c "$GEN_CPU" "$BIN/floor-sender" --target "$addr" --in-flight 512 --message-size 128 --warmup 1s --duration "$DURATION")
  m=$(sed -n 's/^rate=\([0-9.]*\).*/\1/p' <<<"$line")
  h=$(harness_run profiles/floor.toml "$OUT/send-$i" achieved_rate)
  echo "$m $h" >>"$tmp/send"
  printf 'run %d send   : floor-sender %10.0f/s  harness %10.0f/s  ratio %.3f\n' "$i" "$m" "$h" "$(awk -v h="$h" -v m="$m" 'BEGIN{print h/m}')"

  line=$(taskset -c "$GEN_CPU" "$BIN/floor-puller" --target "$addr" --queues 4 --batch 32 --warmup 1s --duration "$DURATION")
  m=$(sed -n 's/^rate=\([0-9.]*\).*/\1/p' <<<"$line")
  h=$(harness_run profiles/consume-floor.toml "$OUT/consume-$i" consume_rate)
  echo "$m $h" >>"$tmp/consume"
  printf 'run %d consume: floor-puller %10.0f/s  harness %10.0f/s  ratio %.3f\n' "$i" "$m" "$h" "$(awk -v h="$h" -v m="$m" 'BEGIN{print h/m}')"
done

median_line() { # file label
  awk '{ print $2 / $1, $1, $2 }' "$1" | sort -g | awk -v label="$2" -v g="$GOAL" '
    { r[NR] = $1; m[NR] = $2; h[NR] = $3 }
    END {
      k = int((NR + 1) / 2);
      printf "%s: median ratio %.3f (floor %.0f/s, harness %.0f/s in that run; goal >= %s: %s)\n",
        label, r[k], m[k], h[k], g, (r[k] >= g ? "met" : "NOT met")
    }'
}
median_line "$tmp/send" "generator/floor-sender        "
median_line "$tmp/consume" "harness consumers/floor-puller"
