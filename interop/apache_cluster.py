"""Apache RocketMQ's name server and broker for the interop scenarios, started by the harness
(`harness serve --broker apache-5.3.3`), with the same face as cluster.Cluster: every client
reaches both through recording proxies, and the name server's routes name the broker's proxy.

`harness serve` prints `namesrv listening on 127.0.0.1:P`, `broker listening on 127.0.0.1:Q`
and then `ready` once the broker has registered; it stops its JVMs on SIGTERM or at the end of
its standard input. The name server runs in a `serve --no-broker` of its own, so the broker can
be stopped and started again (the `restart` scenario) on the same store folder while the name
server and the clients' connections to it stay up.

Some scenarios set broker-under-test keys Apache does not have; APACHE_SETS says what each of
them sets on Apache instead (the harness refuses a key Apache does not know).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

from acl import ACCESS_KEY, SECRET
from cluster import _die_with_parent, free_port_pair
from wire import Proxy

# A cold JVM: the harness waits for the broker's registration before it prints `ready`.
READY_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0
NO_PERMISSION = 16
GET_BROKER_CONFIG = 26
GET_BROKER_RUNTIME_INFO = 28


def free_broker_port():
    """A port P with P - 2 and P + 1 free too: an Apache broker binds its fast port at P - 2
    and its HA port at P + 1 (the harness's kind::apache::conf::BrokerPorts)."""
    for _ in range(50):
        p = free_port_pair()
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", p + 1))
            return p
        except OSError:
            continue
    raise RuntimeError("no free port triple on 127.0.0.1")


def authentication_sets(access_key, secret):
    """Apache 5.3.3 dropped ACL 1.0's PlainAccessValidator (plain_acl.yml is only read by
    auth/migration/v1): authentication 2.0 checks the same client signature
    (DefaultAuthenticationHandler.doAuthenticate, AclSigner over the request's fields) for the
    user initAuthenticationUser creates, and AuthenticationPipeline answers a mismatch
    NO_PERMISSION (16) "check signature failed.". Authorization stays off, so the scenario's
    topic needs no grant. GET_BROKER_CONFIG (26) and GET_BROKER_RUNTIME_INFO (28) are
    whitelisted: the harness asks them, unsigned, to know the broker is up."""
    user = json.dumps({"username": access_key, "password": secret}, separators=(",", ":"))
    return [
        "authenticationEnabled=true",
        "authenticationProvider=org.apache.rocketmq.auth.authentication.provider."
        "DefaultAuthenticationProvider",
        "authenticationMetadataProvider=org.apache.rocketmq.auth.authentication.provider."
        "LocalAuthenticationMetadataProvider",
        f"initAuthenticationUser={user}",
        f"authenticationWhitelist={GET_BROKER_CONFIG},{GET_BROKER_RUNTIME_INFO}",
    ]


# Per scenario, what Apache sets where broker-under-test sets its own keys.
APACHE_SETS = {
    # broker-under-test's injectAppendDelayMicros has no counterpart. Apache answers code 2
    # [TIMEOUT_CLEAN_QUEUE] when a send waited in the send pool's queue for
    # waitTimeMillsInSendQueue (BrokerFastFailure.cleanExpiredRequestInQueue, run every 10 ms):
    # with one send thread and a wait limit of 0 ms, a send still queued behind another when
    # the cleaner runs is answered code 2.
    "busy": ["sendMessageThreadPoolNums=1", "waitTimeMillsInSendQueue=0"],
    # broker-under-test turns ACL on with a restart (acl.enable_plain_acl); Apache starts with
    # authentication on (enable_acl then has nothing to change).
    "acl": authentication_sets(ACCESS_KEY, SECRET),
}


class Serve:
    """One `harness serve` process; `addrs` has what it printed (`namesrv`, `broker`)."""

    def __init__(self, name, argv, log_path):
        self.name = name
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, preexec_fn=_die_with_parent)
        self.addrs = {}
        self._wait_ready()

    def _wait_ready(self):
        lines = []
        done = threading.Event()

        def read():
            for raw in self.proc.stdout:
                line = raw.decode("utf-8", "replace").strip()
                lines.append(line)
                if line == "ready":
                    break
            done.set()

        t = threading.Thread(target=read, name=f"{self.name}-ready")
        t.start()
        done.wait(READY_TIMEOUT)
        if "ready" not in lines:
            # Stopping closes its stdout, which ends the reader.
            self.stop()
            t.join(10)
            # The folder goes with the cluster: say here what the harness said last.
            with open(self.log.name, "rb") as f:
                last = f.read()[-300:].decode("utf-8", "replace").strip()
            raise RuntimeError(f"{self.name} ended or was not ready in {READY_TIMEOUT:.0f} s "
                               f"(stdout {lines[-3:]!r}; stderr ends {last!r})")
        t.join(10)
        for line in lines:
            for role in ("namesrv", "broker"):
                prefix = f"{role} listening on "
                if line.startswith(prefix):
                    host, port = line[len(prefix):].rsplit(":", 1)
                    self.addrs[role] = (host, int(port))

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        self.log.close()


