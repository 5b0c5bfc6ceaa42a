#!/usr/bin/env python3
"""A RESP client whose every other command reaches the server before the one before it.

    resp_reorder.py HOST PORT ROUNDS EARLY_BYTES [EARLY_COUNT [TAIL]]

Sends ROUNDS rounds on one connection, each a SET with a 1100-byte value (a segment the
test's router delays: IP length 1024-2047) then at once EARLY_COUNT (default 1) SETs of
EARLY_BYTES, each its own segment (smaller or larger segments pass the delay by: they
arrive first), and waits for every reply before the next round; then TAIL (default 0)
small SETs one at a time, each answered before the next (in order, no gap). Prints "sent N"
(the commands sent, each answered +OK)."""
import socket
import sys


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def main():
    host, port, rounds, early = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    count = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    tail = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    s = socket.create_connection((host, port), timeout=60)
    # each write its own segment
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    for i in range(rounds):
        s.sendall(resp(b"SET", b"late%d" % i, b"x" * 1100))
        for j in range(count):
            s.sendall(resp(b"SET", b"early%d.%d" % (i, j), b"y" * early))
        while buf.count(b"\r\n") < 1 + count:
            d = s.recv(4096)
            if not d:
                sys.exit("server closed the connection")
            buf += d
        if buf != b"+OK\r\n" * (1 + count):
            sys.exit("unexpected replies: %r" % buf[:80])
        buf = b""
    for i in range(tail):
        s.sendall(resp(b"SET", b"tail%d" % i, b"z"))
        while not buf.endswith(b"\r\n"):
            d = s.recv(4096)
            if not d:
                sys.exit("server closed the connection")
            buf += d
        if buf != b"+OK\r\n":
            sys.exit("unexpected reply: %r" % buf[:80])
        buf = b""
    s.close()
    print("sent", (1 + count) * rounds + tail)


main()
