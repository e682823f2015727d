#!/usr/bin/env python3
"""HTTP/1 framing oracle: runs HAProxy (or sluice) in front of a raw-TCP
backend and prints, per case, what the client got and what bytes reached the
backend. Used to decide the expectations of tests/smuggling.rs.

    cd tests/oracle
    python3 h1_oracle.py /usr/sbin/haproxy [case-name-substring] [-v]
    python3 h1_oracle.py ../../target/debug/sluice
    CASES=cases2 python3 h1_oracle.py /usr/sbin/haproxy   # more cases
    CASES=cases3 python3 h1_oracle.py /usr/sbin/haproxy   # head size limits
    CASES=cases4 python3 h1_oracle.py /usr/sbin/haproxy -v  # chunk re-framing

The backend keeps per-connection records and reports the bytes received
since the previous case, so pooled server connections are accounted for.
"""
import os, socket, subprocess, sys, tempfile, threading, time

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

class Backend:
    """Records every byte per connection; answers `resp` after each request
    whose framing it can follow (or after 300 ms of silence)."""
    def __init__(self):
        self.sock = socket.socket(); self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0)); self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns = []; self.resp = OK; self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()
    def accept(self):
        while True:
            c, _ = self.sock.accept()
            rec = bytearray()
            with self.lock: self.conns.append(rec)
            threading.Thread(target=self.serve, args=(c, rec), daemon=True).start()
    def serve(self, c, rec):
        c.settimeout(0.3); buf = b""
        while True:
            try:
                d = c.recv(65536)
            except socket.timeout:
                if buf:
                    try: c.sendall(self.resp)
                    except OSError: pass
                    buf = b""
                continue
            except OSError:
                return
            if not d:
                c.close(); return
            rec.extend(d); buf += d
            while True:
                n = complete(buf)
                if n is None: break
                buf = buf[n:]
                try: c.sendall(self.resp)
                except OSError: return
    def take(self):
        with self.lock:
            out = [bytes(r) for r in self.conns if r]
            for r in self.conns: r.clear()
        return out

def complete(buf):
    """Length of the first complete request in buf, or None."""
    e = buf.find(b"\r\n\r\n")
    if e < 0: return None
    head = buf[:e].decode("latin1").lower().split("\r\n")
    hdrs = [l.split(":", 1) for l in head[1:] if ":" in l]
    te = [v for k, v in hdrs if k.strip() == "transfer-encoding"]
    cl = [v for k, v in hdrs if k.strip() == "content-length"]
    p = e + 4
    if te and "chunked" in te[-1]:
        while True:
            le = buf.find(b"\r\n", p)
            if le < 0: return None
            size = int(buf[p:le].split(b";")[0], 16); p = le + 2
            if size == 0:
                end = buf.find(b"\r\n\r\n", p - 2)
                return None if end < 0 else end + 4
            p += size + 2
            if p > len(buf): return None
    if cl:
        n = int(cl[0].split(",")[0]); return p + n if len(buf) >= p + n else None
    return p

CFG = """
global
    stats socket {dir}/stats.sock level admin
defaults
    mode http
    timeout connect 2s
    timeout client 3s
    timeout server 3s
    timeout http-request 2s
frontend fe
    bind 127.0.0.1:{port}
    default_backend be
backend be
    server s1 127.0.0.1:{bport}
"""

def client(port, data, wait=1.2):
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(wait)
    if isinstance(data, list):
        for part in data:
            s.sendall(part); time.sleep(0.2)
    else:
        s.sendall(data)
    out = b""; closed = False
    t0 = time.time()
    while time.time() - t0 < wait * 2:
        try:
            d = s.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            closed = "reset"; break
        if not d:
            closed = True; break
        out += d
    s.close()
    return out, closed

def summary(out):
    lines = []
    i = 0
    while True:
        j = out.find(b"HTTP/1.", i)
        if j < 0: break
        e = out.find(b"\r\n", j)
        lines.append(out[j:e].decode("latin1"))
        i = e
    return lines

import importlib; CASES = importlib.import_module(os.environ.get("CASES", "cases")).CASES

def main():
    binary = sys.argv[1]; filt = next((a for a in sys.argv[2:] if not a.startswith("-")), "")
    be = Backend(); port = free_port(); d = tempfile.mkdtemp()
    cfg = os.path.join(d, "h.cfg")
    open(cfg, "w").write(CFG.format(dir=d, port=port, bport=be.port))
    p = subprocess.Popen([binary, "-f", cfg, "-db"] if "haproxy" in binary else [binary, "-f", cfg, "-d"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.7)
    try:
        for name, req, resp in CASES:
            if filt and filt not in name: continue
            be.resp = resp or OK
            out, closed = client(port, req)
            time.sleep(0.1)
            got = be.take()
            print(f"== {name}\n   client: {summary(out)} closed={closed} ({len(out)} B)")
            for g in got:
                print(f"   backend: {g!r}")
            if not got:
                print("   backend: <nothing>")
            if "-v" in sys.argv: print(f"   raw client: {out!r}")
    finally:
        p.kill()

if __name__ == "__main__":
    main()