class ApacheCluster:
    """An Apache name server and one broker, each behind a recording proxy."""

    def __init__(self, harness, kind, broker_sets=(), capture=(), watch=(), scenario=None):
        self.harness = harness
        self.kind = kind
        self.dir = tempfile.mkdtemp(prefix="interop-apache-")
        self.logs = os.path.join(self.dir, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.broker = None
        self.namesrv_serve = None
        self.broker_proxy = self.namesrv_proxy = None
        try:
            self.namesrv_serve = Serve(
                "namesrv", [harness, "serve", "--broker", kind, "--no-broker",
                            "--dir", os.path.join(self.dir, "namesrv")],
                os.path.join(self.logs, "namesrv-serve.log"))
            self.namesrv = self.namesrv_serve.addrs["namesrv"]
            self.broker_port = free_broker_port()
            self.broker_sets = list(APACHE_SETS.get(scenario, broker_sets))
            self.broker_proxy = Proxy("broker", ("127.0.0.1", self.broker_port), capture=capture,
                                      watch=watch)
            # The broker's address as routes name it, and the proxy's, at the time of the answer.
            self.namesrv_proxy = Proxy("namesrv", self.namesrv, rewrite=self._route_via_proxy)
            self.start_broker()
        except BaseException:
            # Whatever started goes down with the failure (the scenario never gets a cluster
            # to close).
            self.close()
            raise

    def _route_via_proxy(self, body):
        real = f"127.0.0.1:{self.broker_port}".encode()
        return body.replace(real, self.broker_proxy.addr().encode())

    def namesrv_addr(self):
        """What clients are given: the name server's proxy."""
        return self.namesrv_proxy.addr()

    def start_broker(self):
        argv = [self.harness, "serve", "--broker", self.kind,
                "--namesrv", f"{self.namesrv[0]}:{self.namesrv[1]}",
                "--dir", os.path.join(self.dir, "broker"),
                "--set", f"listenPort={self.broker_port}"]
        for s in self.broker_sets:
            argv += ["--set", s]
        self.broker = Serve("broker", argv, os.path.join(self.logs, "broker-serve.log"))
        addr = self.broker.addrs.get("broker")
        if addr is None:
            raise RuntimeError("harness serve printed no `broker listening on` line")
        # The harness may choose the port itself; the proxy and the route rewrite follow it.
        self.broker_port = addr[1]
        self.broker_proxy.upstream = addr
        self.wait_route("TBW102")

    def enable_acl(self, access_key, secret, topic):
        """The acl scenario's account on Apache; returns how a wrong signature is refused
        (answer code, remark prefix). The `acl` scenario's broker starts with it already
        (APACHE_SETS: one JVM start fewer); otherwise the broker restarts with it."""
        if not self.kind.startswith("apache-5"):
            raise RuntimeError(f"acl on {self.kind}: only Apache 5.x is wired (authentication)")
        sets = authentication_sets(access_key, secret)
        if not all(s in self.broker_sets for s in sets):
            self.broker_sets += sets
            self.restart_broker()
        return NO_PERMISSION, "check signature failed."

    def restart_broker(self, sig=signal.SIGTERM):
        """Stops the broker (a clean stop by default), drops every proxied connection, and
        starts it again on the same store folder."""
        self.broker.stop(sig)
        self.broker_proxy.drop_connections()
        self.start_broker()

    def wait_route(self, topic, timeout=30.0):
        from rawclient import route_code

        end = time.monotonic() + timeout
        while route_code(self.namesrv, topic) != 0:
            if time.monotonic() > end:
                raise RuntimeError(f"no route for {topic} after {timeout} s")
            time.sleep(0.1)

    def close(self):
        for part in (self.broker, self.namesrv_serve):
            if part is not None:
                part.stop()
        for proxy in (self.broker_proxy, self.namesrv_proxy):
            if proxy is not None:
                proxy.close()
        if not os.environ.get("INTEROP_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)
