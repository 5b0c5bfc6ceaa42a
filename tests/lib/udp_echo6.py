#!/usr/bin/env python3
"""A UDP echo server on IPv6 for ebee's dgram tests: FAMILY "6" binds ::1, "dual" binds
:: with IPV6_V6ONLY off (IPv4 peers then arrive as ::ffff:a.b.c.d). Writes its port to
READY_FILE. Usage: udp_echo6.py FAMILY READY_FILE"""
import socket
import sys

s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
if sys.argv[1] == "dual":
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", 0))
else:
    s.bind(("::1", 0))
with open(sys.argv[2], "w") as f:
    f.write("%d\n" % s.getsockname()[1])
while True:
    d, a = s.recvfrom(2048)
    s.sendto(d, a)
