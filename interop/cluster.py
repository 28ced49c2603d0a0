"""Our name server and broker as child processes on 127.0.0.1, for the interop scenarios.

Both bind free ports and print `listening on IP:PORT` once ready. The broker keeps its port
and store across a restart (clients see the same address again); its fast port (listen port
- 2) must be free too, so the port is chosen in pairs. Clients reach both through recording
proxies (wire.Proxy): the name server's routes are rewritten to name the broker's proxy.
"""
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

from wire import Proxy

READY_TIMEOUT = 30.0


def reserve_ports(offsets=(0, -2)):
    """A port P with P + o free for every o of `offsets` (default: P and its fast port P - 2,
    which the broker binds too; Apache's broker binds its HA port P + 1 as well), and the bound
    sockets that hold them: while they are open no other bind, and no outgoing connection's
    ephemeral port, can take them. Close them (`release`) right before the broker binds."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
        if p + min(offsets) < 1100 or p + max(offsets) > 65535:
            continue
        socks = []
        try:
            for o in offsets:
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p + o))
            return p, socks
        except OSError:
            release(socks)
            continue
    raise RuntimeError(f"no free ports P{offsets} on 127.0.0.1")


def release(socks):
    for s in socks:
        s.close()
    socks.clear()


def reserve_port_pair():
    """A port P with P and P-2 both free (the broker binds its fast port at P-2), held (see
    `reserve_ports`)."""
    return reserve_ports((0, -2))


# prctl(PR_SET_PDEATHSIG): a scenario process that dies (the C++ client can abort) takes its
# broker and name server with it instead of leaving them running.
PR_SET_PDEATHSIG = 1


def _die_with_parent():
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Process:
    """A child that prints `listening on …` on stdout; stderr goes to a log file."""

    def __init__(self, name, argv, log_path):
        self.name = name
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log,
                                     preexec_fn=_die_with_parent)
        self.addr = self._wait_ready()

    def _wait_ready(self):
        got = {}

        def read():
            line = self.proc.stdout.readline().decode().strip()
            got["line"] = line

        t = threading.Thread(target=read, name=f"{self.name}-ready")
        t.start()
        t.join(READY_TIMEOUT)
        line = got.get("line", "")
        if not line.startswith("listening on "):
            self.kill()
            raise RuntimeError(f"{self.name} did not start (stdout {line!r}); see {self.log.name}")
        host, port = line[len("listening on ") :].rsplit(":", 1)
        return (host, int(port))

    def stop(self, sig=signal.SIGTERM, timeout=30.0):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc.stdout.close()
        self.log.close()

    def kill(self):
        self.stop(signal.SIGKILL)


class Cluster:
    """A name server and one broker (`broker-a`), each behind a recording proxy."""

    def __init__(self, bin_dir, work_dir=None, broker_sets=(), capture=(), watch=()):
        self.bin_dir = bin_dir
        self.dir = work_dir or tempfile.mkdtemp(prefix="interop-")
        self.own_dir = work_dir is None
        self.logs = os.path.join(self.dir, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.namesrv = Process(
            "name-server",
            [os.path.join(bin_dir, "name-server"), "--set", "listenPort=0"],
            os.path.join(self.logs, "name-server.log"),
        )
        # Held until the broker starts: the proxies and the name server's connections made
        # meanwhile must not land on it (a broker once failed to bind its fast port so).
        self.broker_port, self._held = reserve_port_pair()
        self.broker_sets = list(broker_sets)
        self.broker = None
        self.broker_proxy = Proxy(
            "broker", ("127.0.0.1", self.broker_port), capture=capture, watch=watch
        )
        real = f"127.0.0.1:{self.broker_port}".encode()
        via = self.broker_proxy.addr().encode()
        self.namesrv_proxy = Proxy(
            "namesrv", self.namesrv.addr, rewrite=lambda body: body.replace(real, via)
        )
        self.start_broker()

    def namesrv_addr(self):
        """What clients are given: the name server's proxy."""
        return self.namesrv_proxy.addr()

    def start_broker(self):
        sets = [
            f"listenPort={self.broker_port}",
            "brokerIP1=127.0.0.1",
            f"storePathRootDir={os.path.join(self.dir, 'store')}",
            f"namesrvAddr={self.namesrv.addr[0]}:{self.namesrv.addr[1]}",
        ] + self.broker_sets
        argv = [os.path.join(self.bin_dir, "broker-under-test")]
        for s in sets:
            argv += ["--set", s]
        release(self._held)
        self.broker = Process("broker", argv, os.path.join(self.logs, "broker.log"))
        self.wait_route("TBW102")

    def restart_broker(self, sig=signal.SIGTERM):
        """Stops the broker (a clean stop by default), drops every proxied connection as the
        dead broker's would be, and starts it again on the same port and store."""
        self.broker.stop(sig)
        self.broker_proxy.drop_connections()
        self.start_broker()

    def wait_route(self, topic, timeout=15.0):
        """Waits until the name server routes `topic` (the broker has registered)."""
        from rawclient import route_code

        end = time.monotonic() + timeout
        while route_code(self.namesrv.addr, topic) != 0:
            if time.monotonic() > end:
                raise RuntimeError(f"no route for {topic} after {timeout} s")
            time.sleep(0.05)

    def close(self):
        if self.broker:
            self.broker.stop()
        self.namesrv.stop()
        self.broker_proxy.close()
        self.namesrv_proxy.close()
        if self.own_dir and not os.environ.get("INTEROP_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)
