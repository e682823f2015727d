//! `core.httpclient()`'s exchanges: one HTTP/1.1 request to the server a
//! URL names, on the worker's runtime while the script waits (its
//! coroutine yielded, `io.rs`), and the response as HAProxy's HttpClient
//! gives it: its status, reason, header fields and body. As in HAProxy,
//! a server that cannot be reached or answers too late is a response
//! too: the 503 or 504 page HAProxy would have sent a client.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::wire::h1::{self, BodyKind, ChunkedDecoder, Head};

/// How long a connection may take (HAProxy's HttpClient proxy's
/// `timeout connect`).
const CONNECT: Duration = Duration::from_secs(5);
/// The most a response head may hold (HAProxy's `tune.bufsize`).
const MAX_HEAD: usize = 16384;

/// A request as the script asked for it.
pub(crate) struct Request {
    pub(crate) method: &'static str,
    pub(crate) url: Vec<u8>,
    /// The script's header fields, in the order its tables gave them.
    pub(crate) headers: Vec<(String, Vec<u8>)>,
    pub(crate) body: Option<Vec<u8>>,
    /// The request table's `timeout`, for the whole exchange.
    pub(crate) timeout: Option<Duration>,
    /// The request table's `dst`: the address to connect to instead of
    /// the URL's.
    pub(crate) dst: Option<String>,
}

/// What the script receives.
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) reason: Vec<u8>,
    /// Lower-case names, in the order received.
    pub(crate) headers: Vec<(String, Vec<u8>)>,
    pub(crate) body: Vec<u8>,
}

/// A URL's parts: the authority as written (the `host` field) and the
/// path with its query.
struct Url<'a> {
    authority: &'a str,
    path: &'a str,
}

fn parse_url(url: &[u8]) -> Result<Url<'_>, String> {
    let text = std::str::from_utf8(url).map_err(|_| "invalid URL".to_string())?;
    let Some(rest) = text.strip_prefix("http://") else {
        return Err(if text.starts_with("https://") {
            format!("httpclient: https is not supported: '{text}'")
        } else {
            format!("httpclient: invalid URL '{text}'")
        });
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() {
        return Err(format!("httpclient: invalid URL '{text}'"));
    }
    Ok(Url { authority, path })
}

/// `host[:port]` (a v6 address in brackets) with 80 by default.
fn host_port(authority: &str) -> (String, u16) {
    if let Some(rest) = authority.strip_prefix('[')
        && let Some((host, after)) = rest.split_once(']')
    {
        let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
        return (host.to_string(), port.unwrap_or(80));
    }
    match authority.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h.to_string(), p.parse().unwrap_or(80)),
        _ => (authority.to_string(), 80),
    }
}

/// The request's bytes as HAProxy's HttpClient writes them: the script's
/// fields (names in lower case), then `host`, `accept` and `user-agent`
/// where the script gave none, and a body in one chunk.
fn render(req: &Request, url: &Url<'_>) -> Vec<u8> {
    let mut out = format!("{} {} HTTP/1.1\r\n", req.method, url.path).into_bytes();
    let has = |n: &str| req.headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(n));
    for (n, v) in &req.headers {
        out.extend_from_slice(n.to_ascii_lowercase().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    if !has("host") {
        out.extend_from_slice(format!("host: {}\r\n", url.authority).as_bytes());
    }
    if !has("accept") {
        out.extend_from_slice(b"accept: */*\r\n");
    }
    if !has("user-agent") {
        out.extend_from_slice(b"user-agent: HAProxy\r\n");
    }
    let body = req.body.as_deref().filter(|b| !b.is_empty());
    let framed = has("content-length") || has("transfer-encoding");
    match body {
        Some(b) if !framed => {
            out.extend_from_slice(b"transfer-encoding: chunked\r\n\r\n");
            out.extend_from_slice(format!("{:X}\r\n", b.len()).as_bytes());
            out.extend_from_slice(b);
            out.extend_from_slice(b"\r\n0\r\n\r\n");
        }
        Some(b) => {
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(b);
        }
        None => out.extend_from_slice(b"\r\n"),
    }
    out
}

/// Why an exchange gave no server response: the page HAProxy answers.
enum Failed {
    /// No connection (503).
    Connect,
    /// Too late (504).
    Timeout,
    /// A response that cannot be read (502).
    Invalid,
}

/// Runs the request: the server's response, or HAProxy's page for what
/// went wrong. An error only for a request that cannot be made (its URL).
pub(crate) async fn send(req: Request) -> Result<Response, String> {
    let url = parse_url(&req.url)?;
    let target = req.dst.clone().unwrap_or_else(|| url.authority.to_string());
    let bytes = render(&req, &url);
    let exchange = exchange(target, bytes, req.method == "HEAD");
    let got = match req.timeout {
        Some(t) => tokio::time::timeout(t, exchange)
            .await
            .unwrap_or(Err(Failed::Timeout)),
        None => exchange.await,
    };
    Ok(got.unwrap_or_else(|f| {
        page(match f {
            Failed::Connect => 503,
            Failed::Timeout => 504,
            Failed::Invalid => 502,
        })
    }))
}

async fn exchange(target: String, bytes: Vec<u8>, head_only: bool) -> Result<Response, Failed> {
    let (host, port) = host_port(&target);
    let connect = async {
        let addrs = tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|_| Failed::Connect)?;
        for a in addrs {
            if let Ok(s) = TcpStream::connect(a).await {
                return Ok(s);
            }
        }
        Err(Failed::Connect)
    };
    let mut s = tokio::time::timeout(CONNECT, connect)
        .await
        .map_err(|_| Failed::Connect)??;
    s.write_all(&bytes).await.map_err(|_| Failed::Connect)?;
    let mut buf = BytesMut::with_capacity(4096);
    let end = loop {
        if let Some(end) = h1::head_end(&buf) {
            break end;
        }
        if buf.len() > MAX_HEAD || read_more(&mut s, &mut buf).await? == 0 {
            return Err(Failed::Invalid);
        }
    };
    let raw: Bytes = buf.split_to(end).freeze();
    let head = Head::parse_response(raw).map_err(|_| Failed::Invalid)?;
    let method: &[u8] = if head_only { b"HEAD" } else { b"GET" };
    let body = match head.response_body(method).map_err(|_| Failed::Invalid)? {
        BodyKind::None => Vec::new(),
        BodyKind::Length(n) => {
            while (buf.len() as u64) < n {
                if read_more(&mut s, &mut buf).await? == 0 {
                    return Err(Failed::Invalid);
                }
            }
            buf[..n as usize].to_vec()
        }
        BodyKind::UntilClose => {
            while read_more(&mut s, &mut buf).await? > 0 {}
            buf.to_vec()
        }
        BodyKind::Chunked => dechunk(&mut s, &mut buf).await?,
    };
    Ok(Response {
        status: head.status,
        reason: head.reason().to_vec(),
        headers: head
            .headers()
            .map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).to_ascii_lowercase(),
                    h1::trim(v).to_vec(),
                )
            })
            .collect(),
        body,
    })
}

