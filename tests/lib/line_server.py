#!/usr/bin/env python3
"""A line protocol no framer knows, on 127.0.0.1:PORT (0: any; the port is written to
READY_FILE): every line the client sent ("zz N") is answered "ok N", written in PARTS
writes with a 1 ms pause after each but the last, whatever a read brought (so lines
pipelined by a client are read together and answered write by write). One thread per
connection."""
import socket, sys, threading, time

port, ready = int(sys.argv[1]), sys.argv[2]
parts = int(sys.argv[3]) if len(sys.argv) > 3 else 3
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(64)
open(ready, "w").write(f"{srv.getsockname()[1]}\n")


def serve(c):
    buf = b""
    with c:
        while True:
            b = c.recv(65536)
            if not b:
                return
            buf += b
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                resp = b"ok " + line.split(b" ", 1)[-1] + b"\n"
                step = max(1, len(resp) // parts)
                for i in range(0, len(resp), step):
                    if i:
                        time.sleep(0.001)
                    c.sendall(resp[i:i + step])


while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
