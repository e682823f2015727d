//! The frontend side: one task per client connection, reading requests,
//! applying the frontend's rules and handing them to a backend.

use std::future::{Future, poll_fn};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use tokio::net::TcpStream;

use crate::sample::conn::ClientFacts;
use crate::sys::peer::Peer;
use crate::tls::{Stream, TlsFacts};

use crate::acl::eval::{AclSet, CompiledCond, RequestView};
use crate::config::model::{
    BindProto, HttpConnMode, HttpReply, HttpRequestAction, Timeouts, UriPart,
};
use crate::http::forward::{self, Outcome};
use crate::http::legacy;
use crate::http::park;
use crate::http::rules;
use crate::observe::log::{LogRecord, SrvName};
use crate::observe::outcome::{self, Cause, Phase, Rows};
use crate::snapshot::client::ClientConn;
use crate::snapshot::legacy_rt::LegacyRt;
use crate::snapshot::runtime::Runtime;
use crate::snapshot::{BackendRt, FrontendRt, StatsRt};
use crate::state::capture;
use crate::state::sessions::StreamEntry;
use crate::state::table::track::{self, Level, StickView, Trackers};
use crate::wire::error_pages;
use crate::wire::error_spot;
use crate::wire::h1::{self, BodyKind, H1Error, Head};
use crate::wire::io::{self, BufConn, HeadError};

/// A request as conditions see it (request and response rules alike).
pub(super) struct View<'a> {
    pub(super) head: &'a Head,
    /// The response, for `http-response` conditions.
    pub(super) res: Option<&'a Head>,
    /// None for a client on a UNIX socket.
    pub(super) src: Option<IpAddr>,
    pub(super) src_port: Option<u16>,
    /// The address the client connected to (`dst`, `dst_port`).
    pub(super) local: Option<SocketAddr>,
    /// The client connection's TLS, if any.
    pub(super) tls: Option<&'a TlsFacts>,
    /// The client connection's other facts (`fc_*`, `so_*`).
    pub(super) client: Option<&'a ClientFacts>,
    /// The proxies' runtime state (`nbsrv`, `be_conn`...), where passed.
    pub(super) proxies: Option<&'a crate::snapshot::Snapshot>,
    /// The server connection's facts (`bc_*`), in response conditions.
    pub(super) server_conn: Option<&'a crate::sample::srvconn::ServerFacts>,
    pub(super) frontend: &'a str,
    pub(super) frontend_id: u32,
    /// The backend once chosen (`be_name`, `nbsrv` without a name): its
    /// name and id.
    pub(super) backend: Option<(&'a str, u32)>,
    /// The request's variables (`var()` in conditions).
    pub(super) vars: Option<&'a crate::sample::vars::Vars<'a>>,
    /// The request's body as far as it is buffered (`req.body*`), and
    /// the response's for `http-response` conditions (`res.body*`).
    pub(super) req_body: Option<&'a crate::sample::fetch::Body<'a>>,
    pub(super) res_body: Option<&'a crate::sample::fetch::Body<'a>>,
    /// The stick tables and the request's counters.
    pub(super) stick: Option<&'a StickView<'a>>,
}

impl<'a> View<'a> {
    /// The request's view in its frontend's and backend's rules.
    fn of_request(
        head: &'a Head,
        rq: &'a Req<'a>,
        local: Option<SocketAddr>,
        fe: &'a FrontendRt,
        req_body: Option<&'a crate::sample::fetch::Body<'a>>,
    ) -> View<'a> {
        View {
            head,
            res: None,
            src: rq.peer.ip(),
            src_port: rq.peer.inet().map(|a| a.port()),
            local,
            tls: rq.tls,
            client: Some(rq.client),
            proxies: Some(rq.proxies),
            server_conn: None,
            frontend: &fe.name,
            frontend_id: fe.iid,
            backend: None,
            vars: Some(rq.vars),
            req_body,
            res_body: None,
            stick: Some(rq.stick),
        }
    }
}

impl RequestView for View<'_> {
    fn sample_ctx(&self) -> crate::sample::Ctx<'_> {
        crate::sample::Ctx {
            src: self.src,
            src_port: self.src_port,
            local: self.local,
            req: Some(self.head),
            res: self.res,
            status: self.res.map(|r| r.status),
            tls: self.tls,
            client: self.client,
            proxies: self.proxies.map(|s| s as &dyn crate::sample::Proxies),
            server_conn: self.server_conn,
            frontend: self.frontend,
            frontend_id: self.frontend_id,
            backend: self.backend.map(|b| b.0),
            backend_id: self.backend.map(|b| b.1),
            vars: self.vars,
            req_body: self.req_body,
            res_body: self.res_body,
            stick: self.stick.map(|s| s as &dyn crate::sample::stick::Stick),
            ..Default::default()
        }
    }
}

/// Serves one client connection until it closes or stops being reusable.
///
/// While the client is idle between requests this future holds only the
/// socket and a few pointers: the per-request work is boxed and dropped
/// after each request, and the read buffer is released.
///
/// `accepted`: for a connection just accepted, what its listener speaks
/// (`frontend::listener` found it); None for one served again.
pub(crate) async fn serve_connection(
    client: ClientConn,
    stream: Stream,
    peer: Peer,
    accepted: Option<BindProto>,
    tls: Option<Box<TlsFacts>>,
) {
    // (No TCP_NODELAY to set: accepted sockets inherit their listener's,
    // see `frontend::listener::spawn`.)
    let fresh = accepted.is_some();
    let proto = accepted.unwrap_or_default();
    // `bind ... proto h2`, or TLS that chose h2 by ALPN.
    if fresh && (proto == BindProto::H2 || tls.as_ref().is_some_and(|t| t.h2)) {
        // A task of its own, sized to the HTTP/2 engine: this one (the
        // HTTP/1 pipeline's future, a TLS handshake's before it) ends.
        tokio::spawn(crate::http::h2::serve(
            client,
            stream,
            bytes::Bytes::new(),
            peer,
            tls,
        ));
        return;
    }
    // A cleartext client may start with the HTTP/2 preface instead.
    let mut upgradable = fresh && proto == BindProto::Auto && !stream.is_tls();
    if fresh && let Some(st) = client.frontend_state() {
        st.client.local().h1_total_connections.inc();
    }
    let mut conn = BufConn::new(stream);
    let mut first = fresh;
    // The `sess` variables live as long as the connection (empty, it
    // allocates nothing).
    let sess_vars = crate::sample::vars::SessVars::default();
    // The keep-alive waits' timer, made at the first one and kept.
    let mut idle_timer = IdleTimer::default();
    loop {
        if conn.buf.is_empty() && !first {
            // Soft stop: an idle keep-alive connection is closed, unless
            // its next request is already here: closing over unread bytes
            // would reset it. (A new connection gets a short window for its
            // first request in `handle_request`.)
            if crate::sys::process::stopping() {
                match conn.stream.try_read_buf(&mut conn.buf) {
                    Ok(n) if n > 0 => {}
                    _ => return,
                }
            }
        }
        // A first request is awaited inside `handle_request` (where a
        // silent client gets HAProxy's 408 log line at `timeout
        // http-request`); only keep-alive waits happen here, and park.
        if conn.buf.is_empty() && !first {
            let idle = client.rt.with_snapshot(|snap| {
                let fe = snap.frontends().find(|f| *f.name == *client.frontend())?;
                Some(if first {
                    fe.timeouts.http_request.or(fe.timeouts.client)
                } else {
                    fe.timeouts.keep_alive()
                })
            });
            // The frontend is gone (a reload removed it): close.
            let Some(idle) = idle else { return };
            if conn.stream.is_tls() || sess_vars.holds_any() {
                // A TLS connection is not parked: rustls holds its state
                // (keys, buffers) in this task. Bytes it already decrypted
                // are served at once; else wait for the socket. Nor is one
                // whose session has variables: they live in this task.
                if !conn.stream.has_buffered_plaintext()
                    && !idle_timer
                        .wait_readable_or_stop(conn.stream.tcp(), idle)
                        .await
                {
                    return;
                }
            } else if !idle_timer
                .wait_readable_or_stop(
                    conn.stream.tcp(),
                    Some(idle.map_or(park::GRACE, |t| t.min(park::GRACE))),
                )
                .await
            {
                // Waited a little in the task; a client that stays silent
                // longer is parked outside the runtime until it speaks.
                let grace = idle.map_or(park::GRACE, |t| t.min(park::GRACE));
                let left = idle.map(|t| t.saturating_sub(grace));
                if left == Some(Duration::ZERO) || crate::sys::process::stopping() {
                    return;
                }
                let BufConn { stream, .. } = conn;
                let Stream::Tcp(stream) = stream else { return };
                // Registered already: it waited above.
                let Ok(stream) = stream.into_reactor() else {
                    return;
                };
                match park::park(client, stream, peer, left) {
                    Ok(()) => return,
                    Err(back) => {
                        let (c, s) = *back;
                        // Parking unavailable: wait here for the rest.
                        if !wait_readable_or_stop(Some(&s), left).await {
                            return;
                        }
                        return Box::pin(serve_connection(
                            c,
                            Stream::Tcp(s.into()),
                            peer,
                            first.then_some(proto),
                            None,
                        ))
                        .await;
                    }
                }
            }
            // Readable: read the first bytes here, where a soft stop can
            // still close the connection before a request has begun.
            tokio::select! {
                r = conn.fill(idle) => match r {
                    Ok(n) if n > 0 => {}
                    _ => return,
                },
                _ = crate::sys::process::stop_begun() => {
                    match conn.stream.try_read_buf(&mut conn.buf) {
                        Ok(n) if n > 0 => {}
                        _ => return,
                    }
                }
            }
        }
        // The generation the request starts under, if `hard-stop-after`
        // bounds how long it may outlive a reload.
        let bound = client
            .rt
            .with_snapshot(|snap| snap.global.hard_stop_after.map(|_| snap.generation));
        let mut to_h2 = false;
        let via = if upgradable {
            Via::Http1Upgradable(&mut to_h2)
        } else {
            Via::Http1
        };
        // The request's future lives in this task's, pinned in place: a
        // box per request cost an allocation and a copy of the whole future
        // (about 6 KB) each time. An idle connection does not keep it: it is
        // parked out of the runtime (its task ended) after `park::GRACE`.
        let keep = {
            let request = std::pin::pin!(handle_request(
                (&sess_vars, client.trackers()),
                &client.rt,
                client.frontend(),
                client.stream.entry(),
                &mut conn,
                (peer, &client.facts),
                first,
                tls.as_deref(),
                via,
            ));
            crate::state::generation::bounded_if(bound, request)
                .await
                .unwrap_or(false)
        };
        if to_h2 {
            let BufConn { stream, buf, .. } = conn;
            // As above: a task of its own.
            tokio::spawn(crate::http::h2::serve(
                client,
                stream,
                buf.freeze(),
                peer,
                tls,
            ));
            return;
        }
        // The read buffer goes back to the thread's spares either way: a
        // connection closed after one request would otherwise free its
        // 16 KiB and the next allocate them again.
        conn.release_buffer();
        if !keep {
            return;
        }
        first = false;
        upgradable = false;
    }
}

/// How long a soft stop waits for the first request of a connection it
/// accepted just before stopping.
const STOP_FIRST_BYTES: Duration = Duration::from_secs(1);

/// [`wait_readable`], cut short (false) when a soft stop begins with
/// nothing received. False at once without a socket.
async fn wait_readable_or_stop(stream: Option<&TcpStream>, timeout: Option<Duration>) -> bool {
    let Some(stream) = stream else { return false };
    tokio::select! {
        r = wait_readable(stream, timeout) => r,
        _ = crate::sys::process::stop_begun() => {
            // Bytes already here are served, not reset.
            io::has_pending(stream)
        }
    }
}

/// The timer of a connection's keep-alive waits: made at the first wait,
/// then moved only when it fires before a wait's deadline, instead of a
/// new timer registered for every request. Registering one takes the time
/// driver's lock, and when the driver had no timer left at its last turn
/// it also wakes the driver through its eventfd (from its own thread: a
/// system call for nothing, 0.26 per keep-alive request under load). A
/// timer left armed past its wait may wake the connection once, which it
/// takes as nothing to do.
#[derive(Default)]
struct IdleTimer(Option<std::pin::Pin<Box<tokio::time::Sleep>>>);