async fn read_more(s: &mut TcpStream, buf: &mut BytesMut) -> Result<usize, Failed> {
    buf.reserve(4096);
    s.read_buf(buf).await.map_err(|_| Failed::Invalid)
}

/// A chunked body's data.
async fn dechunk(s: &mut TcpStream, buf: &mut BytesMut) -> Result<Vec<u8>, Failed> {
    let mut dec = ChunkedDecoder::default();
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        at = dec.feed_framing(buf, at).map_err(|_| Failed::Invalid)?;
        let want = dec.data_left() as usize;
        if want > 0 && at < buf.len() {
            let n = want.min(buf.len() - at);
            body.extend_from_slice(&buf[at..at + n]);
            dec.feed(&buf[at..at + n]).map_err(|_| Failed::Invalid)?;
            at += n;
            continue;
        }
        if dec.is_done() {
            return Ok(body);
        }
        if read_more(s, buf).await? == 0 {
            return Err(Failed::Invalid);
        }
    }
}

/// HAProxy's page for `code` as a response to the script.
fn page(code: u16) -> Response {
    let raw = crate::wire::error_pages::response(code);
    let end = h1::head_end(raw).unwrap_or(raw.len());
    match Head::parse_response(Bytes::from_static(&raw[..end])) {
        Ok(head) => Response {
            status: head.status,
            reason: head.reason().to_vec(),
            headers: head
                .headers()
                .map(|(n, v)| {
                    (
                        String::from_utf8_lossy(n).to_ascii_lowercase(),
                        h1::trim(v).to_vec(),
                    )
                })
                .collect(),
            body: raw[end..].to_vec(),
        },
        Err(_) => Response {
            status: code,
            reason: Vec::new(),
            headers: Vec::new(),
            body: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_written_as_haproxys_httpclient_writes_them() {
        let req = Request {
            method: "POST",
            url: b"http://127.0.0.1:8080/p?x=1".to_vec(),
            headers: vec![("Content-Type".into(), b"text/plain".to_vec())],
            body: Some(b"hello".to_vec()),
            timeout: None,
            dst: None,
        };
        let url = parse_url(&req.url).expect("url");
        assert_eq!(
            String::from_utf8_lossy(&render(&req, &url)),
            "POST /p?x=1 HTTP/1.1\r\ncontent-type: text/plain\r\nhost: 127.0.0.1:8080\r\naccept: */*\r\nuser-agent: HAProxy\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        );
        assert_eq!(host_port("[::1]:81"), ("::1".to_string(), 81));
        assert_eq!(host_port("a.example"), ("a.example".to_string(), 80));
        assert!(parse_url(b"nope").is_err());
    }

    #[test]
    fn an_unreachable_server_is_haproxys_503() {
        let r = page(503);
        assert_eq!(
            (r.status, &r.reason[..]),
            (503, &b"Service Unavailable"[..])
        );
        assert!(r.body.starts_with(b"<html><body><h1>503"));
    }
}
