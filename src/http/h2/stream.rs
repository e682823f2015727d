//! One HTTP/2 stream, served through the HTTP/1 pipeline over a pipe.

use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use h2::server::SendResponse;
use h2::{Reason, RecvStream};
use tokio::io::AsyncRead;

use crate::snapshot::client::ClientConn;
use crate::tls::stream::Pipe;
use crate::tls::{Stream, TlsFacts};
use crate::wire::h1::{BodyKind, Head};
use crate::wire::h2_convert;
use crate::wire::h2_pipe::{Cut, PIPE_BUF, read_head, relay_body, upload};
use crate::wire::io::BufConn;

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
        let fe = snap.frontends().find(|f| *f.name == *client.frontend())?;
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
        pending: crate::wire::io::PendingBody::None,
        continued: false,
        stream: Stream::Pipe(Box::new(Pipe {
            rx,
            tx,
            peer: peer.inet(),
            local,
        })),
        buf: h1req.head,
    };
    let origin = h1req.origin;
    let bad = h1req.bad;
    let pipeline = {
        let client = client.clone();
        async move {
            let mut conn = conn;
            let bound = client
                .rt
                .with_snapshot(|snap| snap.global.hard_stop_after.map(|_| snap.generation));
            let request = crate::http::service::handle_request(
                (&sess, client.trackers()),
                &client.rt,
                client.frontend(),
                client.stream.entry(),
                &mut conn,
                (peer, &client.facts),
                false,
                tls.as_deref(),
                crate::http::service::Via::Http2 {
                    origin: &origin,
                    bad,
                },
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
    // An extended CONNECT: the pipeline's 101 opens the tunnel.
    let tunnel = parts.method == http::Method::CONNECT
        && parts.extensions.get::<h2::ext::Protocol>().is_some();
    let upload = upload(
        body,
        req_pipe,
        h1req.chunked,
        Some(&counters.counters.h2_data_rcvd),
        timeout,
    );
    let download = download(resp_pipe, respond, head_only, tunnel, timeout);
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

/// Reads the HTTP/1 response the pipeline writes and sends it on the
/// stream: interim 1xx heads are skipped, the final head becomes HEADERS,
/// the body DATA frames as it arrives. For an extended CONNECT (`tunnel`)
/// the 101 is final: a 200, and the tunnel's bytes as DATA, as HAProxy
/// answers it.
async fn download(
    mut pipe: impl AsyncRead + Unpin,
    mut respond: SendResponse<Bytes>,
    head_only: bool,
    tunnel: bool,
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
            Ok(h) if tunnel && h.status == 101 => break h,
            Ok(h) if (100..200).contains(&h.status) => continue,
            Ok(h) => break h,
            Err(_) => {
                respond.send_reset(Reason::INTERNAL_ERROR);
                return;
            }
        }
    };
    let method: &[u8] = if head_only { b"HEAD" } else { b"GET" };
    let switched = head.status == 101;
    let body = if switched {
        BodyKind::UntilClose
    } else {
        head.response_body(method).unwrap_or(BodyKind::UntilClose)
    };
    let Some(mut response) = h2_convert::response(&head) else {
        respond.send_reset(Reason::INTERNAL_ERROR);
        return;
    };
    if switched {
        *response.status_mut() = http::StatusCode::OK;
    }
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
