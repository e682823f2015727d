//! Forwarding one request to a server of a backend and relaying the answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};

use std::net::IpAddr;

use crate::config::model::{
    ForwardFor, HttpConnMode, HttpReply, HttpResponseAction, HttpReuse, RetryOn,
};
use crate::http::cookie;
use crate::http::legacy;
use crate::http::rules::{self, Edits};
use crate::http::service::View;
use crate::observe::log::LogRecord;
use crate::observe::outcome::{Cause, Phase, Rows, Term};
use crate::snapshot::{BackendRt, FrontendRt};
use crate::state::ServerState;
use crate::state::capture;
use crate::upstream::ConnectError;
use crate::upstream::balance::{self, PickError};
use crate::upstream::retry::{self, Retries, Seat};
use crate::wire::error_pages;
use crate::wire::error_spot::{self, ErrorSpot};
use crate::wire::h1::{BodyKind, FramingLine, H1Error, Head};
use crate::wire::io::{self, BufConn, HeadError, RelayError};

/// What happened to the exchange, for the client connection's next step.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// Status sent to the client, if a response was sent.
    pub(crate) status: Option<u16>,
    /// Whether the client connection can carry another request.
    pub(crate) keep_client: bool,
    /// Bytes sent to the client.
    pub(crate) bytes_out: u64,
    /// Bytes of request body read from the client.
    pub(crate) body_in: u64,
}

/// Sends a complete local response (error page) and reports it.
/// `keep` says whether the connection could go on (the request was read
/// whole); 400 and 408 close it anyway, as in HAProxy.
pub(crate) async fn send_error(
    client: &mut BufConn,
    code: u16,
    fe: &FrontendRt,
    keep: bool,
) -> Outcome {
    send_error_be(client, code, fe, None, keep).await
}

/// [`send_error`] once a backend is chosen: its `errorfile` comes first,
/// then the frontend's, then the built-in page. A custom page is sent as
/// loaded and the connection closed after it (the file may frame its body
/// by the close).
pub(crate) async fn send_error_be(
    client: &mut BufConn,
    code: u16,
    fe: &FrontendRt,
    be: Option<&BackendRt>,
    keep: bool,
) -> Outcome {
    let custom = be
        .and_then(|b| b.errorfiles.iter().find(|(c, _)| *c == code))
        .or_else(|| fe.errorfiles.iter().find(|(c, _)| *c == code))
        .map(|(_, page)| &page[..]);
    let keep = keep && custom.is_none();
    let page = custom.unwrap_or_else(|| error_pages::response(code));
    let ok = io::write_all(&mut client.stream, page, fe.timeouts.client)
        .await
        .is_ok();
    Outcome {
        status: Some(code),
        keep_client: ok && keep && !error_pages::closes(code),
        bytes_out: if ok { page.len() as u64 } else { 0 },
        body_in: 0,
    }
}

fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Relaxed);
}

/// What the frontend learnt about a request before forwarding it: the
/// client's address and the edits of its `http-request` rules (None when
/// no rule changed anything).
pub(crate) struct ReqCtx<'a> {
    /// None for a client on a UNIX socket.
    pub(crate) src: Option<IpAddr>,
    /// The client and the address it connected to (None: the client
    /// socket's own), for `send-proxy`.
    pub(crate) peer: crate::sys::peer::Peer,
    pub(crate) dst: Option<std::net::SocketAddr>,
    pub(crate) edits: Option<&'a Edits>,
    /// The connection's `show sess` entry.
    pub(crate) stream: &'a crate::state::sessions::StreamEntry,
    /// The server (index in the backend) a persistence cookie sent the
    /// request to; set by [`forward`].
    pub(crate) persisted: Option<usize>,
    /// The client connection's TLS (conditions of `http-response` rules).
    pub(crate) tls: Option<&'a crate::tls::TlsFacts>,
}

/// The request head as it goes to the server.
fn upstream_head(
    req: &Head,
    body: BodyKind,
    close: bool,
    ff: Option<&ForwardFor>,
    ctx: &ReqCtx<'_>,
) -> BytesMut {
    let mut out = BytesMut::new();
    let framing = FramingLine::of(body);
    let placed = match ctx.edits {
        None => req.write_forwarded(&mut out, &framing),
        Some(e) => req.write_forwarded_with(
            &mut out,
            e.target.as_deref(),
            |i, n| e.drops_at(i, n),
            &e.replaced,
            &framing,
        ),
    };
    if !placed {
        out.put_slice(framing.bytes());
    }
    if let Some(e) = ctx.edits {
        e.put_added(&mut out);
    }
    // A client on a UNIX socket has no address: HAProxy adds no header.
    if let Some(ff) = ff
        && let Some(src) = ctx.src
    {
        rules::put_forwarded_for(&mut out, ff, src, req, ctx.edits);
    }
    if req.requests_upgrade() {
        // A protocol switch (WebSocket) needs its hop-by-hop pair kept.
        for v in req.values("upgrade") {
            out.put_slice(b"upgrade: ");
            out.put_slice(v);
            out.put_slice(b"\r\n");
        }
        out.put_slice(b"connection: upgrade\r\n");
    } else if close {
        out.put_slice(b"connection: close\r\n");
    }
    out.put_slice(b"\r\n");
    out
}