impl IdleTimer {
    /// [`wait_readable_or_stop`] with this timer.
    async fn wait_readable_or_stop(
        &mut self,
        stream: Option<&TcpStream>,
        timeout: Option<Duration>,
    ) -> bool {
        let (Some(stream), Some(t)) = (stream, timeout) else {
            return wait_readable_or_stop(stream, timeout).await;
        };
        let deadline = tokio::time::Instant::now() + t;
        let timer = match &mut self.0 {
            Some(timer) => {
                // A shorter timeout than the timer's (a reload changed it).
                if timer.deadline() > deadline {
                    timer.as_mut().reset(deadline);
                }
                timer
            }
            None => self.0.insert(Box::pin(tokio::time::sleep_until(deadline))),
        };
        let wait = poll_fn(|cx| {
            if let Poll::Ready(r) = stream.poll_read_ready(cx) {
                return Poll::Ready(r.is_ok());
            }
            loop {
                match timer.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(()) if tokio::time::Instant::now() >= deadline => {
                        return Poll::Ready(false);
                    }
                    // Armed for an earlier wait: moved to this one's end.
                    Poll::Ready(()) => timer.as_mut().reset(deadline),
                }
            }
        });
        tokio::select! {
            r = wait => r,
            _ = crate::sys::process::stop_begun() => io::has_pending(stream),
        }
    }
}

/// Waits until the client sends something (or closes), at most `timeout`.
/// Hand-written so that an idle connection's future stays small: the
/// socket's own reader slot holds the waker, no waiter node is allocated.
async fn wait_readable(stream: &TcpStream, timeout: Option<Duration>) -> bool {
    match timeout {
        None => poll_fn(|cx| stream.poll_read_ready(cx)).await.is_ok(),
        Some(t) => {
            let sleep = tokio::time::sleep(t);
            tokio::pin!(sleep);
            poll_fn(|cx| {
                if let Poll::Ready(r) = stream.poll_read_ready(cx) {
                    return Poll::Ready(r.is_ok());
                }
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(false),
                    Poll::Pending => Poll::Pending,
                }
            })
            .await
        }
    }
}

/// How a request comes to [`handle_request`].
pub(crate) enum Via<'a> {
    /// An HTTP/1 connection.
    Http1,
    /// The first request of a cleartext HTTP/1 connection, which turns to
    /// HTTP/2 if it is the HTTP/2 preface (set to true, the preface put
    /// back in the buffer), as HAProxy does.
    Http1Upgradable(&'a mut bool),
    /// A stream of an HTTP/2 connection: its request as received (the
    /// log's `<scheme>://<authority>` is made from it when the request is
    /// logged); `bad`: one HAProxy answers with a 400 for bytes its HTTP/1
    /// form cannot show (a control byte in a field value, say).
    Http2 {
        parts: &'a http::request::Parts,
        bad: bool,
    },
}

/// Reads, routes and answers one request; returns whether the connection
/// may carry another.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn handle_request(
    (sess, sess_trackers): (&crate::sample::vars::SessVars, Option<&Trackers>),
    rt: &Runtime,
    frontend: &str,
    stream: &StreamEntry,
    conn: &mut BufConn,
    (peer, client): (Peer, &ClientFacts),
    first: bool,
    tls: Option<&TlsFacts>,
    via: Via<'_>,
) -> bool {
    // The address the client reached, when a PROXY header said it.
    let dst = client.dst();
    // HTTP/1 connections also count in the h1_* columns.
    let h1 = !matches!(via, Via::Http2 { .. });
    // The snapshot is loaded once per request and used to its end.
    let snap = rt.snapshot();
    // Borrowed from the snapshot the request holds anyway: a clone would
    // bump a reference count every worker thread shares, per request.
    let Some(fe) = snap.frontends().find(|f| *f.name == *frontend) else {
        return false;
    };
    let fc = &fe.state.counters;
    // The access log: decided once per request; without a log target the
    // record is a few plain stores and nothing is formatted.
    // A request id needs the accept date and the request counter.
    let mut rec = LogRecord::new(fe.log.is_some() || fe.unique_id.is_some());
    rec.tally.h1 = h1;
    if rec.enabled() {
        rec.tls = tls.is_some();
        if let Via::Http2 { parts, .. } = via {
            rec.h2_origin = Some(crate::wire::h2_convert::log_origin(parts));
        }
        rec.set_addrs(peer, dst.or_else(|| conn.stream.local_addr().ok()));
    }
    let head_timeout = fe.timeouts.http_request.or(fe.timeouts.client);
    // A new connection that has sent nothing yet is closed by a soft stop.
    let awaited = if first && conn.buf.is_empty() {
        tokio::select! {
            r = conn.read_head(fe.max_head, head_timeout) => Some(r),
            _ = crate::sys::process::stop_begun() => None,
        }
    } else {
        Some(conn.read_head(fe.max_head, head_timeout).await)
    };
    let read = match awaited {
        Some(r) => r,
        // Bytes already here are served, not reset.
        None if conn.stream.socket().is_some_and(|s| io::has_pending(&s)) => {
            conn.read_head(fe.max_head, head_timeout).await
        }
        // A client accepted just before the stop has usually not sent its
        // request yet: it gets a moment to do so before being closed, so a
        // hand-over or a stop never answers a fresh request with nothing.
        None => {
            let window = head_timeout.map_or(STOP_FIRST_BYTES, |t| t.min(STOP_FIRST_BYTES));
            let Some(tcp) = conn.stream.tcp() else {
                return false;
            };
            match tokio::time::timeout(window, tcp.readable()).await {
                Ok(Ok(())) if io::has_pending(tcp) => {
                    conn.read_head(fe.max_head, head_timeout).await
                }
                _ => return false,
            }
        }
    };
    let raw = match read {
        // The HTTP/2 preface on a connection that may switch to it: the
        // bytes go back in front of the rest for the HTTP/2 server.
        Ok(raw)
            if matches!(via, Via::Http1Upgradable(_))
                && raw[..] == *crate::http::h2::PREFACE_HEAD =>
        {
            let mut all = BytesMut::with_capacity(raw.len() + conn.buf.len());
            all.put_slice(&raw);
            all.put_slice(&conn.buf);
            conn.buf = all;
            if let Via::Http1Upgradable(upgrade) = via {
                *upgrade = true;
            }
            return false;
        }
        Ok(raw) => raw,
        Err(HeadError::Closed) => {
            // A client leaving between requests is normal; one that never
            // sent a whole request is logged as HAProxy does (CR--, 400),
            // unless it sent nothing and probes are ignored.
            let probe = conn.buf.is_empty() && fe.ignore_probes;
            if (first || !conn.buf.is_empty()) && !probe {
                rec.null = conn.buf.is_empty();
                rec.term(Cause::Client, Phase::Request);
                rec.status = 400;
                // HAProxy's H1 layer counts it on the session's stick
                // counters as a request and the client's error.
                track::http_request(sess_trackers, None);
                track::http_error(sess_trackers, None);
                // Counted: the line only reads the counters.
                let seen = outcome::Tracking {
                    sess: sess_trackers,
                    tables: Some(&snap.tables),
                    ..Default::default()
                };
                outcome::finish_tracked(
                    fe,
                    &rt.process,
                    &mut rec,
                    (None, None, Default::default()),
                    seen,
                );
            }
            return false;
        }
        Err(HeadError::Timeout) => {
            if conn.buf.is_empty() && (!first || fe.ignore_probes) {
                return false;
            }
            // HAProxy's connection layer answers the 408 itself, before any
            // stream exists, even to a client that sent nothing at all
            // (unless `option http-ignore-probes`): the page is sent but
            // neither logged nor counted as bytes out (`408 0 ... cR--`).
            rec.term(Cause::ClientTimeout, Phase::Request);
            rec.null = conn.buf.is_empty();
            rec.status = 408;
            // Counted as a request that failed (req_tot, ereq, hrsp_4xx),
            // and on the session's stick counters (not as an error).
            fc.count_request();
            rt.count_request();
            track::http_request(sess_trackers, None);
            rec.tally.ereq = Rows::FE;
            forward::send_parser_error(conn, 408, fe, false).await;
            let seen = outcome::Tracking {
                sess: sess_trackers,
                tables: Some(&snap.tables),
                ..Default::default()
            };
            outcome::finish_tracked(
                fe,
                &rt.process,
                &mut rec,
                (Some(408), None, Default::default()),
                seen,
            );
            return false;
        }
        Err(e) => {
            if matches!(e, HeadError::TooLarge) {
                let spot = error_spot::locate(&conn.buf, false, &H1Error::TooLarge);
                capture::request_error(fe, None, peer.inet(), &[&conn.buf], spot);
            }
            let tracking = outcome::Tracking {
                sess: sess_trackers,
                strm: None,
                http: true,
                tables: Some(&snap.tables),
            };
            return refused(rt, fe, conn, &mut rec, 400, tracking).await;
        }
    };
    rec.head_received();
    rec.tally.fe_in = raw.len() as u64;
    if h1 {
        fe.state.client.local().h1_total_streams.inc();
    }
    // The request's own stick counters (its content rules' and its
    // rules' `track-sc*`), released when it ends; its session's are the
    // connection's.
    let strm = Trackers::default();
    let stick = StickView {
        tables: &snap.tables,
        sess: sess_trackers,
        strm: Some(&strm),
    };
    let tracking = outcome::Tracking {
        sess: sess_trackers,
        strm: Some(&strm),
        http: true,
        tables: Some(&snap.tables),
    };
    // A head or framing that is refused, or a chunked body already bad in
    // the bytes that came with the head: answered here, nothing reaches a
    // server (400, or 405 / 422, see H1Error::request_status). The bytes
    // are kept for `show errors`.
    // An HTTP/2 stream's head is sluice's own writing of what the HTTP/2
    // layer let through (h2_convert): HAProxy forwards such a target or
    // value as it came (a `<` or a byte above 127 in `:path`, a control
    // byte in a value), where its HTTP/1 parser would refuse them.
    let lax = fe.accept_invalid_req || !h1;
    let head = match Head::parse_request_lax(raw, lax) {
        Ok(head) => head,
        Err((e, raw)) => {
            fc.count_request();
            rt.count_request();
            let spot = error_spot::locate(&raw, false, &e);
            capture::request_error(fe, None, peer.inet(), &[&raw, &conn.buf], spot);
            rec.t_req = -1;
            // The HTTP/2 preface where HTTP/2 is not taken: HAProxy's H1
            // parser passes its head, its stream refuses the version. The
            // head and the stream's page count in the log.
            if raw[..] == *crate::http::h2::PREFACE_HEAD {
                rec.bytes_in = crate::wire::logged_size::head(&raw);
                return refused_by_stream(rt, fe, conn, &mut rec, tracking).await;
            }
            return refused(rt, fe, conn, &mut rec, e.request_status(), tracking).await;
        }
    };
    // The transaction's variables: dropped with the request. Made before
    // the content rules, whose `set-priority-*` actions set its stream's
    // priority.
    let slots = [fe.captures.request.len(), fe.captures.response.len()];
    let vars = crate::sample::vars::Vars::with_slots(sess, slots);
    // SPOE: the stream starts, then the frontend's content rules run
    // (each request is a stream of its own, as in HAProxy).
    if !fe.spoe.is_empty() {
        use crate::config::spoe::SpoeEvent;
        let cx = || crate::sample::Ctx {
            src: peer.ip(),
            src_port: peer.inet().map(|a| a.port()),
            local: dst,
            req: Some(&head),
            frontend: &fe.name,
            frontend_id: fe.iid,
            vars: Some(&vars),
            tls,
            client: Some(client),
            stick: Some(&stick as &dyn crate::sample::stick::Stick),
            proxies: Some(&*snap as &dyn crate::sample::Proxies),
            ..Default::default()
        };
        for ev in [SpoeEvent::ClientSession, SpoeEvent::FrontendTcpRequest] {
            Box::pin(crate::upstream::spoe::send_event(
                fe.spoe.iter(),
                ev,
                &vars,
                &snap,
                cx,
            ))
            .await;
        }
    }
    // `tcp-request content` rules of an HTTP frontend run for each
    // request, before it is counted (HAProxy runs them before its HTTP
    // analysis), on the client's address and the head.
    let (peer, dst, mut content_fx) = if fe.tcp_content.is_empty() {
        (peer, dst, None)
    } else {
        // A future of its own, awaited at one point: the rules' view and
        // effects, held across two waits, would otherwise take room in
        // the request's future beside all of its waits (`route`'s too).
        let local = if crate::tcp::rules::moves_dst(&fe.tcp_content) {
            dst.or_else(|| conn.stream.local_addr().ok())
        } else {
            dst
        };
        let (verdict, fx) = async {
            let view = crate::tcp::rules::View {
                src: peer.inet(),
                local,
                payload: b"",
                res_payload: None,
                tls,
                client: Some(client),
                stick: Some(&stick),
            };
            let mut fx = crate::tcp::rules::Effects::default();
            let waits = crate::tcp::rules::Waits {
                log: fe.log.as_deref().map(|l| &l.setup),
                lua: fe.inspect_delay.is_some(),
                spoe: None,
                res_open: false,
            };
            let rules = (&fe.tcp_content, &fe.acls);
            let verdict = if fe.spoe.is_empty() {
                crate::tcp::rules::run_waiting(
                    rules,
                    &view,
                    Some(&vars),
                    Level::Stream,
                    &mut fx,
                    waits,
                    true,
                )
                .await
            } else {
                // Boxed: the SPOE messages' context stays out of the
                // request's future.
                let (view, vars, fx, head) = (&view, &vars, &mut fx, &head);
                let snap: &crate::snapshot::Snapshot = &snap;
                Box::pin(async move {
                    let cx = crate::sample::Ctx {
                        req: Some(head),
                        frontend: &fe.name,
                        frontend_id: fe.iid,
                        vars: Some(vars),
                        ..crate::acl::eval::RequestView::sample_ctx(view)
                    };
                    let spoe = crate::tcp::rules::SpoeRules {
                        engines: &fe.spoe,
                        may_wait: fe.inspect_delay.is_some(),
                        snap,
                        cx: Some(&cx),
                    };
                    let waits = crate::tcp::rules::Waits {
                        spoe: Some(spoe),
                        ..waits
                    };
                    crate::tcp::rules::run_waiting(
                        rules,
                        view,
                        Some(vars),
                        Level::Stream,
                        fx,
                        waits,
                        true,
                    )
                    .await
                })
                .await
            }
            .unwrap_or(crate::tcp::rules::Verdict::Accept);
            (verdict, fx)
        }
        .await;
        fx.mark(conn.stream.socket());
        if fx.level.is_some() {
            rec.level = fx.level;
        }
        if verdict != crate::tcp::rules::Verdict::Accept {
            return content_refused(rt, fe, conn, &mut rec, verdict, tracking);
        }
        // `set-src`, `set-dst`: the request's addresses from here on.
        let moved = (fx.src.map_or(peer, Peer::Ip), fx.dst.or(dst));
        if rec.enabled() && (fx.src.is_some() || fx.dst.is_some()) {
            rec.set_addrs(moved.0, moved.1.or_else(|| conn.stream.local_addr().ok()));
        }
        (moved.0, moved.1, Some(fx))
    };
    fc.count_request();
    rt.count_request();
    track::http_request(sess_trackers, Some(&strm));
    if let Via::Http2 { bad: true, .. } = via {
        rec.t_req = -1;
        return refused_by_stream(rt, fe, conn, &mut rec, tracking).await;
    }
    // HAProxy's line without a log format comes with each request whose
    // head parsed (its stream starts there), not at accept: a connection
    // that sends nothing, or no valid head, has none.
    if rec.enabled() {
        crate::observe::log::emit_connect(fe, peer, rec.local);
    }
    // `tune.http.maxhdr` below the parser's own bound: a 400 as for a head
    // with too many fields. An HTTP/1.0 GET, HEAD or DELETE with a body: a
    // 413 unless `h1-accept-payload-with-any-method` (a request smuggling
    // risk: old servers read no body there), as HAProxy 2.6 answers.
    let too_many = fe
        .max_hdr
        .is_some_and(|m| head.headers().count() > m as usize);
    let payload_refused = !fe.payload_any_method
        && h1
        && head.minor == 0
        && matches!(head.method(), b"GET" | b"HEAD" | b"DELETE")
        && (head.values("transfer-encoding").next().is_some()
            || !matches!(head.content_length(), Ok(None | Some(0))));
    let framing = if too_many || payload_refused {
        let e = crate::wire::h1::H1Error::TooManyHeaders;
        let spot = error_spot::locate(&head.raw, false, &e);
        Err((if too_many { 400 } else { 413 }, spot))
    } else {
        head.request_body().map_err(|e| {
            let spot = error_spot::locate(&head.raw, false, &e);
            (e.request_status(), spot)
        })
    };
    let framing = framing.and_then(|body| {
        if body == BodyKind::Chunked {
            h1::check_chunked_prefix(&conn.buf)
                .map_err(|spot| (400, spot.shifted(head.raw.len())))?;
        }
        Ok(body)
    });
    let body = match framing {
        Ok(body) => body,
        Err((status, spot)) => {
            capture::request_error(fe, None, peer.inet(), &[&head.raw, &conn.buf], spot);
            rec.t_req = -1;
            return refused(rt, fe, conn, &mut rec, status, tracking).await;
        }
    };
    // Both Transfer-Encoding and Content-Length: served, then closed.
    let smuggling_risk =
        body == BodyKind::Chunked && head.values("content-length").next().is_some();
    let wants_keep = head.wants_keep_alive();
    conn.asked = match (wants_keep, head.minor) {
        (false, _) => crate::wire::io::ConnAsk::Close,
        (true, 0) => crate::wire::io::ConnAsk::KeepAlive10,
        (true, _) => crate::wire::io::ConnAsk::Default,
    };
    let keep_client = wants_keep
        && fe.conn_mode != HttpConnMode::Close
        && !smuggling_risk
        && !crate::sys::process::stopping();

    rec.cap_req = crate::observe::log::capture_headers(&fe.captures.request, &head);
    // What `tcp-request content capture` rules took.
    if let Some(fx) = &mut content_fx {
        fx.capture_into(&mut rec.cap_req);
    }
    // A request answered without a server response shows empty response
    // captures (`{|}`), as HAProxy allocates them with the stream.
    if !fe.captures.response.is_empty() {
        rec.cap_resp = vec![None; fe.captures.response.len()];
    }
    // From here to the answer the request is a stream `show sess` lists.
    stream.begin();
    let req = Req {
        vars: &vars,
        stick: &stick,
        head: &head,
        body,
        peer,
        dst,
        stream,
        tls,
        client,
        proxies: &snap,
        first,
    };
    conn.pending = io::PendingBody::of(body, &conn.buf);
    conn.continued = false;
    conn.early_hints = (0, 0);
    // The body the rules read, set aside from the buffer while they run.
    let mut held = crate::http::body::Held::default();
    let mut out = route(rt, fe, &req, conn, keep_client, &mut rec, &mut held).await;
    held.rejoin(conn);
    // The `100 Continue` sent while waiting for the body: HAProxy counts
    // it among the bytes sent.
    if conn.continued {
        out.bytes_out += CONTINUE.len() as u64;
        out.logged_out += crate::wire::logged_size::head(CONTINUE);
    }
    out.bytes_out += conn.early_hints.0;
    out.logged_out += conn.early_hints.1;
    stream.end();
    // The request's variables go; the response's stay for the log line,
    // as in HAProxy.
    vars.to_response();
    // A body no server was sent (a local answer, a server that could not
    // be reached) still counts in `%U` for what came with the head.
    if out.body_in == 0 {
        out.body_logged = crate::wire::logged_size::buffered_body(body, &conn.buf);
    }
    // A body left unread is skipped when it is all here; else the
    // connection cannot carry another request.
    match std::mem::take(&mut conn.pending) {
        io::PendingBody::Buffered(n) if out.keep_client => bytes::Buf::advance(&mut conn.buf, n),
        io::PendingBody::Partial => out.keep_client = false,
        _ => {}
    }
    let samples = crate::observe::log::Samples {
        vars: Some(&vars),
        tls,
        client: Some(client),
        proxies: Some(&*snap),
        stick: None,
    };
    finish(rt, fe, &mut rec, &out, Some(&head), samples, tracking);
    out.keep_client
}

