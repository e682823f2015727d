#!/usr/bin/env python3
"""Source and sink for bench/tcp-throughput.sh.

  tcp_pump.py source PORT BYTES   serve BYTES of zeros to each connection
                                  that first sends one byte (a connection
                                  that sends nothing, e.g. a readiness
                                  probe, gets nothing)
  tcp_pump.py sink PORT BYTES     connect, send one byte, read and discard
                                  until EOF; print "<bytes> <seconds>"

Both move data in 1 MiB system calls so that their own CPU stays small
next to the proxy's.
"""
import socket
import sys
import time

CHUNK = 1 << 20


def source(port, total):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(16)
    buf = memoryview(bytes(CHUNK))
    while True:
        c, _ = ls.accept()
        try:
            if c.recv(1) != b"g":
                continue
            left = total
            while left > 0:
                n = c.send(buf[: min(left, CHUNK)])
                left -= n
            c.shutdown(socket.SHUT_WR)
            c.recv(1)
        except OSError:
            pass
        finally:
            c.close()


def sink(port, total):
    c = socket.create_connection(("127.0.0.1", port))
    buf = bytearray(CHUNK)
    got = 0
    start = time.monotonic()
    c.sendall(b"g")
    while True:
        n = c.recv_into(buf)
        if n == 0:
            break
        got += n
    secs = time.monotonic() - start
    c.close()
    if got != total:
        print(f"sink: got {got} bytes, expected {total}", file=sys.stderr)
        sys.exit(1)
    print(got, f"{secs:.3f}")


if __name__ == "__main__":
    mode, port, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    (source if mode == "source" else sink)(port, total)
