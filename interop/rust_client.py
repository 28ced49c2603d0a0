"""The rocketmq-client-rust adapter: each producer and consumer is a process of the
interop-rust-client binary (interop/rust-client), driven by its line protocol."""
import subprocess
import threading

from cluster import _die_with_parent

READY_TIMEOUT = 60.0
ANSWER_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


class _Process:
    """A client process of the line protocol; `err`: a file for its stderr (else discarded).
    The Java and Go adapters build on it too."""

    def __init__(self, argv, name, err=None):
        self.name = name
        self.err = err
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=err or subprocess.DEVNULL, text=True, bufsize=1,
                                     preexec_fn=_die_with_parent)
        line = self._readline(READY_TIMEOUT)
        if line != "ready":
            self.stop()
            where = f" (see {err.name})" if err else ""
            raise RuntimeError(f"{name} did not start: {line!r}{where}")

    def _readline(self, timeout):
        got = {}
        t = threading.Thread(target=lambda: got.setdefault("l", self.proc.stdout.readline()),
                             name=f"{self.name}-read")
        t.start()
        t.join(timeout)
        return got.get("l", "").strip()

    def stop(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        if self.err:
            self.err.close()


class RustProducer(_Process):
    def __init__(self, binary, cluster, group):
        super().__init__([binary, "produce", cluster.namesrv_addr(), group], f"producer-{group}")

    def send(self, mode, topic, key, text):
        """(acknowledged, error text); one request line, one answer line (a sync send waits up
        to 3 s per attempt and tries 3 times: ANSWER_TIMEOUT covers that)."""
        with self.lock:
            self.proc.stdin.write(f"{mode} {topic} {key} {text}\n")
            self.proc.stdin.flush()
            line = self._readline(ANSWER_TIMEOUT)
        if line == "ok":
            return True, None
        return False, line[4:] if line.startswith("err ") else f"no answer ({line!r})"

    def shutdown(self):
        self.stop()


class RustConsumer(_Process):
    def __init__(self, binary, cluster, group, topic, ledger, orderly, fail_first):
        # `retry`: concurrently, the listener answering RECONSUME_LATER to each message's
        # first delivery (the binary decides and says so).
        mode = "retry" if fail_first else "orderly" if orderly else "concurrently"
        super().__init__([binary, "consume", cluster.namesrv_addr(), group, topic, mode],
                         f"consumer-{group}")
        self.ledger = ledger
        self.reader = threading.Thread(target=self._read, name=f"consumer-{group}-msgs")
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("msg "):
                self.ledger.record(line[4:].rstrip("\n"))
            elif line.startswith("got "):
                # got RECONSUME_TIMES COMMITLOG_OFFSET fail|ok BODY
                _, times, offset, status, text = line.rstrip("\n").split(" ", 4)
                self.ledger.reported(text, int(times), int(offset), status == "fail")

    def shutdown(self):
        self.stop()
        self.reader.join(STOP_TIMEOUT)


class RustClient:
    name = "rust"

    def __init__(self, binary):
        if not binary:
            raise SystemExit("--client rust needs --rust-bin")
        self.binary = binary

    def producer(self, cluster, group):
        return RustProducer(self.binary, cluster, group)

    def consumer(self, cluster, group, topic, ledger, orderly=False, fail_first=False):
        return RustConsumer(self.binary, cluster, group, topic, ledger, orderly, fail_first)
