#!/usr/bin/env python3
"""HTTP/1.1 pipelining client: CONNS connections, each sending BATCHES batches of
DEPTH requests in one write (GET, HEAD and POST with a body, in turn; GET and HEAD
of PREFIX/a and PREFIX/b, PREFIX the optional fifth argument; a sixth, nohead,
sends GET for HEAD) and reading
all their responses before the next batch. Prints one JSON line: requests sent,
responses received (parsed by Content-Length, HEAD without a body), and the p50 of
each request's latency from its batch's send to its response's last byte (us)."""
import json, socket, sys, threading, time

port, conns, batches, depth = (int(a) for a in sys.argv[1:5])
prefix = sys.argv[5].encode() if len(sys.argv) > 5 else b""
nohead = len(sys.argv) > 6 and sys.argv[6] == "nohead"  # GET where HEAD would be
lat, counts, lock = [], {"sent": 0, "responses": 0, "bad": 0}, threading.Lock()

def reqs(k):
    out, heads = [], []
    for i in range(depth):
        m = (k * depth + i) % 3
        if m == 0:
            out.append(b"GET " + prefix + b"/a HTTP/1.1\r\nHost: t\r\n\r\n")
        elif m == 1:
            out.append(b"HEAD " + prefix + b"/b HTTP/1.1\r\nHost: t\r\n\r\n")
        else:
            out.append(b"POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello")
        if m == 1 and nohead:
            out[-1] = out[-1].replace(b"HEAD ", b"GET ", 1)
        heads.append(m == 1 and not nohead)
    return b"".join(out), heads

def run(c):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    mine, sent, got, bad = [], 0, 0, 0
    buf = b""
    for k in range(batches):
        data, heads = reqs(k)
        t0 = time.monotonic()
        s.sendall(data)
        sent += depth
        done = 0
        while done < depth:
            # parse complete responses in buf
            while done < depth:
                e = buf.find(b"\r\n\r\n")
                if e < 0:
                    break
                hdr = buf[:e].decode("latin1").lower()
                cl = 0
                for line in hdr.split("\r\n")[1:]:
                    if line.startswith("content-length:"):
                        cl = int(line.split(":", 1)[1])
                body = 0 if heads[done] else cl
                if len(buf) < e + 4 + body:
                    break
                if not hdr.startswith("http/1.1 200"):
                    bad += 1
                buf = buf[e + 4 + body:]
                mine.append((time.monotonic() - t0) * 1e6)
                done += 1
                got += 1
            if done < depth:
                b = s.recv(65536)
                if not b:
                    raise SystemExit("server closed")
                buf += b
    s.close()
    with lock:
        lat.extend(mine)
        counts["sent"] += sent
        counts["responses"] += got
        counts["bad"] += bad

ts = [threading.Thread(target=run, args=(c,)) for c in range(conns)]
for t in ts: t.start()
for t in ts: t.join()
lat.sort()
counts["p50_us"] = lat[len(lat) // 2] if lat else None
print(json.dumps(counts))
