//! One HTTP/2 stream, served by the request pipeline: its request head in
//! HTTP/1 form (`wire::h2_convert`), its body and answer through its frames
//! (`wire::h2_stream`).

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, RecvStream};

use crate::snapshot::client::ClientConn;
use crate::tls::stream::Frames;
use crate::tls::{Stream, TlsFacts};
use crate::wire::h2_convert;
use crate::wire::h2_stream::{H2Body, H2Stream};
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
    let Some(counters) = client.rt.with_snapshot(|snap| {
        let fe = snap.frontends().find(|f| *f.name == *client.frontend())?;
        Some(fe.state.clone())
    }) else {
        respond.send_reset(Reason::REFUSED_STREAM);
        return;
    };
    let (parts, body) = req.into_parts();
    let has_body = !body.is_end_stream();
    let h1req = match h2_convert::request(&parts, has_body, crate::wire::io::take_buffer()) {
        Ok(r) => r,
        Err(_) => {
            counters.client.local().h2_strm_protocol_errors.inc();
            respond.send_reset(Reason::PROTOCOL_ERROR);
            return;
        }
    };
    let head_only = parts.method == http::Method::HEAD;
    // An extended CONNECT's DATA is its tunnel's; any other request's, its
    // body, read by the pipeline as its client connection's bytes.
    let tunnel = parts.method == http::Method::CONNECT
        && parts.extensions.get::<h2::ext::Protocol>().is_some();
    let (tunnel, body) = match (tunnel, has_body) {
        (true, _) => (Some(body), None),
        (false, true) => {
            let fe = counters.clone();
            let frames = move || fe.client.local().h2_data_rcvd.inc();
            let body: Box<dyn tokio::io::AsyncRead + Send + Unpin> =
                Box::new(H2Body::new(body, h1req.chunked, frames));
            (None, Some(body))
        }
        (false, false) => (None, None),
    };
    let h2 = H2Stream::new(respond, tunnel, head_only);
    let mut conn = BufConn::new(Stream::Frames(Box::new(Frames {
        peer: peer.inet(),
        local,
        body,
    })));
    conn.buf = h1req.head;
    conn.h2 = Some(Box::new(h2));
    let bound = client
        .rt
        .with_snapshot(|snap| snap.global.hard_stop_after.map(|_| snap.generation));
    // Boxed (made in its box): this stream's task then stays a few words, which tokio moves
    // several times as it spawns, runs and ends it (the pipeline's future
    // is kilobytes: it is copied once, here, instead).
    let request = crate::sys::slab::boxed(|| {
        crate::http::service::handle_request(
            (&sess, client.trackers()),
            &client.rt,
            client.frontend(),
            client.stream.entry(),
            &mut conn,
            (peer, &client.facts),
            false,
            tls.as_deref(),
            crate::http::service::Via::Http2 {
                parts: &parts,
                bad: h1req.bad,
            },
        )
    });
    match bound {
        None => {
            request.await;
        }
        Some(generation) => {
            crate::state::generation::bounded(generation, request).await;
        }
    }
    // The buffer the head was written in, back to the thread's spares.
    conn.release_buffer();
    if let Some(h2) = conn.h2.as_deref_mut() {
        counters.client.local().h2_data_rcvd.add(h2.data_frames());
        h2.finish();
    }
}
