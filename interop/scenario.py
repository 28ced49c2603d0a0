"""What every scenario shares, whatever the client: the received-message ledger, waiting on
it with a deadline, and the verdict on numbers (every message received, none lost, order kept
per key, duplicates bounded)."""
import threading
import time
from collections import defaultdict


class Ledger:
    """Messages received, by body `scenario:key:seq`, in arrival order per key."""

    def __init__(self):
        self.lock = threading.Lock()
        self.seen = defaultdict(int)  # body -> times received
        self.order = defaultdict(list)  # key -> seqs in arrival order
        self.changed = threading.Condition(self.lock)

    def record(self, body):
        if isinstance(body, bytes):
            body = body.decode("utf-8", "replace")
        parts = body.split(":")
        with self.lock:
            self.seen[body] += 1
            if len(parts) == 3:
                self.order[parts[1]].append(int(parts[2]))
            self.changed.notify_all()

    def distinct(self, bodies):
        with self.lock:
            return sum(1 for b in bodies if self.seen.get(b, 0) > 0)

    def wait_for(self, bodies, timeout):
        """Waits until every body in `bodies` has been received, or `timeout` passes."""
        end = time.monotonic() + timeout
        with self.lock:
            while True:
                missing = [b for b in bodies if self.seen.get(b, 0) == 0]
                left = end - time.monotonic()
                if not missing or left <= 0:
                    return missing
                self.changed.wait(min(left, 0.5))

    def duplicates(self, bodies):
        with self.lock:
            return sum(max(0, self.seen.get(b, 0) - 1) for b in bodies)

    def order_violations(self):
        """Keys whose seqs arrived out of order (a redelivered seq may repeat, never go back
        past a newer one that was already consumed once)."""
        bad = {}
        with self.lock:
            for key, seqs in self.order.items():
                first = []
                done = set()
                for s in seqs:
                    if s not in done:
                        done.add(s)
                        first.append(s)
                if first != sorted(first):
                    bad[key] = first[:20]
        return bad


def body(scenario, key, seq):
    return f"{scenario}:{key}:{seq}"


class Verdict:
    """The numbers of one scenario and whether they pass."""

    def __init__(self, name):
        self.name = name
        self.numbers = {}
        self.failures = []
        self.started = time.monotonic()

    def note(self, **numbers):
        self.numbers.update(numbers)

    def require(self, ok, what):
        if not ok:
            self.failures.append(what)

    @property
    def passed(self):
        return not self.failures

    def line(self):
        secs = time.monotonic() - self.started
        nums = " ".join(f"{k}={v}" for k, v in self.numbers.items())
        state = "PASS" if self.passed else "FAIL"
        tail = "" if self.passed else " -- " + "; ".join(self.failures)
        return f"{state} {self.name} ({secs:.1f} s): {nums}{tail}"
