#!/usr/bin/env python3
"""TCP echo server on 127.0.0.1:PORT (0: any; the port is written to READY_FILE): every
read is written back, one thread per connection. The io pattern's shape for any bytes."""
import socket, sys, threading

srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1])))
srv.listen(64)
open(sys.argv[2], "w").write(f"{srv.getsockname()[1]}\n")

def serve(c):
    with c:
        while True:
            b = c.recv(65536)
            if not b:
                return
            c.sendall(b)

while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