/// A request refused before it was routed (the parser's verdict): counted
/// in `ereq`, answered with the error page, logged as HAProxy logs what its
/// H1 parser refuses (`PR--`, `<BADREQ>`, 0 bytes: the page is not counted
/// in the log), and the connection closed. On the stick counters it is a
/// request, and the client's error but for a 501 (HAProxy's "not
/// implemented").
async fn refused(
    rt: &Runtime,
    fe: &FrontendRt,
    conn: &mut BufConn,
    rec: &mut LogRecord,
    status: u16,
    tracking: outcome::Tracking<'_>,
) -> bool {
    track::http_request(tracking.sess, tracking.strm);
    rec.tally.http_err = status != 501;
    rec.tally.ereq = Rows::FE;
    let out = forward::send_parser_error(conn, status, fe, false).await;
    rec.term(Cause::Proxy, Phase::Request);
    rec.status = i64::from(status);
    // The page is counted in `bout` but not in the log's bytes.
    rec.tally.fe_out += out.bytes_out;
    outcome::finish_tracked(
        fe,
        &rt.process,
        rec,
        (out.status, None, Default::default()),
        tracking,
    );
    false
}

/// [`refused`] for a head HAProxy's H1 parser passes and its stream
/// refuses with a 400 (`PR--`, `<BADREQ>`): the stream's page, counted in
/// the log's bytes.
async fn refused_by_stream(
    rt: &Runtime,
    fe: &FrontendRt,
    conn: &mut BufConn,
    rec: &mut LogRecord,
    tracking: outcome::Tracking<'_>,
) -> bool {
    rec.tally.http_err = true;
    rec.tally.ereq = Rows::FE;
    let out = forward::send_error(conn, 400, fe, false).await;
    rec.term(Cause::Proxy, Phase::Request);
    rec.status = 400;
    rec.tally.fe_out += out.bytes_out;
    rec.bytes_out = out.logged_out;
    outcome::finish_tracked(
        fe,
        &rt.process,
        rec,
        (out.status, None, Default::default()),
        tracking,
    );
    false
}

/// A request an HTTP frontend's `tcp-request content` rules refused:
/// closed without an answer (`silent-drop`: without the client being
/// told), counted in `dreq` and not as a request, logged as HAProxy logs
/// it (`PR--`, status -1, `<BADREQ>`: its HTTP analysis never began).
fn content_refused(
    rt: &Runtime,
    fe: &FrontendRt,
    conn: &mut BufConn,
    rec: &mut LogRecord,
    verdict: crate::tcp::rules::Verdict,
    tracking: outcome::Tracking<'_>,
) -> bool {
    if verdict == crate::tcp::rules::Verdict::SilentDrop
        && let Some(tcp) = conn.stream.socket()
    {
        crate::tcp::rules::silent_drop(&tcp);
    }
    rec.tally.dreq = Rows::FE;
    rec.term(Cause::Proxy, Phase::Request);
    rec.t_req = -1;
    outcome::finish_tracked(
        fe,
        &rt.process,
        rec,
        (None, None, Default::default()),
        tracking,
    );
    false
}

/// The end of a request: what the client got, added to the exchange's
/// outcome, goes to the end stage (counters and the log line). Its bytes
/// count on the frontend (and, over HTTP/1, in `h1_bytes_in/out`, the wire
/// bytes HAProxy's h1 module counts there).
fn finish(
    rt: &Runtime,
    fe: &FrontendRt,
    rec: &mut LogRecord,
    out: &Outcome,
    head: Option<&Head>,
    samples: crate::observe::log::Samples<'_>,
    tracking: outcome::Tracking<'_>,
) {
    if let Some(s) = out.status {
        rec.status = i64::from(s);
    }
    rec.tally.fe_in += out.body_in;
    rec.tally.fe_out += out.bytes_out;
    rec.bytes_out = out.logged_out;
    // The head as HAProxy counts it, the body as received.
    rec.bytes_in = out.body_logged + head.map_or(0, Head::logged_size);
    outcome::finish_tracked(fe, &rt.process, rec, (out.status, head, samples), tracking);
}

/// The interim answer to `Expect: 100-continue`.
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// A request as routing sees it.
struct Req<'a> {
    head: &'a Head,
    body: BodyKind,
    peer: Peer,
    /// The address the client connected to, from a PROXY header.
    dst: Option<SocketAddr>,
    stream: &'a StreamEntry,
    /// The client connection's TLS, if any.
    tls: Option<&'a TlsFacts>,
    client: &'a ClientFacts,
    /// The snapshot the request runs on (the proxies' state for `nbsrv`
    /// and the like in conditions).
    proxies: &'a crate::snapshot::Snapshot,
    /// The connection's first request (`http_first_req`).
    first: bool,
    vars: &'a crate::sample::vars::Vars<'a>,
    /// The stick tables and the request's counters.
    stick: &'a StickView<'a>,
}

