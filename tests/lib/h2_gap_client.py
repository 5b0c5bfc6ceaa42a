#!/usr/bin/env python3
"""An h2c client (prior knowledge, raw frames, no library) whose every other stream reaches
the server before the one before it, in a segment larger than ebee holds: a gap.

    h2_gap_client.py HOST PORT ROUNDS LATE_BYTES EARLY_BYTES [TAIL]

Sends ROUNDS rounds on one connection, each a POST of LATE_BYTES (its HEADERS and DATA one
write, one segment: the one test_ebee_frame_reorder.sh's router delays when its IP length
is 1024-2047) then at once a POST of EARLY_BYTES (one segment, larger: it passes the delay
by and arrives first), and reads until both streams ended before the next round. Then TAIL
(default 0) POSTs of 10 bytes one at a time, each answered before the next: in order, no
gap (what trusts the connection again). Prints "sent N ok M": the streams sent, those
answered with status 200."""
import socket
import sys

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
# POST http://localhost/ in HPACK: :method POST (static 3), :scheme http (6), :path / (4),
# :authority (static name 1) literal without indexing "localhost".
BLOCK = b"\x83\x86\x84\x01\x09localhost"


def frame(t, fl, sid, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([t, fl]) + sid.to_bytes(4, "big") + payload


class Conn:
    def __init__(self, host, port):
        self.s = socket.create_connection((host, port), timeout=60)
        # each write its own segment
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.window = 65535  # the connection's send window
        self.stream_window = 65535  # each new stream's (the server's SETTINGS may change it)
        self.ended = {}  # stream id -> its status (None until the response HEADERS)

    def take(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                sys.exit("h2_gap_client: the server closed the connection")
            self.buf += d
        b, self.buf = self.buf[:n], self.buf[n:]
        return b

    def frame(self):
        h = self.take(9)
        return h[3], h[4], int.from_bytes(h[5:9], "big") & 0x7FFFFFFF, self.take(
            int.from_bytes(h[:3], "big"))

    def handle(self, t, fl, sid, p, live):
        """One frame from the server; True once it is the server's SETTINGS."""
        if t == 4 and not fl & 1:  # SETTINGS: acknowledged
            for i in range(0, len(p) - 5, 6):
                if int.from_bytes(p[i:i + 2], "big") == 4:  # SETTINGS_INITIAL_WINDOW_SIZE
                    self.stream_window = int.from_bytes(p[i + 2:i + 6], "big")
            self.s.sendall(frame(4, 1, 0))
            return True
        if t == 6 and not fl & 1:  # PING
            self.s.sendall(frame(6, 1, 0, p))
        elif t == 8 and sid == 0:  # WINDOW_UPDATE of the connection
            self.window += int.from_bytes(p[:4], "big") & 0x7FFFFFFF
        elif t == 7:
            sys.exit("h2_gap_client: the server sent GOAWAY: %r" % p[8:80])
        elif t == 3 and sid in live:
            sys.exit("h2_gap_client: the server reset stream %d" % sid)
        elif t == 1 and sid in live:
            # the response's first header: ":status: 200" is static index 8 (0x88)
            live[sid] = p[:1] == b"\x88"
        if t in (0, 1) and fl & 1 and sid in live:
            self.ended[sid] = live.pop(sid)
        return False

    def post(self, sid, n):
        if n > self.window or n > self.stream_window:
            sys.exit("h2_gap_client: %d bytes exceed the flow-control window" % n)
        self.window -= n
        self.s.sendall(frame(1, 0x4, sid, BLOCK) + frame(0, 0x1, sid, b"x" * n))


def main():
    host, port, rounds, late, early = sys.argv[1], int(sys.argv[2]), *map(int, sys.argv[3:6])
    tail = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    c = Conn(host, port)
    c.s.sendall(PREFACE + frame(4, 0, 0))
    while not c.handle(*c.frame(), {}):
        pass
    sid = 1
    for _ in range(rounds):
        live = {sid: None, sid + 2: None}
        c.post(sid, late)
        c.post(sid + 2, early)
        while live:
            c.handle(*c.frame(), live)
        sid += 4
    for _ in range(tail):
        live = {sid: None}
        c.post(sid, 10)
        while live:
            c.handle(*c.frame(), live)
        sid += 2
    c.s.close()
    print("sent", 2 * rounds + tail, "ok", sum(1 for v in c.ended.values() if v))


main()
