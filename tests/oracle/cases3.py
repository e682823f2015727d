from cases2 import head_of
from cases import resp
CASES = [("head-%d" % n, head_of(n), None) for n in range(15200, 15300, 5)] + [("resp-head-%d" % n, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", resp(b"X: " + b"a" * (n - 44) + b"\r\nContent-Length: 2\r\n", b"ok")) for n in (15000, 15200, 15300, 15360, 15400, 16000, 16300, 16384)]