/// The response head as it goes to the client.
fn downstream_head(
    resp: &Head,
    body: BodyKind,
    keep: bool,
    client_minor: u8,
    edits: Option<&Edits>,
) -> BytesMut {
    let framing = resp.response_framing(body);
    let mut out = BytesMut::new();
    let placed = match edits {
        None => resp.write_forwarded(&mut out, &framing),
        Some(e) => resp.write_forwarded_with(
            &mut out,
            None,
            |i, n| e.drops_at(i, n),
            &e.replaced,
            &framing,
        ),
    };
    if !placed {
        out.put_slice(framing.bytes());
    }
    if let Some(e) = edits {
        e.put_added(&mut out);
    }
    if !keep {
        out.put_slice(b"connection: close\r\n");
    } else if client_minor == 0 {
        out.put_slice(b"connection: keep-alive\r\n");
    }
    out.put_slice(b"\r\n");
    out
}

/// Methods whose replay has the effect of one request (RFC 9110 §9.2.2):
/// the only ones replayed after a reused connection broke with the request
/// possibly received.
fn idempotent(method: &[u8]) -> bool {
    matches!(
        method,
        b"GET" | b"HEAD" | b"OPTIONS" | b"TRACE" | b"PUT" | b"DELETE"
    )
}

/// No server for the request (none usable, queue full or timed out), at
/// first or on a redispatch: HAProxy's 503 with `SC`, `SQ` or `sQ`.
async fn no_server(
    e: PickError,
    fe: &FrontendRt,
    be: &BackendRt,
    client: &mut BufConn,
    keep: bool,
    started: Instant,
    rec: &mut LogRecord,
) -> Outcome {
    e.record(be, rec);
    if matches!(e, PickError::QueueTimeout { .. }) {
        rec.t_queue = ms(started.elapsed()) as i64;
    }
    rec.tally.status(503, Rows::BE);
    send_error_be(client, 503, fe, Some(be), keep).await
}

/// Forwards `req` (whose body is still in `client`) to a server of `be`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn forward(
    fe: &FrontendRt,
    be: &Arc<BackendRt>,
    req: &Head,
    body: BodyKind,
    client: &mut BufConn,
    keep_client: bool,
    rec: &mut LogRecord,
    ctx: &ReqCtx<'_>,
) -> Outcome {
    let bc = &be.state.counters;
    bc.count_request();
    let started = Instant::now();
    // `balance source` hashes the client the frontend knows (the PROXY
    // header's under `accept-proxy`), not the socket's peer: HAProxy does.
    let src = match be.balance {
        crate::config::model::Balance::Source => ctx.src,
        _ => None,
    };
    let key = balance::LbKey {
        src,
        head: Some(req),
    };
    // `cookie`: a request naming a server goes to it, its `Cookie` header
    // edited as the mode says.
    let client_cookie = be
        .cookie
        .as_deref()
        .and_then(|ck| cookie::client_side(ck, be, req, ctx.edits));
    let cookie_edits;
    let mut cookie_ctx = ReqCtx {
        src: ctx.src,
        peer: ctx.peer,
        dst: ctx.dst,
        edits: ctx.edits,
        stream: ctx.stream,
        persisted: None,
        tls: ctx.tls,
    };
    if let Some(cc) = &client_cookie {
        if be.cookie.as_deref().is_some_and(|ck| ck.logged()) {
            rec.persist = [cc.state, cookie::SCK_NONE];
        }
        cookie_ctx.persisted = cc.server;
        if !cc.rewrites.is_empty() {
            let mut e = ctx.edits.cloned().unwrap_or_default();
            for (i, v) in &cc.rewrites {
                e.set_at(*i, v.clone());
            }
            cookie_edits = e;
            cookie_ctx.edits = Some(&cookie_edits);
        }
    } else if be.cookie.as_deref().is_some_and(|ck| ck.logged()) {
        rec.persist = [cookie::CK_NONE, cookie::SCK_NONE];
    }
    let acquired = match cookie_ctx.persisted {
        Some(i) => match balance::acquire_server(be, i).await {
            // The server's queue is full: with `option redispatch` the
            // request is balanced instead (persistence is lost), as HAProxy.
            Err(PickError::QueueFull { .. }) if be.redispatch.is_some() => {
                cookie_ctx.persisted = None;
                balance::acquire(be, &key).await
            }
            r => r,
        },
        None => balance::acquire(be, &key).await,
    };
    let ctx = &cookie_ctx;
    let slot = match acquired {
        Ok(slot) => slot,
        Err(e) => {
            let keep = keep_client && body == BodyKind::None;
            return no_server(e, fe, be, client, keep, started, rec).await;
        }
    };
    rec.be_queue = slot.queue_position();
    rec.srv_queue = slot.srv_queue_position();
    let mut seat = Seat::new(slot);
    let first: Arc<ServerState> = seat.server().clone();
    bc.session_start();
    first.counters.count_request();
    let queue_ms = ms(started.elapsed());
    rec.t_queue = queue_ms as i64;
    rec.assign_server(&first);
    ctx.stream.to_server(&first);
    let mut tries = Retries::default();
    let fut = exchange(
        fe,
        be,
        &key,
        &mut seat,
        &mut tries,
        req,
        body,
        client,
        keep_client,
        (started, queue_ms),
        rec,
        ctx,
    );
    let (out, conn_failed) = if first.cuttable.load(Relaxed) {
        // `on-marked-down shutdown-sessions` (the session ends when the
        // server is marked DOWN) or `on-marked-up shutdown-backup-sessions`
        // of an active server (it ends when that one comes UP).
        let killed = first.kill.notified();
        tokio::pin!(killed);
        killed.as_mut().enable();
        tokio::select! {
            o = fut => o,
            _ = killed => {
                rec.tally.srv_abrt |= Rows::BE_SRV;
                (Outcome { status: None, keep_client: false, bytes_out: 0, body_in: 0 }, false)
            }
        }
    } else {
        fut.await
    };
    rec.retries = tries.done;
    rec.redispatched = tries.redispatched;
    let server = seat.server();
    let observe = server.observe.load(Relaxed);
    // Failed connections were reported to `observe` one by one.
    if observe != 0 && !conn_failed {
        observe_outcome(be, server, observe, out.status);
    }
    bc.session_end();
    drop(seat);
    out
}