async fn route(
    rt: &Runtime,
    fe: &Arc<FrontendRt>,
    rq: &Req<'_>,
    conn: &mut BufConn,
    keep: bool,
    rec: &mut LogRecord,
    held: &mut crate::http::body::Held,
) -> Outcome {
    let (head, body, peer, tls) = (rq.head, rq.body, rq.peer, rq.tls);
    // The local address costs a system call when the log has not asked
    // for it: looked up only for ACLs that read it.
    let local = match rec.local {
        Some(a) => a.inet(),
        None if fe.acls.reads_local() => rq.dst.or_else(|| conn.stream.local_addr().ok()),
        None => None,
    };
    // The views of the request the conditions read are made where one is
    // read (each costs as much as the fields it copies).
    // A local answer does not read the request body: the connection
    // carries another request after it only if the body is all here, to
    // be skipped.
    let keep_local = keep && conn.pending != io::PendingBody::Partial;

    // `monitor-uri`: the exact URI is answered here, before any rule, and
    // not logged (HAProxy); `monitor fail` turns the answer into a 503. A
    // path (`/health`) also matches the path of an absolute-form target
    // (`http://host/health`), as in HAProxy 2.6.
    if let Some((uri, fail)) = &fe.monitor
        && (head.target() == uri.as_bytes()
            || (uri.starts_with('/')
                && crate::snapshot::lb::path_of(head.target()) == uri.as_bytes()))
    {
        rec.logged = true;
        let view = View::of_request(head, rq, local, fe, None);
        let failing = fail.as_ref().is_some_and(|c| fe.acls.eval(c, &view));
        let code = if failing { 503 } else { 200 };
        return forward::send_error(conn, code, fe, keep_local).await;
    }
    if let Some(stats) = &fe.stats
        && let Some(out) = stats_page(
            rt,
            stats,
            &fe.acls,
            &View::of_request(head, rq, local, fe, None),
            body,
            conn,
            keep,
            fe,
        )
        .await
    {
        stats_logged(rec);
        return out;
    }
    // The request's id, made before any rule can use it.
    if let Some(uid) = &fe.unique_id {
        let samples = crate::observe::log::Samples {
            vars: Some(rq.vars),
            tls,
            client: Some(rq.client),
            proxies: Some(rq.proxies),
            stick: Some(rq.stick),
        };
        rec.unique_id = Some(crate::observe::log::unique_id(
            fe,
            &uid.format,
            rec,
            Some(head),
            samples,
        ));
    }
    // Edits of the header and path rules: created by the first rule that
    // applies, so a request no rule touches allocates nothing. The
    // frontend's rules run first, then the backend's, on the same edits.
    let mut edits: Option<rules::Edits> = None;
    // The head as the legacy `req*` filters rewrote it, if they did (the
    // frontend's, then the backend's); and their "allowed" verdict.
    // Boxed: rare, and these live in the future of every request (and so
    // of every connection) where `forward`'s does.
    let (mut fe_head, mut be_head) = (None, None);
    let mut allowed = false;
    // The head the fetches read once an `Expect: 100-continue` was
    // answered (without that field, as HAProxy holds it then).
    let shown = std::sync::OnceLock::new();
    // What `cache-use` rules learn (None until one runs).
    let mut cache_txn: Option<crate::http::cache::CacheTxn> = None;
    let mut run = RuleRun {
        cache: &mut cache_txn,
        rt,
        fe,
        stream: rq.stream,
        peer,
        src: peer.ip(),
        src_port: peer.inet().map(|a| a.port()),
        dst: rq.dst,
        first: rq.first,
        local,
        tls,
        client: rq.client,
        proxies: rq.proxies,
        shown: &shown,
        conn,
        keep_local,
        rec,
        edits: &mut edits,
        allowed: &mut allowed,
        vars: rq.vars,
        stick: rq.stick,
        keep,
        body,
    };
    // `option http-buffer-request` waits before the frontend's rules;
    // the body fetches see what is there, waited for or not.
    if body != BodyKind::None {
        if fe.buffer_request
            && let Some(out) = Box::pin(run.buffer_body(head, fe.timeouts.http_request)).await
        {
            return out;
        }
        if crate::sample::fetch::body_read(false) {
            let room = crate::http::body::room(head, fe.max_head, body == BodyKind::Chunked);
            // Not waited for: what HAProxy's first read brought.
            let first_read =
                (!fe.buffer_request).then(|| fe.max_head.saturating_sub(head.raw.len()));
            held.take(run.conn, body, room, first_read);
        }
    }
    // SPOE messages of the frontend's request, before its rules read
    // what the agents answer.
    if !fe.spoe.is_empty() {
        use crate::config::spoe::SpoeEvent;
        let event = SpoeEvent::FrontendHttpRequest;
        Box::pin(run.spoe_event(head, fe.spoe.iter(), event, None)).await;
    }
    // Without rules the stage is never made (its future is large).
    let head = if fe.http_request.is_empty()
        && fe.legacy_req.is_none()
        && fe.restrict_hdr_names == crate::config::model::HdrNamePolicy::Preserve
    {
        head
    } else {
        match run
            .stage(head, &mut fe_head, Stage::frontend(fe), held)
            .await
        {
            Ok(h) => h,
            Err(out) => return out,
        }
    };
    // A hit of the frontend's own `cache-use`: no backend is switched to
    // (HAProxy's stream has its target already): the frontend answers,
    // with its own rules (a `listen` section's) and counters.
    if run.cache.as_ref().is_some_and(|t| t.hit.is_some()) {
        return Box::pin(frontend_hit(
            rt, fe, rq, head, run.conn, keep, run.rec, run.cache,
        ))
        .await;
    }
    let backend = if fe.switching.is_empty() {
        fe.default_backend.as_ref()
    } else {
        let rb = held.view();
        let fetched = shown.get().unwrap_or(head);
        // The addresses as the frontend's rules left them (`set-src`).
        let view = View {
            src: run.src,
            src_port: run.src_port,
            ..View::of_request(fetched, rq, run.local, fe, rb.as_ref())
        };
        let sample_cx = crate::sample::Ctx {
            src: run.src,
            src_port: run.src_port,
            local: run.local.or(run.dst),
            req: Some(fetched),
            frontend: &fe.name,
            req_body: rb.as_ref(),
            tls,
            client: Some(rq.client),
            stick: Some(rq.stick as &dyn crate::sample::stick::Stick),
            ..Default::default()
        };
        fe.pick_backend(|c| fe.acls.eval(c, &view), &sample_cx)
    };
    // The same run goes on with the backend's rules: until then the
    // connection and the record are reached through it.
    let Some(be) = backend else {
        run.rec.term(Cause::Server, Phase::Connect);
        // The page says what the request asked of the connection, as any
        // of the stream's (HAProxy 2.6.12: `connection: close` to a client
        // that asked to close, `keep-alive` to an HTTP/1.0 one kept).
        return forward::send_error(run.conn, 503, fe, keep_local).await;
    };
    run.rec.assign_backend(be);
    let _session = forward::BackendSession::start(be);
    rq.stream.to_backend(be.iid);
    // Only a dynamic name can reach a TCP backend from here: HAProxy 2.6
    // cannot switch an HTTP stream to it and closes without an answer,
    // logged `IR--` with a 500.
    if be.mode != crate::config::model::Mode::Http {
        run.rec.term(Cause::Internal, Phase::Request);
        return Outcome {
            status: Some(500),
            keep_client: false,
            bytes_out: 0,
            logged_out: 0,
            body_in: 0,
            body_logged: 0,
        };
    }
    // The body is the connection's again for the stats page's form.
    let reads_body = body != BodyKind::None && crate::sample::fetch::body_read(false);
    if be.stats.is_some() {
        held.rejoin(run.conn);
    }
    if let Some(stats) = &be.stats
        && fe.stats.as_ref().map(|s| &s.page) != Some(&stats.page)
        && let Some(out) = stats_page(
            rt,
            stats,
            &be.acls,
            &View::of_request(shown.get().unwrap_or(head), rq, local, fe, None),
            body,
            run.conn,
            keep,
            fe,
        )
        .await
    {
        stats_logged(run.rec);
        return out;
    }
    // A backend's `option http-buffer-request` waits once it is chosen,
    // before its rules (a `listen` section waited above).
    if be.iid != fe.iid && be.buffer_request && body != BodyKind::None {
        held.rejoin(run.conn);
        if let Some(out) = Box::pin(run.buffer_body(head, be.timeouts.http_request)).await {
            return out;
        }
    }
    // A FastCGI request gives its body's length first: a chunked body is
    // waited for as `http-buffer-request` waits (HAProxy 2.6's FastCGI
    // application does the same; one its buffer cannot hold is refused
    // when the request goes out, `http/exchange.rs`).
    if be.fcgi.is_some()
        && body == BodyKind::Chunked
        && !fe.buffer_request
        && !(be.iid != fe.iid && be.buffer_request)
    {
        held.rejoin(run.conn);
        if let Some(out) = Box::pin(run.buffer_body(head, be.timeouts.http_request)).await {
            return out;
        }
    }
    if reads_body && !held.is_set() {
        let room = crate::http::body::room(head, fe.max_head, body == BodyKind::Chunked);
        let waited = fe.buffer_request || be.buffer_request;
        let first_read = (!waited).then(|| fe.max_head.saturating_sub(head.raw.len()));
        held.take(run.conn, body, room, first_read);
    }
    // SPOE: the backend's content rules, then its `http-request` rules
    // (the frontend's engines, then the backend's; a listen section's
    // sent these with the frontend's events).
    let be_spoe = (be.iid != fe.iid).then_some(&be.spoe[..]);
    if !fe.spoe.is_empty() || be_spoe.is_some_and(|e| !e.is_empty()) {
        use crate::config::spoe::SpoeEvent;
        for event in [SpoeEvent::BackendTcpRequest, SpoeEvent::BackendHttpRequest] {
            let engines = crate::upstream::spoe::engines(&fe.spoe, be_spoe);
            Box::pin(run.spoe_event(head, engines, event, Some(be))).await;
        }
    }
    // A `listen` section is its own backend: its rules ran above already.
    let head = if be.iid != fe.iid
        && (!be.http_request.is_empty()
            || be.legacy_req.is_some()
            || be.restrict_hdr_names != crate::config::model::HdrNamePolicy::Preserve)
    {
        match run
            .stage(head, &mut be_head, Stage::backend(be), held)
            .await
        {
            Ok(h) => h,
            Err(out) => return out,
        }
    } else {
        head
    };
    // The client and the address it reached as the rules left them.
    let moved = (run.peer, run.dst);
    // `unique-id-header`: the id goes to the server after the rules'
    // edits, as HAProxy adds it once the rules have run.
    if let Some(uid) = &fe.unique_id
        && let Some(name) = &uid.header
    {
        let id = run.rec.unique_id.as_deref().unwrap_or("");
        run.edits
            .get_or_insert_with(Default::default)
            .add_header(name, id.as_bytes().to_vec());
    }
    // The compression filter's choice, on the request as the rules left
    // it (`compression offload` takes `Accept-Encoding` out of it).
    let comp = crate::http::compress::negotiate(fe, be, head, &mut edits);
    // The server gets the body from the connection's buffer.
    held.rejoin(conn);
    // Read no more: dropped here, it takes no room beside `forward`'s
    // future (a value with a destructor lives to the end of its scope).
    drop(shown);
    let hit = cache_txn.as_mut().and_then(|t| t.hit.take());
    let ctx = forward::ReqCtx {
        comp,
        cache: cache_txn.as_ref(),
        src: moved.0.ip(),
        peer: moved.0,
        dst: moved.1,
        edits: edits.as_ref(),
        stream: rq.stream,
        persisted: None,
        persist_ignored: false,
        tls,
        client: rq.client,
        vars: rq.vars,
        rt,
        proxies: rq.proxies,
        stick: Some(rq.stick),
        stores: Default::default(),
    };
    if let Some(hit) = hit {
        // The answer comes from the cache: the request's body, if any, is
        // not read (the connection goes on only if it is all here).
        let keep_local = keep && conn.pending != io::PendingBody::Partial;
        return Box::pin(crate::http::cache::serve(
            fe, be, head, &ctx, conn, keep_local, rec, hit, true,
        ))
        .await;
    }
    forward::forward(fe, be, head, body, conn, keep, rec, &ctx).await
}

