#!/usr/bin/env bash
# How sensitive is the A/B performance gate on this machine? (`make gate-perf-calibrate`)
#
# Runs `harness ab PROFILE` TRIALS_AA times with the same broker binary on both sides (A/A: any
# failure is a false alarm) and TRIALS_AB times with side B's send path made SLOWDOWN percent
# slower (A/B: a failure is a hit), interleaved A/A, A/B, A/A, ... so that a drift of the machine
# hits both kinds alike. Prints the false-alarm rate and the power, with every trial's exit code,
# and writes the same to $OUT/calibration.txt.
#
# The slowdown: one probe A/A run measures side A's broker CPU-seconds per message at
# saturation (capacity pass, cpu_s_per_1k); B then burns SLOWDOWN% of that as extra CPU inside
# the put lock on every append (broker key injectAppendSpinMicros, whole microseconds). The
# regression asked for is printed next to the whole microseconds injected, and every trial's line
# shows what B actually did (median over rounds of capacity and CPU per message against A): a
# longer put-lock hold also costs the broker batching, so the CPU per message grows by more than
# the spin itself.
#
# Variables: TRIALS_AA, TRIALS_AB (default 20 each), SLOWDOWN (10), PROFILE
# (profiles/perf-gate.toml), HARNESS, BROKER (release binaries), OUT
# (results/gate-perf-calibrate), SPIN_MICROS (skip the probe and use this spin).
set -euo pipefail
cd "$(dirname "$0")/.."

TRIALS_AA=${TRIALS_AA:-20}
TRIALS_AB=${TRIALS_AB:-20}
SLOWDOWN=${SLOWDOWN:-10}
PROFILE=${PROFILE:-profiles/perf-gate.toml}
HARNESS=${HARNESS:-target/release/harness}
BROKER=${BROKER:-target/release/broker-under-test}
OUT=${OUT:-results/gate-perf-calibrate}

for f in "$HARNESS" "$BROKER" "$PROFILE"; do
    [ -f "$f" ] || { echo "gate-perf-calibrate: $f not found (run \`make build\` first)" >&2; exit 3; }
done
rm -rf "$OUT"
mkdir -p "$OUT"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# Median of a summary.csv column over the rows of one side and pass.
column_median() { # folder side pass column
    python3 - "$@" <<'EOF'
import csv, statistics, sys
folder, side, pass_, column = sys.argv[1:5]
with open(f"{folder}/summary.csv") as f:
    vals = [float(r[column]) for r in csv.DictReader(f)
            if r["side"] == side and r["pass"] == pass_ and r[column] not in ("", "NaN")]
print(statistics.median(vals) if vals else "")
EOF
}

if [ -z "${SPIN_MICROS:-}" ]; then
    echo "probe: one A/A run to measure the broker's CPU per message at saturation"
    "$HARNESS" ab "$PROFILE" --a "$BROKER" --b "$BROKER" --out "$OUT/probe" --quiet >"$OUT/probe.log" 2>&1 || true
    per_1k=$(column_median "$OUT/probe" a capacity cpu_s_per_1k)
    [ -n "$per_1k" ] || { echo "probe failed: no cpu_s_per_1k in $OUT/probe (see $OUT/probe.log)" >&2; exit 4; }
    # cpu_s_per_1k seconds per 1,000 messages = cpu_s_per_1k * 1000 µs per message.
    SPIN_MICROS=$(python3 -c "print(max(1, round($per_1k * 1000 * $SLOWDOWN / 100)))")
    injected=$(python3 -c "print(round($SPIN_MICROS / ($per_1k * 1000) * 100, 1))")
    echo "probe: ${per_1k} CPU-s per 1,000 messages = $(python3 -c "print(round($per_1k*1000, 2))") µs per message;" \
         "B spins ${SPIN_MICROS} µs per append = ${injected}% (asked: ${SLOWDOWN}%)"
else
    injected="? (SPIN_MICROS given)"
fi

declare -A codes=([aa]="" [ab]="")
trial() { # kind n
    local kind=$1 n=$2 extra=()
    [ "$kind" = ab ] && extra=(--set-b "broker.injectAppendSpinMicros=$SPIN_MICROS")
    local rc=0
    "$HARNESS" ab "$PROFILE" --a "$BROKER" --b "$BROKER" "${extra[@]}" \
        --out "$OUT/$kind-$n" --quiet >"$OUT/$kind-$n.log" 2>&1 || rc=$?
    codes[$kind]+="$rc "
    local change
    change=$(python3 - "$OUT/$kind-$n" <<'EOF'
import csv, math, statistics, sys
rows = list(csv.DictReader(open(f"{sys.argv[1]}/summary.csv")))
def change(column):
    def by(side):
        return {r["round"]: float(r[column]) for r in rows
                if r["side"] == side and r["pass"] == "capacity" and r[column] not in ("", "NaN")}
    a, b = by("a"), by("b")
    ratios = [math.log(b[k] / a[k]) for k in a if k in b and a[k] > 0 and b[k] > 0]
    return f"{math.expm1(statistics.median(ratios)) * 100:+.1f}%" if ratios else "-"
print(f"capacity {change('ok_rate')}, broker CPU per message {change('cpu_s_per_1k')}")
EOF
    ) || change="-"
    printf '%s %2d: exit %d  B against A, median of rounds: %s\n' "$kind" "$n" "$rc" "$change"
}

max=$(( TRIALS_AA > TRIALS_AB ? TRIALS_AA : TRIALS_AB ))
for ((i = 1; i <= max; i++)); do
    [ "$i" -le "$TRIALS_AA" ] && trial aa "$i"
    [ "$i" -le "$TRIALS_AB" ] && trial ab "$i"
done

count() { # codes code ("nonzero" counts every failure of the build)
    local n=0
    for c in $1; do
        if [ "$c" = "$2" ] || { [ "$2" = nonzero ] && [ "$c" != 0 ]; }; then n=$((n + 1)); fi
    done
    echo "$n"
}
report() {
    local aa_fail ab_fail aa_nonzero
    aa_fail=$(count "${codes[aa]}" 1)
    ab_fail=$(count "${codes[ab]}" 1)
    aa_nonzero=$(count "${codes[aa]}" nonzero)
    echo "A/B performance gate calibration, $PROFILE"
    echo "measured $started .. $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "A/A: $TRIALS_AA trials, exit codes: ${codes[aa]}"
    echo "A/B: $TRIALS_AB trials (B spins $SPIN_MICROS µs per append = ${injected}% more CPU per message), exit codes: ${codes[ab]}"
    python3 - "$aa_fail" "$TRIALS_AA" "$ab_fail" "$TRIALS_AB" "$aa_nonzero" <<'EOF'
import sys
fa, na, hb, nb, nz = map(int, sys.argv[1:6])
def wilson(k, n, z=1.96):
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / d
    return (max(0.0, c - h), min(1.0, c + h))
lo, hi = wilson(fa, na)
print(f"false-alarm rate: {fa}/{na} = {fa / max(na, 1):.0%} (95% interval {lo:.0%}-{hi:.0%}; target <= 5%)")
print(f"A/A runs that would fail CI for any reason (exit 1, 2 or 3): {nz}/{na}")
lo, hi = wilson(hb, nb)
print(f"power:            {hb}/{nb} = {hb / max(nb, 1):.0%} (95% interval {lo:.0%}-{hi:.0%}; target >= 90%)")
EOF
}
report | tee "$OUT/calibration.txt"
