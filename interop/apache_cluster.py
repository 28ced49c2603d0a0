"""Apache RocketMQ's own name server and broker (the released jars) for the interop scenarios,
started through `harness serve --broker apache-<version>`, behind the same recording proxies as
cluster.Cluster (scenarios.py --broker apache-5.3.3; run.sh INTEROP_BROKER=apache-5.3.3).

`harness serve` prints `namesrv listening on IP:PORT` / `broker listening on IP:PORT` and then
`ready` once the broker is registered, and stops its JVMs on SIGTERM or stdin EOF. The name
server runs in a serve process of its own (`--no-broker`), so that a broker restart (a second
serve with `--namesrv`, the same `listenPort` and `storePathRootDir`) keeps the address the
name server's proxy points at.
"""
import os
import shutil
import signal
import subprocess
import tempfile
import threading

from cluster import Cluster, _die_with_parent, release, reserve_ports
from wire import Proxy

# JVM start, store recovery and the first registration on a busy 2-core machine.
READY_TIMEOUT = 120.0
# A 5.3.3 store shuts down in >= 3 s plus up to 2 x 3 s of executor waits
# (reference/apache-rocketmq-java.md section 7.5).
STOP_TIMEOUT = 60.0


def reserve_port_triple():
    """A port P with P-2 (the fast port), P and P+1 (the HA port) free and held (see
    `cluster.reserve_ports`): Apache binds all three."""
    return reserve_ports((-2, 0, 1))


class Serve:
    """One `harness serve` child; `addrs` maps `namesrv` / `broker` to (host, port)."""

    def __init__(self, name, argv, log_path):
        self.name = name
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, preexec_fn=_die_with_parent)
        self.addrs = {}
        self.lines = []
        reader = threading.Thread(target=self._read_until_ready, name=f"{name}-ready")
        reader.start()
        reader.join(READY_TIMEOUT)
        if not self.lines or self.lines[-1] != "ready":
            rc = self.proc.poll()
            self.stop(signal.SIGKILL)
            why = f"exited with {rc}" if rc is not None else f"not ready within {READY_TIMEOUT} s"
            raise RuntimeError(f"harness serve ({name}) {why} (stdout {self.lines!r}); see {log_path}")

    def _read_until_ready(self):
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").strip()
            self.lines.append(line)
            for role in ("namesrv", "broker"):
                prefix = f"{role} listening on "
                if line.startswith(prefix):
                    host, port = line[len(prefix):].rsplit(":", 1)
                    self.addrs[role] = (host, int(port))
            if line == "ready":
                return

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """SIGTERM (serve stops its JVMs cleanly); SIGKILL only if it does not end in time."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        self.log.close()


class ApacheCluster(Cluster):
    """Cluster's interface (namesrv_addr, broker_port, broker_proxy, broker_sets,
    restart_broker, dir, close) over Apache's JVMs."""

    def __init__(self, harness, kind, work_dir=None, broker_sets=(), capture=(), watch=()):
        self.harness = harness
        self.kind = kind
        self.dir = work_dir or tempfile.mkdtemp(prefix="interop-apache-")
        self.own_dir = work_dir is None
        self.logs = os.path.join(self.dir, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.broker = None
        self.namesrv_serve = Serve(
            "namesrv",
            [harness, "serve", "--broker", kind, "--no-broker",
             "--dir", os.path.join(self.dir, "namesrv")],
            os.path.join(self.logs, "serve-namesrv.log"),
        )
        self.namesrv = self.namesrv_serve
        self.namesrv.addr = self.namesrv_serve.addrs["namesrv"]
        # Held until the broker starts (see cluster.Cluster).
        self.broker_port, self._held = reserve_port_triple()
        self.broker_sets = list(broker_sets)
        self.broker_proxy = Proxy(
            "broker", ("127.0.0.1", self.broker_port), capture=capture, watch=watch
        )
        real = f"127.0.0.1:{self.broker_port}".encode()
        via = self.broker_proxy.addr().encode()
        self.namesrv_proxy = Proxy(
            "namesrv", self.namesrv.addr, rewrite=lambda body: body.replace(real, via)
        )
        self.starts = 0
        try:
            self.start_broker()
        except BaseException:
            # The proxies' threads and the name server's serve would keep this process alive
            # until the scenario's timeout.
            self.close()
            raise

    def start_broker(self):
        self.starts += 1
        ns = f"{self.namesrv.addr[0]}:{self.namesrv.addr[1]}"
        argv = [self.harness, "serve", "--broker", self.kind, "--namesrv", ns,
                "--dir", os.path.join(self.dir, f"broker-{self.starts}"),
                "--set", f"listenPort={self.broker_port}",
                "--set", f"storePathRootDir={os.path.join(self.dir, 'store')}"]
        for s in self.broker_sets:
            argv += ["--set", s]
        release(self._held)
        self.broker = Serve("broker", argv, os.path.join(self.logs, f"serve-broker-{self.starts}.log"))
        self.wait_route("TBW102", timeout=30.0)

    def close(self):
        if self.broker:
            self.broker.stop()
        self.namesrv_serve.stop()
        self.broker_proxy.close()
        self.namesrv_proxy.close()
        if self.own_dir and not os.environ.get("INTEROP_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)
