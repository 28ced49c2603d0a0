#!/usr/bin/env python3
"""make vs-rocketmq-bench: the harness beside RocketMQ's own benchmark producer
(org.apache.rocketmq.example.benchmark.Producer, bench-tool/<version>/pom.xml) on the same broker.

Per broker, one `harness serve` (a name server and one broker) for the whole comparison; the
generators alternate (A B A B ..., RUNS each), each pinned to the same core, the broker to the
other:
  (a) the highest send rate: the benchmark's closed loop with its defaults (64 threads, 128-byte
      bodies, one connection per broker: the Java client multiplexes its threads over one
      channel) and the harness's closed loop of 64 over one connection
      (profiles/vs-rocketmq-bench.toml); each tool's own count beside the broker's
      (GET_BROKER_RUNTIME_INFO putMessageTimesTotal, sampled every 0.5 s);
  (b) the generator process's CPU seconds (getrusage of the child: os.wait4) per million sends
      the broker counted over the whole run (start-up included);
  (c) broker-under-test only: one 500 ms put-lock stall (injectPutStallMillis; its first stall
      falls on the first append, so a primer send takes it and the next one, the interval later,
      falls in the measured run) under the benchmark's closed loop and the harness's open loop at
      a fixed rate (profiles/vs-rocketmq-bench-stall.toml), against the analytic truth;
  (d) (a) and (b) on Apache RocketMQ 5.3.3.
Every run has a count or a time limit and every process is stopped (SIGTERM, then SIGKILL).
Writes results/vs-rocketmq-bench/<UTC time>/: table.md, provenance.txt, one log per run.
"""

import csv
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vs_bench_parse as parse  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("BIN", ROOT / "target/release"))
RUNS = int(os.environ.get("RUNS", "2"))
# 4.7.0 prints at 10 s and 20 s after its timer starts (the JVM's first second): 22 s gets it the
# second line, whose window is the broker's (the first is a cold JVM's)
JAVA_SECONDS = float(os.environ.get("JAVA_SECONDS", "22"))
# the benchmark's TPS is over its last 10 one-second snapshots: the broker is counted over the
# same stretch, its last 10 s.
WINDOW_S = 10.0
STALL_RATE = int(os.environ.get("STALL_RATE", "2000"))
STALL_INTERVAL_MS = 12000
BROKERS = os.environ.get("BROKERS", "in-tree apache-5.3.3").split()
TOOLS = os.environ.get("TOOLS", "5.5.0 4.7.0").split()
CACHE = Path(os.environ.get("APACHE_CACHE", ROOT / "target/apache"))
JAVA = os.path.join(os.environ["JAVA_HOME"], "bin/java") if os.environ.get("JAVA_HOME") else "java"
cpus = os.cpu_count() or 1
GEN_CPU, BROKER_CPU = ("1", "0") if cpus >= 2 else ("0", "0")
TICK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"vs-rocketmq-bench: {msg}", flush=True)


# --- GET_BROKER_RUNTIME_INFO (28) over RocketMQ's remoting frame, JSON header -------------------
def runtime_info(addr, timeout=5.0):
    host, port = addr.rsplit(":", 1)
    header = json.dumps({"code": 28, "language": "JAVA", "version": 0, "opaque": 1, "flag": 0,
                         "extFields": {}}).encode()
    frame = struct.pack(">ii", 4 + len(header), len(header)) + header
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(frame)
        def read(n):
            buf = b""
            while len(buf) < n:
                chunk = s.recv(n - len(buf))
                if not chunk:
                    raise ConnectionError("closed")
                buf += chunk
            return buf
        total, = struct.unpack(">i", read(4))
        body = read(total)
    hlen = struct.unpack(">i", body[:4])[0] & 0xFFFFFF
    head = json.loads(body[4:4 + hlen])
    if head.get("code") != 0:
        raise RuntimeError(f"runtime info answered {head.get('code')}: {head.get('remark')}")
    return json.loads(body[4 + hlen:])["table"]


