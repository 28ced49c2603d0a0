#!/usr/bin/env python3
"""How sensitive is the A/B performance gate on this machine? (`make gate-perf-calibrate`)

Runs `harness ab PROFILE` TRIALS_AA times with the same broker binary on both sides (A/A: a
failing gate is a false alarm) and TRIALS_AB times with side B's send path SLOWDOWN percent
slower (A/B: a failing gate is a hit), interleaved A/A, A/B, A/A, ... so that a drift of the
machine hits both kinds alike. Prints the false-alarm rate and the power with every trial's exit
code and measured effect, and writes the same to $OUT/calibration.txt.

"SLOWDOWN percent slower" means: every message costs B's broker SLOWDOWN% more CPU than A's, at
saturation (on a CPU-bound broker that is about SLOWDOWN% less capacity, but the capacity of one
round swings by 20% on a shared 2-core machine and CPU per message by 5%, so the size is set and
checked on the steadier one). B burns extra CPU inside the put lock on every append (broker keys
injectAppendSpinMicros + injectAppendSpinNanos). How much CPU a given spin costs per message is
the machine's (a longer put-lock hold also costs the waiters on the spin lock and the broker's
batching), so the spin is sized by measurement first: a probe A/A run gives A's CPU per message,
then up to PILOTS short capacity-only A/B runs adjust the spin (secant steps on the measured
median change of CPU per message) until it is within 2 points of SLOWDOWN. Each trial then
records what B actually did (median over rounds of capacity and CPU per message against A), and
the power is stated next to the median of those measured effects, not next to the intended one.

Variables (environment): TRIALS_AA, TRIALS_AB (default 20 each), SLOWDOWN (10), PROFILE
(profiles/perf-gate.toml), HARNESS, BROKER (release binaries), OUT (results/gate-perf-calibrate),
PILOTS (4), PILOT_ROUNDS (6), SPIN_NANOS (skip the sizing and use this spin).

`gate-perf-calibrate.py --rejudge RULES.toml` runs nothing: it judges the trials already in OUT
again with another `[ab]` table (`harness gate --candidate TRIAL --rules RULES.toml`) and prints
the same report, so two gate designs are compared on the very same measurements.
"""

import csv
import math
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def env_int(name, default):
    value = os.environ.get(name, "")
    try:
        return int(value) if value else default
    except ValueError:
        sys.exit(f"gate-perf-calibrate: {name}={value!r} is not a whole number")


TRIALS_AA = env_int("TRIALS_AA", 20)
TRIALS_AB = env_int("TRIALS_AB", 20)
SLOWDOWN = env_int("SLOWDOWN", 10)
PILOTS = env_int("PILOTS", 4)
PILOT_ROUNDS = env_int("PILOT_ROUNDS", 6)
PROFILE = Path(os.environ.get("PROFILE", "profiles/perf-gate.toml"))
HARNESS = Path(os.environ.get("HARNESS", "target/release/harness"))
BROKER = Path(os.environ.get("BROKER", "target/release/broker-under-test"))
OUT = Path(os.environ.get("OUT", "results/gate-perf-calibrate"))


def failing_metrics(text):
    """The metrics on the gate's `FAIL ab <metric>:` lines."""
    return re.findall(r"^FAIL\s+ab (\S+?):", text, re.M)


def ab(profile, out, rounds=None, spin_ns=0):
    """One `harness ab` run, both sides the same binary; B spins `spin_ns` per append."""
    cmd = [str(HARNESS), "ab", str(profile), "--a", str(BROKER), "--b", str(BROKER),
           "--out", str(out), "--quiet"]
    if rounds:
        cmd += ["--rounds", str(rounds)]
    if spin_ns:
        cmd += ["--set-b", f"broker.injectAppendSpinNanos={spin_ns}"]
    with open(f"{out}.log", "w") as log:
        rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
    return rc, failing_metrics(Path(f"{out}.log").read_text())


def capacity_rows(folder):
    try:
        with open(folder / "summary.csv") as f:
            return [r for r in csv.DictReader(f) if r["pass"] == "capacity"]
    except (OSError, KeyError):
        return []


def paired_change(folder, column):
    """Median over rounds of B/A - 1, in percent, of a capacity-pass column (None: no rounds)."""
    rows = capacity_rows(folder)

    def by(side):
        return {r["round"]: float(r[column]) for r in rows
                if r["side"] == side and r[column] not in ("", "NaN")}

    a, b = by("a"), by("b")
    logs = [math.log(b[k] / a[k]) for k in a if k in b and a[k] > 0 and b[k] > 0]
    return math.expm1(statistics.median(logs)) * 100 if logs else None


