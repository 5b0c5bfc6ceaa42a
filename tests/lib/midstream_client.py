#!/usr/bin/env python3
"""One connection with a pause in it, for a tracer started on a connection already open
(test_ebee_frame_midstream.sh).

    midstream_client.py PROTO PORT PREFIX BEFORE AFTER [DEPTH]

PROTO is resp (redis), http1, memcache (text: single-key gets), tls (HTTPS, ALPN
http/1.1, one request at a time: the TLS framer counts request-response turns, which
pipelined requests are not) or h2c (HTTP/2 with prior knowledge, GETs of /). On ONE
connection to 127.0.0.1:PORT the client sends BEFORE requests, DEPTH per write (pipelined:
HTTP/2 streams opened DEPTH at a time) and reads every reply of a write before the next;
once all are answered, nothing in flight, it creates PREFIX.paused and waits until
PREFIX.go exists; then it sends AFTER requests the same way on the same connection, prints
one JSON line (sent, answered, bad: the requests after the pause only) and waits until
PREFIX.stop exists before it closes the connection, so that the tracer stopped meanwhile
sees no close.

    midstream_client.py info PORT PREFIX

A redis connection that asks INFO commandstats when PREFIX.go1 exists and again when
PREFIX.go2 does, printing each time the commands redis has processed by its count (the sum
of the calls of every command but INFO), one line each; PREFIX.paused once it is connected.
"""
import json
import os
import socket
import ssl
import sys
import time


def wait_file(path):
    while not os.path.exists(path):
        time.sleep(0.01)


def touch(path):
    open(path, "w").close()


class Reader:
    """Buffered reads from a socket (plain or TLS)."""

    def __init__(self, s):
        self.s, self.buf = s, b""

    def more(self):
        b = self.s.recv(65536)
        if not b:
            raise SystemExit("midstream_client: the server closed the connection")
        self.buf += b

    def line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                out, self.buf = self.buf[:i], self.buf[i + 2:]
                return out
            self.more()

    def take(self, n):
        while len(self.buf) < n:
            self.more()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


def resp_cmd(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def resp_reply(r):
    """One RESP reply read whole; False for an error reply."""
    line = r.line()
    t = line[:1]
    if t == b"$":
        n = int(line[1:])
        if n >= 0:
            r.take(n + 2)
        return True
    if t == b"*":
        ok = True
        for _ in range(max(int(line[1:]), 0)):
            ok = resp_reply(r) and ok
        return ok
    return t != b"-"


class Resp:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.r = Reader(self.s)
        self.i = 0

    def batch(self, depth):
        """depth commands in one write, every reply read: (answered, bad)."""
        out = []
        for _ in range(depth):
            k = b"k%d" % (self.i % 64)
            m = self.i % 3
            out.append(resp_cmd(b"SET", k, b"v%d" % self.i) if m == 0 else
                       resp_cmd(b"GET", k) if m == 1 else resp_cmd(b"INCR", b"n"))
            self.i += 1
        self.s.sendall(b"".join(out))
        ok = sum(resp_reply(self.r) for _ in range(depth))
        return depth, depth - ok


def http_response(r, status=b"HTTP/1.1 200"):
    """One HTTP/1.1 response read whole (Content-Length bodies): False unless 200."""
    head = r.line()
    good = head.startswith(status)
    cl = 0
    while True:
        h = r.line()
        if not h:
            break
        k, _, v = h.partition(b":")
        if k.strip().lower() == b"content-length":
            cl = int(v)
    r.take(cl)
    return good


class Http1:
    def __init__(self, port, tls=False):
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["http/1.1"])
            s = ctx.wrap_socket(s, server_hostname="localhost")
        self.s, self.r, self.i = s, Reader(s), 0

    def batch(self, depth):
        out = []
        for _ in range(depth):
            out.append(b"GET /r%d HTTP/1.1\r\nHost: localhost\r\n\r\n" % self.i)
            self.i += 1
        self.s.sendall(b"".join(out))
        ok = sum(http_response(self.r) for _ in range(depth))
        return depth, depth - ok


