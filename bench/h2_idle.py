#!/usr/bin/env python3
"""RSS growth per idle HTTP/2 connection of a proxy.

    h2_idle.py <pid> <port> <n> [batch]

Opens <n> cleartext HTTP/2 connections to 127.0.0.1:<port> (prior
knowledge), makes one GET / on each and reads its answer, then leaves them
open and idle; prints (RSS with them open - RSS before) / n, in bytes, once
the proxy's RSS has settled. They are opened <batch> at a time (default
20), each batch left idle for a moment before the next: clients that come
and go over time, not all at the same instant, so that what is measured is
what an idle connection keeps, not the peak of <n> requests at once (the
memory a request uses is given back to the allocator, which keeps it for
the next ones rather than to the system). The connections speak raw frames (no HTTP/2
library is needed): the preface, an empty SETTINGS, the ACK of the
server's, and one HEADERS frame whose fields use HPACK's static table.
"""
import os
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
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 20
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
    while len(conns) < n:
        group = []
        for _ in range(min(batch, n - len(conns))):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(hello)
            group.append(s)
        for s in group:
            answer(s)
        conns.extend(group)
        # Longer than sluice's grace before an idle connection gives its
        # buffers back (50 ms).
        time.sleep(0.2)
    # The proxy frees what a stream held once it ends; let it settle.
    last = 0
    for _ in range(20):
        time.sleep(0.5)
        now = rss(pid)
        if now == last:
            break
        last = now
    print(round((last - before) / n), flush=True)
    # H2_IDLE_HOLD=<seconds>: keep them open that long (to look at the
    # proxy's heap meanwhile).
    time.sleep(float(os.environ.get("H2_IDLE_HOLD", "0")))
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