/// `observe layer4|layer7`: tells the health analyzer how the exchange
/// went (for layer7 a 5xx other than 501/505 is an error).
fn observe_outcome(be: &BackendRt, server: &ServerState, observe: u8, status: Option<u16>) {
    let error = if observe == crate::state::OBSERVE_L7
        && status.is_some_and(|s| (500..600).contains(&s) && s != 501 && s != 505)
    {
        Some("Wrong HTTP status")
    } else {
        None
    };
    crate::upstream::check::observe(be, server, error);
}

/// Sends the request to the seat's server and reads the response head,
/// retrying as `retries`, `option redispatch` and `retry-on` allow, then
/// relays the response. Returns the outcome and whether it ended because
/// no connection could be made.
///
/// Replays: a reused idle connection that turns out closed is replayed
/// once on a new connection (not counted as a retry) when nothing can have
/// been acted on: the request could not be written, or the method is
/// idempotent and no body was sent. `retry-on` beyond `conn-failure`
/// (statuses, empty, junk or late responses) replays only requests without
/// a body: sluice streams bodies and keeps no copy to send twice.
#[allow(clippy::too_many_arguments)]
async fn exchange(
    fe: &FrontendRt,
    be: &Arc<BackendRt>,
    key: &balance::LbKey<'_>,
    seat: &mut Seat,
    tries: &mut Retries,
    req: &Head,
    body: BodyKind,
    client: &mut BufConn,
    keep_client: bool,
    (started, queue_ms): (Instant, u32),
    rec: &mut LogRecord,
    ctx: &ReqCtx<'_>,
) -> (Outcome, bool) {
    let bc = &be.state.counters;
    let server_close =
        be.conn_mode != HttpConnMode::KeepAlive || fe.conn_mode != HttpConnMode::KeepAlive;
    // `option forwardfor`: the backend's settings, else the frontend's.
    let ff = be.forwardfor.as_ref().or(fe.forwardfor.as_ref());
    let head = upstream_head(req, body, server_close, ff, ctx);
    let l7_retries = be.retry_on.layer7() && body == BodyKind::None;
    let mut reuse_ok = be.http_reuse != HttpReuse::Never;
    // Set once the body has been consumed from the client: after that the
    // request cannot be replayed.
    let mut body_sent = false;
    let mut body_in = 0u64;
    let mut connect_ms = 0u32;
    let keep_on_error = keep_client && body == BodyKind::None;

    // The request's Host: the SNI to servers with `sni req.hdr(host)`.
    let host = req.values("host").next();
    let (upstream, resp, response_ms) = loop {
        // `send-proxy`: a server connection tells one client's address, so
        // it is never shared (HAProxy only reuses one for an identical PROXY
        // line, in practice the same client connection).
        let pooled = if reuse_ok && seat.server().send_proxy.load(Relaxed) == 0 {
            let pool = seat.server().pool.load();
            pool.take(pool.request_sni(host))
        } else {
            None
        };
        let reused = pooled.is_some();
        let stream = match pooled {
            Some(s) => {
                seat.attempt();
                add(&seat.server().counters.reuse, 1);
                add(&bc.reuse, 1);
                s
            }
            None => {
                let before = seat.server().clone();
                let t = Instant::now();
                let dst = ctx.dst.or_else(|| client.stream.local_addr().ok());
                match retry::connect(be, key, seat, tries, host, dst).await {
                    Ok(s) => {
                        connect_ms = ms(t.elapsed());
                        note_move(&before, seat, rec, ctx);
                        s
                    }
                    Err(ConnectError::Pick(e)) => {
                        let out = no_server(e, fe, be, client, keep_on_error, started, rec);
                        return (out.await, true);
                    }
                    Err(e) => {
                        rec.end(e.term());
                        rec.retryable = e.retryable();
                        // HAProxy counts its own 503 on the backend only.
                        rec.tally.status(503, Rows::BE);
                        let out = send_error_be(client, 503, fe, Some(be), keep_on_error);
                        return (out.await, true);
                    }
                }
            }
        };
        let server = seat.server().clone();
        let mut up = BufConn::new(stream);
        if !reused
            && let Some(h) = &crate::wire::proxy_proto::for_server(
                server.send_proxy.load(Relaxed),
                ctx.peer.inet(),
                ctx.dst,
                || client.stream.local_addr().ok(),
            )
            && io::write_all(&mut up.stream, h, be.timeouts.server)
                .await
                .is_err()
        {
            rec.term(Cause::Server, Phase::Connect);
            rec.tally.eresp |= Rows::BE_SRV;
            rec.tally.status(502, Rows::BE_SRV);
            let out = send_error_be(client, 502, fe, Some(be), false).await;
            return (out, false);
        }
        // Connected: an error from here on logs the connect time (HAProxy's
        // `0/0/0/-1/...` for a 504), not -1.
        rec.t_connect = connect_ms as i64;
        if io::write_all(&mut up.stream, &head, be.timeouts.server)
            .await
            .is_err()
        {
            if reused {
                // A pooled connection the server had closed: nothing got
                // through, replay on a new one.
                reuse_ok = false;
                continue;
            }
            drop(up);
            if l7_retries
                && be.retry_on.has(RetryOn::EMPTY_RESPONSE)
                && let Some(next) = tries.after_l7_failure(be, &server)
            {
                match tries.apply(next, be, key, seat).await {
                    Ok(()) => {
                        note_move(&server, seat, rec, ctx);
                        continue;
                    }
                    Err(e) => {
                        let out = no_server(e, fe, be, client, keep_on_error, started, rec);
                        return (out.await, false);
                    }
                }
            }
            rec.term(Cause::Server, Phase::Headers);
            rec.tally.eresp |= Rows::BE_SRV;
            rec.tally.status(502, Rows::BE_SRV);
            let out = send_error_be(client, 502, fe, Some(be), keep_on_error).await;
            return (out, false);
        }
        rec.tally.srv_in += req.raw.len() as u64;
        if body != BodyKind::None && !body_sent {
            if req
                .values("expect")
                .any(|v| v.eq_ignore_ascii_case(b"100-continue"))
            {
                // sluice answers the expectation itself and sends the body.
                let _ = io::write_all(
                    &mut client.stream,
                    b"HTTP/1.1 100 Continue\r\n\r\n",
                    fe.timeouts.client,
                )
                .await;
            }
            body_sent = true;
            let mut no_head = BytesMut::new();
            match io::relay_message(
                &mut no_head,
                client,
                &mut up.stream,
                body,
                fe.timeouts.client,
                be.timeouts.server,
                fe.splice,
            )
            .await
            {
                Ok(n) => {
                    rec.tally.srv_in += n;
                    body_in = n;
                }
                Err(e) => {
                    if e.source_side() {
                        rec.tally.cli_abrt |= Rows::BE_SRV;
                        let code = if matches!(e, RelayError::ReadTimeout) {
                            408
                        } else {
                            400
                        };
                        if let RelayError::Framing(_, spot) = &e {
                            rec.tally.ereq |= Rows::FE;
                            let src = client.stream.peer_addr().ok();
                            capture::request_error(fe, Some(be), src, &[&client.buf], *spot);
                            rec.term(Cause::Proxy, Phase::Data);
                        } else if code == 408 {
                            rec.term(Cause::ClientTimeout, Phase::Data);
                        } else {
                            rec.term(Cause::Client, Phase::Data);
                        }
                        if matches!(e, RelayError::Framing(..)) {
                            // sluice's answer, not the server's (HAProxy).
                            rec.tally.status(code, Rows::BE);
                        } else {
                            rec.tally.status(code, Rows::BE_SRV);
                        }
                        let out = send_error_be(client, code, fe, Some(be), false).await;
                        return (out, false);
                    }
                    rec.tally.srv_abrt |= Rows::BE_SRV;
                    rec.term(Cause::Server, Phase::Data);
                    rec.tally.status(502, Rows::BE_SRV);
                    let out = send_error_be(client, 502, fe, Some(be), false).await;
                    return (out, false);
                }
            }
        }
        let sent_at = Instant::now();
        // What went wrong: the `retry-on` bit, the status sent instead
        // (REFUSED: a head the parser refused, kept for `show errors`), the
        // log's termination state, and whether it is a server abort.
        let (bit, code, term, abort) = match up.read_head(be.max_head, be.timeouts.server).await {
            Ok(raw) => match Head::parse_response_lax(raw, be.accept_invalid_resp) {
                Ok(resp) => {
                    // A status `retry-on` names: the answer is dropped with
                    // its connection and the request sent again; the last
                    // one allowed is relayed as is.
                    if l7_retries
                        && be.retry_on.on_status(resp.status)
                        && let Some(next) = tries.after_l7_failure(be, &server)
                    {
                        drop(resp);
                        drop(up);
                        match tries.apply(next, be, key, seat).await {
                            Ok(()) => {
                                note_move(&server, seat, rec, ctx);
                                continue;
                            }
                            Err(e) => {
                                let out = no_server(e, fe, be, client, keep_on_error, started, rec);
                                return (out.await, false);
                            }
                        }
                    }
                    break (up, resp, ms(sent_at.elapsed()));
                }
                Err((e, raw)) => {
                    let spot = error_spot::locate(&raw, true, &e);
                    capture_response(fe, be, &server, client, &[&raw, &up.buf], spot);
                    (RetryOn::JUNK_RESPONSE, REFUSED, BAD_RESPONSE, false)
                }
            },
            Err(HeadError::TooLarge) => {
                let spot = error_spot::locate(&up.buf, true, &H1Error::TooLarge);
                capture_response(fe, be, &server, client, &[&up.buf], spot);
                (RetryOn::JUNK_RESPONSE, REFUSED, BAD_RESPONSE, false)
            }
            Err(HeadError::Closed) if reused && !body_sent && idempotent(req.method()) => {
                // The server closed an idle connection just as it was
                // reused: an idempotent request is replayed once.
                reuse_ok = false;
                continue;
            }
            Err(HeadError::Closed | HeadError::Io(_)) => {
                (RetryOn::EMPTY_RESPONSE, 502, SERVER_HEADERS, true)
            }
            Err(HeadError::Timeout) => (
                RetryOn::RESPONSE_TIMEOUT,
                504,
                Term::new(Cause::ServerTimeout, Phase::Headers),
                false,
            ),
            Err(HeadError::Truncated) => (RetryOn::JUNK_RESPONSE, 502, SERVER_HEADERS, true),
        };
        drop(up);
        if l7_retries
            && be.retry_on.has(bit)
            && let Some(next) = tries.after_l7_failure(be, &server)
        {
            match tries.apply(next, be, key, seat).await {
                Ok(()) => {
                    note_move(&server, seat, rec, ctx);
                    continue;
                }
                Err(e) => {
                    let out = no_server(e, fe, be, client, keep_on_error, started, rec);
                    return (out.await, false);
                }
            }
        }
        if code == REFUSED {
            let out = bad_response(fe, be, client, rec, keep_client).await;
            return (out, false);
        }
        rec.end(term);
        rec.tally.eresp |= Rows::BE_SRV;
        if abort {
            rec.tally.srv_abrt |= Rows::BE_SRV;
        }
        rec.tally.status(code, Rows::BE_SRV);
        let out = send_error_be(client, code, fe, Some(be), keep_client).await;
        return (out, false);
    };

    rec.t_connect = connect_ms as i64;
    rec.t_resp = response_ms as i64;
    // Set before relaying: `option logasap` logs at the response head.
    rec.retries = tries.done;
    rec.redispatched = tries.redispatched;
    let server = seat.server().clone();
    let pool = server.pool.load_full();
    let mut out = relay_response(
        fe,
        be,
        &server,
        req,
        resp,
        upstream,
        client,
        keep_client,
        &pool,
        server_close,
        rec,
        ctx,
    )
    .await;
    out.body_in = body_in;
    let total_ms = ms(started.elapsed());
    rec.tally.times = Some([queue_ms, connect_ms, response_ms, total_ms]);
    (out, false)
}