def side_median(folder, side, column):
    vals = [float(r[column]) for r in capacity_rows(folder)
            if r["side"] == side and r[column] not in ("", "NaN")]
    return statistics.median(vals) if vals else None


def wilson(k, n, z=1.96):
    """95% interval of a proportion k/n (Wilson score)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


def fmt(pct):
    return "-" if pct is None else f"{pct:+.1f}%"


def size_spin(pilot_profile, say):
    """Finds the spin (ns per append) that costs B about SLOWDOWN% more CPU per message."""
    probe = OUT / "probe"
    ab(pilot_profile, probe, rounds=PILOT_ROUNDS)
    per_1k = side_median(probe, "a", "cpu_s_per_1k")
    if per_1k is None:
        sys.exit(f"probe failed: no cpu_s_per_1k in {probe} (see {probe}.log)")
    per_msg_ns = per_1k * 1e6  # CPU-seconds per 1,000 messages -> ns per message
    say(f"probe (A/A, {PILOT_ROUNDS} rounds): broker CPU {per_msg_ns:.0f} ns per message at "
        f"saturation; B against A: capacity {fmt(paired_change(probe, 'ok_rate'))}, CPU per message "
        f"{fmt(paired_change(probe, 'cpu_s_per_1k'))}")
    spin = max(50, round(per_msg_ns * SLOWDOWN / 100))
    tried = []  # (spin, CPU per message added, in percent)
    for p in range(1, PILOTS + 1):
        folder = OUT / f"pilot-{p}"
        ab(pilot_profile, folder, rounds=PILOT_ROUNDS, spin_ns=spin)
        change = paired_change(folder, "cpu_s_per_1k")
        if change is None:
            sys.exit(f"pilot {p} failed (see {folder}.log)")
        say(f"pilot {p}: B spins {spin} ns per append: CPU per message {change:+.1f}% (target "
            f"+{SLOWDOWN}%), capacity {fmt(paired_change(folder, 'ok_rate'))}")
        tried.append((spin, change))
        if abs(change - SLOWDOWN) <= 2:
            break
        if len(tried) >= 2 and abs(tried[-1][1] - tried[-2][1]) > 0.5:
            (s0, l0), (s1, l1) = tried[-2], tried[-1]
            nxt = s1 + (SLOWDOWN - l1) * (s1 - s0) / (l1 - l0)
        else:
            nxt = spin * SLOWDOWN / max(change, SLOWDOWN / 4)
        spin = round(min(max(nxt, spin / 4, 20), spin * 4))
    best, added = min(tried, key=lambda t: abs(t[1] - SLOWDOWN))
    say(f"sized: B spins {best} ns per append ({best / per_msg_ns * 100:.1f}% of A's CPU per "
        f"message); its pilot measured CPU per message {added:+.1f}%")
    return best


def report(trials, spin, say, title):
    """The rates, with every trial's exit code, measured effect and failing metrics."""
    say("")
    say(title)
    for kind, label in (("aa", "A/A"), ("ab", f"A/B (B spins {spin} ns per append)")):
        ts = trials[kind]
        if not ts:
            continue
        caps = [t[1] for t in ts if t[1] is not None]
        cpus = [t[2] for t in ts if t[2] is not None]
        say(f"{label}: {len(ts)} trials, exit codes: {' '.join(str(t[0]) for t in ts)}")
        if caps and cpus:
            say(f"  measured B against A (median of rounds, then median of trials [min, max]): "
                f"capacity {statistics.median(caps):+.1f}% [{min(caps):+.1f}%, {max(caps):+.1f}%], "
                f"CPU per message {statistics.median(cpus):+.1f}% [{min(cpus):+.1f}%, {max(cpus):+.1f}%]")
        metrics = {}
        for t in ts:
            for m in t[3]:
                metrics[m] = metrics.get(m, 0) + 1
        if metrics:
            say("  failing metrics: " + ", ".join(f"{m} in {n}" for m, n in sorted(metrics.items())))
        if kind == "ab":
            # The injected spin does not cost every trial the same: say which sizes were caught.
            bands = ((8, None, ">= +8%"), (5, 8, "+5% to +8%"), (None, 5, "< +5%"))
            parts = []
            for lo, hi, name in bands:
                sel = [t for t in ts if t[2] is not None and (lo is None or t[2] >= lo)
                       and (hi is None or t[2] < hi)]
                if sel:
                    parts.append(f"{name}: {sum(1 for t in sel if t[0] == 1)}/{len(sel)}")
            say("  caught, by B's measured CPU per message: " + "; ".join(parts))
    aa, abt = trials["aa"], trials["ab"]
    fa = sum(1 for t in aa if t[0] == 1)
    hits = sum(1 for t in abt if t[0] == 1)
    lo, hi = wilson(fa, len(aa))
    say(f"false-alarm rate: {fa}/{len(aa)} = {fa / max(len(aa), 1):.0%} "
        f"(95% interval {lo:.0%}-{hi:.0%}; target <= 5%)")
    say(f"A/A runs that would fail CI for any reason (exit != 0): "
        f"{sum(1 for t in aa if t[0] != 0)}/{len(aa)}")
    lo, hi = wilson(hits, len(abt))
    say(f"power:            {hits}/{len(abt)} = {hits / max(len(abt), 1):.0%} "
        f"(95% interval {lo:.0%}-{hi:.0%}; target >= 90%)")


