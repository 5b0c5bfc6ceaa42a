#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Slowloris against a local HTTP endpoint (tests only; refuses anything but loopback).

slowloris.py PORT N INTERVAL_S DURATION_S READY_FILE

Holds N connections to 127.0.0.1:PORT, each sending an unfinished request ("GET /metrics
HTTP/1.1" and then one more header line every INTERVAL_S, never the blank line that ends the
headers). A connection the server closes is opened again at the next tick, so N stay open
(or in the server's backlog) for DURATION_S. READY_FILE gets "ready" once N are connected.
Prints what it saw: how many were open at the end and how many the server closed.
"""
import socket
import sys
import time


def dial(port):
    """A new slow connection, or None if the server did not take it within 1 s."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=1)
        s.setblocking(False)
        s.send(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        return s
    except OSError:
        return None


def top_up(conns, n, port, deadline):
    """Open connections until n are open (or 3 dials failed, or the deadline)."""
    failed = 0
    while len(conns) < n and failed < 3 and time.monotonic() < deadline:
        s = dial(port)
        if s is None:
            failed += 1
        else:
            conns.append(s)
    return failed


def closed_by_peer(s):
    try:
        return s.recv(4096) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def main():
    port, n = int(sys.argv[1]), int(sys.argv[2])
    interval, duration, ready = float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    conns, closed, tick, failed = [], 0, 0, 0
    end = time.monotonic() + duration
    failed += top_up(conns, n, port, end)
    with open(ready, "w") as f:
        f.write("%d\n" % len(conns))
    fewest = len(conns)
    while True:
        time.sleep(interval)
        if time.monotonic() >= end:
            break
        tick += 1
        alive = []
        for s in conns:
            try:
                if closed_by_peer(s):
                    raise OSError
                s.send(b"X-Slow-%d: %d\r\n" % (tick, tick))
                alive.append(s)
            except OSError:
                closed += 1
                s.close()
        failed += top_up(alive, n, port, float("inf"))
        conns = alive
        fewest = min(fewest, len(conns))
    print("slowloris: %d open at the end, at least %d after each tick, %d closed by the "
          "server and reopened, %d connects not accepted within 1 s" %
          (len(conns), fewest, closed, failed))
    print("held %d" % fewest)
    for s in conns:
        s.close()


if __name__ == "__main__":
    main()
