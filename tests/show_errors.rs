//! `show errors` (reference §1.5) and the ereq / eresp counters: every
//! request or response sluice refuses is counted and its bytes captured, and
//! the capture is printed as HAProxy 2.6 prints it.
//!
//! The expected texts are real haproxy 2.6.12 output for the same config
//! and the same bytes (captured 30/Nov/2026 with a raw-TCP backend), with
//! the dates and the client port masked.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The reference capture after `header/bizarre:` then `GARBAGE\x01REQ`
/// (reference §1.5, event #1 of 2).
const GARBAGE_CAPTURE: &str = "Total events captured on [DATE] : 2
 \n[DATE] frontend web_fe (#2): invalid request
  backend <NONE> (#-1), server <NONE> (#-1), event #1, src 127.0.0.1:PORT
  buffer starts at 0 (including 0 out), 16369 free,
  len 15, wraps at 16336, error at position 7
  H1 connection flags 0x00000100, H1 stream flags 0x00000810
  H1 msg state MSG_RQMETH(2), H1 msg flags 0x00001400
  H1 chunk len 0 bytes, H1 body len 0 bytes :
  \n  00000  GARBAGE\\x01REQ\\r\\n
  00013  \\r\\n

";

/// haproxy 2.6.12 after `GET / HTTP/1.1`, `host: a`, `header/bizarre: x`.
const BAD_HEADER_CAPTURE: &str = "Total events captured on [DATE] : 1
 \n[DATE] frontend web_fe (#2): invalid request
  backend <NONE> (#-1), server <NONE> (#-1), event #0, src 127.0.0.1:PORT
  buffer starts at 0 (including 0 out), 16338 free,
  len 46, wraps at 16336, error at position 31
  H1 connection flags 0x00000100, H1 stream flags 0x00000810
  H1 msg state MSG_HDR_NAME(17), H1 msg flags 0x00001410
  H1 chunk len 0 bytes, H1 body len 0 bytes :
  \n  00000  GET / HTTP/1.1\\r\\n
  00016  host: a\\r\\n
  00025  header/bizarre: x\\r\\n
  00044  \\r\\n

";

/// The server's answer in the response case: a space in a header name.
const BAD_RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nbad header: x\r\n\r\nok";

/// haproxy 2.6.12's `show errors web_be response` after a client's
/// `GET /r` was answered [`BAD_RESPONSE`] (it sent the client a 502).
const RESPONSE_CAPTURE: &str = "Total events captured on [DATE] : 1
 \n[DATE] backend web_be (#3): invalid response
  frontend web_fe (#2), server s1 (#1), event #0, src 127.0.0.1:PORT
  buffer starts at 0 (including 0 out), 16329 free,
  len 55, wraps at 16336, error at position 39
  H1 connection flags 0x80002200, H1 stream flags 0x00004818
  H1 msg state MSG_HDR_NAME(17), H1 msg flags 0x00001415
  H1 chunk len 2 bytes, H1 body len 2 bytes :
  \n  00000  HTTP/1.1 200 OK\\r\\n
  00017  Content-Length: 2\\r\\n
  00036  bad header: x\\r\\n
  00051  \\r\\n
  00053  ok

";

const EMPTY: &str = "Total events captured on [DATE] : 0\n\n";

/// `front` is handed to sluice already listening (`bind fd@N`).
fn cfg(front: &Listen, be: SocketAddr) -> String {
    format!(
        "global
    stats socket @DIR@/admin.sock level admin
    stats socket @DIR@/user.sock level user
    stats socket @DIR@/oper.sock level operator

defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s

frontend web_fe
    bind {front}
    default_backend web_be

backend web_be
    server s1 {be}
"
    )
}

/// Dates and the client port vary: masked.
fn mask(s: &str) -> String {
    let date = regex::Regex::new(r"\[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d\.\d{3}\]").unwrap();
    let port = regex::Regex::new(r"src 127\.0\.0\.1:\d+").unwrap();
    let s = date.replace_all(s, "[DATE]");
    port.replace_all(&s, "src 127.0.0.1:PORT").into_owned()
}

/// A backend that answers every request with `answer` and closes.
async fn raw_backend(answer: &'static [u8]) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = s.write_all(answer).await;
            });
        }
    });
    addr
}

/// Sends `bytes` on a new connection and reads until sluice closes it.
async fn exchange(fe: u16, bytes: &[u8]) -> String {
    within(Duration::from_secs(5), "raw exchange", async {
        let mut s = TcpStream::connect(("127.0.0.1", fe)).await.unwrap();
        s.write_all(bytes).await.unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out).await;
        String::from_utf8_lossy(&out).into_owned()
    })
    .await
}

