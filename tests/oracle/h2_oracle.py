#!/usr/bin/env python3
"""HTTP/2 oracle: raw frames to HAProxy (or sluice) listening for h2c on
PORT (a plain HTTP listener accepts the preface), printing the frames that
come back. Used to decide the expectations of the `:scheme` and
connection-window tests of tests/http2.rs.

    python3 h2_oracle.py PORT scheme   # malformed :scheme values
    python3 h2_oracle.py PORT body     # WINDOW_UPDATEs after small bodies
"""
import socket, struct, sys

NAMES = {0: "DATA", 1: "HEADERS", 3: "RST_STREAM", 4: "SETTINGS", 6: "PING", 7: "GOAWAY", 8: "WINDOW_UPDATE"}

def frame(t, fl, sid, p):
    return struct.pack(">I", len(p))[1:] + bytes([t, fl]) + struct.pack(">I", sid) + p

def lit_idx(i, v):
    """Literal without indexing, indexed name (i < 15), no Huffman."""
    return bytes([i, len(v)]) + v

def parse(buf):
    out, p = [], 0
    while len(buf) >= p + 9:
        n = int.from_bytes(buf[p:p + 3], "big")
        if len(buf) < p + 9 + n:
            break
        out.append((buf[p + 3], buf[p + 4], int.from_bytes(buf[p + 5:p + 9], "big") & 0x7fffffff, buf[p + 9:p + 9 + n]))
        p += 9 + n
    return out

def run(port, payload, wait=1.0):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"") + payload)
    s.settimeout(wait)
    buf = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            buf += d
    except OSError:
        pass
    for t, fl, sid, p in parse(buf):
        print("  ", NAMES.get(t, t), "flags=%d" % fl, "stream=%d" % sid, p[:80])

def main():
    port, case = int(sys.argv[1]), sys.argv[2]
    if case == "scheme":
        for sch in [b"ht tp", b"", b"1http", b"foo"]:
            print("== :scheme", sch)
            # :method GET, :scheme <literal>, :path /, :authority h
            run(port, frame(1, 5, 1, b"\x82" + lit_idx(6, sch) + b"\x84\x01\x01h"))
    if case == "body":
        post = b"\x83\x86\x84\x01\x01h"
        print("== POST, 5 bytes")
        run(port, frame(1, 4, 1, post) + frame(0, 1, 1, b"hello"))
        print("== 3 POSTs")
        run(port, frame(1, 4, 1, post) + frame(0, 1, 1, b"hello") + frame(1, 4, 3, post)
            + frame(0, 1, 3, b"x" * 100) + frame(1, 4, 5, post) + frame(0, 1, 5, b"y" * 1000))

if __name__ == "__main__":
    main()
