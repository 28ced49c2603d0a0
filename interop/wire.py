"""RocketMQ remoting frames on the wire, and a recording TCP proxy for the interop scenarios.

A frame is `[total length][serialize type << 24 | header length][header][body]` (JSON or
ROCKETMQ header). The proxy sits between a real client and our broker or name server: it counts
request and response codes (so a scenario can prove that the broker answered code 2 and the
client saw it), keeps the first bodies of the requests named in `capture` (the fixture corpus),
and can rewrite response bodies (the name server's routes then name the proxy, not the broker,
so clients connect through it).
"""
import json
import socket
import struct
import threading
import time
from collections import Counter

FLAG_RESPONSE = 1
MAX_FRAME = 16 * 1024 * 1024 + 1024


class Frame:
    """One decoded frame: code, flag, opaque, header fields and the raw body."""

    def __init__(self, raw):
        (mark,) = struct.unpack(">i", raw[0:4])
        header_len = mark & 0xFFFFFF
        header = raw[4 : 4 + header_len]
        self.serialize = (mark >> 24) & 0xFF
        self.body = raw[4 + header_len :]
        self.header_len = header_len
        self.raw = raw
        if self.serialize == 0:
            h = json.loads(header.decode("utf-8"))
            self.code = int(h.get("code", 0))
            self.flag = int(h.get("flag", 0))
            self.opaque = int(h.get("opaque", 0))
            self.language = h.get("language")
            self.version = h.get("version")
            self.ext = {k: str(v) for k, v in (h.get("extFields") or {}).items()}
            self.remark = h.get("remark")
        else:
            code, lang, version, opaque, flag = struct.unpack(">hbhii", header[0:13])
            self.code, self.language, self.version, self.opaque, self.flag = (
                code,
                lang,
                version,
                opaque,
                flag,
            )
            (remark_len,) = struct.unpack(">i", header[13:17])
            self.remark = header[17 : 17 + remark_len].decode("utf-8", "replace") or None
            self.ext = {}
            pos = 17 + remark_len + 4
            while pos < len(header):
                (kl,) = struct.unpack(">h", header[pos : pos + 2])
                k = header[pos + 2 : pos + 2 + kl].decode()
                pos += 2 + kl
                (vl,) = struct.unpack(">i", header[pos : pos + 4])
                v = header[pos + 4 : pos + 4 + vl].decode()
                pos += 4 + vl
                self.ext[k] = v

    @property
    def is_response(self):
        return self.flag & FLAG_RESPONSE != 0

    def with_body(self, body):
        """The same frame with another body (lengths recomputed)."""
        head = self.raw[: 4 + self.header_len]
        return struct.pack(">i", len(head) + len(body)) + head + body


def read_frame(sock):
    """The next frame's bytes after the length prefix, or None at end of stream."""
    head = _read_exact(sock, 4)
    if head is None:
        return None
    (n,) = struct.unpack(">i", head)
    if not 4 <= n <= MAX_FRAME:
        raise ValueError(f"frame length {n} out of range")
    return _read_exact(sock, n)


def _read_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


class Proxy:
    """Forwards 127.0.0.1:<port> to `upstream`, frame by frame, recording what passes.

    `rewrite(body) -> body` is applied to response bodies; `capture` is a set of request codes
    whose bodies are kept (the first `capture_max` distinct bodies of each code)."""

    def __init__(self, name, upstream, rewrite=None, capture=(), capture_max=4, watch=()):
        self.name = name
        self.upstream = upstream
        self.rewrite = rewrite
        self.capture = set(capture)
        self.capture_max = capture_max
        self.lock = threading.Lock()
        self.requests = Counter()
        self.responses = Counter()  # (request code, response code)
        self.captured = {}  # code -> [(frame, body)]
        self.remarks = Counter()  # remarks of non-zero answers
        # Every request of a code in `watch`, in order: {code, at, ext, answer, answered_at}
        # (times are time.monotonic(), so a scenario can time what follows a request).
        self.watch = set(watch)
        self.watched = []
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.closed = threading.Event()
        self.threads = []
        self.sockets = []
        self.acceptor = threading.Thread(target=self._accept, name=f"proxy-{name}-accept")
        self.acceptor.start()

    def addr(self):
        return f"127.0.0.1:{self.port}"

    def watched_requests(self):
        """Copies of the records of the watched requests (see `watch`)."""
        with self.lock:
            return [dict(w) for w in self.watched]

    def snapshot(self):
        with self.lock:
            return Counter(self.requests), Counter(self.responses), Counter(self.remarks)

    def _accept(self):
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(self.upstream, timeout=3)
                up.settimeout(None)
            except OSError:
                client.close()
                continue
            for s in (client, up):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pending = {}  # opaque -> request code, for pairing answers
            with self.lock:
                self.sockets += [client, up]
                for src, dst, up_dir in ((client, up, True), (up, client, False)):
                    t = threading.Thread(
                        target=self._pump,
                        args=(src, dst, up_dir, pending),
                        name=f"proxy-{self.name}-{'up' if up_dir else 'down'}",
                    )
                    t.start()
                    self.threads.append(t)

    def _pump(self, src, dst, upstream_bound, pending):
        try:
            while True:
                raw = read_frame(src)
                if raw is None:
                    break
                f = Frame(raw)
                out = raw
                with self.lock:
                    if upstream_bound and not f.is_response:
                        self.requests[f.code] += 1
                        pending[f.opaque] = f.code
                        if f.code in self.watch:
                            w = {"code": f.code, "at": time.monotonic(), "ext": f.ext,
                                 "answer": None, "answered_at": None}
                            self.watched.append(w)
                            pending[("watch", f.opaque)] = w
                        kept = self.captured.setdefault(f.code, [])
                        if f.code in self.capture and len(kept) < self.capture_max:
                            if all(b != f.body for _, b in kept):
                                kept.append((f, f.body))
                    elif f.is_response:
                        req = pending.pop(f.opaque, None)
                        self.responses[(req, f.code)] += 1
                        w = pending.pop(("watch", f.opaque), None)
                        if w is not None:
                            w["answer"], w["answered_at"] = f.code, time.monotonic()
                        if f.code != 0 and f.remark:
                            self.remarks[f.remark[:80]] += 1
                if f.is_response and self.rewrite and f.body:
                    out = f.with_body(self.rewrite(f.body))[4:]
                dst.sendall(struct.pack(">i", len(out)) + out)
        except (OSError, ValueError):
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def drop_connections(self):
        """Closes every proxied connection (what a broker restart does to its clients)."""
        with self.lock:
            socks, self.sockets = self.sockets, []
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.closed.set()
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        self.drop_connections()
        self.acceptor.join(timeout=5)
        with self.lock:
            threads = list(self.threads)
        for t in threads:
            t.join(timeout=5)
        with self.lock:
            for s in self.sockets:
                s.close()