/// The answer to a request its frontend's `cache-use` found in the cache.
/// The response rules are those of the section's own backend for a
/// `listen`, else of the backend the request would go to (HAProxy runs
/// the frontend's only there); no backend counts the request.
#[allow(clippy::too_many_arguments)]
async fn frontend_hit(
    rt: &Runtime,
    fe: &Arc<FrontendRt>,
    rq: &Req<'_>,
    head: &Head,
    conn: &mut BufConn,
    keep: bool,
    rec: &mut LogRecord,
    cache_txn: &mut Option<crate::http::cache::CacheTxn>,
) -> Outcome {
    let Some(hit) = cache_txn.as_mut().and_then(|t| t.hit.take()) else {
        return forward::send_error(conn, 500, fe, false).await;
    };
    let own = fe.by_name.as_ref().and_then(|m| m.get(&fe.name)).cloned();
    let Some(be) = own
        .filter(|b| b.iid == fe.iid)
        .or_else(|| fe.default_backend.clone())
    else {
        return forward::send_error(conn, 503, fe, false).await;
    };
    let mut edits = None;
    let comp = crate::http::compress::negotiate(fe, &be, head, &mut edits);
    let ctx = forward::ReqCtx {
        comp,
        cache: cache_txn.as_ref(),
        src: rq.peer.ip(),
        peer: rq.peer,
        dst: rq.dst,
        edits: None,
        stream: rq.stream,
        persisted: None,
        persist_ignored: false,
        tls: rq.tls,
        client: rq.client,
        vars: rq.vars,
        rt,
        proxies: rq.proxies,
        stick: Some(rq.stick),
        stores: Default::default(),
    };
    let keep_local = keep && conn.pending != io::PendingBody::Partial;
    crate::http::cache::serve(fe, &be, head, &ctx, conn, keep_local, rec, hit, false).await
}

/// `http-request|http-response capture`: the expression's value as text,
/// cut to the slot's length, into the slot (left as it was without a
/// value).
pub(crate) fn capture(
    caps: &mut [Option<Vec<u8>>],
    slots: &[(String, usize)],
    slot: usize,
    expr: &crate::sample::Expr,
    cx: &rules::FmtCtx<'_>,
) {
    let (Some(dst), Some((_, len))) = (caps.get_mut(slot), slots.get(slot)) else {
        return;
    };
    let scx = rules::sample_ctx(cx);
    let Some(v) = expr
        .eval(&scx)
        .and_then(|s| s.cast(crate::sample::value::SmpType::Str))
    else {
        return;
    };
    let b = v.bytes().unwrap_or(b"");
    *dst = Some(b[..b.len().min(*len)].to_vec());
}

/// One proxy's request rules: `block` and `http-request` rules, then the
/// legacy `req*` filters, then `redirect` rules.
struct Stage<'p> {
    rules: &'p [(HttpRequestAction, Option<CompiledCond>)],
    legacy_at: usize,
    legacy: Option<&'p LegacyRt>,
    acls: &'p AclSet,
    /// Set for a backend's rules.
    be: Option<&'p BackendRt>,
    timeouts: &'p Timeouts,
    /// `option http-restrict-req-hdr-names`, applied after the rules.
    restrict: crate::config::model::HdrNamePolicy,
}

impl<'p> Stage<'p> {
    fn frontend(fe: &'p FrontendRt) -> Self {
        Stage {
            rules: &fe.http_request,
            legacy_at: fe.legacy_at,
            legacy: fe.legacy_req.as_deref(),
            acls: &fe.acls,
            be: None,
            timeouts: &fe.timeouts,
            restrict: fe.restrict_hdr_names,
        }
    }

    fn backend(be: &'p BackendRt) -> Self {
        Stage {
            rules: &be.http_request,
            legacy_at: be.legacy_at,
            legacy: be.legacy_req.as_deref(),
            acls: &be.acls,
            be: Some(be),
            timeouts: &be.timeouts,
            restrict: be.restrict_hdr_names,
        }
    }
}

/// One pass of `http-request` rules (the frontend's, then the backend's)
/// over a request: header and path edits accumulate in `edits`; a rule that
/// answers the client itself (deny, redirect, return, a service) ends it.
struct RuleRun<'r> {
    rt: &'r Runtime,
    fe: &'r FrontendRt,
    /// The connection's `show sess` entry.
    stream: &'r StreamEntry,
    /// The client as the rules left it (`set-src`, `set-src-port`).
    peer: Peer,
    src: Option<IpAddr>,
    src_port: Option<u16>,
    /// The address a PROXY header names as the client's destination.
    dst: Option<SocketAddr>,
    /// The connection's first request.
    first: bool,
    local: Option<SocketAddr>,
    tls: Option<&'r TlsFacts>,
    client: &'r ClientFacts,
    proxies: &'r crate::snapshot::Snapshot,
    /// The head without its `Expect` fields, once a `100 Continue` was
    /// sent: the fetches of the rules after read it.
    shown: &'r std::sync::OnceLock<Head>,
    conn: &'r mut BufConn,
    keep_local: bool,
    rec: &'r mut LogRecord,
    edits: &'r mut Option<rules::Edits>,
    /// `reqallow` matched (HAProxy's per-request flag).
    allowed: &'r mut bool,
    vars: &'r crate::sample::vars::Vars<'r>,
    /// The stick tables and the request's counters.
    stick: &'r StickView<'r>,
    /// Whether the client connection may carry another request (what
    /// `keep_local` becomes once the body is all here).
    keep: bool,
    /// The request's body framing.
    body: BodyKind,
    /// What the `cache-use` rules learned (made by the first one).
    cache: &'r mut Option<crate::http::cache::CacheTxn>,
}

/// Why a proxy's rules stopped before their end.
enum Stop {
    /// A rule answered the request.
    Answered(Outcome),
    /// Rule `at` is `wait-for-body`: the body is waited for, then the
    /// rules after it run.
    Wait {
        at: usize,
        wait: crate::config::model::WaitForBody,
    },
    /// Rule `at` changed what the rules see of the connection (`set-src`
    /// and the like): the rules after it run on a new view.
    Moved { at: usize },
}

