"""Parsing and table code of `make vs-rocketmq-bench` (scripts/vs_rocketmq_bench.py), kept apart
from the processes so scripts/tests/test_vs_bench_parse.py can hold it to real output lines.

RocketMQ's benchmark producer prints one line per report interval:
  5.5.0 (example/.../benchmark/Producer.java, 5.3.3 tag l.397; the 5.5.0 jar's constant pool has
         the same format string):
    Current Time: <time> | Send TPS: N | Max RT(ms): N | Average RT(ms): x | Send Failed: N | Response Failed: N
  and at the end (l.393) `[Complete] Send Total: N | Send TPS: ...` (the same fields).
  4.7.0 (Producer.java l.88, every 10 s, no end line):
    Send TPS: N Max RT: N Average RT: x Send Failed: N Response Failed: N
Send TPS and Average RT are over the last 10 one-second snapshots (9 s between the first and the
last); Max RT is the largest since the start, never reset.
"""

import re
from datetime import datetime
from dataclasses import dataclass
from typing import Optional

_NUM = r"(?P<avg>-?[0-9]+(?:\.[0-9]+)?|NaN)"
_V5 = re.compile(
    r"^(?:Current Time: (?P<time>[^|]*?) \||\[Complete\] Send Total: (?P<total>[0-9]+) \|)"
    r" Send TPS: (?P<tps>-?[0-9]+) \| Max RT\(ms\): (?P<max>[0-9]+) \| Average RT\(ms\): +" + _NUM
    + r" \| Send Failed: (?P<sf>[0-9]+) \| Response Failed: (?P<rf>[0-9]+)\s*$"
)
_V4 = re.compile(
    r"^Send TPS: (?P<tps>-?[0-9]+) Max RT: (?P<max>[0-9]+) Average RT: +" + _NUM
    + r" Send Failed: (?P<sf>[0-9]+) Response Failed: (?P<rf>[0-9]+)\s*$"
)


@dataclass
class BenchLine:
    tps: int
    max_rt_ms: int
    avg_rt_ms: Optional[float]
    send_failed: int
    response_failed: int
    complete: bool = False
    send_total: Optional[int] = None
    time: Optional[str] = None


def parse_bench_line(line: str) -> Optional[BenchLine]:
    """One report line of either version, or None for any other line (banners, logs)."""
    for pattern in (_V5, _V4):
        m = pattern.match(line.strip())
        if m:
            groups = m.groupdict()
            avg = groups["avg"]
            return BenchLine(
                tps=int(groups["tps"]),
                max_rt_ms=int(groups["max"]),
                avg_rt_ms=None if avg == "NaN" else float(avg),
                send_failed=int(groups["sf"]),
                response_failed=int(groups["rf"]),
                complete=bool(groups.get("total")),
                send_total=int(groups["total"]) if groups.get("total") else None,
                time=(groups.get("time") or None),
            )
    return None


def parse_bench_output(text: str) -> list:
    return [p for p in (parse_bench_line(l) for l in text.splitlines()) if p is not None]


def stall_truth(rate: float, stall_s: float = 0.5, window_s: float = 10.0) -> dict:
    """What an open loop at `rate` must see through one put-lock stall of `stall_s` within a
    measured window of `window_s`: the sends due during the stall are delayed, the first by the
    whole stall, each later one less (linearly), so the share delayed by more than d is
    (stall_s - d) / window_s, and the percentile q lies at stall_s - (1 - q) * window_s."""
    def pct(q):
        return max(0.0, stall_s - (1 - q) * window_s) * 1000
    return {
        "delayed": rate * stall_s,
        "max_ms": stall_s * 1000,
        "p99_ms": pct(0.99),
        "p999_ms": pct(0.999),
        "mean_added_ms": stall_s * stall_s / (2 * window_s) * 1000,
    }


