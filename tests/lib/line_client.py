#!/usr/bin/env python3
"""Client of tests/lib/line_server.py: line_client.py PORT N solo|pipe [HOLD]. solo: a line,
then its whole answer, then the next line at once (one request at a time); pipe: three lines
in one write, then a line every millisecond without waiting for answers, a reader thread
taking them. Prints the number of answers received; with HOLD, then keeps the connection
open until the file HOLD exists (the kernel's counters of an open socket can be read)."""
import os, socket, sys, threading, time

port, n, how = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
got = 0


def read_answers():
    global got
    buf = b""
    while got < n:
        b = s.recv(65536)
        if not b:
            return
        buf += b
        got += buf.count(b"\n")
        buf = buf[buf.rfind(b"\n") + 1:]


if how == "solo":
    for i in range(n):
        s.sendall(b"zz %d\n" % i)
        buf = b""
        while not buf.endswith(b"\n"):
            buf += s.recv(65536)
        got += 1
else:
    t = threading.Thread(target=read_answers)
    t.start()
    s.sendall(b"zz 0\nzz 1\nzz 2\n")
    for i in range(3, n):
        time.sleep(0.001)
        s.sendall(b"zz %d\n" % i)
    t.join(60)
if len(sys.argv) > 4:
    print(got, flush=True)
    end = time.monotonic() + 120  # a hang guard
    while not os.path.exists(sys.argv[4]) and time.monotonic() < end:
        time.sleep(0.02)
    s.close()
else:
    s.close()
    print(got)
