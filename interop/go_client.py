"""The Go client adapter: Apache's rocketmq-client-go (v2) through our small program
interop/go-client (built by interop/run.sh go into target/interop-go). Each producer and
consumer is a process of it, driven by the same line protocol as the Rust client's binary
(rust_client.py), whose send and read methods it reuses; the producer can also sign with ACL
credentials (primitive.Credentials). Each process writes the client's log (rlog) into the
cluster's log folder (kept with INTEROP_KEEP=1)."""
import itertools
import os
import threading

from rust_client import RustConsumer, RustProducer, _Process

_names = itertools.count(1)


def _log_flag(cluster, role, group):
    return ["-log", os.path.join(cluster.logs, f"go-{role}-{group}-{next(_names)}.log")]


class GoProducer(_Process):
    def __init__(self, binary, cluster, group, credentials):
        argv = [binary, *_log_flag(cluster, "producer", group), "produce",
                cluster.namesrv_addr(), group]
        if credentials:
            argv += list(credentials)
        super().__init__(argv, f"go-producer-{group}")

    # The line protocol is the Rust binary's (`MODE TOPIC KEY BODY` -> `ok` | `err REASON`).
    send = RustProducer.send
    shutdown = RustProducer.shutdown


class GoConsumer(_Process):
    def __init__(self, binary, cluster, group, topic, ledger, orderly, fail_first):
        mode = "retry" if fail_first else "orderly" if orderly else "concurrently"
        argv = [binary, *_log_flag(cluster, "consumer", group), "consume",
                cluster.namesrv_addr(), group, topic, mode]
        super().__init__(argv, f"go-consumer-{group}")
        self.ledger = ledger
        self.reader = threading.Thread(target=self._read, name=f"go-consumer-{group}-msgs")
        self.reader.start()

    # `msg BODY` and `got RECONSUME_TIMES COMMITLOG_OFFSET fail|ok BODY`, as the Rust binary.
    _read = RustConsumer._read
    shutdown = RustConsumer.shutdown


class GoClient:
    name = "go"

    def __init__(self, binary):
        if not binary:
            raise SystemExit("--client go needs --go-bin")
        self.binary = binary

    def producer(self, cluster, group, credentials=None):
        return GoProducer(self.binary, cluster, group, credentials)

    def consumer(self, cluster, group, topic, ledger, orderly=False, fail_first=False):
        return GoConsumer(self.binary, cluster, group, topic, ledger, orderly, fail_first)