/// The response head was refused by the parser (see [`bad_response`]).
const REFUSED: u16 = 0;

/// `PH`: the proxy refused the server's response.
const BAD_RESPONSE: Term = Term::new(Cause::Proxy, Phase::Headers);
/// `SH`: the server closed or broke its response head.
const SERVER_HEADERS: Term = Term::new(Cause::Server, Phase::Headers);

/// After a redispatch: the new server counts the request, the log and
/// `show sess` name it.
fn note_move(before: &Arc<ServerState>, seat: &Seat, rec: &mut LogRecord, ctx: &ReqCtx<'_>) {
    if !Arc::ptr_eq(before, seat.server()) {
        seat.server().counters.count_request();
        rec.assign_server(seat.server());
        ctx.stream.to_server(seat.server());
    }
}

/// Keeps a response `be` refused for `show errors`.
fn capture_response(
    fe: &FrontendRt,
    be: &BackendRt,
    server: &ServerState,
    client: &BufConn,
    parts: &[&[u8]],
    spot: ErrorSpot,
) {
    let src = client.stream.peer_addr().ok();
    capture::response_error(be, fe, server, src, parts, spot);
}

/// A response refused by the parser (bad head, framing, too large): counted
/// in `eresp`, logged `PH--`, and the client gets a 502 instead.
async fn bad_response(
    fe: &FrontendRt,
    be: &BackendRt,
    client: &mut BufConn,
    rec: &mut LogRecord,
    keep_client: bool,
) -> Outcome {
    rec.tally.eresp |= Rows::BE_SRV;
    rec.end(BAD_RESPONSE);
    // The server sent no valid status: its row counts none (HAProxy).
    rec.tally.status(502, Rows::BE);
    send_error_be(client, 502, fe, Some(be), keep_client).await
}

