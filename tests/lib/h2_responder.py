#!/usr/bin/env python3
"""A minimal HTTP/2 server (raw frames, no library) on 127.0.0.1:PORT (0: any; the port
is written to READY_FILE), one thread per connection: it checks the client preface,
sends its SETTINGS, acknowledges the client's, and answers every stream the client opened
(a HEADERS frame, ":status: 200" and END_STREAM) when the client sends a PING, which it
acknowledges after them. So a client decides how many streams are in flight at once.

As a client (h2_responder.py client PORT CONNS STREAMS...): on each of CONNS connections,
for each number k of STREAMS, open k streams, send a PING and read until all k are
answered. Prints the number of responses."""
import socket, struct, sys, threading

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(t, fl, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([t, fl]) + struct.pack(">I", sid) + payload


def frames(s):
    buf = b""
    while True:
        while len(buf) >= 9:
            n = int.from_bytes(buf[:3], "big")
            if len(buf) < 9 + n:
                break
            yield buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF, buf[9:9 + n]
            buf = buf[9 + n:]
        b = s.recv(65536)
        if not b:
            return
        buf += b


def serve(c):
    with c:
        got = b""
        while len(got) < len(PREFACE):
            b = c.recv(len(PREFACE) - len(got))
            if not b:
                return
            got += b
        if got != PREFACE:
            return
        c.sendall(frame(4, 0, 0))
        opened = []
        for t, fl, sid, p in frames(c):
            if t == 4 and not fl & 1:
                c.sendall(frame(4, 1, 0))
            elif t == 1:
                opened.append(sid)
            elif t == 6 and not fl & 1:
                c.sendall(b"".join(frame(1, 5, s, b"\x88") for s in opened) + frame(6, 1, 0, p))
                opened = []


def client(port, conns, batches):
    n = 0
    for _ in range(conns):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(PREFACE + frame(4, 0, 0))
        sid, it = 1, frames(s)
        for k in batches:
            out = b""
            for _ in range(k):
                out += frame(1, 5, sid, b"\x82\x86\x84\x41\x01t")
                sid += 2
            s.sendall(out + frame(6, 0, 0, b"\0" * 8))
            left = k
            while left:
                t, fl, _, _ = next(it)
                if t == 1 and fl & 1:
                    left -= 1
                    n += 1
        s.close()
    print(n)


if sys.argv[1] == "client":
    client(int(sys.argv[2]), int(sys.argv[3]), [int(k) for k in sys.argv[4:]])
    sys.exit(0)
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1])))
srv.listen(64)
open(sys.argv[2], "w").write(f"{srv.getsockname()[1]}\n")
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
