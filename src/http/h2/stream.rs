//! One HTTP/2 stream, served through the HTTP/1 pipeline over a pipe.

use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use h2::server::SendResponse;
use h2::{Reason, RecvStream, SendStream};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::snapshot::client::ClientConn;
use crate::tls::stream::Pipe;
use crate::tls::{Stream, TlsFacts};
use crate::wire::h1::{self, BodyKind, Head};
use crate::wire::h2_convert::{self, Dechunker};
use crate::wire::io::{BufConn, with_timeout};

/// Bytes the pipe holds each way: one relay buffer.
pub(crate) const PIPE_BUF: usize = 16 * 1024;

/// Serves one stream: its request through the pipeline, the pipeline's
/// response back to the client.
pub(crate) async fn serve(
    client: Arc<ClientConn>,
    req: http::Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    (peer, local): (crate::sys::peer::Peer, Option<SocketAddr>),
    tls: Option<Arc<TlsFacts>>,
    sess: Arc<crate::sample::vars::SessVars>,
) {
    let Some((timeout, counters)) = client.rt.with_snapshot(|snap| {
        let fe = snap.frontends().find(|f| *f.name == *client.frontend)?;
        Some((fe.timeouts.client, fe.state.clone()))
    }) else {
        respond.send_reset(Reason::REFUSED_STREAM);
        return;
    };
    let (parts, body) = req.into_parts();
    let has_body = !body.is_end_stream();
    let h1req = match h2_convert::request(&parts, has_body) {
        Ok(r) => r,
        Err(_) => {
            counters
                .counters
                .h2_strm_protocol_errors
                .fetch_add(1, Relaxed);
            respond.send_reset(Reason::PROTOCOL_ERROR);
            return;
        }
    };
    let (rx, req_pipe) = tokio::io::duplex(PIPE_BUF);
    let (tx, resp_pipe) = tokio::io::duplex(PIPE_BUF);
    let conn = BufConn {
        asked: crate::wire::io::ConnAsk::Default,
        stream: Stream::Pipe(Box::new(Pipe {
            rx,
            tx,
            peer: peer.inet(),
            local,
        })),
        buf: h1req.head,
    };
    let origin = h1req.origin;
    let pipeline = {
        let client = client.clone();
        async move {
            let mut conn = conn;
            let bound = client
                .rt
                .with_snapshot(|snap| snap.global.hard_stop_after.map(|_| snap.generation));
            let request = crate::http::service::handle_request(
                &sess,
                &client.rt,
                &client.frontend,
                client.stream.entry(),
                &mut conn,
                (peer, client.dst()),
                false,
                tls.as_deref(),
                crate::http::service::Via::Http2 { origin: &origin },
            );
            match bound {
                None => {
                    request.await;
                }
                Some(generation) => {
                    crate::state::generation::bounded(generation, request).await;
                }
            }
            // Dropping the pipeline's end tells the response relay the
            // response is complete (or cut).
        }
    };
    let head_only = parts.method == http::Method::HEAD;
    let upload = upload(
        body,
        req_pipe,
        h1req.chunked,
        Some(&counters.counters),
        timeout,
    );
    let download = download(resp_pipe, respond, head_only, timeout);
    let main = async { tokio::join!(pipeline, download) };
    tokio::pin!(main, upload);
    let mut uploading = true;
    loop {
        tokio::select! {
            _ = &mut main => break,
            _ = &mut upload, if uploading => uploading = false,
        }
    }
}

/// Copies a body from a stream into a pipe (as chunks when it goes
/// chunked), releasing flow-control window only for what the pipe took: a
/// slow reader slows the sender down, nothing piles up. (A client's
/// request body here; a server's response body for `upstream`.)
pub(crate) async fn upload(
    mut body: RecvStream,
    mut pipe: impl AsyncWrite + Unpin,
    chunked: bool,
    counters: Option<&crate::state::Counters>,
    timeout: Option<Duration>,
) {
    let mut ok = true;
    if !body.is_end_stream() {
        loop {
            let Some(data) = with_timeout(timeout, body.data()).await else {
                ok = false;
                break;
            };
            let data = match data {
                None => break,
                Some(Ok(d)) => d,
                // Reset by the client, or a broken length.
                Some(Err(_)) => {
                    ok = false;
                    break;
                }
            };
            if let Some(c) = counters {
                c.h2_data_rcvd.fetch_add(1, Relaxed);
            }
            if data.is_empty() {
                continue;
            }
            let n = data.len();
            let written = if chunked {
                let size = format!("{n:x}\r\n");
                pipe.write_all(size.as_bytes()).await.is_ok()
                    && pipe.write_all(&data).await.is_ok()
                    && pipe.write_all(b"\r\n").await.is_ok()
            } else {
                pipe.write_all(&data).await.is_ok()
            };
            if !written {
                // The pipeline is done with the request.
                return;
            }
            let _ = body.flow_control().release_capacity(n);
        }
    }
    if ok && chunked {
        // Trailers are not forwarded: the body just ends.
        let _ = pipe.write_all(b"0\r\n\r\n").await;
    }
    if !ok {
        // A cut body: the pipeline reads the end of its stream.
        let _ = pipe.shutdown().await;
    }
}