def rejudge(rules):
    """Judges the trials in OUT again with `rules`; writes rejudge-<rules name>.txt."""
    os.chdir(ROOT)
    if not rules.is_file():
        sys.exit(f"gate-perf-calibrate: no rules file {rules}")
    trials = {"aa": [], "ab": []}
    for kind in trials:
        folders = sorted(OUT.glob(f"{kind}-*[0-9]"), key=lambda f: int(f.name.split("-")[1]))
        for folder in folders:
            gate = subprocess.run([str(HARNESS), "gate", "--candidate", str(folder), "--rules", str(rules)],
                                  capture_output=True, text=True)
            trials[kind].append((gate.returncode, paired_change(folder, "ok_rate"),
                                 paired_change(folder, "cpu_s_per_1k"), failing_metrics(gate.stdout)))
    if not trials["aa"] and not trials["ab"]:
        sys.exit(f"gate-perf-calibrate: no trials in {OUT} (run it without --rejudge first)")
    spins = re.findall(r"B spins (\d+) ns", (OUT / "calibration.txt").read_text()) \
        if (OUT / "calibration.txt").is_file() else []
    lines = []

    def say(line):
        print(line, flush=True)
        lines.append(line)

    report(trials, spins[0] if spins else "?", say,
           f"the trials of {OUT} judged again with {rules}")
    (OUT / f"rejudge-{rules.stem}.txt").write_text("\n".join(lines) + "\n")


def main():
    os.chdir(ROOT)
    for f in (HARNESS, BROKER, PROFILE):
        if not f.is_file():
            sys.exit(f"gate-perf-calibrate: {f} not found (run `make build` first)")
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    lines = []

    def say(line):
        print(line, flush=True)
        lines.append(line)

    # The sizing runs judge capacity only, so they skip the latency pass.
    pilot_profile = OUT / "pilot.toml"
    pilot_profile.write_text(re.sub(r"(?m)^metrics = .*$", 'metrics = ["capacity", "cpu_s_per_1k"]',
                                    PROFILE.read_text()))
    spin = env_int("SPIN_NANOS", 0) or size_spin(pilot_profile, say)

    trials = {"aa": [], "ab": []}
    for i in range(1, max(TRIALS_AA, TRIALS_AB) + 1):
        for kind, count in (("aa", TRIALS_AA), ("ab", TRIALS_AB)):
            if i > count:
                continue
            folder = OUT / f"{kind}-{i}"
            rc, failed = ab(PROFILE, folder, spin_ns=spin if kind == "ab" else 0)
            cap, cpu = paired_change(folder, "ok_rate"), paired_change(folder, "cpu_s_per_1k")
            trials[kind].append((rc, cap, cpu, failed))
            say(f"{kind} {i:2d}: exit {rc}  B against A, median of rounds: capacity {fmt(cap)}, "
                f"broker CPU per message {fmt(cpu)}" + (f"  failed: {', '.join(failed)}" if failed else ""))

    measured = (f"measured {started} .. {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} on "
                f"{socket.gethostname()}, {os.cpu_count()} CPUs, load average "
                f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    report(trials, spin, say, f"A/B performance gate calibration, {PROFILE}\n{measured}")
    (OUT / "calibration.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--rejudge":
        rejudge(Path(sys.argv[2]))
    elif len(sys.argv) == 1:
        main()
    else:
        sys.exit("usage: gate-perf-calibrate.py [--rejudge RULES.toml] (settings: see the top of this file)")
