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

from rust_client import RustConsumer, RustProducer, _Process

HERE = os.path.dirname(os.path.abspath(__file__))
# Small heaps and the client compiler only: the JVMs live seconds and handle at most 400 messages.
JVM_FLAGS = ["-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]

_seq = itertools.count(1)


class _Jvm(_Process):
    def __init__(self, client, args, name):
        # One folder per JVM: the client's log file (4.9: rocketmq.client.logRoot, 5.x's
        # rmq.client.logback.xml: rocketmq.log.root) and the JVM's stderr.
        logs = os.path.join(client.log_dir, f"{os.getpid()}-{next(_seq):03d}-{name}")
        os.makedirs(logs, exist_ok=True)
        home = os.environ.get("HOME", logs)
        argv = (["java"] + JVM_FLAGS
                + [f"-Duser.home={home}", f"-Drocketmq.client.logRoot={logs}",
                   f"-Drocketmq.log.root={logs}", "-cp", client.classpath, "InteropClient"]
                + args)
        super().__init__(argv, name, err=open(os.path.join(logs, "stderr"), "ab"))


class JavaProducer(_Jvm):
    def __init__(self, client, cluster, group, credentials):
        args = ["produce", cluster.namesrv_addr(), group] + list(credentials or ())
        super().__init__(client, args, f"producer-{group}")

    # The line protocol is the Rust binary's (`MODE TOPIC KEY BODY` -> `ok` | `err REASON`).
    send = RustProducer.send
    shutdown = RustProducer.shutdown


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

    _read = RustConsumer._read
    shutdown = RustConsumer.shutdown


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
