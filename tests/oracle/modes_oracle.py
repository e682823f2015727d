#!/usr/bin/env python3
"""Timeouts and connection-mode oracle: runs HAProxy (or sluice) in front of a
raw-TCP backend that records each of its connections, plays raw client
scenarios and prints what the client got (and when the connection closed)
and what the backend received. Used to decide the expectations of
tests/timeouts.rs and tests/conn_modes.rs.

    python3 modes_oracle.py /usr/sbin/haproxy timeouts|modes
    python3 modes_oracle.py ../../target/debug/sluice timeouts|modes
"""
import os, socket, subprocess, sys, tempfile, threading, time
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
def complete(buf):
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
class Backend:
    def __init__(self):
        self.sock = socket.socket(); self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0)); self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns = []; self.resp = [OK]; self.lock = threading.Lock(); self.silent=False
        threading.Thread(target=self.accept, daemon=True).start()
    def accept(self):
        while True:
            c, _ = self.sock.accept()
            rec = bytearray()
            with self.lock: self.conns.append(rec)
            threading.Thread(target=self.serve, args=(c, rec), daemon=True).start()
    def serve(self, c, rec):
        buf = b""; sent100=False
        while True:
            try: d = c.recv(65536)
            except OSError: return
            if not d: c.close(); return
            rec.extend(d); buf += d
            if b"100-continue" in buf.lower() and not sent100 and complete(buf) is None:
                sent100=True; c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            while True:
                n = complete(buf)
                if n is None: break
                buf = buf[n:]; sent100=False
                if self.silent: continue
                r = self.resp.pop(0) if len(self.resp) > 1 else self.resp[0]
                try: c.sendall(r)
                except OSError: return
    def take(self):
        with self.lock:
            out = [bytes(r) for r in self.conns]
            self.conns.clear()
        return out
class Client:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port)); self.t0=time.time()
    def send(self, b): self.s.sendall(b)
    def read(self, wait=1.0, until_close=False):
        self.s.settimeout(wait); out=b""; closed=None
        end=time.time()+wait
        while time.time()<end:
            self.s.settimeout(max(0.01,end-time.time()))
            try: d=self.s.recv(65536)
            except socket.timeout: break
            except ConnectionResetError: closed="reset@%.2f"%(time.time()-self.t0); break
            if not d: closed="closed@%.2f"%(time.time()-self.t0); break
            out+=d
        return out, closed
