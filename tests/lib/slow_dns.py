#!/usr/bin/env python3
"""A slow upstream DNS server for ebee's dgram tests: answers every query on
127.0.0.1:PORT after DELAY_MS with an empty NOERROR reply (the query with its
QR bit set), so a forwarding server in front of it (dnsmasq) spends that long
on each request. Usage: slow_dns.py PORT DELAY_MS READY_FILE"""
import heapq
import select
import socket
import sys
import time

port, delay, ready = int(sys.argv[1]), float(sys.argv[2]) / 1e3, sys.argv[3]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", port))
s.setblocking(False)
with open(ready, "w") as f:
    f.write("%d\n" % s.getsockname()[1])
due = []  # (time, seq, reply, addr)
seq = 0
while True:
    timeout = max(0.0, due[0][0] - time.monotonic()) if due else 1.0
    r, _, _ = select.select([s], [], [], timeout)
    if r:
        while True:
            try:
                q, addr = s.recvfrom(4096)
            except BlockingIOError:
                break
            if len(q) < 12:
                continue
            reply = q[:2] + bytes([q[2] | 0x80, 0x80]) + q[4:]
            heapq.heappush(due, (time.monotonic() + delay, seq, reply, addr))
            seq += 1
    now = time.monotonic()
    while due and due[0][0] <= now:
        _, _, reply, addr = heapq.heappop(due)
        s.sendto(reply, addr)
