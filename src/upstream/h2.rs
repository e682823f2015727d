//! HTTP/2 to servers (`server ... proto h2`): one HTTP/2 connection per
//! server, shared by the requests that go to it. The forwarding code
//! (`http/exchange.rs`) is unchanged: a "connection" it opens is a pipe
//! whose far end writes its HTTP/1.1 request as a stream of the shared
//! connection and the stream's response back in HTTP/1.1 (with
//! `connection: close`, so the pipe is never pooled; the HTTP/2
//! connection is what is kept).

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use h2::client::SendRequest;
use tokio::io::AsyncWriteExt;

use crate::state::pool::H2Conn;
use crate::tls::Stream;
use crate::tls::stream::Pipe;
use crate::wire::h1::{BodyKind, Head};
use crate::wire::h2_convert;
use crate::wire::h2_pipe::{PIPE_BUF, read_head, relay_body, upload};

/// A sender ready for one more stream of a server's shared connection
/// (`shared`): the live connection's, else a new connection made over
/// `connect()`'s byte stream (made on first use and again when it broke).
pub(crate) async fn sender<F, Fut, E>(
    shared: &H2Conn,
    timeout: Option<Duration>,
    connect: F,
) -> Result<SendRequest<Bytes>, E>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<Stream, E>>,
    E: From<std::io::Error>,
{
    let current = shared.current().await;
    if let Some(s) = current
        && let Some(Ok(s)) = crate::wire::io::with_timeout(timeout, s.ready()).await
    {
        return Ok(s);
    }
    let mut slot = shared.slot().await;
    let io = connect().await?;
    let send = handshake(io, timeout).await?;
    *slot = Some(send.clone());
    drop(slot);
    Ok(ready(send, timeout).await?)
}

/// A new HTTP/2 connection over `io` (its frames driven by a task of its
/// own, which ends when the last sender is dropped).
async fn handshake(io: Stream, timeout: Option<Duration>) -> std::io::Result<SendRequest<Bytes>> {
    let handshake = h2::client::Builder::new()
        .max_send_buffer_size(64 * 1024)
        .handshake::<_, Bytes>(io);
    let (send, mut conn) = match crate::wire::io::with_timeout(timeout, handshake).await {
        Some(Ok(pair)) => pair,
        Some(Err(e)) => return Err(std::io::Error::other(e)),
        None => return Err(std::io::ErrorKind::TimedOut.into()),
    };
    let ping = conn.ping_pong();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    // The server's SETTINGS come before its answer to a PING: once the
    // PONG is in, the first request knows what the server allows (the
    // extended CONNECT an upgrade needs). A server that does not answer
    // still gets its requests (their own timeouts apply).
    if let Some(mut ping) = ping {
        let _ = crate::wire::io::with_timeout(timeout, ping.ping(h2::Ping::opaque())).await;
    }
    Ok(send)
}

async fn ready(
    send: SendRequest<Bytes>,
    timeout: Option<Duration>,
) -> std::io::Result<SendRequest<Bytes>> {
    match crate::wire::io::with_timeout(timeout, send.ready()).await {
        Some(Ok(s)) => Ok(s),
        Some(Err(e)) => Err(std::io::Error::other(e)),
        None => Err(std::io::ErrorKind::TimedOut.into()),
    }
}

/// A connection of its own for one exchange (a health check of a `proto
/// h2` server, as HAProxy makes them): HTTP/2 over `io`, in the guise of
/// a connection carrying one HTTP/1.1 exchange (see [`bridge`]).
pub(crate) async fn one_exchange(
    io: Stream,
    server: SocketAddr,
    https: bool,
    timeout: Option<Duration>,
) -> std::io::Result<Stream> {
    let send = ready(handshake(io, timeout).await?, timeout).await?;
    Ok(bridge(send, server, https, timeout))
}

