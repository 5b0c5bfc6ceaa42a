#!/usr/bin/env python3
"""HTTPS client for the TLS framing test: one request at a time per connection.

    https_client.py PORT CONNS REQUESTS [PATH] [keepalive|newconn] [h1|h2|none] [BODY]

keepalive: CONNS connections one after another, REQUESTS requests each on it (HTTP/1.1
keep-alive, http.client); newconn: CONNS * REQUESTS connections of one request each (a full
handshake each; no session resumption). h1 offers ALPN http/1.1 only, h2 offers h2 and
http/1.1 (the server chooses; nginx without http2 takes http/1.1), none no ALPN. Prints one
JSON object: sent, responses, bad (non-200 or short), p50_us of each request from its
write to its response's last byte, alpn (what the server chose). BODY > 0: POST requests
with a body of that many bytes (http.client writes a body of 2000 bytes or more apart from
the headers).
"""
import http.client
import json
import socket
import ssl
import statistics
import sys
import time


def main():
    port, conns, reqs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    path = sys.argv[4] if len(sys.argv) > 4 else "/"
    mode = sys.argv[5] if len(sys.argv) > 5 else "keepalive"
    alpn = sys.argv[6] if len(sys.argv) > 6 else "h1"
    body = b"b" * int(sys.argv[7]) if len(sys.argv) > 7 and int(sys.argv[7]) else None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if alpn != "none":
        ctx.set_alpn_protocols(["h2", "http/1.1"] if alpn == "h2" else ["http/1.1"])
    sent = responses = bad = 0
    statuses = {}  # the bad ones: status and body length, for a failure's message
    lat = []
    chosen = None

    def one(c):
        nonlocal sent, responses, bad
        t0 = time.monotonic()
        c.request("POST" if body else "GET", path, body=body, headers={"Host": "localhost"})
        sent += 1
        r = c.getresponse()
        got = r.read()
        lat.append((time.monotonic() - t0) * 1e6)
        responses += 1
        if r.status != 200 or not got:
            bad += 1
            statuses[f"{r.status} ({len(got)} bytes)"] = statuses.get(f"{r.status} ({len(got)} bytes)", 0) + 1

    if mode == "keepalive":
        for _ in range(conns):
            c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx)
            c.connect()
            c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            chosen = c.sock.selected_alpn_protocol()
            for _ in range(reqs):
                one(c)
            c.close()
    else:
        for _ in range(conns * reqs):
            # A fresh context each time: no session ticket, a full handshake.
            fresh = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            fresh.check_hostname = False
            fresh.verify_mode = ssl.CERT_NONE
            if alpn != "none":
                fresh.set_alpn_protocols(["h2", "http/1.1"] if alpn == "h2" else ["http/1.1"])
            c = http.client.HTTPSConnection("127.0.0.1", port, context=fresh)
            c.connect()
            chosen = c.sock.selected_alpn_protocol()
            one(c)
            c.close()
    print(json.dumps({"sent": sent, "responses": responses, "bad": bad, "bad_statuses": statuses,
                      "p50_us": statistics.median(lat), "alpn": chosen}))


if __name__ == "__main__":
    main()