impl RuleRun<'_> {
    /// Sends the messages of `event` whose conditions hold to each
    /// engine's agent; the variables they answer are set for the rules.
    async fn spoe_event(
        &mut self,
        head: &Head,
        engines: impl Iterator<Item = &Arc<crate::snapshot::spoe::SpoeRt>>,
        event: crate::config::spoe::SpoeEvent,
        be: Option<&BackendRt>,
    ) {
        let fe = self.fe;
        let cx = crate::sample::Ctx {
            src: self.src,
            src_port: self.src_port,
            local: self.local.or(self.dst),
            req: Some(self.shown.get().unwrap_or(head)),
            frontend: &fe.name,
            frontend_id: fe.iid,
            backend: be.map(|b| b.name.as_str()),
            backend_id: be.map(|b| b.iid),
            vars: Some(self.vars),
            tls: self.tls,
            client: Some(self.client),
            proxies: Some(self.proxies as &dyn crate::sample::Proxies),
            stick: Some(self.stick as &dyn crate::sample::stick::Stick),
            ..Default::default()
        };
        for e in engines {
            if e.wants(event, self.vars) {
                let msgs = e.for_event(event, &cx);
                let about = crate::upstream::spoe::Sent::Event(event);
                e.notify(&msgs, &cx, self.vars, self.proxies, about).await;
            }
        }
    }

    /// Runs one proxy's rules on `head`; gives the head the request goes
    /// on with (`head`, or the legacy filters' rewrite, kept in `slot`),
    /// or the outcome when a rule answered the request.
    async fn stage<'h>(
        &mut self,
        head: &'h Head,
        slot: &'h mut Option<Box<Head>>,
        st: Stage<'_>,
        held: &mut crate::http::body::Held,
    ) -> Result<&'h Head, Outcome> {
        use crate::config::model::{HdrNamePolicy, NameMatch};
        let (restrict, be) = (st.restrict, st.be);
        let head = self.stage_rules(head, slot, st, held).await?;
        if restrict == HdrNamePolicy::Preserve {
            return Ok(head);
        }
        // Evaluated after the rules, on the fields the request came with.
        let bad = |n: &[u8]| !n.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-');
        if restrict == HdrNamePolicy::Reject {
            if head.headers().any(|(n, _)| bad(n)) {
                self.rec.tally.dreq = rows(be);
                self.rec.tally.http_err = true;
                self.rec.term(Cause::Proxy, Phase::Request);
                return Err(
                    forward::send_error_be(self.conn, 403, self.fe, be, self.keep_local).await,
                );
            }
            return Ok(head);
        }
        for (n, _) in head.headers().filter(|(n, _)| bad(n)) {
            let name = String::from_utf8_lossy(n).into_owned();
            self.edits
                .get_or_insert_with(Default::default)
                .del_matching(&name, &NameMatch::Str);
        }
        Ok(head)
    }

    /// [`stage`](Self::stage)'s rules and legacy filters.
    async fn stage_rules<'h>(
        &mut self,
        head: &'h Head,
        slot: &'h mut Option<Box<Head>>,
        st: Stage<'_>,
        held: &mut crate::http::body::Held,
    ) -> Result<&'h Head, Outcome> {
        let (before, after) = st.rules.split_at(st.legacy_at.min(st.rules.len()));
        if let Some(out) = self.rules(head, before, &st, held).await {
            return Err(out);
        }
        let Some(l) = st.legacy else {
            return match self.rules(head, after, &st, held).await {
                Some(out) => Err(out),
                None => Ok(head),
            };
        };
        let fe = self.fe;
        let rb = held.view();
        let view = View {
            head: self.shown.get().unwrap_or(head),
            res: None,
            src: self.src,
            src_port: self.src_port,
            local: self.local,
            tls: self.tls,
            client: Some(self.client),
            proxies: Some(self.proxies),
            server_conn: None,
            frontend: &fe.name,
            frontend_id: fe.iid,
            backend: st.be.map(|b| (b.name.as_str(), b.iid)),
            vars: Some(self.vars),
            req_body: rb.as_ref(),
            res_body: None,
            stick: Some(self.stick),
        };
        let verdict = legacy::apply(l, head, self.edits.as_ref(), st.acls, &view, self.allowed);
        let head: &'h Head = match verdict {
            legacy::Verdict::Pass(None) => head,
            legacy::Verdict::Pass(Some(h)) => {
                // The rules' edits are part of the rewritten head now.
                *self.edits = None;
                slot.insert(Box::new(h))
            }
            legacy::Verdict::Deny => {
                self.rec.tally.dreq = rows(st.be);
                self.rec.tally.http_err = true;
                self.rec.term(Cause::Proxy, Phase::Request);
                return Err(forward::send_error_be(
                    self.conn,
                    403,
                    self.fe,
                    st.be,
                    self.keep_local,
                )
                .await);
            }
            legacy::Verdict::Tarpit => return Err(self.tarpit(st.be, st.timeouts, None).await),
            legacy::Verdict::Invalid => {
                // HAProxy 1.8's `return_bad_req`: 400, a failed request.
                self.rec.tally.ereq = Rows::FE;
                self.rec.term(Cause::Proxy, Phase::Request);
                return Err(forward::send_error_be(self.conn, 400, self.fe, st.be, false).await);
            }
        };
        match self.rules(head, after, &st, held).await {
            Some(out) => Err(out),
            None => Ok(head),
        }
    }

    /// Runs `rules` on `head`, waiting for the body where a
    /// `wait-for-body` rule says so; the outcome when one answered.
    async fn rules(
        &mut self,
        head: &Head,
        mut rules: &[(HttpRequestAction, Option<CompiledCond>)],
        st: &Stage<'_>,
        held: &mut crate::http::body::Held,
    ) -> Option<Outcome> {
        loop {
            // The view is rebuilt after a wait: the body it shows grew.
            let (src, src_port, local, tls, vars, fe) = (
                self.src,
                self.src_port,
                self.local,
                self.tls,
                Some(self.vars),
                self.fe,
            );
            let client = Some(self.client);
            let proxies = Some(self.proxies);
            let rb = held.view();
            let view = View {
                head: self.shown.get().unwrap_or(head),
                res: None,
                src,
                src_port,
                local,
                tls,
                client,
                proxies,
                server_conn: None,
                frontend: &fe.name,
                frontend_id: fe.iid,
                backend: st.be.map(|b| (b.name.as_str(), b.iid)),
                vars,
                req_body: rb.as_ref(),
                res_body: None,
                stick: Some(self.stick),
            };
            match self
                .apply(&view, head, rules, st.acls, st.be, st.timeouts)
                .await
            {
                None => return None,
                Some(Stop::Answered(out)) => return Some(out),
                Some(Stop::Moved { at }) => rules = rules.get(at + 1..).unwrap_or(&[]),
                Some(Stop::Wait { at, wait }) => {
                    rules = rules.get(at + 1..).unwrap_or(&[]);
                    // A future of its own: the rules' stays small.
                    if let Some(out) = Box::pin(self.wait_rule(head, wait, st.be, held)).await {
                        return Some(out);
                    }
                }
            }
        }
    }

    /// `set-src`, `set-src-port`, `set-dst`, `set-dst-port`: the address
    /// the rest of the request sees (rules, backend choice, the server's
    /// `X-Forwarded-For`, the log). A value that is no address (no port)
    /// changes nothing; a new address keeps the port, a new port the
    /// address (`0.0.0.0` where there was none), as in HAProxy.
    fn set_addr(
        &mut self,
        part: crate::config::model::AddrPart,
        v: Option<crate::sample::value::Sample<'_>>,
        local: Option<SocketAddr>,
    ) {
        use crate::config::model::AddrPart;
        use crate::tcp::rules::moved_addr;
        let Some(v) = v else { return };
        match part {
            AddrPart::Src | AddrPart::SrcPort => {
                let Some(new) = moved_addr(part, v, self.peer.inet()) else {
                    return;
                };
                self.peer = Peer::Ip(new);
                self.src = Some(new.ip());
                self.src_port = Some(new.port());
                if self.rec.client.is_some() {
                    self.rec.client = Some(self.peer);
                }
            }
            AddrPart::Dst | AddrPart::DstPort => {
                let Some(new) = moved_addr(part, v, self.local.or(local)) else {
                    return;
                };
                self.local = Some(new);
                self.dst = Some(new);
                if self.rec.local.is_some() {
                    self.rec.local = Some(Peer::Ip(new));
                }
            }
        }
    }

    /// `http-request wait-for-body`: the body for the rules after it, or
    /// the 408 when it does not come in time.
    async fn wait_rule(
        &mut self,
        head: &Head,
        wait: crate::config::model::WaitForBody,
        be: Option<&BackendRt>,
        held: &mut crate::http::body::Held,
    ) -> Option<Outcome> {
        if self.body == BodyKind::None {
            return None;
        }
        held.rejoin(self.conn);
        self.send_continue(head).await;
        let room = crate::http::body::room(head, self.fe.max_head, self.body == BodyKind::Chunked);
        let limit = Some(wait.time)
            .into_iter()
            .chain(self.fe.timeouts.client)
            .min();
        let waited =
            crate::http::body::wait(self.conn, self.body, room, wait.at_least, limit).await;
        if waited == crate::http::body::Waited::Timeout {
            return Some(self.body_timeout(be).await);
        }
        self.body_came();
        if crate::sample::fetch::body_read(false) {
            held.take(self.conn, self.body, room, None);
        }
        None
    }

    /// `option http-buffer-request`: waits for the body (as much as the
    /// buffer holds) within `timeout http-request` of the proxy that asks
    /// (and the client's timeout); the 408 answered when it runs out.
    async fn buffer_body(
        &mut self,
        head: &Head,
        http_request: Option<std::time::Duration>,
    ) -> Option<Outcome> {
        let room = crate::http::body::room(head, self.fe.max_head, self.body == BodyKind::Chunked);
        let limit = http_request
            .into_iter()
            .chain(self.fe.timeouts.client)
            .min();
        let be = self.rec.backend.clone();
        self.send_continue(head).await;
        match crate::http::body::wait(self.conn, self.body, room, 0, limit).await {
            crate::http::body::Waited::Timeout => Some(self.body_timeout(be.as_deref()).await),
            crate::http::body::Waited::Ready => {
                self.body_came();
                // HAProxy's request time then covers the body.
                self.rec.head_received();
                None
            }
        }
    }

    /// Before a wait for the body: HAProxy 2.6 answers an HTTP/1.1
    /// `Expect: 100-continue` itself (the client may hold the body until
    /// then), once, and takes the field out of what goes to the server.
    async fn send_continue(&mut self, head: &Head) {
        if self.conn.continued
            || head.minor == 0
            || !head
                .values("expect")
                .any(|v| h1::trim(v).eq_ignore_ascii_case(b"100-continue"))
        {
            return;
        }
        self.conn.continued = true;
        self.edits
            .get_or_insert_with(Default::default)
            .del_header("expect");
        let _ = self.shown.set(head.without_expect());
        let _ = self.conn.answer(CONTINUE, self.fe.timeouts.client).await;
    }

    /// More of the body is in the buffer: a local answer may now keep the
    /// connection (the body is skipped) if all of it is.
    fn body_came(&mut self) {
        self.conn.pending = io::PendingBody::of(self.body, &self.conn.buf);
        self.keep_local = self.keep && self.conn.pending != io::PendingBody::Partial;
    }

    /// The request's body for a Lua HTTP service's `receive` and
    /// `getline`: waited for (as much as HAProxy's buffer holds, within
    /// the client's timeout), then copied; empty without one.
    async fn service_body(&mut self, head: &Head) -> Vec<u8> {
        if self.body == BodyKind::None {
            return Vec::new();
        }
        self.send_continue(head).await;
        let room = crate::http::body::room(head, self.fe.max_head, self.body == BodyKind::Chunked);
        let _ =
            crate::http::body::wait(self.conn, self.body, room, 0, self.fe.timeouts.client).await;
        self.body_came();
        let mut decoded = Vec::new();
        crate::http::body::view(&self.conn.buf, self.body, room, &mut decoded)
            .data
            .to_vec()
    }

    /// The body did not come in time: HAProxy 2.6 answers 408 and logs
    /// `cR--` without a request time, a failed request of the frontend.
    async fn body_timeout(&mut self, be: Option<&BackendRt>) -> Outcome {
        self.rec.tally.ereq = Rows::FE;
        self.rec.term(Cause::ClientTimeout, Phase::Request);
        self.rec.t_req = -1;
        forward::send_body_timeout(self.conn, self.fe, be).await
    }

    /// `reqtarpit`, `http-request tarpit`: the request is held for
    /// `timeout tarpit` (else `timeout connect`, else not at all), then
    /// answered (500 by default) and the connection closed; logged `PT`
    /// (HAProxy).
    async fn tarpit(
        &mut self,
        be: Option<&BackendRt>,
        t: &Timeouts,
        reply: Option<(&HttpReply, &rules::FmtCtx<'_>)>,
    ) -> Outcome {
        self.rec.tally.dreq = rows(be);
        self.rec.tally.http_err = true;
        self.rec.term(Cause::Proxy, Phase::Tarpit);
        if let Some(d) = t.tarpit.or(t.connect) {
            tokio::time::sleep(d).await;
        }
        // HAProxy 2.6.12 keeps a keep-alive connection after the answer.
        let keep = self.keep_local;
        match reply {
            Some((reply, cx)) => self.reply(reply, cx, be, keep).await,
            None => forward::send_error_be(self.conn, 500, self.fe, be, keep).await,
        }
    }

    /// Sends the answer of a `return` or `deny` rule: its own content, or
    /// the error page of its status (`errorfile` first).
    async fn reply(
        &mut self,
        reply: &HttpReply,
        cx: &rules::FmtCtx<'_>,
        be: Option<&BackendRt>,
        keep: bool,
    ) -> Outcome {
        let Some(out) = crate::http::reply::render(reply, cx, keep) else {
            return forward::send_error_seen(self.conn, reply.status, self.fe, be, keep, cx).await;
        };
        forward::send_answer_seen(self.conn, &out, reply.status, keep, self.fe, be, Some(cx)).await
    }

    /// The `http-response` rules of `be` then `fe` (of `fe` alone for a
    /// service in a frontend) on the answer `out` of the Lua service
    /// `name`: the answer as they left it and how much larger its head
    /// grew in `%B`'s count, None for one they refused.
    async fn service_response_rules(
        &mut self,
        name: &str,
        req: &Head,
        be: Option<&BackendRt>,
        out: Vec<u8>,
        keep: bool,
    ) -> Option<(Vec<u8>, u64)> {
        let end = out.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
        let mut resp = Head::parse_response(bytes::Bytes::copy_from_slice(&out[..end])).ok()?;
        let ctx = forward::ReqCtx {
            comp: None,
            cache: None,
            src: self.src,
            peer: self.peer,
            dst: self.dst,
            edits: None,
            stream: self.stream,
            persisted: None,
            persist_ignored: false,
            tls: self.tls,
            client: self.client,
            vars: self.vars,
            rt: self.rt,
            proxies: self.proxies,
            stick: Some(self.stick),
            stores: Default::default(),
        };
        let server = format!("<lua.{name}>");
        let ran = crate::http::relay::local_answer_rules(
            self.fe, be, &server, req, &ctx, &mut resp, self.rec,
        );
        let edits = ran.await.ok()?;
        let body = resp.response_body(req.method()).ok()?;
        let minor = req.minor;
        let head =
            crate::http::relay::downstream_head(&resp, body, keep, minor, edits.as_ref(), None);
        let logged = crate::wire::logged_size::head;
        let grown = logged(&head).saturating_sub(logged(&out[..end]));
        let mut edited = head.to_vec();
        edited.extend_from_slice(&out[end..]);
        Some((edited, grown))
    }

    /// Sends the `103 Early Hints` of `early-hint` rules to an HTTP/1.1
    /// client (HTTP/1.0 has no interim answers, and an HTTP/2 stream's
    /// would need a HEADERS frame of its own: neither gets one).
    async fn send_early_hints(&mut self, hints: &[u8], fe: &FrontendRt, minor: u8) {
        if self.conn.h2.is_some() || minor == 0 {
            return;
        }
        if io::write_all(&mut self.conn.stream, hints, fe.timeouts.client)
            .await
            .is_ok()
        {
            self.conn.early_hints.0 += hints.len() as u64;
            self.conn.early_hints.1 += crate::wire::logged_size::head(hints);
        }
    }

    /// Runs `rules` under `acls`; `be` is set for a backend's rules, whose
    /// denials and interceptions count on the backend too, as in HAProxy.
    /// Returns the outcome when a rule answered the request.
    /// `orig`: the head edits count its fields in (the view's may lack
    /// its `Expect` fields).
    async fn apply(
        &mut self,
        view: &View<'_>,
        orig: &Head,
        rules: &[(HttpRequestAction, Option<CompiledCond>)],
        acls: &AclSet,
        be: Option<&BackendRt>,
        timeouts: &Timeouts,
    ) -> Option<Stop> {
        let fe = self.fe;
        let head = view.head;
        let uid = self.rec.unique_id.clone();
        // The address the client reached (`dst`): asked of the socket only
        // where rules run.
        let local = match rules.is_empty() {
            true => None,
            false => self
                .local
                .or(self.dst)
                .or_else(|| self.conn.stream.local_addr().ok()),
        };
        let cx = rules::FmtCtx {
            req: head,
            src: view.src,
            frontend: &fe.name,
            backend: be.map(|b| b.name.as_str()),
            server: None,
            unique_id: uid.as_deref(),
            res: None,
            frontend_id: fe.iid,
            backend_id: be.map(|b| b.iid),
            src_port: self.src_port,
            first_req: Some(self.first),
            server_id: None,
            local,
            proxies: Some(self.proxies),
            vars: Some(self.vars),
            tls: view.tls,
            client: view.client,
            server_conn: None,
            req_body: view.req_body,
            res_body: None,
            stick: Some(self.stick),
        };
        // A `103 Early Hints` being made by `early-hint` rules.
        let mut early: Option<Vec<u8>> = None;
        for (at, (action, cond)) in rules.iter().enumerate() {
            if let Some(c) = cond
                && !acls.eval(c, view)
            {
                continue;
            }
            match action {
                HttpRequestAction::Allow => return None,
                HttpRequestAction::SendSpoeGroup { engine, group } => {
                    let engines = be.map_or(&fe.spoe, |b| &b.spoe);
                    if let Some(e) = engines.iter().find(|e| e.conf.id == *engine)
                        && let Some(msgs) = e.group(group)
                    {
                        let about = crate::upstream::spoe::Sent::Group(group);
                        let cx = rules::sample_ctx(&cx);
                        // Boxed: the agent's exchange stays out of the
                        // rules' future, and so of every connection's.
                        Box::pin(e.notify(msgs, &cx, self.vars, self.proxies, about)).await;
                    }
                }
                HttpRequestAction::Lua(a) => {
                    let mut t = crate::http::lua_txn::ReqTxn::new(cx, head, orig, &mut *self.edits);
                    t.log = proxy_log(fe, be);
                    let end = crate::http::lua_txn::run_request(a, &mut t).await;
                    if let Some(l) = t.level {
                        self.rec.level = Some(l);
                    }
                    if t.marks.any()
                        && let Some(tcp) = self.conn.stream.socket()
                    {
                        t.marks.apply(tcp);
                    }
                    if let Some(reply) = t.reply.take() {
                        // `txn:done(reply)`: the answer, made here (`LR`).
                        self.rec.term(Cause::Local, Phase::Request);
                        let (out, keep) = {
                            let (out, keep, _) =
                                crate::http::lua_txn::render(&reply, head.minor, self.keep_local);
                            (out, keep)
                        };
                        let status = reply.status.unwrap_or(200);
                        return Some(Stop::Answered(
                            forward::send_answer_seen(
                                self.conn,
                                &out,
                                status,
                                keep,
                                fe,
                                be,
                                Some(&cx),
                            )
                            .await,
                        ));
                    }
                    use crate::lua::ActionEnd;
                    let status = match end {
                        ActionEnd::Continue | ActionEnd::Failed => continue,
                        ActionEnd::Stop => return None,
                        ActionEnd::Error => 500,
                        ActionEnd::Deny => 403,
                        ActionEnd::Invalid => 400,
                        ActionEnd::Done | ActionEnd::Abort | ActionEnd::Closed => {
                            // Ended with no reply: the connection closes.
                            self.rec.term(Cause::Proxy, Phase::Request);
                            return Some(Stop::Answered(Outcome {
                                status: None,
                                keep_client: false,
                                bytes_out: 0,
                                logged_out: 0,
                                body_in: 0,
                                body_logged: 0,
                            }));
                        }
                    };
                    if status == 403 {
                        self.rec.tally.dreq = rows(be);
                    }
                    self.rec.tally.http_err = true;
                    self.rec.term(Cause::Proxy, Phase::Request);
                    return Some(Stop::Answered(
                        forward::send_error_seen(self.conn, status, fe, be, self.keep_local, &cx)
                            .await,
                    ));
                }
                HttpRequestAction::LuaService(name) => {
                    // Boxed: the wait stays out of the rules' future.
                    let body = Box::pin(self.service_body(head)).await;
                    let mut t = crate::http::lua_txn::ReqTxn::new(cx, head, orig, &mut *self.edits);
                    t.body = body;
                    t.log = proxy_log(fe, be);
                    let reply = crate::http::lua_txn::run_service(name, &mut t).await;
                    self.rec.server =
                        crate::observe::outcome::SrvName::Applet(format!("<lua.{name}>").into());
                    self.rec.tally.intercepted = rows(be);
                    self.rec.term(Cause::Local, Phase::Request);
                    let Some(reply) = reply else {
                        self.rec.tally.http_err = true;
                        return Some(Stop::Answered(
                            forward::send_error_seen(self.conn, 500, fe, be, self.keep_local, &cx)
                                .await,
                        ));
                    };
                    let (out, keep, framing) =
                        crate::http::lua_txn::render(&reply, head.minor, self.keep_local);
                    // The response rules see the answer, as a server's.
                    // (`%B` counts the service's answer as it made it, as
                    // HAProxy counts it.)
                    let (out, grown) = if crate::http::relay::has_response_rules(fe, be) {
                        let ran = self.service_response_rules(name, head, be, out, keep);
                        match Box::pin(ran).await {
                            Some(edited) => edited,
                            None => {
                                self.rec.tally.http_err = true;
                                let out = forward::send_error_seen(
                                    self.conn,
                                    502,
                                    fe,
                                    be,
                                    self.keep_local,
                                    &cx,
                                );
                                return Some(Stop::Answered(out.await));
                            }
                        }
                    } else {
                        (out, 0)
                    };
                    let status = reply.status.unwrap_or(200);
                    let mut o =
                        forward::send_answer_seen(self.conn, &out, status, keep, fe, be, Some(&cx))
                            .await;
                    o.logged_out = o.logged_out.saturating_sub(framing + grown);
                    return Some(Stop::Answered(o));
                }
                HttpRequestAction::Capture { expr, slot } => {
                    capture(
                        &mut self.rec.cap_req,
                        &fe.captures.request,
                        *slot,
                        expr,
                        &cx,
                    );
                }
                HttpRequestAction::SetHeader { name, fmt } => {
                    let v = rules::eval(fmt, &cx);
                    self.edits
                        .get_or_insert_with(Default::default)
                        .set_header(name, v);
                }
                HttpRequestAction::AddHeader { name, fmt } => {
                    let v = rules::eval(fmt, &cx);
                    self.edits
                        .get_or_insert_with(Default::default)
                        .add_header(name, v);
                }
                HttpRequestAction::DelHeader { name, how } => {
                    self.edits
                        .get_or_insert_with(Default::default)
                        .del_matching(name, how);
                }
                HttpRequestAction::ReplaceHeader(r) => {
                    let v = rules::eval(&r.fmt, &cx);
                    self.edits
                        .get_or_insert_with(Default::default)
                        .replace_header(orig, &r.name, &r.re, &v);
                }
                HttpRequestAction::ReplaceValue(r) => {
                    let v = rules::eval(&r.fmt, &cx);
                    self.edits
                        .get_or_insert_with(Default::default)
                        .replace_value(orig, &r.name, &r.re, &v);
                }
                HttpRequestAction::SetTarget { part, fmt } => {
                    let v = rules::eval(fmt, &cx);
                    let e = self.edits.get_or_insert_with(Default::default);
                    let cur = e.target.as_deref().unwrap_or(head.target());
                    e.target = Some(rules::set_part(*part, cur, &v));
                    if *part == UriPart::Uri {
                        e.host_from_target(orig);
                    }
                }
                HttpRequestAction::ReplaceTarget { part, re, fmt } => {
                    let cur = self
                        .edits
                        .as_ref()
                        .and_then(|e| e.target.as_deref())
                        .unwrap_or(head.target());
                    // The format is made only for a target it changes.
                    if re.is_match(cur) {
                        let v = rules::eval(fmt, &cx);
                        if let Some(t) = rules::replace_part(*part, cur, re, &v) {
                            let e = self.edits.get_or_insert_with(Default::default);
                            e.target = Some(t);
                            if *part == UriPart::Uri {
                                e.host_from_target(orig);
                            }
                        }
                    }
                }
                HttpRequestAction::SetMethod(fmt) => {
                    let v = rules::eval(fmt, &cx);
                    self.edits.get_or_insert_with(Default::default).method = Some(v);
                }
                HttpRequestAction::StrictMode(_) => {}
                HttpRequestAction::SetLogLevel(l) => self.rec.level = Some(*l),
                HttpRequestAction::SetTos(v) | HttpRequestAction::SetMark(v) => {
                    if let Some(tcp) = self.conn.stream.socket() {
                        let tos = matches!(action, HttpRequestAction::SetTos(_));
                        rules::SockMarks {
                            tos: tos.then_some(*v),
                            mark: (!tos).then_some(*v),
                        }
                        .apply(tcp);
                    }
                }
                // tokio schedules every task alike.
                HttpRequestAction::SetNice(_) => {}
                HttpRequestAction::SetAddr { part, expr } => {
                    let v = expr.eval(&rules::sample_ctx(&cx));
                    self.set_addr(*part, v, local);
                    return Some(Stop::Moved { at });
                }
                HttpRequestAction::Reject => {
                    // Closed at once, nothing said to the client (HAProxy's
                    // `PR--`, no status).
                    self.rec.tally.dreq = rows(be);
                    self.rec.term(Cause::Proxy, Phase::Request);
                    return Some(Stop::Answered(Outcome {
                        status: None,
                        keep_client: false,
                        bytes_out: 0,
                        logged_out: 0,
                        body_in: 0,
                        body_logged: 0,
                    }));
                }
                HttpRequestAction::Redirect {
                    kind,
                    fmt,
                    code,
                    drop_query,
                    append_slash,
                } => {
                    self.rec.tally.intercepted = rows(be);
                    self.rec.term(Cause::Local, Phase::Request);
                    let v = rules::eval(fmt, &cx);
                    let target = self
                        .edits
                        .as_ref()
                        .and_then(|e| e.target.as_deref())
                        .unwrap_or(head.target());
                    let loc =
                        rules::location(*kind, &v, head, target, (*drop_query, *append_slash));
                    // HAProxy 2.6 closes after redirecting a request that
                    // has a body, even one all here, with a `connection:
                    // close` of its internal form, which `%B` counts.
                    let body = self.conn.pending != io::PendingBody::None;
                    let keep = self.keep_local && !body;
                    let resp = rules::redirect_response(*code, &loc, keep);
                    let mut out =
                        forward::send_answer_seen(self.conn, &resp, *code, keep, fe, be, Some(&cx))
                            .await;
                    if body && out.logged_out > 0 {
                        out.logged_out += crate::wire::logged_size::OWN_CONNECTION_CLOSE;
                    }
                    return Some(Stop::Answered(out));
                }
                HttpRequestAction::Return(reply) => {
                    self.rec.tally.intercepted = rows(be);
                    self.rec.term(Cause::Local, Phase::Request);
                    return Some(Stop::Answered(
                        self.reply(reply, &cx, be, self.keep_local).await,
                    ));
                }
                HttpRequestAction::Deny(reply) => {
                    self.rec.tally.dreq = rows(be);
                    self.rec.tally.http_err = true;
                    self.rec.term(Cause::Proxy, Phase::Request);
                    return Some(Stop::Answered(
                        self.reply(reply, &cx, be, self.keep_local).await,
                    ));
                }
                HttpRequestAction::Tarpit(reply) => {
                    return Some(Stop::Answered(
                        self.tarpit(be, timeouts, Some((reply, &cx))).await,
                    ));
                }
                HttpRequestAction::Var(rule) => rules::run_var(rule, &cx),
                HttpRequestAction::Map(rule) => rules::run_map(rule, &cx),
                HttpRequestAction::Auth { realm } => {
                    self.rec.tally.intercepted = rows(be);
                    self.rec.tally.http_err = true;
                    self.rec.term(Cause::Local, Phase::Request);
                    let custom = be
                        .and_then(|b| b.errorfiles.iter().find(|(c, _)| *c == 401))
                        .or_else(|| fe.errorfiles.iter().find(|(c, _)| *c == 401))
                        .map(|(_, page)| &page[..]);
                    let page = crate::http::reply::auth_required(custom, realm, self.keep_local);
                    return Some(Stop::Answered(
                        forward::send_answer_seen(
                            self.conn,
                            &page,
                            401,
                            self.keep_local,
                            fe,
                            be,
                            Some(&cx),
                        )
                        .await,
                    ));
                }
                HttpRequestAction::WaitForBody(wait) => {
                    return Some(Stop::Wait { at, wait: *wait });
                }
                HttpRequestAction::Table(a) => {
                    self.stick
                        .act(a, &rules::sample_ctx(&cx), Level::HttpStream);
                }
                HttpRequestAction::SilentDrop => {
                    // Closed without a word to the client (HAProxy's
                    // `PR--`, no status).
                    self.rec.tally.dreq = rows(be);
                    self.rec.term(Cause::Proxy, Phase::Request);
                    if let Some(tcp) = self.conn.stream.socket() {
                        crate::tcp::rules::silent_drop(&tcp);
                    }
                    return Some(Stop::Answered(Outcome {
                        status: None,
                        keep_client: false,
                        bytes_out: 0,
                        logged_out: 0,
                        body_in: 0,
                        body_logged: 0,
                    }));
                }
                HttpRequestAction::CacheUse(c) => {
                    let caches = be.map_or(&fe.caches, |b| &b.caches);
                    if let Some(cache) = caches.get(c.idx) {
                        // Counted on the rule's proxy.
                        let counters = be.map_or(&fe.state.counters, |b| &b.state.counters);
                        crate::http::cache::use_rule(
                            self.cache,
                            cache,
                            head,
                            self.edits.as_ref(),
                            counters,
                        );
                    }
                }
                HttpRequestAction::SetTimeout(t) => t.run(&rules::sample_ctx(&cx)),
                HttpRequestAction::Priority(p) => p.run(&rules::sample_ctx(&cx)),
                HttpRequestAction::DisableL7Retry => self.vars.tune.disable_l7_retry(),
                HttpRequestAction::EarlyHint { name, fmt } => {
                    let hints =
                        early.get_or_insert_with(|| b"HTTP/1.1 103 Early Hints\r\n".to_vec());
                    hints.extend(name.bytes().map(|b| b.to_ascii_lowercase()));
                    hints.extend_from_slice(b": ");
                    hints.extend_from_slice(&rules::eval(fmt, &cx));
                    hints.extend_from_slice(b"\r\n");
                    // As HAProxy: the hints of the rules that follow one
                    // another go in one 103, sent after the last of them.
                    let next = rules.get(at + 1).map(|(a, _)| a);
                    if !matches!(next, Some(HttpRequestAction::EarlyHint { .. }))
                        && let Some(mut hints) = early.take()
                    {
                        hints.extend_from_slice(b"\r\n");
                        self.send_early_hints(&hints, fe, head.minor).await;
                    }
                }
                HttpRequestAction::NormalizeUri(how) => {
                    let cur = self
                        .edits
                        .as_ref()
                        .and_then(|e| e.target.as_deref())
                        .unwrap_or(head.target());
                    match crate::http::normalize::normalize(*how, cur) {
                        Ok(Some(t)) => {
                            self.edits.get_or_insert_with(Default::default).target = Some(t)
                        }
                        Ok(None) => {}
                        // A `strict` normalizer's invalid sequence: HAProxy's
                        // bad request (400, `PR--`, counted in `ereq`).
                        Err(_) => {
                            self.rec.tally.ereq = Rows::FE;
                            self.rec.tally.http_err = true;
                            self.rec.term(Cause::Proxy, Phase::Request);
                            return Some(Stop::Answered(
                                forward::send_error_be(self.conn, 400, fe, be, false).await,
                            ));
                        }
                    }
                }
                HttpRequestAction::DoResolve(r) => {
                    let section = self
                        .proxies
                        .global
                        .resolvers
                        .iter()
                        .find(|s| s.name == r.resolvers);
                    let name = r
                        .expr
                        .eval(&rules::sample_ctx(&cx))
                        .and_then(|v| v.cast(crate::sample::value::SmpType::Str));
                    if let (Some(section), Some(crate::sample::value::Sample::Str(name))) =
                        (section, name)
                        && let Ok(name) = std::str::from_utf8(&name)
                        && let Some(ip) =
                            crate::upstream::dns::resolve_addr(section, name, r.ipv4).await
                    {
                        let v = match ip {
                            std::net::IpAddr::V4(a) => crate::sample::value::Sample::Ipv4(a),
                            std::net::IpAddr::V6(a) => crate::sample::value::Sample::Ipv6(a),
                        };
                        self.vars.set(&r.var, &v, Default::default());
                    }
                }
                // No early data is taken (see the action's doc).
                HttpRequestAction::WaitForHandshake => {}
                HttpRequestAction::PrometheusExporter => {
                    self.rec.tally.intercepted = rows(be);
                    self.rec.term(Cause::Local, Phase::Request);
                    return Some(Stop::Answered(
                        prometheus(self.rt, head, self.conn, self.keep_local, fe).await,
                    ));
                }
            }
        }
        None
    }
}

