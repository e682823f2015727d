#!/usr/bin/env python3
"""RSS growth per idle HTTP/2 connection of a proxy.

    h2_idle.py <pid> <port> <n>

Opens <n> cleartext HTTP/2 connections to 127.0.0.1:<port> (prior
knowledge), makes one GET / on each and reads its answer, then leaves them
open and idle; prints (RSS with them open - RSS before) / n, in bytes, once
the proxy's RSS has settled. The connections speak raw frames (no HTTP/2
library is needed): the preface, an empty SETTINGS, the ACK of the
server's, and one HEADERS frame whose fields use HPACK's static table.
"""
import socket
import struct
import sys
import time


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise SystemExit("no VmRSS")


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def main():
    pid, port, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    authority = b"127.0.0.1"
    # :method GET, :scheme http, :path /, :authority (literal, indexed name 1).
    fields = b"\x82\x86\x84\x41" + bytes([len(authority)]) + authority
    hello = (
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
        + frame(4, 0, 0)
        + frame(4, 1, 0)  # ACK of the server's SETTINGS, sent ahead
        + frame(1, 5, 1, fields)  # END_STREAM | END_HEADERS
    )
    # A few warm-up connections first, so that the proxy's first buffers
    # and thread-local spares are not counted as per-connection memory.
    warm = []
    for _ in range(20):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(hello)
        warm.append(s)
    for s in warm:
        answer(s)
        s.close()
    time.sleep(1.0)
    before = rss(pid)
    conns = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(hello)
        conns.append(s)
    for s in conns:
        answer(s)
    # The proxy frees what a stream held once it ends; let it settle.
    last = 0
    for _ in range(20):
        time.sleep(0.5)
        now = rss(pid)
        if now == last:
            break
        last = now
    print(round((last - before) / n))
    for s in conns:
        s.close()


def answer(s):
    """Reads frames until stream 1 ends (DATA or HEADERS with END_STREAM)."""
    buf = b""
    s.settimeout(10)
    while True:
        while len(buf) >= 9:
            length = int.from_bytes(buf[:3], "big")
            if len(buf) < 9 + length:
                break
            kind, flags = buf[3], buf[4]
            stream = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
            buf = buf[9 + length:]
            if stream == 1 and kind in (0, 1) and flags & 1:
                return
            if kind == 7:
                raise SystemExit("GOAWAY from the proxy")
        chunk = s.recv(65536)
        if not chunk:
            raise SystemExit("closed by the proxy")
        buf += chunk


if __name__ == "__main__":
    main()
