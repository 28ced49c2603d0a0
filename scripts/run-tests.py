#!/usr/bin/env python3
"""`make test`: every test binary of the workspace, JOBS at a time, then one closing line.

`cargo test` runs its test binaries one after another. Most of this workspace's integration
tests wait on real time (a broker restarting, a rebalance, a fault window), so on CI's 2 cores
the sequential run left the machine half idle for most of its ~10 minutes. This script builds
exactly what `cargo test --workspace` builds (`--no-run`), runs the binaries JOBS at a time
(each still runs its own tests on its threads, as under cargo), longest first by the times of
the last run (kept in target/test-times.json), and runs the doc tests with cargo itself.

Each binary runs as cargo runs it: in its package's folder, with CARGO, CARGO_MANIFEST_DIR and
CARGO_PKG_NAME set. Its output is printed whole when it ends, under a `Running` line naming
the command that runs it alone. The last line counts every test: "tests: N passed, N failed,
N skipped" (skipped: #[ignore]d, as cargo's "ignored"). A binary that dies without its "test result" line counts as one failed test.

Usage: scripts/run-tests.py [--jobs N] [-- cargo args...]   (JOBS env var works too)
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMES = ROOT / "target" / "test-times.json"
RESULT = re.compile(
    r"^test result: (ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored", re.M
)


def build(cargo, extra):
    """Builds the test binaries; returns [(name, exe, package dir, package, rerun hint)]."""
    cmd = [cargo, "test", "--workspace", "--no-run", "--message-format=json-render-diagnostics"]
    proc = subprocess.run(cmd + extra, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"run-tests: {' '.join(cmd + extra)} failed (exit {proc.returncode})")
    found = []
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        if not msg.get("profile", {}).get("test"):
            continue
        target = msg["target"]
        pkg_dir = Path(msg["manifest_path"]).parent
        package = pkg_dir.name
        kind = target["kind"][0]
        if kind == "test":
            name, hint = f"{package}/tests/{target['name']}", f"--test {target['name']}"
        elif kind == "bin":
            name, hint = f"{package} bin {target['name']}", f"--bin {target['name']}"
        else:
            name, hint = f"{package} unit tests", "--lib"
        found.append((name, msg["executable"], pkg_dir, package, f"cargo test -p {package} {hint}"))
    return found


def load_times():
    try:
        return json.loads(TIMES.read_text())
    except (OSError, ValueError):
        return {}


def save_times(times):
    tmp = TIMES.with_suffix(".tmp")
    try:
        tmp.write_text(json.dumps(times, indent=1, sort_keys=True))
        os.replace(tmp, TIMES)
    except OSError:
        pass


class Runner:
    def __init__(self, cargo):
        self.cargo = cargo
        self.lock = threading.Lock()
        self.procs = set()
        self.stopping = False

    def run(self, job):
        name, exe, pkg_dir, package, hint = job
        env = dict(os.environ, CARGO=self.cargo, CARGO_MANIFEST_DIR=str(pkg_dir),
                   CARGO_PKG_NAME=package)
        start = time.monotonic()
        with self.lock:
            if self.stopping:
                return job, None, "not started: interrupted\n", 0.0
            proc = subprocess.Popen([exe], cwd=pkg_dir, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            self.procs.add(proc)
        out, _ = proc.communicate()
        with self.lock:
            self.procs.discard(proc)
        return job, proc.returncode, out.decode(errors="replace"), time.monotonic() - start

    def stop(self):
        with self.lock:
            self.stopping = True
            for p in self.procs:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except OSError:
                    pass


def counts(out, code):
    """(passed, failed, ignored) of one binary's output; a death without a result is 1 failed."""
    total = [0, 0, 0]
    seen = False
    for m in RESULT.finditer(out):
        seen = True
        for i in range(3):
            total[i] += int(m.group(i + 2))
    if code != 0 and (not seen or total[1] == 0):
        total[1] += 1
    return total


def main():
    args = sys.argv[1:]
    extra = []
    if "--" in args:
        extra = args[args.index("--") + 1:]
        args = args[: args.index("--")]
    jobs = int(os.environ.get("JOBS", "2") or 2)
    if args[:1] == ["--jobs"] and len(args) > 1:
        jobs = int(args[1])
    cargo = os.environ.get("CARGO") or shutil.which("cargo") or "cargo"
    found = build(cargo, extra)
    if not found:
        sys.exit("run-tests: cargo built no test binary")
    times = load_times()
    # Longest first, by the last run's times; unknown ones first of all (they may be long).
    found.sort(key=lambda j: -times.get(j[0], float("inf")))
    runner = Runner(cargo)
    total = [0, 0, 0]
    failed = []
    started = time.monotonic()
    print(f"run-tests: {len(found)} test binaries, {jobs} at a time", flush=True)
    pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="test-binary")
    try:
        futures = [pool.submit(runner.run, j) for j in found]
        for fut in as_completed(futures):
            job, code, out, secs = fut.result()
            name, exe, _, _, hint = job
            print(f"\n     Running {name} ({exe}) [{secs:.1f} s; alone: {hint}]", flush=True)
            sys.stdout.write(out)
            if code is None:  # interrupted before it started
                continue
            c = counts(out, code)
            times[name] = round(secs, 2)
            for i in range(3):
                total[i] += c[i]
            if code not in (0, None):
                failed.append((name, code, hint))
    except KeyboardInterrupt:
        runner.stop()
        pool.shutdown(wait=True, cancel_futures=True)
        print("\nrun-tests: interrupted; the counts below are of the binaries that ended", flush=True)
        print(f"tests: {total[0]} passed, {total[1]} failed, {total[2]} skipped")
        sys.exit(130)
    pool.shutdown(wait=True)
    save_times(times)
    doc = subprocess.run([cargo, "test", "--workspace", "--doc"] + extra, cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(doc.stdout)
    c = counts(doc.stdout, doc.returncode)
    for i in range(3):
        total[i] += c[i]
    if doc.returncode != 0:
        failed.append(("doc tests", doc.returncode, "cargo test --workspace --doc"))
    print(f"\nrun-tests: {len(found)} binaries and the doc tests in "
          f"{time.monotonic() - started:.0f} s, {jobs} at a time")
    for name, code, hint in failed:
        print(f"run-tests: FAILED {name} (exit {code}); alone: {hint}")
    print(f"tests: {total[0]} passed, {total[1]} failed, {total[2]} skipped")
    sys.exit(1 if failed or total[1] else 0)


if __name__ == "__main__":
    main()