fn ms(d: Duration) -> u32 {
    d.as_millis().min(u32::MAX as u128) as u32
}

#[allow(clippy::too_many_arguments)]
async fn relay_response(
    fe: &FrontendRt,
    be: &BackendRt,
    server: &ServerState,
    req: &Head,
    mut resp: Head,
    mut upstream: BufConn,
    client: &mut BufConn,
    keep_client: bool,
    pool: &crate::state::Pool,
    server_close: bool,
    rec: &mut LogRecord,
    ctx: &ReqCtx<'_>,
) -> Outcome {
    let mut bytes_out = 0u64;
    // Interim 1xx answers are relayed as they come, then the final one.
    while (100..200).contains(&resp.status) && resp.status != 101 {
        let head = downstream_head(&resp, BodyKind::None, true, 1, None);
        if io::write_all(&mut client.stream, &head, fe.timeouts.client)
            .await
            .is_err()
        {
            rec.term(Cause::Client, Phase::Headers);
            return Outcome {
                status: None,
                keep_client: false,
                bytes_out,
                body_in: 0,
            };
        }
        bytes_out += head.len() as u64;
        resp = match upstream.read_head(be.max_head, be.timeouts.server).await {
            Ok(raw) => match Head::parse_response_lax(raw, be.accept_invalid_resp) {
                Ok(r) => r,
                Err((e, raw)) => {
                    let spot = error_spot::locate(&raw, true, &e);
                    capture_response(fe, be, server, client, &[&raw, &upstream.buf], spot);
                    return bad_response(fe, be, client, rec, keep_client).await;
                }
            },
            Err(HeadError::TooLarge) => {
                let spot = error_spot::locate(&upstream.buf, true, &H1Error::TooLarge);
                capture_response(fe, be, server, client, &[&upstream.buf], spot);
                return bad_response(fe, be, client, rec, keep_client).await;
            }
            Err(_) => {
                rec.end(SERVER_HEADERS);
                rec.tally.eresp |= Rows::BE_SRV;
                rec.tally.status(502, Rows::BE_SRV);
                return send_error_be(client, 502, fe, Some(be), keep_client).await;
            }
        };
    }
    let status = resp.status;
    rec.captured_resp = crate::observe::log::capture_headers(&fe.captures.response, &resp);
    // A 101 opens a tunnel only for a request that asked for an upgrade;
    // an unsolicited one would let the client's next bytes bypass parsing.
    if status == 101 && !req.requests_upgrade() {
        let spot = ErrorSpot::at(9, error_spot::state::RPCODE);
        capture_response(fe, be, server, client, &[&resp.raw, &upstream.buf], spot);
        return bad_response(fe, be, client, rec, keep_client).await;
    }
    // A switch to WebSocket without the server's `Sec-WebSocket-Accept`
    // is not one the client can accept: a 502, as HAProxy answers.
    if status == 101
        && resp.upgrades_to_websocket()
        && resp.values("sec-websocket-accept").next().is_none()
    {
        let spot = ErrorSpot::at(resp.raw.len().saturating_sub(1), error_spot::state::LAST_LF);
        capture_response(fe, be, server, client, &[&resp.raw, &upstream.buf], spot);
        return bad_response(fe, be, client, rec, keep_client).await;
    }
    if status == 101 {
        rec.tally.srv_status = Some(status);
        // Protocol switch: relay the raw bytes both ways until either side
        // closes (WebSocket and friends).
        let mut head = BytesMut::new();
        head.put_slice(&resp.raw);
        let _ = io::write_all(&mut client.stream, &head, fe.timeouts.client).await;
        if !upstream.buf.is_empty() {
            let pending = upstream.buf.split();
            let _ = io::write_all(&mut client.stream, &pending, fe.timeouts.client).await;
        }
        if !client.buf.is_empty() {
            let pending = client.buf.split();
            let _ = io::write_all(&mut upstream.stream, &pending, be.timeouts.server).await;
        }
        // Both sides idle out after `timeout tunnel` if set, else after
        // their own client/server timeout.
        let (c2s, s2c) = crate::tcp::relay(
            &mut client.stream,
            &mut upstream.stream,
            fe.timeouts
                .tunnel
                .or(be.timeouts.tunnel)
                .or(fe.timeouts.client),
            be.timeouts.tunnel.or(be.timeouts.server),
            fe.splice,
        )
        .await;
        rec.tally.srv_in += c2s;
        return Outcome {
            status: Some(101),
            keep_client: false,
            bytes_out: bytes_out + head.len() as u64 + s2c,
            body_in: c2s,
        };
    }

    let body = match resp.response_body(req.method()) {
        Ok(b) => b,
        Err(e) => {
            let spot = error_spot::locate(&resp.raw, true, &e);
            capture_response(fe, be, server, client, &[&resp.raw, &upstream.buf], spot);
            return bad_response(fe, be, client, rec, keep_client).await;
        }
    };
    rec.tally.srv_status = Some(status);
    // A soft stop that began during the request: the response says close.
    let keep = keep_client && body != BodyKind::UntilClose && !crate::sys::process::stopping();
    // `http-response` rules and legacy `rsp*` filters: the backend's,
    // then the frontend's.
    let edits = if be.http_response.is_empty()
        && fe.http_response.is_empty()
        && be.legacy_rsp.is_none()
        && fe.legacy_rsp.is_none()
    {
        None
    } else {
        match response_edits(fe, be, &server.name, req, ctx.src, ctx.tls, &mut resp) {
            Ok(e) => e,
            Err(RespRefused::Denied(reply)) => {
                // `http-response deny`, `rspdeny`: the server's answer is
                // dropped.
                rec.end(BAD_RESPONSE);
                rec.tally.dresp |= Rows::BE_SRV;
                drop(resp);
                let cx = rules::FmtCtx {
                    req,
                    src: ctx.src,
                    frontend: &fe.name,
                    backend: Some(&be.name),
                    server: Some(&server.name),
                };
                return deny_response(client, fe, be, keep_client, reply, &cx).await;
            }
            Err(RespRefused::Invalid) => {
                // An `rsprep` that broke the head: HAProxy 1.8's
                // `return_bad_resp` (the status was counted already).
                rec.tally.eresp |= Rows::BE_SRV;
                rec.end(BAD_RESPONSE);
                return send_error_be(client, 502, fe, Some(be), keep_client).await;
            }
        }
    };
    let mut edits = edits;
    if let Some(ck) = be.cookie.as_deref()
        && let Some(i) = be
            .servers
            .iter()
            .position(|s| std::ptr::eq(&*s.state, server))
    {
        // `direct`: the cookie chose this server (not a redispatch).
        let direct = ctx.persisted == Some(i);
        let own = be.servers[i].cookie.as_deref();
        let sck = cookie::server_side(ck, own, direct, req, &resp, &mut edits);
        if ck.logged() {
            rec.persist[1] = sck;
        }
    }
    let mut head = downstream_head(&resp, body, keep, client_minor(req), edits.as_ref());
    let head_len = head.len() as u64;
    rec.log_early(fe, status, bytes_out + head_len, req);
    let relayed = io::relay_message(
        &mut head,
        &mut upstream,
        &mut client.stream,
        body,
        be.timeouts.server,
        fe.timeouts.client,
        fe.splice,
    )
    .await;
    let ok = match relayed {
        Ok(n) => {
            bytes_out += head_len + n;
            true
        }
        Err(e) => {
            if let RelayError::Framing(_, spot) = &e {
                if !head.is_empty() {
                    // Bad from its first body bytes: nothing was sent to
                    // the client yet, which gets a 502 instead. The head is
                    // part of what was refused, as in HAProxy's buffer.
                    let spot = spot.shifted(resp.raw.len());
                    capture_response(fe, be, server, client, &[&resp.raw, &upstream.buf], spot);
                    return bad_response(fe, be, client, rec, keep_client).await;
                }
                rec.tally.eresp |= Rows::BE_SRV;
                capture_response(fe, be, server, client, &[&upstream.buf], *spot);
            }
            if e.source_side() {
                rec.term(
                    if matches!(e, RelayError::ReadTimeout) {
                        Cause::ServerTimeout
                    } else {
                        Cause::Server
                    },
                    Phase::Data,
                );
                rec.tally.srv_abrt |= Rows::BE_SRV;
            } else {
                rec.term(Cause::Client, Phase::Data);
                rec.tally.cli_abrt |= Rows::BE_SRV;
            }
            false
        }
    };
    rec.tally.srv_out = bytes_out;
    let reusable = ok
        && !server_close
        && body != BodyKind::UntilClose
        && resp.wants_keep_alive()
        && upstream.buf.is_empty()
        && be.http_reuse != HttpReuse::Never
        && server.send_proxy.load(Relaxed) == 0;
    // The response head points into the read buffer: drop it first.
    drop(resp);
    upstream.release_buffer();
    if reusable {
        pool.put(upstream.stream, pool.request_sni(req.values("host").next()));
    }
    Outcome {
        status: Some(status),
        keep_client: keep && ok,
        bytes_out,
        body_in: 0,
    }
}