def fmt(v, digits=0):
    if v is None or v == "":
        return "–"
    if isinstance(v, str):
        return v
    if digits == 0:
        return f"{v:,.0f}"
    return f"{v:,.{digits}f}"


def rate_table(rows: list) -> str:
    """(a) and (b): one row per run. Keys: broker, generator, run, tool_rate, broker_rate,
    cpu_s, sends (broker-counted, for CPU per million), failed."""
    out = [
        "| broker | generator | run | sends/s (tool's own count) | sends/s (broker's putMessageTimesTotal) | generator CPU s | CPU s per million sends | tool's failures |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        per_m = r["cpu_s"] / r["sends"] * 1e6 if r.get("sends") else None
        out.append(
            f"| {r['broker']} | {r['generator']} | {r['run']} | {fmt(r.get('tool_rate'))} | "
            f"{fmt(r.get('broker_rate'))} | {fmt(r.get('cpu_s'), 2)} | {fmt(per_m, 1)} | {fmt(r.get('failed'))} |"
        )
    return "\n".join(out)


def stall_table(rows: list) -> str:
    """(c): one row per run. Keys: generator, run, rate (the tool's sends/s before the stall),
    reported (what the tool printed for the interval with the stall), truth (the analytic
    figures at that rate)."""
    out = [
        "| generator | run | sends/s | what the generator reported for the stall | analytic truth at that rate (open loop) |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        w = r.get("window", 10.0)
        t = stall_truth(r["rate"], window_s=w) if r.get("rate") else None
        truth = (
            f"{fmt(t['delayed'])} sends delayed, max {fmt(t['max_ms'])} ms, p99 {fmt(t['p99_ms'])} ms, "
            f"p99.9 {fmt(t['p999_ms'])} ms, mean +{fmt(t['mean_added_ms'], 1)} ms over {w:g} s" if t else "–"
        )
        out.append(f"| {r['generator']} | {r['run']} | {fmt(r.get('rate'))} | {r['reported']} | {truth} |")
    return "\n".join(out)


def bench_stall_report(lines: list, stall_unix: Optional[float] = None) -> dict:
    """What the benchmark printed around one stall: Max RT is cumulative, so the stall is the
    first line whose Max RT rose by 300 ms or more over the line before; the ten lines from there
    have the stall inside their 10-snapshot window. Returns rate (the TPS of the line before)
    and reported (a sentence)."""
    jump = next((i for i in range(1, len(lines)) if lines[i].max_rt_ms - lines[i - 1].max_rt_ms >= 300), None)
    if jump is None and stall_unix is not None:
        # Max RT was already above the stall (a cold start): the first line printed after the
        # stall's time ("Current Time", local time, to the millisecond)
        when = datetime.fromtimestamp(stall_unix)
        jump = next((i for i, l in enumerate(lines) if i > 0 and l.time and
                     datetime.strptime(l.time, "%Y-%m-%d %H:%M:%S,%f") >= when), None)
    if jump is None:
        top = max((l.max_rt_ms for l in lines), default=None)
        return {"rate": float(lines[-1].tps) if lines else None,
                "reported": f"no line where Max RT rose by 300 ms ({len(lines)} lines, Max RT {fmt(top)} ms)"}
    pre, span = lines[jump - 1], lines[jump:jump + 10]
    avgs = [l.avg_rt_ms for l in span if l.avg_rt_ms is not None]
    tps = [l.tps for l in span]
    return {
        "rate": float(pre.tps),
        "reported": (
            f"line before: TPS {pre.tps:,}, avg {fmt(pre.avg_rt_ms, 1)} ms, Max RT {pre.max_rt_ms} ms; "
            f"the {len(span)} lines with the stall in their window: TPS {min(tps):,}–{max(tps):,}, "
            f"avg {fmt(min(avgs), 1)}–{fmt(max(avgs), 1)} ms, Max RT {span[0].max_rt_ms} ms (the largest since the start)"
        ),
    }