async fn show(sl: &Sluice, cmd: &str) -> String {
    mask(&cli(&sl.path("admin.sock"), cmd).await)
}

#[tokio::test]
async fn refused_requests_are_counted_and_captured_as_haproxy_shows_them() {
    let be = raw_backend(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").await;
    let front = Listen::new();
    let fe = front.port();
    let sl = Sluice::start(&cfg(&front, be));

    // Nothing captured yet: the empty form.
    assert_eq!(show(&sl, "show errors").await, EMPTY);
    // Level user may not read captures; operator may.
    assert_eq!(
        cli(&sl.path("user.sock"), "show errors").await,
        "Permission denied\n\n"
    );
    assert_eq!(
        mask(&cli(&sl.path("oper.sock"), "show errors").await),
        EMPTY
    );

    let r = exchange(
        fe,
        b"GET / HTTP/1.1\r\nhost: a\r\nheader/bizarre: x\r\n\r\n",
    )
    .await;
    assert!(r.starts_with("HTTP/1.1 400 Bad request\r\n"), "{r}");
    assert_eq!(show(&sl, "show errors").await, BAD_HEADER_CAPTURE);

    let r = exchange(fe, b"GARBAGE\x01REQ\r\n\r\n").await;
    assert!(r.starts_with("HTTP/1.1 400 Bad request\r\n"), "{r}");
    // Only the last request error of the proxy is kept.
    assert_eq!(show(&sl, "show errors").await, GARBAGE_CAPTURE);
    assert_eq!(
        show(&sl, "show errors web_fe request").await,
        GARBAGE_CAPTURE
    );
    assert_eq!(show(&sl, "show errors 2").await, GARBAGE_CAPTURE);
    // Filters that leave it out: responses only, another proxy.
    let header_only = "Total events captured on [DATE] : 2\n\n";
    assert_eq!(show(&sl, "show errors web_fe response").await, header_only);
    assert_eq!(show(&sl, "show errors web_be").await, header_only);
    assert_eq!(show(&sl, "show errors 99").await, header_only);
    assert_eq!(show(&sl, "show errors nosuch").await, "No such proxy.\n\n");

    let stat = show_stat(&sl.path("admin.sock")).await;
    assert_eq!(stat.num("web_fe", "FRONTEND", "ereq"), 2);
    assert_eq!(stat.num("web_fe", "FRONTEND", "hrsp_4xx"), 2);
    assert_eq!(stat.num("web_be", "BACKEND", "eresp"), 0);

    // sluice keeps runtime state across a reload (HAProxy, a new process,
    // forgets its captures): the capture is still there.
    let reply = cli(&sl.path("admin.sock"), "reload").await;
    assert!(reply.starts_with("Success=1\n"), "{reply}");
    assert_eq!(show(&sl, "show errors").await, GARBAGE_CAPTURE);
}

#[tokio::test]
async fn refused_response_is_counted_and_captured_with_its_server() {
    let be = raw_backend(BAD_RESPONSE).await;
    let front = Listen::new();
    let fe = front.port();
    let sl = Sluice::start(&cfg(&front, be));

    let r = exchange(
        fe,
        b"GET /r HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert!(r.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{r}");
    assert!(
        !r.contains("bad header"),
        "the response must not be relayed: {r}"
    );

    assert_eq!(
        show(&sl, "show errors web_be response").await,
        RESPONSE_CAPTURE
    );
    assert_eq!(show(&sl, "show errors").await, RESPONSE_CAPTURE);
    assert_eq!(show(&sl, "show errors 3").await, RESPONSE_CAPTURE);
    // The frontend is the response's other side: its id selects it too.
    assert_eq!(show(&sl, "show errors web_fe").await, RESPONSE_CAPTURE);
    assert_eq!(
        show(&sl, "show errors web_be request").await,
        "Total events captured on [DATE] : 1\n\n"
    );

    let stat = show_stat(&sl.path("admin.sock")).await;
    assert_eq!(stat.num("web_be", "BACKEND", "eresp"), 1);
    assert_eq!(stat.num("web_be", "s1", "eresp"), 1);
    assert_eq!(stat.num("web_be", "BACKEND", "hrsp_5xx"), 1);
    assert_eq!(stat.num("web_be", "BACKEND", "hrsp_2xx"), 0);
    // The server sent no valid status: its row counts none (as haproxy).
    assert_eq!(stat.num("web_be", "s1", "hrsp_5xx"), 0);
    assert_eq!(stat.num("web_fe", "FRONTEND", "hrsp_5xx"), 1);
    assert_eq!(stat.num("web_fe", "FRONTEND", "ereq"), 0);
}

/// A chunked body that goes bad after the request was routed: counted in
/// ereq and captured on the frontend with the backend it was going to,
/// the error at the offending byte of the body.
#[tokio::test]
async fn bad_chunk_after_routing_is_captured_with_its_backend() {
    let be = raw_backend(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").await;
    let front = Listen::new();
    let fe = front.port();
    let sl = Sluice::start(&cfg(&front, be));

    let r = within(Duration::from_secs(5), "chunked exchange", async {
        let mut s = TcpStream::connect(("127.0.0.1", fe)).await.unwrap();
        s.write_all(b"POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\n")
            .await
            .unwrap();
        // Let the head be forwarded alone before the bad chunk comes.
        tokio::time::sleep(Duration::from_millis(100)).await;
        s.write_all(b"5\r\nhello\r\nZZ\r\n").await.unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out).await;
        String::from_utf8_lossy(&out).into_owned()
    })
    .await;
    assert!(r.starts_with("HTTP/1.1 400 Bad request\r\n"), "{r}");
    assert_eq!(show(&sl, "show errors").await, BAD_CHUNK_CAPTURE);
    let stat = show_stat(&sl.path("admin.sock")).await;
    assert_eq!(stat.num("web_fe", "FRONTEND", "ereq"), 1);
    assert_eq!(stat.num("web_be", "BACKEND", "hrsp_4xx"), 1);
    assert_eq!(stat.num("web_be", "s1", "hrsp_4xx"), 0);
}

/// haproxy 2.6.12 after `POST /` with `transfer-encoding: chunked`, then,
/// once the head was forwarded, `5\r\nhello\r\nZZ\r\n`: only the body
/// bytes are in the buffer.
const BAD_CHUNK_CAPTURE: &str = "Total events captured on [DATE] : 1
 \n[DATE] frontend web_fe (#2): invalid request
  backend web_be (#3), server <NONE> (#-1), event #0, src 127.0.0.1:PORT
  buffer starts at 0 (including 0 out), 16370 free,
  len 14, wraps at 16336, error at position 10
  H1 connection flags 0x00002200, H1 stream flags 0x00000810
  H1 msg state MSG_CHUNK_SIZE(26), H1 msg flags 0x00011712
  H1 chunk len 0 bytes, H1 body len 5 bytes :
  \n  00000  5\\r\\n
  00003  hello\\r\\n
  00010  ZZ\\r\\n

";

/// haproxy 2.6.12 after a server answered a chunked body whose second
/// chunk size is `ZZ` (its client got a 502): head and body in the buffer.
const BAD_CHUNK_RESPONSE_CAPTURE: &str = "Total events captured on [DATE] : 1
 \n[DATE] backend web_be (#3): invalid response
  frontend web_fe (#2), server s1 (#1), event #0, src 127.0.0.1:PORT
  buffer starts at 0 (including 0 out), 16326 free,
  len 58, wraps at 16336, error at position 54
  H1 connection flags 0x80002200, H1 stream flags 0x00004810
  H1 msg state MSG_CHUNK_SIZE(26), H1 msg flags 0x00011716
  H1 chunk len 0 bytes, H1 body len 2 bytes :
  \n  00000  HTTP/1.1 200 OK\\r\\n
  00017  Transfer-Encoding: chunked\\r\\n
  00045  \\r\\n
  00047  2\\r\\n
  00050  ok\\r\\n
  00054  ZZ\\r\\n

";

#[tokio::test]
async fn bad_chunk_in_a_response_is_captured_with_its_head() {
    let be = raw_backend(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\nZZ\r\n")
        .await;
    let front = Listen::new();
    let fe = front.port();
    let sl = Sluice::start(&cfg(&front, be));

    let r = exchange(
        fe,
        b"GET /chunk HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert!(r.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{r}");
    assert_eq!(show(&sl, "show errors").await, BAD_CHUNK_RESPONSE_CAPTURE);
    let stat = show_stat(&sl.path("admin.sock")).await;
    assert_eq!(stat.num("web_be", "BACKEND", "eresp"), 1);
    assert_eq!(stat.num("web_be", "s1", "eresp"), 1);
    assert_eq!(stat.num("web_be", "BACKEND", "hrsp_5xx"), 1);
    assert_eq!(stat.num("web_be", "s1", "hrsp_5xx"), 0);
}

/// A request head larger than the buffer: 400, counted, captured (cut at
/// `tune.bufsize`), wrapped lines marked with `+`.
#[tokio::test]
async fn head_too_large_is_captured_up_to_the_buffer_size() {
    let be = raw_backend(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").await;
    let front = Listen::new();
    let fe = front.port();
    let sl = Sluice::start(&cfg(&front, be));

    let mut req = b"GET / HTTP/1.1\r\nx-long: ".to_vec();
    req.extend(std::iter::repeat_n(b'a', 20_000));
    req.extend_from_slice(b"\r\n\r\n");
    let r = exchange(fe, &req).await;
    assert!(r.starts_with("HTTP/1.1 400 Bad request\r\n"), "{r}");
    let out = show(&sl, "show errors").await;
    let len: usize = out
        .split("  len ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no len in {out}"));
    assert!(len > 15_000 && len <= 16_384, "{len}");
    assert!(out.contains("  00016  x-long: aaaa"), "{out}");
    assert!(out.contains("  00086+ aaaa"), "continuation line: {out}");
    let stat = show_stat(&sl.path("admin.sock")).await;
    assert_eq!(stat.num("web_fe", "FRONTEND", "ereq"), 1);
}

/// The log line of a refused request is HAProxy's (reference §4.3):
/// `<NOSRV>`, timers not reached `-1`, status 400, 0 bytes (the page comes
/// from the parser, not from the stream), `PR--`, `"<BADREQ>"`.
#[tokio::test]
async fn refused_request_logs_badreq_as_haproxy() {
    let udp = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let log_port = udp.local_addr().unwrap().port();
    let be = raw_backend(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").await;
    let front = Listen::new();
    let fe = front.port();
    let c = cfg(&front, be).replace(
        "defaults\n",
        &format!(
            "    log 127.0.0.1:{log_port} local0\n\ndefaults\n    log global\n    option httplog\n"
        ),
    );
    let _sl = Sluice::start(&c);

    exchange(fe, b"GARBAGE\x01REQ\r\n\r\n").await;
    let line = within(Duration::from_secs(5), "the access log line", async {
        let mut buf = [0u8; 2048];
        loop {
            let n = udp.recv(&mut buf).await.unwrap();
            let l = String::from_utf8_lossy(&buf[..n]).into_owned();
            // Readiness probes log `CR--` lines: skip them.
            if l.contains("PR--") {
                return l;
            }
        }
    })
    .await;
    let re = regex::Regex::new(
        r#"^<134>\w{3} [ \d]\d \d\d:\d\d:\d\d sluice\[\d+\]: 127\.0\.0\.1:\d+ \[[^\]]+\] web_fe web_fe/<NOSRV> -1/-1/-1/-1/\d+ 400 0 - - PR-- \d+/\d+/0/0/0 0/0 "<BADREQ>"\n$"#,
    )
    .unwrap();
    assert!(re.is_match(&line), "{line:?}");
}
