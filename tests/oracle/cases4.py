# Chunked bodies re-framed: what reaches the server (requests) and the client
# (responses, run with -v) of a chunked body whose size text is unusual.
from cases import post, resp
TE = b"Transfer-Encoding: chunked\r\n"
CASES = [
    ("chunk-leading-zeros", post(TE, b"0000000000000005\r\nhello\r\n0\r\n\r\n"), None),
    ("chunk-upper-hex", post(TE, b"A\r\n0123456789\r\n000\r\n\r\n"), None),
    ("chunk-ext-last-trailer", post(TE, b"5 ;a=b\r\nhello\r\n0;last=1\r\nX-T: 1\r\n\r\n"), None),
    ("chunk-huge-size", post(TE, b"fffffffffff\r\nhello"), None),
    ("chunk-two", post(TE, b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"), None),
    ("resp-chunk-rewrite", None, resp(TE, b"000A;ext=1\r\n0123456789\r\n0;x\r\nX-T: 1\r\n\r\n")),
]
CASES = [(n, r if r is not None else b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", s) for n, r, s in CASES]