/// `http-response deny` (its reply, or the error page of its status,
/// 502 by default) and `rspdeny` (502). The client connection stays open
/// if it could (the request was read whole), else the answer says
/// `connection: close`.
async fn deny_response(
    client: &mut BufConn,
    fe: &FrontendRt,
    be: &BackendRt,
    keep: bool,
    reply: Option<&HttpReply>,
    cx: &rules::FmtCtx<'_>,
) -> Outcome {
    let status = reply.map_or(502, |r| r.status);
    let out = match reply.and_then(|r| crate::http::reply::render(r, cx, keep)) {
        Some(out) => out,
        None if be
            .errorfiles
            .iter()
            .chain(&fe.errorfiles)
            .any(|(c, _)| *c == status) =>
        {
            return send_error_be(client, status, fe, Some(be), false).await;
        }
        None => crate::http::reply::with_close(error_pages::response(status), keep),
    };
    send_answer(client, &out, status, keep, fe).await
}

/// Sends an answer sluice made up (a reply, a page) whose head already
/// says whether the connection stays open (`keep`).
pub(crate) async fn send_answer(
    client: &mut BufConn,
    out: &[u8],
    status: u16,
    keep: bool,
    fe: &FrontendRt,
) -> Outcome {
    let ok = io::write_all(&mut client.stream, out, fe.timeouts.client)
        .await
        .is_ok();
    Outcome {
        status: Some(status),
        keep_client: ok && keep,
        bytes_out: if ok { out.len() as u64 } else { 0 },
        body_in: 0,
    }
}

