"""The Java client adapter: Apache RocketMQ's `rocketmq-client` (4.9.x or 5.3.x, pinned in
interop/java/<version>/pom.xml, fetched from Maven Central) under our own driver program
interop/java/src/InteropClient.java. Each producer and consumer is a JVM of its own speaking the
same line protocol as interop/rust-client (`ready`; `ok` / `err REASON`; `msg BODY`;
`got RECONSUME_TIMES COMMITLOG_OFFSET fail|ok BODY`). Each JVM's stderr and the client's own log
go under $HOME/logs/java-<version>/<scenario pid>-<n>-<role>-<group>/ (run.sh sets HOME to target/interop-home)."""
import itertools
import os
import subprocess
import threading

from cluster import _die_with_parent

HERE = os.path.dirname(os.path.abspath(__file__))
# A JVM plus the client's start (name server lookups, first heartbeat) on a busy 2-core machine.
READY_TIMEOUT = 60.0
# A sync send waits up to 3 s per attempt and tries 3 times (the client's defaults).
ANSWER_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0
# Small heaps and the client compiler only: the JVMs live seconds and handle at most 400 messages.
JVM_FLAGS = ["-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]

_seq = itertools.count(1)


class _Jvm:
    def __init__(self, client, args, name):
        self.name = name
        # One folder per JVM: the client's log file (4.9: rocketmq.client.logRoot, 5.x's
        # rmq.client.logback.xml: rocketmq.log.root) and the JVM's stderr.
        logs = os.path.join(client.log_dir, f"{os.getpid()}-{next(_seq):03d}-{name}")
        os.makedirs(logs, exist_ok=True)
        self.err = open(os.path.join(logs, "stderr"), "ab")
        home = os.environ.get("HOME", logs)
        argv = (["java"] + JVM_FLAGS
                + [f"-Duser.home={home}", f"-Drocketmq.client.logRoot={logs}",
                   f"-Drocketmq.log.root={logs}", "-cp", client.classpath, "InteropClient"]
                + args)
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, text=True, bufsize=1,
                                     preexec_fn=_die_with_parent)
        line = self._readline(READY_TIMEOUT)
        if line != "ready":
            self.stop()
            raise RuntimeError(f"{name} did not start: {line!r} (see {self.err.name})")

    def _readline(self, timeout):
        got = {}
        t = threading.Thread(target=lambda: got.setdefault("l", self.proc.stdout.readline()),
                             name=f"{self.name}-read")
        t.start()
        t.join(timeout)
        return got.get("l", "").strip()

    def stop(self):
        """Closes stdin (the program shuts the client down and exits) and reaps the JVM."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.err.close()


class JavaProducer(_Jvm):
    def __init__(self, client, cluster, group, credentials):
        args = ["produce", cluster.namesrv_addr(), group] + list(credentials or ())
        super().__init__(client, args, f"producer-{group}")
        self.lock = threading.Lock()

    def send(self, mode, topic, key, text):
        """(acknowledged, error text); one request line, one answer line."""
        with self.lock:
            self.proc.stdin.write(f"{mode} {topic} {key} {text}\n")
            self.proc.stdin.flush()
            line = self._readline(ANSWER_TIMEOUT)
        if line == "ok":
            return True, None
        return False, line[4:] if line.startswith("err ") else f"no answer ({line!r})"

    def shutdown(self):
        self.stop()


class JavaConsumer(_Jvm):
    def __init__(self, client, cluster, group, topic, ledger, orderly, fail_first):
        # `retry`: the program's listener answers RECONSUME_LATER to each body's first
        # delivery and says so (`got … fail`).
        mode = "retry" if fail_first else "orderly" if orderly else "concurrently"
        super().__init__(client, ["consume", cluster.namesrv_addr(), group, topic, mode],
                         f"consumer-{group}")
        self.ledger = ledger
        self.reader = threading.Thread(target=self._read, name=f"consumer-{group}-msgs")
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("msg "):
                self.ledger.record(line[4:].rstrip("\n"))
            elif line.startswith("got "):
                _, times, offset, status, text = line.rstrip("\n").split(" ", 4)
                self.ledger.reported(text, int(times), int(offset), status == "fail")

    def shutdown(self):
        self.stop()
        self.reader.join(STOP_TIMEOUT)


class JavaClient:
    name = "java"

    def __init__(self, version):
        self.version = version
        # Fetches the pinned client once and compiles our driver (exit 4 names a missing tool).
        out = subprocess.run(["bash", os.path.join(HERE, "java", "build.sh"), version],
                             stdout=subprocess.PIPE, check=True, text=True)
        self.classpath = out.stdout.strip().splitlines()[-1]
        self.log_dir = os.path.join(os.environ.get("HOME", "/tmp"), "logs", f"java-{version}")
        os.makedirs(self.log_dir, exist_ok=True)

    def producer(self, cluster, group, credentials=None):
        return JavaProducer(self, cluster, group, credentials)

    def consumer(self, cluster, group, topic, ledger, orderly=False, fail_first=False):
        return JavaConsumer(self, cluster, group, topic, ledger, orderly, fail_first)