def run(binary, cfgtext, scenario):
    be = Backend(); port = free_port(); d = tempfile.mkdtemp()
    cfg = os.path.join(d, "h.cfg")
    open(cfg, "w").write(cfgtext.format(dir=d, port=port, bport=be.port))
    p = subprocess.Popen([binary, "-f", cfg, "-db"] if "haproxy" in binary else [binary, "-f", cfg, "-d"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.7)
    try: scenario(port, be)
    finally: p.kill(); p.wait()
TCFG = """
global
    stats socket {dir}/stats.sock level admin
defaults
    mode http
    timeout connect 2s
    timeout client %s
    timeout server 800ms
    %s
frontend fe
    bind 127.0.0.1:{port}
    default_backend be
backend be
    server s1 127.0.0.1:{bport}
"""
def slowloris(port, be):
    c = Client(port); req = b"GET / HTTP/1.1\r\nHost: x\r\nX-A: bbbbbbbbbbbbbbbbbbbbbbbbbb\r\n\r\n"
    got=b""; closed=None
    for i,b in enumerate(req):
        try: c.send(bytes([b]))
        except OSError as e: closed="senderr %s @%.2f"%(e, time.time()-c.t0); break
        o,cl = c.read(0.2); got+=o
        if cl: closed=cl; break
    print("slowloris:", got[:40], closed, "backend", be.take())
def idle(port, be):
    c = Client(port); o, cl = c.read(3.0); print("idle:", o[:40], cl)
def partial_head(port, be):
    c = Client(port); c.send(b"GET / HTTP/1.1\r\n"); o, cl = c.read(3.0); print("partial head:", o[:60], cl)
def body_stall(port, be):
    c = Client(port); c.send(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"); o, cl = c.read(4.0)
    print("body stall:", o[:60], cl, "backend", be.take())
def server_silent(port, be):
    be.silent=True
    c = Client(port); c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"); o, cl = c.read(3.0)
    print("server silent:", o, cl); be.silent=False
def ka_partial(port, be):
    c = Client(port); c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"); o, cl = c.read(0.3)
    c.t0=time.time()
    c.send(b"GET / HTTP/1.1\r\n"); o, cl = c.read(3.0); print("ka partial second:", o[:60], cl)
def ka_idle(port, be):
    c = Client(port); c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"); o, cl = c.read(0.3)
    c.t0=time.time(); o, cl = c.read(3.0); print("ka idle:", o[:60], cl)
def timeouts(b):
    for client_t, extra in [("1500ms", "timeout http-request 1s\n    timeout http-keep-alive 500ms"), ("1s", "")]:
        print("--- client", client_t, extra.replace("\n", ";"))
        for sc in [slowloris, idle, partial_head, body_stall, server_silent, ka_partial, ka_idle]:
            run(b, TCFG % (client_t, extra), sc)
MCFG = """
global
    stats socket {dir}/stats.sock level admin
defaults
    mode http
    timeout connect 2s
    timeout client 2s
    timeout server 2s
    %s
frontend fe
    bind 127.0.0.1:{port}
    default_backend be
backend be
    server s1 127.0.0.1:{bport}
"""
R = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
def two(port, be):
    c = Client(port); c.send(R); o1,_ = c.read(0.3); c.send(R); o2, cl = c.read(0.5)
    print("  client:", o1, o2, cl); print("  backend conns:", be.take())
def http10(port, be):
    for req in [b"GET /a HTTP/1.0\r\nHost: x\r\n\r\n", b"GET /a HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n"]:
        c = Client(port); c.send(req); o, cl = c.read(0.5); print("  1.0 client:", o, cl)
    print("  backend conns:", be.take())
def http10_nolen(port, be):
    be.resp=[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"]
    for req in [b"GET /a HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n"]:
        c = Client(port); c.send(req); o, cl = c.read(0.5); print("  1.0 chunked resp client:", o, cl)
    be.resp=[b"HTTP/1.0 200 OK\r\n\r\nok"]
    c = Client(port); c.send(R); o, cl = c.read(0.5); print("  1.0 close-delimited resp client:", o, cl)
    be.take(); be.resp=[OK]
def hop(port, be):
    be.resp=[b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: x-foo, keep-alive\r\nX-Foo: 1\r\nKeep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\nUpgrade: h2c\r\nTrailer: X-T\r\nTE: trailers\r\nX-Keep: y\r\n\r\nok"]
    c = Client(port); c.send(b"GET /a HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, X-Bar, te\r\nX-Bar: 1\r\nKeep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\nTE: trailers\r\nTrailer: X-T\r\nUpgrade: h2c\r\nX-Keep: y\r\n\r\n")
    o, cl = c.read(0.5); print("  client:", o, cl); print("  backend:", be.take()); be.resp=[OK]
def expect(port, be):
    c = Client(port); c.send(b"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
    o, cl = c.read(0.5); print("  after head:", o, cl); c.send(b"hello"); o, cl = c.read(0.5); print("  after body:", o, cl); print("  backend:", be.take())
def trailers(port, be):
    be.resp=[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Resp-T: 2\r\n\r\n"]
    c = Client(port); c.send(b"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Req-T: 1\r\n\r\n")
    o, cl = c.read(0.5); print("  client:", o, cl); print("  backend:", be.take()); be.resp=[OK]
def nobody(port, be):
    be.resp=[b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n", b"HTTP/1.1 204 No Content\r\n\r\n", b"HTTP/1.1 304 Not Modified\r\nContent-Length: 7\r\nETag: \"x\"\r\n\r\n", OK]
    c = Client(port); c.send(b"HEAD /a HTTP/1.1\r\nHost: x\r\n\r\nGET /204 HTTP/1.1\r\nHost: x\r\n\r\nGET /304 HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
    o, cl = c.read(0.8); print("  client:", o, cl); print("  backend:", be.take()); be.resp=[OK]
def modes(b):
    for opt in ["", "option http-server-close", "option httpclose", "option http-keep-alive"]:
        print("--- ", opt); run(b, MCFG % opt, two)
    print("--- default")
    for sc in [http10, http10_nolen, hop, expect, trailers, nobody]:
        print(sc.__name__); run(b, MCFG % "", sc)

if __name__ == "__main__":
    {"timeouts": timeouts, "modes": modes}[sys.argv[2]](sys.argv[1])
