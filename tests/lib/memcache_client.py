#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A memcached load for the framing tests (stdlib only): batches of commands pipelined in one
write each, over one connection, the responses read and checked as they come. Prints one JSON
object: what was sent and answered, for ebee's counts and memcached's own to be checked
against.

  memcache_client.py PORT text   [--batches B] [--per N]   text protocol, meta commands too
  memcache_client.py PORT binary [--batches B] [--per N]   binary, quiet opcodes, NOOP ends a batch
  memcache_client.py PORT quiet                            meta commands in quiet mode (q)
  memcache_client.py PORT stall --pid PID [-n N] [--stall-ms MS]
                                   gets one at a time, the server stopped MS after each is sent
  memcache_client.py PORT floor [-n N]        gets one at a time answered at once: p50 floor_us
  memcache_client.py PORT alone [-n N] [--batches B] [--per P] [--binary]
                                   N requests one at a time, then B batches of P gets pipelined

Counts: answered (requests a response answers), unanswered (noreply, quiet opcodes),
sets (storage commands, cmd_set's share), get_keys (keys asked for, cmd_get's), gets_cmds
(retrieval commands), deletes, incrs, touches, other (version, noop, mn...), quiet_replies
(binary: responses to quiet requests), and lat_us (one per answered request: from the write
of its batch to the read of its response's end).
"""
import argparse
import json
import socket
import struct
import sys
import time


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def fill(self):
        b = self.s.recv(65536)
        if not b:
            sys.exit("memcache_client: the server closed the connection")
        self.buf += b

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def take(self, n):
        while len(self.buf) < n:
            self.fill()
        b, self.buf = self.buf[:n], self.buf[n:]
        return b


def text_response(c):
    """One text response: its lines up to its end (VALUE blocks and STAT lines up to END,
    a VA and its data, else one line)."""
    lines = []
    while True:
        ln = c.line()
        w = ln.split(b" ")
        lines.append(ln)
        if w[0] == b"VALUE":
            c.take(int(w[3]) + 2)
            continue
        if w[0] == b"VA":
            c.take(int(w[1]) + 2)
            return lines
        if w[0] in (b"STAT", b"ITEM"):
            continue
        return lines


def text_load(port, batches, per):
    c = Conn(port)
    n = dict(answered=0, unanswered=0, sets=0, get_keys=0, gets_cmds=0, deletes=0, incrs=0,
             touches=0, other=0, quiet_replies=0)
    lat = []
    # Values whose data holds what looks like commands and responses.
    tricky = b"x\r\nEND\r\nget k\r\nSTORED\r\n"
    c.s.sendall(b"set ctr 0 0 1\r\n0\r\n")
    assert text_response(c) == [b"STORED"]
    n["sets"] += 1
    n["answered"] += 1
    lat.append(None)
    for b in range(batches):
        out, want = [], []
        for i in range(per):
            k = f"k{b}_{i}".encode()
            kind = i % 10
            if kind == 0:
                out.append(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(tricky), tricky))
                want.append([b"STORED"])
                n["sets"] += 1
            elif kind == 1:
                out.append(b"get %s\r\n" % f"k{b}_{i - 1}".encode())  # a hit
                want.append([b"VALUE %s 0 %d" % (f"k{b}_{i - 1}".encode(), len(tricky)),
                             b"END"])
                n["get_keys"] += 1
                n["gets_cmds"] += 1
            elif kind == 2:
                out.append(b"get missing%d\r\n" % i)  # a miss
                want.append([b"END"])
                n["get_keys"] += 1
                n["gets_cmds"] += 1
            elif kind == 3:
                out.append(b"get %s missing %s\r\n" % (f"k{b}_{i - 3}".encode(), k))
                want.append([b"VALUE %s 0 %d" % (f"k{b}_{i - 3}".encode(), len(tricky)),
                             b"END"])
                n["get_keys"] += 3
                n["gets_cmds"] += 1
            elif kind == 4:
                out.append(b"set %s 0 0 5 noreply\r\nhello\r\n" % k)
                n["sets"] += 1
                n["unanswered"] += 1
            elif kind == 5:
                out.append(b"incr ctr 1\r\n")
                want.append(None)  # a number
                n["incrs"] += 1
            elif kind == 6:
                out.append(b"delete nosuch%d noreply\r\n" % i)
                n["deletes"] += 1
                n["unanswered"] += 1
            elif kind == 7:
                out.append(b"mg %s v f\r\n" % f"k{b}_{i - 3}".encode())  # meta hit (noreply set)
                want.append([b"VA 5 f0"])
                n["get_keys"] += 1
                n["gets_cmds"] += 1
            elif kind == 8:
                out.append(b"ms %s 4 T0\r\nEN\r\n\r\n" % k)
                want.append([b"HD"])
                n["sets"] += 1
            else:
                out.append(b"mn\r\n")
                want.append([b"MN"])
                n["other"] += 1
        t0 = time.monotonic()
        c.s.sendall(b"".join(out))
        for w in want:
            got = text_response(c)
            lat.append((time.monotonic() - t0) * 1e6)
            if w is None:
                assert got[0].isdigit(), got
            else:
                assert got == w, (got, w)
            n["answered"] += 1
    c.s.sendall(b"version\r\n")
    assert text_response(c)[0].startswith(b"VERSION ")
    n["answered"] += 1
    n["other"] += 1
    lat.append(None)
    n["lat_us"] = [x for x in lat if x is not None]
    return n


HDR = struct.Struct(">BBHBBHIIQ")  # magic opcode keylen extlen type vbucket/status body opaque cas


def bin_req(op, key=b"", extras=b"", value=b"", opaque=0):
    body = extras + key + value
    return HDR.pack(0x80, op, len(key), len(extras), 0, 0, len(body), opaque, 0) + body


def bin_response(c):
    h = HDR.unpack(c.take(24))
    body = c.take(h[6])
    return h, body


def binary_load(port, batches, per):
    GET, SET, DELETE, NOOP, GETQ, SETQ, DELETEQ, INCR = 0, 1, 4, 0x0a, 0x09, 0x11, 0x14, 5
    c = Conn(port)
    n = dict(answered=0, unanswered=0, sets=0, get_keys=0, gets_cmds=0, deletes=0, incrs=0,
             touches=0, other=0, quiet_replies=0)
    lat = []
    flags = struct.pack(">II", 0, 0)
    for b in range(batches):
        out, want = [], 0
        for i in range(per):
            k = f"b{b}_{i}".encode()
            kind = i % 8
            if kind == 0:
                out.append(bin_req(SET, k, flags, b"\x81\x00" * 20))  # a response magic inside
                want += 1
                n["sets"] += 1
            elif kind == 1:
                out.append(bin_req(GET, f"b{b}_{i - 1}".encode()))  # a hit
                want += 1
                n["get_keys"] += 1
                n["gets_cmds"] += 1
            elif kind == 2:
                out.append(bin_req(GETQ, b"nosuch"))  # a miss: no response
                n["unanswered"] += 1
                n["get_keys"] += 1
                n["gets_cmds"] += 1
            elif kind == 3:
                out.append(bin_req(GETQ, f"b{b}_{i - 3}".encode()))  # a hit: answered, quiet
                n["unanswered"] += 1
                n["get_keys"] += 1
                n["gets_cmds"] += 1
                n["quiet_replies"] += 1
            elif kind == 4:
                out.append(bin_req(SETQ, k, flags, b"v" * 100))
                n["unanswered"] += 1
                n["sets"] += 1
            elif kind == 5:
                out.append(bin_req(DELETEQ, b"nosuch"))  # an error: answered, quiet
                n["unanswered"] += 1
                n["deletes"] += 1
                n["quiet_replies"] += 1
            elif kind == 6:
                out.append(bin_req(GET, b"nosuch"))  # a miss: answered
                want += 1
                n["get_keys"] += 1
                n["gets_cmds"] += 1
            else:
                out.append(bin_req(DELETE, f"b{b}_{i - 7}".encode()))
                want += 1
                n["deletes"] += 1
        out.append(bin_req(NOOP, opaque=0xfeed))
        want += 1
        n["other"] += 1
        t0 = time.monotonic()
        c.s.sendall(b"".join(out))
        got = quiet = 0
        while True:
            h, _ = bin_response(c)
            assert h[0] == 0x81, h
            if h[1] in (GETQ, SETQ, DELETEQ):
                quiet += 1
                continue
            got += 1
            lat.append((time.monotonic() - t0) * 1e6)
            if h[1] == NOOP:
                break
        assert got == want, (got, want)
        assert quiet == sum(1 for i in range(per) if i % 8 in (3, 5)), quiet
        n["answered"] += got
    n["lat_us"] = lat
    return n


def quiet_load(port):
    c = Conn(port)
    n = dict(answered=0, unanswered=0)
    c.s.sendall(b"ms qk 2 T0\r\nhi\r\nmg qk v q\r\nmg nosuch v q\r\nms qk 2 q\r\nho\r\nmn\r\n")
    got = [text_response(c) for _ in range(3)]
    assert got == [[b"HD"], [b"VA 2"], [b"MN"]], got
    n["answered"] = 2  # the first ms and mn; the hit of the quiet mg answered too
    n["unanswered"] = 3
    return n


def stopped(pid):
    """Whether every thread of pid is stopped (SIGSTOP delivered)."""
    import os
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] not in ("T", "t"):
                    return False
    except FileNotFoundError:
        return False
    return True


def stall_load(port, pid, n_req, stall_ms):
    """Requests the server answers late: it is stopped (SIGSTOP) before each is sent and
    continued stall_ms later, a server-side delay both the client and ebee see."""
    import os
    import signal
    c = Conn(port)
    n = dict(answered=0, unanswered=0, sets=1, get_keys=0, gets_cmds=0, deletes=0, incrs=0,
             touches=0, other=0, quiet_replies=0)
    c.s.sendall(b"set sk 0 0 2\r\nok\r\n")
    assert text_response(c) == [b"STORED"]
    n["answered"] = 1
    lat = []
    for i in range(n_req):
        os.kill(pid, signal.SIGSTOP)
        for _ in range(1000):
            if stopped(pid):
                break
            time.sleep(0.0001)
        try:
            t0 = time.monotonic()
            c.s.sendall(b"get sk\r\n")
            time.sleep(stall_ms / 1e3)
        finally:
            os.kill(pid, signal.SIGCONT)
        assert text_response(c) == [b"VALUE sk 0 2", b"END"]
        lat.append((time.monotonic() - t0) * 1e6)
        n["answered"] += 1
        n["get_keys"] += 1
        n["gets_cmds"] += 1
    n["lat_us"] = lat
    return n


def floor_load(port, n_req):
    """The client's own time for a get the server answers at once (p50, us): what its
    latency holds beyond the server's (its syscalls and parsing; some ms a request under
    emulation). Run untraced, before the stall run."""
    c = Conn(port)
    c.s.sendall(b"set fk 0 0 2\r\nok\r\n")
    assert text_response(c) == [b"STORED"]
    lat = []
    for i in range(n_req):
        t0 = time.monotonic()
        c.s.sendall(b"get fk\r\n")
        assert text_response(c) == [b"VALUE fk 0 2", b"END"]
        lat.append((time.monotonic() - t0) * 1e6)
    return {"floor_us": sorted(lat)[len(lat) // 2]}


def alone_load(port, n_req, batches, per, binary):
    """n_req requests one at a time (a set, then gets of its key, every 10th a set again),
    each written once its predecessor was answered: what a connection counted by length
    after verification sees; then batches of per gets pipelined in one write each (a client
    that starts pipelining later). Text, or binary (GET/SET)."""
    c = Conn(port)
    n = dict(answered=0, unanswered=0, sets=0, get_keys=0, gets_cmds=0, deletes=0, incrs=0,
             touches=0, other=0, quiet_replies=0)
    lat = []
    val = b"v" * 100
    flags = struct.pack(">II", 0, 0)

    def one(i):
        if binary:
            return (bin_req(1, b"ak", flags, val) if i % 10 == 0 else bin_req(0, b"ak"))
        return (b"set ak 0 0 %d\r\n%s\r\n" % (len(val), val) if i % 10 == 0 else b"get ak\r\n")

    def answer(i):
        if binary:
            h, _ = bin_response(c)
            assert h[0] == 0x81 and h[5] == 0, h
        elif i % 10 == 0:
            assert text_response(c) == [b"STORED"]
        else:
            assert text_response(c) == [b"VALUE ak 0 %d" % len(val), b"END"]
        n["answered"] += 1
        if i % 10 == 0:
            n["sets"] += 1
        else:
            n["get_keys"] += 1
            n["gets_cmds"] += 1

    for i in range(n_req):
        t0 = time.monotonic()
        c.s.sendall(one(i))
        answer(i)
        lat.append((time.monotonic() - t0) * 1e6)
    for b in range(batches):
        t0 = time.monotonic()
        c.s.sendall(b"".join(one(1) for _ in range(per)))
        for _ in range(per):
            answer(1)
            lat.append((time.monotonic() - t0) * 1e6)
    n["lat_us"] = lat
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("mode", choices=("text", "binary", "quiet", "stall", "floor", "alone"))
    ap.add_argument("--pid", type=int, help="stall: the server's pid")
    ap.add_argument("--stall-ms", type=float, default=2.0)
    ap.add_argument("-n", type=int, default=200, help="stall: requests")
    ap.add_argument("--batches", type=int, default=50)
    ap.add_argument("--per", type=int, default=20)
    ap.add_argument("--binary", action="store_true", help="alone: the binary protocol")
    a = ap.parse_args()
    if a.mode == "text":
        n = text_load(a.port, a.batches, a.per)
    elif a.mode == "binary":
        n = binary_load(a.port, a.batches, a.per)
    elif a.mode == "stall":
        n = stall_load(a.port, a.pid, a.n, a.stall_ms)
    elif a.mode == "floor":
        n = floor_load(a.port, a.n)
    elif a.mode == "alone":
        n = alone_load(a.port, a.n, a.batches, a.per, a.binary)
    else:
        n = quiet_load(a.port)
    print(json.dumps(n))


if __name__ == "__main__":
    main()