/// Why the response rules refused a response.
enum RespRefused<'r> {
    /// `http-response deny` (with its reply), `rspdeny` (without).
    Denied(Option<&'r HttpReply>),
    /// An `rsprep` left a head that does not parse.
    Invalid,
}

/// Runs the `http-response` rules then the `rsp*` filters of the backend,
/// then of the frontend (once for a `listen` section). The filters may
/// replace `resp` with their rewrite.
fn response_edits<'r>(
    fe: &'r FrontendRt,
    be: &'r BackendRt,
    server: &str,
    req: &Head,
    src: Option<IpAddr>,
    tls: Option<&crate::tls::TlsFacts>,
    resp: &mut Head,
) -> Result<Option<Edits>, RespRefused<'r>> {
    let view = View {
        head: req,
        src,
        tls,
    };
    let cx = rules::FmtCtx {
        req,
        src,
        frontend: &fe.name,
        backend: Some(&be.name),
        server: Some(server),
    };
    let mut edits: Option<Edits> = None;
    // A `listen` section is its own frontend: its rules run once.
    let fe_rules: &[_] = if fe.iid == be.iid {
        &[]
    } else {
        &fe.http_response
    };
    let fe_legacy = if fe.iid == be.iid {
        None
    } else {
        fe.legacy_rsp.as_deref()
    };
    let sets = [
        (&be.http_response[..], &be.acls, be.legacy_rsp.as_deref()),
        (fe_rules, &fe.acls, fe_legacy),
    ];
    for (rules_, acls, legacy_rsp) in sets {
        for (action, cond) in rules_ {
            if let Some(c) = cond
                && !acls.eval(c, &view)
            {
                continue;
            }
            let e = edits.get_or_insert_with(Edits::default);
            match action {
                HttpResponseAction::SetHeader { name, fmt } => {
                    e.set_header(name, rules::eval(fmt, &cx))
                }
                HttpResponseAction::AddHeader { name, fmt } => {
                    e.add_header(name, rules::eval(fmt, &cx))
                }
                HttpResponseAction::DelHeader { name } => e.del_header(name),
                HttpResponseAction::Deny(reply) => return Err(RespRefused::Denied(Some(reply))),
            }
        }
        let Some(l) = legacy_rsp else {
            continue;
        };
        // There is no `rspallow`: the flag stays down.
        match legacy::apply(l, resp, edits.as_ref(), acls, &view, &mut false) {
            legacy::Verdict::Pass(None) => {}
            legacy::Verdict::Pass(Some(h)) => {
                *resp = h;
                edits = None;
            }
            legacy::Verdict::Deny | legacy::Verdict::Tarpit => {
                return Err(RespRefused::Denied(None));
            }
            legacy::Verdict::Invalid => return Err(RespRefused::Invalid),
        }
    }
    Ok(edits)
}

fn client_minor(req: &Head) -> u8 {
    req.minor
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_lengths() {
        for n in [0u64, 7, 10, 15360, u64::MAX] {
            let line = FramingLine::of(BodyKind::Length(n));
            assert_eq!(line.bytes(), format!("content-length: {n}\r\n").as_bytes());
        }
        assert_eq!(
            FramingLine::of(BodyKind::Chunked).bytes(),
            b"transfer-encoding: chunked\r\n"
        );
    }
}