class Sampler:
    """putMessageTimesTotal every 0.5 s on a named thread, joined by stop()."""

    def __init__(self, addr):
        self.addr, self.samples, self.done = addr, [], threading.Event()
        self.thread = threading.Thread(target=self.loop, name="vs-bench-sampler", daemon=True)
        self.thread.start()

    def loop(self):
        while not self.done.is_set():
            try:
                t = runtime_info(self.addr)
                self.samples.append((time.monotonic(), int(t["putMessageTimesTotal"])))
            except (OSError, RuntimeError, KeyError, ValueError):
                pass
            self.done.wait(0.5)

    def stop(self):
        self.done.set()
        self.thread.join()

    def dump(self, path):
        with open(path, "w") as f:
            f.write("monotonic_s,putMessageTimesTotal\n")
            f.writelines(f"{t:.3f},{c}\n" for t, c in self.samples)

    def count_at(self, when):
        """Interpolated putMessageTimesTotal at monotonic time `when`."""
        s = self.samples
        if not s:
            return None
        before = [x for x in s if x[0] <= when] or s[:1]
        after = [x for x in s if x[0] >= when] or s[-1:]
        (t0, c0), (t1, c1) = before[-1], after[0]
        return c0 if t1 == t0 else c0 + (c1 - c0) * (when - t0) / (t1 - t0)

    def rate(self, start, end):
        a, b = self.count_at(start), self.count_at(end)
        return None if a is None or b is None else (b - a) / (end - start)


# --- processes ----------------------------------------------------------------------------------
def wait_child(proc, deadline_s):
    """Waits for `proc` (SIGTERM at the deadline, SIGKILL 10 s later); returns (status, CPU s)."""
    end = time.monotonic() + deadline_s
    signalled = None
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = status
            return status, ru.ru_utime + ru.ru_stime
        now = time.monotonic()
        if now >= end and signalled is None:
            proc.send_signal(signal.SIGTERM)
            signalled, end = "TERM", now + 10
        elif now >= end and signalled == "TERM":
            proc.kill()
            signalled = "KILL"
        time.sleep(0.05)


