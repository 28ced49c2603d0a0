#!/usr/bin/env bash
# make floor: the harness against minimal peers, on the same null responder and pinned cores
# (the responder on one core, the measured side on the other), alternating RUNS times:
#   send:    floor-sender (minimal pipelined sender)  vs  harness run profiles/floor.toml
#   consume: floor-puller (minimal puller)            vs  harness run profiles/consume-floor.toml
# Prints every run's rates and the median of the per-run ratios (goal: >= GOAL each), and the
# same for CPU time per message (user + system seconds of the measured process over everything
# it answered or consumed, warm-up included): floor cost / harness cost. On a busy machine the
# pinned rates measure the neighbours (a starved responder limits both sides alike and the rate
# ratio drifts towards 1); CPU per message is what each side pays, whoever else runs.
# Each run also prints how busy each side kept its core (CPU time over wall time): a floor tool
# well below 100% is held back by its peer (floor-sender by the responder's core, floor-puller
# by the round trip), so its rate understates what it could do and the rate ratio flatters the
# harness; the CPU ratio does not depend on that.
set -euo pipefail
BIN=${BIN:-target/release}
OUT=${OUT:-results/floor}
GOAL=${GOAL:-0.5}
RUNS=${RUNS:-5}
DURATION=${DURATION:-5s}
# BEFORE=path/to/an/older/harness: each run also measures that binary right after this one, so a
# change's before/after ratios come from the same runs.
BEFORE=${BEFORE:-}
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

# column NAME of summary.csv's first row. Read as CSV: a quoted note holds commas.
column_of() {
  python3 - "$1" "$2" <<'PY'
import csv, sys
path, name = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(path, newline="")))
if not rows or name not in rows[0]:
    sys.exit(f"floor: {path} has no {name} column")
print(rows[0][name])
PY
}

# user + system CPU seconds in $tmp/time (written by /usr/bin/time -f '%U %S %e')
cpu_s() { awk '{ print $1 + $2 }' "$tmp/time"; }
# the same over the wall time: the share of its core the process kept busy
busy() { awk '{ print ($3 > 0 ? ($1 + $2) / $3 : 0) }' "$tmp/time"; }

# The sum of timeseries.csv column NAME over every row (warm-up included).
series_sum() {
  python3 - "$1" "$2" <<'PY'
import csv, sys
path, name = sys.argv[1], sys.argv[2]
print(sum(float(r[name] or 0) for r in csv.DictReader(open(path, newline=""))))
PY
}

harness_run() { # binary profile out column: prints "<column value> <cpu s> <busy>"
  rm -rf "$3"
  /usr/bin/time -f '%U %S %e' -o "$tmp/time" taskset -c "$GEN_CPU" "$1" run "$2" \
    --target "$addr" --out "$3" --set workload.duration="$DURATION" >"$tmp/harness.out" 2>&1 \
    || { cat "$tmp/harness.out" >&2; echo "floor: $1 run $2 failed" >&2; exit 1; }
  echo "$(column_of "$3/summary.csv" "$4") $(cpu_s) $(busy)"
}

floor_run() { # command...: prints "<rate> <total> <cpu s> <busy>"
  local line
  line=$(/usr/bin/time -f '%U %S %e' -o "$tmp/time" taskset -c "$GEN_CPU" "$@")
  echo "$(sed -n 's/^rate=\([0-9.]*\).*/\1/p' <<<"$line") $(sed -n 's/.* total=\([0-9]*\).*/\1/p' <<<"$line") $(cpu_s) $(busy)"
}

# One run's line: floor rate, harness rate, floor and harness CPU µs per message, and how busy
# each kept its core.
record() { # file label floor_rate floor_total floor_cpu floor_busy harness_rate harness_total harness_cpu harness_busy
  awk -v fr="$3" -v ft="$4" -v fc="$5" -v fb="$6" -v hr="$7" -v ht="$8" -v hc="$9" -v hb="${10}" -v label="$2" -v i="$i" 'BEGIN {
    fu = fc * 1e6 / ft; hu = hc * 1e6 / ht;
    printf "run %d %s: floor %9.0f/s %6.3f us/msg %3.0f%% busy  harness %9.0f/s %6.3f us/msg %3.0f%% busy  rate ratio %.3f  cpu ratio %.3f\n",
      i, label, fr, fu, fb * 100, hr, hu, hb * 100, hr / fr, fu / hu
  }'
  echo "$3 $7 $(awk -v fc="$5" -v ft="$4" -v hc="$9" -v ht="$8" 'BEGIN { print fc / ft, hc / ht }') $6" >>"$1"
}

: >"$tmp/send" ; : >"$tmp/consume"; : >"$tmp/send-before" ; : >"$tmp/consume-before"
for i in $(seq 1 "$RUNS"); do
  read -r fr ft fc fb < <(floor_run "$BIN/floor-sender" --target "$addr" --in-flight 512 --message-size 128 --warmup 1s --duration "$DURATION")
  read -r hr hc hb < <(harness_run "$BIN/harness" profiles/floor.toml "$OUT/send-$i" achieved_rate)
  record "$tmp/send" "send   " "$fr" "$ft" "$fc" "$fb" "$hr" "$(series_sum "$OUT/send-$i/timeseries.csv" ok)" "$hc" "$hb"
  if [ -n "$BEFORE" ]; then
    read -r hr hc hb < <(harness_run "$BEFORE" profiles/floor.toml "$OUT/send-before-$i" achieved_rate)
    record "$tmp/send-before" "send (before)   " "$fr" "$ft" "$fc" "$fb" "$hr" "$(series_sum "$OUT/send-before-$i/timeseries.csv" ok)" "$hc" "$hb"
  fi

  read -r fr ft fc fb < <(floor_run "$BIN/floor-puller" --target "$addr" --queues 4 --batch 32 --warmup 1s --duration "$DURATION")
  read -r hr hc hb < <(harness_run "$BIN/harness" profiles/consume-floor.toml "$OUT/consume-$i" consume_rate)
  record "$tmp/consume" "consume" "$fr" "$ft" "$fc" "$fb" "$hr" "$(column_of "$OUT/consume-$i/summary.csv" consumed)" "$hc" "$hb"
  if [ -n "$BEFORE" ]; then
    read -r hr hc hb < <(harness_run "$BEFORE" profiles/consume-floor.toml "$OUT/consume-before-$i" consume_rate)
    record "$tmp/consume-before" "consume (before)" "$fr" "$ft" "$fc" "$fb" "$hr" "$(column_of "$OUT/consume-before-$i/summary.csv" consumed)" "$hc" "$hb"
  fi
done

median_line() { # file label
  awk '{ print $2 / $1, $3 / $4, $5 }' "$1" | awk -v label="$2" -v g="$GOAL" '
    { r[NR] = $1; c[NR] = $2; b[NR] = $3 }
    function median(a, n,   i, j, t) {
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return a[int((n + 1) / 2)]
    }
    END {
      rr = median(r, NR); cr = median(c, NR); fb = median(b, NR);
      printf "%s: median rate ratio %.3f, median cpu ratio %.3f (goal >= %s: %s); the floor tool kept %.0f%% of its core busy\n",
        label, rr, cr, g, (rr >= g && cr >= g ? "met" : "NOT met"), fb * 100
    }'
}
median_line "$tmp/send" "generator/floor-sender        "
median_line "$tmp/consume" "harness consumers/floor-puller"
if [ -n "$BEFORE" ]; then
  median_line "$tmp/send-before" "BEFORE generator/floor-sender        "
  median_line "$tmp/consume-before" "BEFORE harness consumers/floor-puller"
fi