/// The log targets of the proxy whose rules run: the backend's for a
/// backend's rules.
fn proxy_log<'p>(
    fe: &'p FrontendRt,
    be: Option<&'p BackendRt>,
) -> Option<&'p crate::snapshot::log_setup::LogSetup> {
    match be {
        Some(b) => b.log.as_deref(),
        None => fe.log.as_deref().map(|l| &l.setup),
    }
}

/// The rows a rule's denial or interception counts on: the frontend's,
/// and the backend's for a backend's rules, as in HAProxy.
fn rows(be: Option<&BackendRt>) -> Rows {
    if be.is_some() { Rows::FE_BE } else { Rows::FE }
}

/// The stats page answered: `<STATS>`, `LR--`, all timers 0 (HAProxy);
/// an interception on the frontend.
fn stats_logged(rec: &mut LogRecord) {
    rec.server = SrvName::Stats;
    rec.tally.intercepted = Rows::FE;
    rec.term(Cause::Local, Phase::Request);
    rec.t_queue = 0;
    rec.t_connect = 0;
    rec.t_resp = 0;
}

/// The stats page, when the request's URI starts with its prefix: the
/// page itself (GET, HEAD), or an admin form's POST answered with
/// HAProxy's 303 to `<uri>;st=<result>`.
#[allow(clippy::too_many_arguments)]
async fn stats_page(
    rt: &Runtime,
    stats: &StatsRt,
    acls: &AclSet,
    view: &View<'_>,
    body: BodyKind,
    conn: &mut BufConn,
    keep: bool,
    fe: &FrontendRt,
) -> Option<Outcome> {
    use crate::observe::stats::admin::{self, StCode};
    use crate::observe::stats::page as stats_page;
    let page = &stats.page;
    let head = view.head;
    // Other methods go on to the backend, as in HAProxy.
    if !matches!(head.method(), b"GET" | b"HEAD" | b"POST") {
        return None;
    }
    let suffix = head.target().strip_prefix(page.uri.as_bytes())?;
    let suffix = String::from_utf8_lossy(suffix);
    // Without reading the body, the connection goes on only past a body
    // that is all here.
    let keep_local = keep && conn.pending != io::PendingBody::Partial;
    // `stats http-request`: the first rule that holds decides.
    use crate::config::model::StatsAction;
    let rule = stats
        .rules
        .iter()
        .find(|(_, c)| c.as_ref().is_none_or(|c| acls.eval(c, view)))
        .map(|(a, _)| a);
    if rule == Some(&StatsAction::Deny) {
        return Some(forward::send_error(conn, 403, fe, keep_local).await);
    }
    let authorization = head.values("authorization").next();
    let asked = match rule {
        Some(StatsAction::Auth(realm)) => Some(realm.as_deref()),
        Some(_) => None,
        None => (!stats_page::authorized(page, authorization)).then_some(None),
    };
    if let Some(realm) = asked {
        // HAProxy's 401: its page and the realm's challenge.
        let challenge = match realm {
            Some(r) => format!(
                "www-authenticate: Basic realm=\"{}\"\r\n",
                r.replace('"', "\\\"")
            ),
            None => format!("www-authenticate: {}\r\n", stats_page::challenge(page)),
        };
        let body = stats_page::UNAUTHORIZED_BODY;
        let reply = StatsReply {
            status: 401,
            ctype: "text/html",
            body,
            extra: Some(&challenge),
            head_only: head.method() == b"HEAD",
        };
        return Some(stats_reply(conn, reply, keep_local, fe).await);
    }
    let admin = stats.admin.iter().any(|c| acls.eval(c, view));
    if head.method() != b"POST" {
        let (status, ctype, body) = stats_page::respond(&suffix, rt, page, admin);
        let extra = page
            .refresh
            .filter(|_| !suffix.contains(";norefresh"))
            .map(|s| format!("refresh: {s}\r\n"));
        let reply = StatsReply {
            status,
            ctype,
            body: &body,
            extra: extra.as_deref(),
            head_only: head.method() == b"HEAD",
        };
        return Some(stats_reply(conn, reply, keep_local, fe).await);
    }
    // A denied form is read too (and dropped), so that the connection
    // goes on as with HAProxy.
    let (code, keep, body_in) = match read_form(conn, head, body, fe).await {
        Ok(form) if admin => {
            let snap = rt.snapshot();
            (admin::process_post(&form, &snap), keep, form.len() as u64)
        }
        Ok(form) => (StCode::Deny, keep, form.len() as u64),
        Err(_) if !admin => (StCode::Deny, false, 0),
        Err(code) => (code, false, 0),
    };
    let location = stats_page::redirect_location(page, &suffix, code);
    let mut out = BytesMut::new();
    out.put_slice(format!("HTTP/1.1 303 See Other\r\ncache-control: no-cache\r\ncontent-type: text/plain\r\ncontent-length: 0\r\nlocation: {location}\r\n").as_bytes());
    if !keep {
        out.put_slice(b"connection: close\r\n");
    }
    out.put_slice(b"\r\n");
    Some(Outcome {
        body_in,
        body_logged: body_in,
        ..forward::send_answer(conn, &out, 303, keep, fe, None).await
    })
}

