#!/usr/bin/env bash
# make callgrind-floor: instructions a send and instructions a consumed message, counted by
# valgrind's callgrind (deterministic for one binary and input, whatever else the machine does).
#   send:    harness run profiles/floor.toml against the null responder, 2 s + 1 s warm-up;
#            the pacer thread's instructions over every answered send (timeseries.csv `ok`).
#   consume: harness run profiles/consume-floor.toml against the null responder, 2 s;
#            the consumer runtime thread's instructions over `consumed` in summary.csv.
# HARNESS=path (default target/release/harness) measures another build; the figures are printed
# as `send_ir=N consume_ir=N`. The method is the one docs/src/measured.md names for steps 19-58.
set -euo pipefail
BIN=${BIN:-target/release}
HARNESS=${HARNESS:-$BIN/harness}
command -v valgrind >/dev/null || { echo "callgrind-floor: valgrind missing (Debian package valgrind)" >&2; exit 4; }
for b in "$BIN/null-responder" "$HARNESS"; do
  [ -x "$b" ] || { echo "callgrind-floor: $b missing; run 'make build' first" >&2; exit 3; }
done
tmp=$(mktemp -d)
responder_pid=
cleanup() { [ -n "$responder_pid" ] && kill "$responder_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT
"$BIN/null-responder" --for 10m --message-size 128 >"$tmp/responder.out" 2>"$tmp/responder.err" &
responder_pid=$!
for _ in $(seq 1 100); do
  grep -q '^listening on ' "$tmp/responder.out" 2>/dev/null && break
  sleep 0.05
done
addr=$(sed -n 's/^listening on //p' "$tmp/responder.out")
[ -n "$addr" ] || { echo "callgrind-floor: the null responder did not start:" >&2; cat "$tmp/responder.err" >&2; exit 1; }

# Runs one profile under callgrind with one file per thread; prints the largest thread total
# (the pacer's, or the consumer runtime's: every other thread does far less).
measure() { # name profile extra-args...
  local name=$1 profile=$2; shift 2
  rm -rf "$tmp/$name"; mkdir -p "$tmp/$name"
  taskset -c 0 valgrind --tool=callgrind --separate-threads=yes \
    --callgrind-out-file="$tmp/$name/cg.out" "$HARNESS" run "$profile" --target "$addr" --out "$tmp/$name/run" "$@" \
    >"$tmp/$name/log" 2>&1 || { cat "$tmp/$name/log" >&2; exit 1; }
  local best=0
  for f in "$tmp/$name"/cg.out*; do
    local n
    n=$(sed -n 's/^\(summary\|totals\): *//p' "$f" | head -1)
    [ -n "$n" ] && [ "$n" -gt "$best" ] && best=$n
  done
  echo "$best"
}

send_total=$(measure send profiles/floor.toml --set workload.duration=2s --set workload.warmup=1s)
ok=$(python3 - "$tmp/send/run/timeseries.csv" <<'PY'
import csv, sys
print(sum(int(float(r["ok"] or 0)) for r in csv.DictReader(open(sys.argv[1], newline=""))))
PY
)
consume_total=$(measure consume profiles/consume-floor.toml --set workload.duration=2s)
consumed=$(python3 - "$tmp/consume/run/summary.csv" <<'PY'
import csv, sys
print(sum(int(float(r["consumed"] or 0)) for r in csv.DictReader(open(sys.argv[1], newline=""))))
PY
)
python3 - "$send_total" "$ok" "$consume_total" "$consumed" <<'PY'
import sys
st, ok, ct, c = (int(x) for x in sys.argv[1:])
print(f"send: {st} instructions over {ok} answered sends")
print(f"consume: {ct} instructions over {c} consumed messages")
print(f"send_ir={st / max(ok, 1):.0f} consume_ir={ct / max(c, 1):.0f}")
PY