class Memcache:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.r = Reader(self.s)
        self.i = 0
        # Keys to hit (sets, before any pause: the gets after it are what is counted).
        self.s.sendall(b"".join(b"set k%d 0 0 2\r\nv%d\r\n" % (i, i % 10) for i in range(4)))
        for _ in range(4):
            if self.r.line() != b"STORED":
                raise SystemExit("midstream_client: memcached did not store")

    def batch(self, depth):
        """depth single-key gets (hits and misses) in one write."""
        out = []
        for _ in range(depth):
            out.append(b"get k%d\r\n" % (self.i % 6))
            self.i += 1
        self.s.sendall(b"".join(out))
        bad = 0
        for _ in range(depth):
            line = self.r.line()
            if line.startswith(b"VALUE "):
                self.r.take(int(line.split()[3]) + 2)
                line = self.r.line()
            bad += line != b"END"
        return depth, bad


H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def h2_frame(t, fl, sid, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([t, fl]) + sid.to_bytes(4, "big") + payload


class H2c:
    # GET http://localhost/ in HPACK: :method GET (static 2), :scheme http (6), :path /
    # (4), :authority (static name 1) literal without indexing "localhost".
    BLOCK = b"\x82\x86\x84\x01\x09localhost"

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.r = Reader(self.s)
        self.sid = 1
        self.s.sendall(H2_PREFACE + h2_frame(4, 0, 0))
        self.status = {}

    def frame(self):
        h = self.r.take(9)
        n = int.from_bytes(h[:3], "big")
        return h[3], h[4], int.from_bytes(h[5:9], "big") & 0x7FFFFFFF, self.r.take(n)

    def batch(self, depth):
        """depth streams opened in one write (END_HEADERS | END_STREAM), read until each
        has ended (a HEADERS or DATA frame with END_STREAM); a reset stream is bad."""
        sids = set()
        out = []
        for _ in range(depth):
            out.append(h2_frame(1, 0x5, self.sid, self.BLOCK))
            sids.add(self.sid)
            self.sid += 2
        self.s.sendall(b"".join(out))
        bad = 0
        while sids:
            t, fl, sid, p = self.frame()
            if t == 4 and not fl & 1:  # the server's SETTINGS: acknowledged
                self.s.sendall(h2_frame(4, 1, 0))
            elif t == 6 and not fl & 1:  # PING
                self.s.sendall(h2_frame(6, 1, 0, p))
            elif t == 7:  # GOAWAY
                raise SystemExit("midstream_client: the server sent GOAWAY")
            elif t == 3 and sid in sids:  # RST_STREAM
                sids.discard(sid)
                bad += 1
            elif t in (0, 1) and fl & 1 and sid in sids:
                sids.discard(sid)
        return depth, bad


def paused_run(proto, port, prefix, before, after, depth):
    c = {"resp": Resp, "http1": Http1, "memcache": Memcache, "h2c": H2c,
         "tls": lambda p: Http1(p, tls=True)}[proto](port)
    if proto == "tls":
        depth = 1
    sent = answered = bad = 0
    while sent < before:
        n, b = c.batch(min(depth, before - sent))
        sent += n
        if b:
            raise SystemExit(f"midstream_client: {b} bad replies before the pause")
    touch(prefix + ".paused")
    wait_file(prefix + ".go")
    sent = 0
    while sent < after:
        n, b = c.batch(min(depth, after - sent))
        sent += n
        answered += n
        bad += b
    print(json.dumps({"sent": sent, "answered": answered, "bad": bad}), flush=True)
    wait_file(prefix + ".stop")
    c.s.close()
    return bad == 0


def info_run(port, prefix):
    s = socket.create_connection(("127.0.0.1", port))
    r = Reader(s)
    touch(prefix + ".paused")
    for k in (1, 2):
        wait_file(f"{prefix}.go{k}")
        s.sendall(resp_cmd(b"INFO", b"commandstats"))
        line = r.line()
        text = r.take(int(line[1:]) + 2).decode()
        # cmdstat_get:calls=12,usec=...
        print(sum(int(l.split("calls=")[1].split(",")[0])
                  for l in text.splitlines()
                  if l.startswith("cmdstat_") and not l.startswith("cmdstat_info:")), flush=True)
    s.close()
    return True


def main():
    proto, port, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if proto == "info":
        ok = info_run(port, prefix)
    else:
        before, after = int(sys.argv[4]), int(sys.argv[5])
        depth = int(sys.argv[6]) if len(sys.argv) > 6 else 1
        ok = paused_run(proto, port, prefix, before, after, depth)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