class Serve:
    """`harness serve` for one broker kind; stopped by closing its stdin."""

    def __init__(self, kind, sets, out):
        self.log = open(out, "w")
        cmd = [str(BIN / "harness"), "serve", "--broker", kind,
               "--broker-bin", str(BIN / "broker-under-test")] + sum((["--set", s] for s in sets), [])
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True)
        self.namesrv = self.broker = self.pid = None
        deadline = time.monotonic() + 120
        for line in self.proc.stdout:
            self.log.write(line)
            line = line.strip()
            if line.startswith("namesrv listening on "):
                self.namesrv = line.rsplit(" ", 1)[1]
            elif line.startswith("broker listening on "):
                self.broker = line.rsplit(" ", 1)[1]
            elif line.startswith("broker pid "):
                self.pid = int(line.rsplit(" ", 1)[1])
            elif line == "ready":
                break
            if time.monotonic() > deadline:
                break
        if not (self.namesrv and self.broker and self.pid):
            self.stop()
            raise SystemExit(f"vs-rocketmq-bench: harness serve --broker {kind} did not get ready (log: {out})")
        # the broker on its own core (every thread of a JVM), the generators on the other
        subprocess.run(["taskset", "-a", "-p", "-c", BROKER_CPU, str(self.pid)],
                       stdout=subprocess.DEVNULL, check=False)

    def stop(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def java_cmd(version, namesrv, home, extra):
    lib = CACHE / "bench-tool" / version / "lib"
    cmd = ["taskset", "-c", GEN_CPU, JAVA, "-Xms512m", "-Xmx512m", "-XX:+UseG1GC",
           # 4.7.0's netty 4.0 reads java.nio.Buffer.address: without this it fails to start on JDK 17
           "--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
           f"-Duser.home={home}", "-Drocketmq.client.logRoot=" + str(home / "logs"),
           # as benchmark/producer.sh starts it
           "-Dorg.apache.rocketmq.client.sendSmartMsg=true",
           "-cp", f"{lib}/*", "org.apache.rocketmq.example.benchmark.Producer", "-n", namesrv]
    if version.startswith("5."):
        # a line a second (5.x; 4.7.0 prints every 10 s); its TPS stays over 10 snapshots
        cmd += ["-ri", "1000"]
    return cmd + extra


def run_java(version, serve, sampler, out, extra=()):
    home = out.with_suffix("")
    home.mkdir(parents=True, exist_ok=True)
    with open(out, "w") as f:
        start = time.monotonic()
        proc = subprocess.Popen(java_cmd(version, serve.namesrv, home, list(extra)),
                                stdout=f, stderr=subprocess.STDOUT)
        _, cpu = wait_child(proc, JAVA_SECONDS)
        end = time.monotonic()
    lines = parse.parse_bench_output(out.read_text())
    last = lines[-1] if lines else None
    # the JVM stops a moment after SIGTERM: the broker's window ends at the signal
    stop = start + JAVA_SECONDS
    return {
        "tool_rate": last.tps if last else None,
        "broker_rate": sampler.rate(stop - WINDOW_S, stop),
        "cpu_s": cpu,
        "sends": (sampler.count_at(end) or 0) - (sampler.count_at(start) or 0),
        "failed": (last.send_failed + last.response_failed) if last else None,
        "lines": lines,
        "start": start,
    }


def summary_row(folder):
    with open(folder / "summary.csv", newline="") as f:
        return next(csv.DictReader(f))


def run_harness(profile, serve, sampler, out, sets=()):
    args = [str(BIN / "harness"), "run", str(ROOT / "profiles" / profile), "--target", serve.broker,
            "--broker-pid", str(serve.pid), "--out", str(out)] + sum((["--set", s] for s in sets), [])
    with open(str(out) + ".log", "w") as f:
        start = time.monotonic()
        proc = subprocess.Popen(["taskset", "-c", GEN_CPU] + args, stdout=f, stderr=subprocess.STDOUT)
        status, cpu = wait_child(proc, 120)
        end = time.monotonic()
    if not (out / "summary.csv").exists():
        raise SystemExit(f"vs-rocketmq-bench: harness run failed (status {status}; log {out}.log)")
    row = summary_row(out)
    dur = float(row["duration_s"])
    # the measured window ends when the run's schedule does, before the drain and the writes:
    # the broker is counted over the same length as the harness, ending at its last timeseries row
    series = list(csv.DictReader(open(out / "timeseries.csv", newline="")))
    ok_total = sum(int(r["ok"] or 0) for r in series)
    end_unix = max(float(r["end_unix_s"]) for r in series if r["phase"] == "measure")
    stop = end - (time.time() - end_unix)
    return {
        "tool_rate": float(row["ok_rate"]),
        "broker_rate": sampler.rate(stop - min(dur, WINDOW_S), stop),
        "cpu_s": cpu,
        "sends": (sampler.count_at(end) or 0) - (sampler.count_at(start) or 0),
        "tool_sends": ok_total,
        "failed": int(row["sent"]) - int(row["ok"]),
        "row": row,
        "series": series,
    }


# --- the parts ------------------------------------------------------------------------------------
def rates(kind, out, rows):
    serve = Serve(kind, [], out / f"serve-{kind}.log")
    sampler = Sampler(serve.broker)
    try:
        gens = [f"bench-{v}" for v in TOOLS] + ["harness"]
        # a cold broker: one unmeasured harness run first, so the first generator does not pay it
        run_harness("vs-rocketmq-bench.toml", serve, sampler, out / f"{kind}-warm")
        for i in range(1, RUNS + 1):
            for g in gens:
                log(f"{kind}: {g} run {i}")
                if g == "harness":
                    r = run_harness("vs-rocketmq-bench.toml", serve, sampler, out / f"{kind}-harness-{i}")
                else:
                    v = g.split("-", 1)[1]
                    r = run_java(v, serve, sampler, out / f"{kind}-{g}-{i}.log")
                broker = "broker-under-test" if kind == "in-tree" else f"Apache {kind.split('-', 1)[1]}"
                rows.append({"broker": broker, "generator": g, "run": i, **r})
                write_table(out, rows, STALL_ROWS)
    finally:
        sampler.stop()
        sampler.dump(out / f"broker-counts-{kind}.csv")
        serve.stop()


STALL_ROWS = []


def prime(serve, sampler, out):
    """One send at 10/s for 1 s: it takes the stall of the first append (injectPutStallMillis
    stalls the first append, then at most once per interval), so the next falls
    STALL_INTERVAL_MS later, inside the measured run."""
    run_harness("vs-rocketmq-bench-stall.toml", serve, sampler, out,
                ["workload.rate=10", "workload.warmup=0s", "workload.duration=1s"])


def stall(out, rows):
    for i in range(1, RUNS + 1):
        for g in ["bench-5.5.0", "harness"]:
            log(f"stall: {g} run {i}")
            # waitTimeMillsInSendQueue above the stall: sends wait it out instead of being failed
            # [TIMEOUT_CLEAN_QUEUE] (the default 200 ms would), so the stall is latency only
            serve = Serve("in-tree", ["injectPutStallMillis=500", "waitTimeMillsInSendQueue=1000",
                                      f"injectPutStallIntervalMillis={STALL_INTERVAL_MS}"],
                          out / f"serve-stall-{g}-{i}.log")
            sampler = Sampler(serve.broker)
            try:
                primed_at = time.time()
                prime(serve, sampler, out / f"stall-{g}-{i}-primer")
                if g == "harness":
                    # the stall 12 s after the primer: 2 s warm-up then 8-10 s into the window
                    r = run_harness("vs-rocketmq-bench-stall.toml", serve, sampler, out / f"stall-harness-{i}",
                                    [f"workload.rate={STALL_RATE}"])
                    row, series = r["row"], r["series"]
                    worst = max((s for s in series if s["phase"] == "measure"), key=lambda s: float(s["max_ms"] or 0))
                    slow = [s for s in series if s["phase"] == "measure" and float(s["max_ms"] or 0) >= 100]
                    reported = (f"p99 {float(row['p99_ms']):.0f} ms, p99.9 {float(row['p999_ms']):.0f} ms, "
                                f"max {float(row['max_ms']):.0f} ms over {float(row['duration_s']):.0f} s; "
                                f"second {worst['second']}: p50 {float(worst['p50_ms']):.0f} ms, "
                                f"max {float(worst['max_ms']):.0f} ms; {len(slow)} s with max ≥ 100 ms")
                    rows.append({"generator": "harness (open loop)", "run": i, "rate": float(row["ok_rate"]),
                                 "window": float(row["duration_s"]), "reported": reported})
                else:
                    r = run_java(g.split("-", 1)[1], serve, sampler, out / f"stall-{g}-{i}.log")
                    rows.append({"generator": "bench-5.5.0 (closed loop, 64 threads)", "run": i,
                                 **parse.bench_stall_report(r["lines"], primed_at + STALL_INTERVAL_MS / 1000)})
                write_table(out, RATE_ROWS, rows)
            finally:
                sampler.stop()
                sampler.dump(out / f"broker-counts-stall-{g}-{i}.csv")
                serve.stop()


RATE_ROWS = []


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def write_table(out, rate_rows, stall_rows):
    text = ["## The highest send rate and the generator's CPU (a, b, d)", "",
            parse.rate_table(rate_rows), ""]
    if stall_rows:
        text += ["## A 500 ms put-lock stall on broker-under-test (c)", "", parse.stall_table(stall_rows), ""]
    tmp = out / "table.md.part"
    tmp.write_text("\n".join(text))
    tmp.replace(out / "table.md")


def main():
    for tool in ("java", "taskset", str(BIN / "harness"), str(BIN / "broker-under-test")):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode:
            pkg = {"java": "openjdk-17-jdk-headless", "taskset": "util-linux"}.get(tool)
            print(f"vs-rocketmq-bench: {tool} not found" + (f": install the Debian package {pkg}" if pkg
                  else ": run 'make build' first"), file=sys.stderr)
            return 4 if pkg else 3
    out = ROOT / "results/vs-rocketmq-bench" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out.mkdir(parents=True)
    began = time.monotonic()
    commit = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                            capture_output=True, text=True).stdout.strip()
    java_v = subprocess.run([JAVA, "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    prov = [f"commit: {commit}", f"command: {' '.join(sys.argv)} (BIN={BIN} RUNS={RUNS} BROKERS={' '.join(BROKERS)} "
            f"TOOLS={' '.join(TOOLS)} JAVA_SECONDS={JAVA_SECONDS:g} STALL_RATE={STALL_RATE})",
            f"java: {java_v}", f"cpus: {cpus}; generators on cpu {GEN_CPU}, broker on cpu {BROKER_CPU}",
            f"uptime before: {uptime()}"]
    for v in TOOLS:
        prov.append(f"bench-tool {v}: rocketmq-example-{v}.jar, checksum {(CACHE / 'bench-tool' / v / 'checksum').read_text().strip()}")
    (out / "provenance.txt").write_text("\n".join(prov) + "\n")
    log(f"writing {out}")
    try:
        for kind in BROKERS:
            rates(kind, out, RATE_ROWS)
            if kind == "in-tree" and "5.5.0" in TOOLS:
                stall(out, STALL_ROWS)
    finally:
        write_table(out, RATE_ROWS, STALL_ROWS)
        with open(out / "provenance.txt", "a") as f:
            f.write(f"uptime after: {uptime()}\nseconds: {time.monotonic() - began:.0f}\n")
    print((out / "table.md").read_text())
    log(f"{out}/table.md ({time.monotonic() - began:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