/// Why the response relay stopped early.
pub(crate) enum Cut {
    /// The pipeline ended before a complete response (the client aborted,
    /// the server failed mid-body): the stream is reset.
    Pipeline,
    /// The client is gone or reset the stream.
    Client,
}

/// Reads the HTTP/1 response the pipeline writes and sends it on the
/// stream: interim 1xx heads are skipped, the final head becomes HEADERS,
/// the body DATA frames as it arrives.
async fn download(
    mut pipe: impl AsyncRead + Unpin,
    mut respond: SendResponse<Bytes>,
    head_only: bool,
    timeout: Option<Duration>,
) {
    let mut buf = BytesMut::with_capacity(PIPE_BUF);
    let head = loop {
        let raw = tokio::select! {
            r = read_head(&mut pipe, &mut buf) => r,
            // Reset by the client while the pipeline works: nothing to
            // wait for (the pipeline sees the pipe close when it writes).
            _ = poll_fn(|cx| respond.poll_reset(cx)) => return,
        };
        let Some(raw) = raw else {
            respond.send_reset(Reason::INTERNAL_ERROR);
            return;
        };
        match Head::parse_response(raw) {
            Ok(h) if (100..200).contains(&h.status) => continue,
            Ok(h) => break h,
            Err(_) => {
                respond.send_reset(Reason::INTERNAL_ERROR);
                return;
            }
        }
    };
    let method: &[u8] = if head_only { b"HEAD" } else { b"GET" };
    let body = head.response_body(method).unwrap_or(BodyKind::UntilClose);
    let Some(response) = h2_convert::response(&head) else {
        respond.send_reset(Reason::INTERNAL_ERROR);
        return;
    };
    drop(head);
    let end = body == BodyKind::None;
    let Ok(mut send) = respond.send_response(response, end) else {
        return;
    };
    if end {
        return;
    }
    match relay_body(&mut pipe, &mut buf, &mut send, body, timeout).await {
        Ok(()) | Err(Cut::Client) => {}
        Err(Cut::Pipeline) => send.send_reset(Reason::INTERNAL_ERROR),
    }
}

/// Reads until a whole head is in `buf` and splits it off; None when the
/// pipe closed first.
pub(crate) async fn read_head(
    pipe: &mut (impl AsyncRead + Unpin),
    buf: &mut BytesMut,
) -> Option<Bytes> {
    loop {
        if let Some(end) = h1::head_end(buf) {
            return Some(buf.split_to(end).freeze());
        }
        if buf.capacity() - buf.len() < 1024 {
            buf.reserve(PIPE_BUF);
        }
        match pipe.read_buf(buf).await {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

/// The body, as the pipeline frames it, to DATA frames, and the end of
/// the stream: on the last DATA frame when the length is known, else on an
/// empty one.
pub(crate) async fn relay_body(
    pipe: &mut (impl AsyncRead + Unpin),
    buf: &mut BytesMut,
    send: &mut SendStream<Bytes>,
    body: BodyKind,
    timeout: Option<Duration>,
) -> Result<(), Cut> {
    let mut left = match body {
        BodyKind::Length(n) => n,
        _ => u64::MAX,
    };
    let mut dechunk = (body == BodyKind::Chunked).then(Dechunker::default);
    loop {
        if let Some(d) = &mut dechunk {
            while let Some(data) = d.next(buf).map_err(|_| Cut::Pipeline)? {
                send_data(send, data, timeout, false).await?;
            }
            if d.is_done() {
                return end_stream(send);
            }
        } else if !buf.is_empty() {
            let n = (buf.len() as u64).min(left) as usize;
            let data = buf.split_to(n).freeze();
            left -= n as u64;
            send_data(send, data, timeout, left == 0).await?;
        }
        if left == 0 {
            return Ok(());
        }
        buf.reserve(PIPE_BUF);
        let read = tokio::select! {
            r = pipe.read_buf(buf) => r,
            _ = poll_fn(|cx| send.poll_reset(cx)) => return Err(Cut::Client),
        };
        match read {
            Ok(0) if body == BodyKind::UntilClose => return end_stream(send),
            Ok(0) | Err(_) => return Err(Cut::Pipeline),
            Ok(_) => {}
        }
    }
}

fn end_stream(send: &mut SendStream<Bytes>) -> Result<(), Cut> {
    send.send_data(Bytes::new(), true).map_err(|_| Cut::Client)
}

/// Sends `data` as the peer's window allows, waiting at most `timeout`
/// for each grant; `end`: the last piece ends the stream.
async fn send_data(
    send: &mut SendStream<Bytes>,
    mut data: Bytes,
    timeout: Option<Duration>,
    end: bool,
) -> Result<(), Cut> {
    while !data.is_empty() {
        send.reserve_capacity(data.len());
        let granted = with_timeout(timeout, poll_fn(|cx| send.poll_capacity(cx))).await;
        let n = match granted {
            Some(Some(Ok(n))) => n,
            _ => return Err(Cut::Client),
        };
        if n == 0 {
            continue;
        }
        let chunk = data.split_to(n.min(data.len()));
        send.send_data(chunk, end && data.is_empty())
            .map_err(|_| Cut::Client)?;
    }
    Ok(())
}