/// A pipe the forwarding code uses as a connection to the server: its
/// request goes out as a stream of `send`.
pub(crate) fn bridge(
    send: SendRequest<Bytes>,
    server: SocketAddr,
    https: bool,
    timeout: Option<Duration>,
) -> Stream {
    let (rx, resp_pipe) = tokio::io::duplex(PIPE_BUF);
    let (tx, req_pipe) = tokio::io::duplex(PIPE_BUF);
    tokio::spawn(exchange(
        send,
        req_pipe,
        resp_pipe,
        (server, https),
        timeout,
    ));
    Stream::Pipe(Box::new(Pipe {
        rx,
        tx,
        peer: Some(server),
        local: Some(SocketAddr::from(([0, 0, 0, 0], 0))),
    }))
}

/// One request: read in HTTP/1.1 from the pipe, sent as a stream, its
/// response written back in HTTP/1.1. Any failure just closes the pipe:
/// the forwarding code sees the server fail as with any connection.
async fn exchange(
    send: SendRequest<Bytes>,
    mut req_pipe: tokio::io::DuplexStream,
    mut resp_pipe: tokio::io::DuplexStream,
    (server, https): (SocketAddr, bool),
    timeout: Option<Duration>,
) {
    let mut send = send;
    let mut buf = BytesMut::with_capacity(PIPE_BUF);
    let Some(raw) = read_head(&mut req_pipe, &mut buf).await else {
        return;
    };
    let Ok(head) = Head::parse_request(raw) else {
        return;
    };
    let mut body = head.request_body().unwrap_or(BodyKind::None);
    let Some(mut req) = h2_convert::h2_request(&head, server, https) else {
        return;
    };
    // An HTTP/1 upgrade (WebSocket) becomes an extended CONNECT (RFC
    // 8441) with the first protocol `Upgrade` names, as HAProxy 2.6 sends
    // it; a server that did not announce SETTINGS_ENABLE_CONNECT_PROTOCOL
    // cannot take it and the client gets a 502, as from HAProxy.
    let upgrade = upgrade_protocol(&head);
    let ws_key = head
        .values("sec-websocket-key")
        .next()
        .map(|k| crate::wire::h1::trim(k).to_vec());
    if let Some(proto) = &upgrade {
        if !send.is_extended_connect_protocol_enabled() {
            return;
        }
        *req.method_mut() = http::Method::CONNECT;
        req.extensions_mut()
            .insert(h2::ext::Protocol::from(proto.as_str()));
        // The tunnel's bytes follow until the client closes.
        body = BodyKind::UntilClose;
    }
    let head_only = head.method() == b"HEAD";
    drop(head);
    let Ok((resp, mut out)) = send.send_request(req, body == BodyKind::None) else {
        return;
    };
    let send_body = async {
        if body == BodyKind::None {
            return;
        }
        if relay_body(&mut req_pipe, &mut buf, &mut out, body, timeout)
            .await
            .is_err()
        {
            out.send_reset(h2::Reason::CANCEL);
        }
    };
    let receive = async {
        let Some(Ok(resp)) = crate::wire::io::with_timeout(timeout, resp).await else {
            return;
        };
        let (parts, recv) = resp.into_parts();
        // A 2xx to the extended CONNECT is the 101 of the upgrade (any
        // other answer is relayed as it is, as HAProxy relays it).
        if let Some(proto) = &upgrade
            && parts.status.is_success()
        {
            let head = switching_protocols(&parts, proto, ws_key.as_deref());
            if resp_pipe.write_all(&head).await.is_err() {
                return;
            }
            upload(recv, &mut resp_pipe, false, None, timeout).await;
            return;
        }
        let no_body = head_only || matches!(parts.status.as_u16(), 100..=199 | 204 | 304);
        let has_length = parts.headers.contains_key(http::header::CONTENT_LENGTH);
        let framing = if no_body || has_length {
            Framing::AsIs
        } else if recv.is_end_stream() {
            Framing::Empty
        } else {
            Framing::Chunked
        };
        let head = h1_response(&parts, framing);
        if resp_pipe.write_all(&head).await.is_err() || no_body {
            return;
        }
        upload(
            recv,
            &mut resp_pipe,
            framing == Framing::Chunked,
            None,
            timeout,
        )
        .await;
    };
    tokio::join!(send_body, receive);
}