/// The body of an admin POST. It must fit the buffer with the head
/// (HAProxy's `EXCD` otherwise, and the body is not read); a chunked one
/// is refused as HAProxy's message for `IVAL` says.
async fn read_form(
    conn: &mut BufConn,
    head: &Head,
    body: BodyKind,
    fe: &FrontendRt,
) -> Result<bytes::Bytes, crate::observe::stats::admin::StCode> {
    use crate::observe::stats::admin::StCode;
    let len = match body {
        BodyKind::None => return Ok(bytes::Bytes::new()),
        BodyKind::Length(n) => n,
        BodyKind::Chunked | BodyKind::UntilClose => return Err(StCode::Ival),
    };
    if head.raw.len() as u64 + len > fe.max_head as u64 {
        return Err(StCode::Excd);
    }
    let len = len as usize;
    // The form is read here, not skipped after the answer.
    conn.pending = io::PendingBody::None;
    if conn.buf.len() < len
        && head
            .values("expect")
            .any(|v| h1::trim(v).eq_ignore_ascii_case(b"100-continue"))
    {
        // The client waits for this before sending the form (curl does
        // for a large one), as HAProxy's stats applet sends it.
        conn.answer(b"HTTP/1.1 100 Continue\r\n\r\n", fe.timeouts.client)
            .await
            .map_err(|_| StCode::Unkn)?;
    }
    while conn.buf.len() < len {
        match conn.fill(fe.timeouts.client).await {
            Ok(n) if n > 0 => {}
            // The client left or stalled: nothing is applied.
            _ => return Err(StCode::Unkn),
        }
    }
    Ok(conn.buf.split_to(len).freeze())
}

/// A local stats response (page or 401).
struct StatsReply<'a> {
    status: u16,
    ctype: &'a str,
    body: &'a str,
    /// More header lines, CRLF-terminated.
    extra: Option<&'a str>,
    /// HEAD: the GET's headers (its length included), no body.
    head_only: bool,
}

async fn stats_reply(
    conn: &mut BufConn,
    reply: StatsReply<'_>,
    keep: bool,
    fe: &FrontendRt,
) -> Outcome {
    let StatsReply {
        status,
        ctype,
        body,
        extra,
        head_only,
    } = reply;
    let mut head = BytesMut::new();
    head.put_slice(format!("HTTP/1.1 {} {}\r\ncache-control: no-cache\r\ncontent-type: {}\r\ncontent-length: {}\r\n", status, error_pages::reason(status), ctype, body.len()).as_bytes());
    if let Some(h) = extra {
        head.put_slice(h.as_bytes());
    }
    if !keep {
        head.put_slice(b"connection: close\r\n");
    }
    head.put_slice(b"\r\n");
    if !head_only {
        head.put_slice(body.as_bytes());
    }
    let ok = conn.answer(&head, fe.timeouts.client).await.is_ok();
    Outcome {
        status: Some(status),
        keep_client: keep && ok,
        bytes_out: head.len() as u64,
        logged_out: crate::wire::logged_size::message(&head),
        body_in: 0,
        body_logged: 0,
    }
}

/// `http-request use-service prometheus-exporter`: the exposition (with
/// the `scope` filter of the query string), or 400 for an unknown scope.
async fn prometheus(
    rt: &Runtime,
    head: &Head,
    conn: &mut BufConn,
    keep: bool,
    fe: &FrontendRt,
) -> Outcome {
    use crate::observe::stats::prometheus as promex;
    let target = String::from_utf8_lossy(head.target());
    match promex::Scopes::from_target(&target) {
        Ok(scopes) => {
            let body = promex::render(rt, scopes);
            let mut out = BytesMut::with_capacity(160 + body.len());
            out.put_slice(
                format!(
                    "HTTP/1.1 200 OK\r\ncache-control: no-cache\r\ncontent-type: {}\r\ncontent-length: {}\r\n",
                    promex::CONTENT_TYPE,
                    body.len()
                )
                .as_bytes(),
            );
            if !keep {
                out.put_slice(b"connection: close\r\n");
            }
            out.put_slice(b"\r\n");
            out.put_slice(body.as_bytes());
            forward::send_answer(conn, &out, 200, keep, fe, None).await
        }
        // HAProxy answers its built-in 400 page and closes.
        Err(_) => forward::send_error(conn, 400, fe, false).await,
    }
}