/// The first protocol of an upgrade request's `Upgrade` (HAProxy keeps
/// only that one, at most 15 bytes), if the request asks for a switch.
fn upgrade_protocol(head: &Head) -> Option<String> {
    if !head.requests_upgrade() {
        return None;
    }
    let v = head.values("upgrade").next()?;
    let first = v.split(|&b| b == b',').next().unwrap_or(b"");
    let first = crate::wire::h1::trim(first);
    let first = &first[..first.len().min(15)];
    let p = std::str::from_utf8(first).ok()?;
    (!p.is_empty()).then(|| p.to_string())
}

/// The HTTP/1.1 `101` an accepted extended CONNECT stands for: the
/// server's fields, `connection: upgrade` and `upgrade: <protocol>`, and,
/// for a WebSocket whose server sent no `Sec-WebSocket-Accept` (HTTP/2 has
/// no use for it, RFC 8441 §5), the one the client's key calls for (RFC
/// 6455 §4.2.2), as HAProxy computes it.
fn switching_protocols(
    parts: &http::response::Parts,
    proto: &str,
    ws_key: Option<&[u8]>,
) -> BytesMut {
    let mut out = BytesMut::with_capacity(256);
    out.put_slice(b"HTTP/1.1 101 \r\n");
    put_headers(&mut out, &parts.headers);
    if let Some(key) = ws_key
        && proto.eq_ignore_ascii_case("websocket")
        && !parts.headers.contains_key("sec-websocket-accept")
    {
        out.put_slice(b"sec-websocket-accept: ");
        out.put_slice(websocket_accept(key).as_bytes());
        out.put_slice(b"\r\n");
    }
    out.put_slice(b"connection: upgrade\r\nupgrade: ");
    out.put_slice(proto.as_bytes());
    out.put_slice(b"\r\n\r\n");
    out
}

/// RFC 6455 §4.2.2: base64(SHA-1(key + the protocol's GUID)).
fn websocket_accept(key: &[u8]) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
    ctx.update(key);
    ctx.update(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    crate::observe::stats::page::base64(ctx.finish().as_ref())
}

/// How the HTTP/1.1 response delimits its body.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// Its own `content-length`, or no body.
    AsIs,
    /// No body, but one could have been: `content-length: 0`.
    Empty,
    Chunked,
}

/// An HTTP/2 answer's header fields as HTTP/1 header lines.
fn put_headers(out: &mut BytesMut, headers: &http::HeaderMap) {
    for (n, v) in headers {
        out.put_slice(n.as_str().as_bytes());
        out.put_slice(b": ");
        out.put_slice(v.as_bytes());
        out.put_slice(b"\r\n");
    }
}

/// The HTTP/1.1 head of an HTTP/2 response. HTTP/2 has no reason phrase
/// and HAProxy 2.6 makes none up: the status line ends after the code and
/// its space (allowed by RFC 9112), as clients of haproxy see it.
fn h1_response(parts: &http::response::Parts, framing: Framing) -> BytesMut {
    let mut out = BytesMut::with_capacity(256);
    out.put_slice(b"HTTP/1.1 ");
    out.put_slice(parts.status.as_str().as_bytes());
    out.put_slice(b" \r\n");
    put_headers(&mut out, &parts.headers);
    match framing {
        Framing::AsIs => {}
        Framing::Empty => out.put_slice(b"content-length: 0\r\n"),
        Framing::Chunked => out.put_slice(b"transfer-encoding: chunked\r\n"),
    }
    out.put_slice(b"connection: close\r\n\r\n");
    out
}
