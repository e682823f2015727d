//! Forwarding one request to a backend: persistence and the choice of a
//! server, a slot or the queue, then the exchange with it
//! (`http/exchange.rs`, `http/relay.rs`) and what it tells the health
//! checks; the error pages and made-up answers of the HTTP engine.

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use crate::http::cookie;
use crate::http::exchange::Exchange;
use crate::http::rules::{self, Edits};
use crate::observe::log::LogRecord;
use crate::observe::outcome::{Cause, Phase, Rows, Term};
use crate::snapshot::{BackendRt, FrontendRt};
use crate::state::ServerState;
use crate::state::capture;
use crate::upstream::balance::{self, PickError};
use crate::upstream::retry::{Retries, Seat};
use crate::wire::error_pages;
use crate::wire::error_spot::ErrorSpot;
use crate::wire::h1::{BodyKind, Head};
use crate::wire::io::{self, BufConn};
use crate::wire::logged_size;

/// What happened to the exchange, for the client connection's next step.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// Status sent to the client, if a response was sent.
    pub(crate) status: Option<u16>,
    /// Whether the client connection can carry another request.
    pub(crate) keep_client: bool,
    /// Bytes sent to the client.
    pub(crate) bytes_out: u64,
    /// Those bytes as the log line counts them (`%B`): HAProxy's size of
    /// an answer sluice made (see `wire::logged_size`); a server's answer
    /// is counted as sent.
    pub(crate) logged_out: u64,
    /// Bytes of request body read from the client.
    pub(crate) body_in: u64,
    /// That body as the log line counts it (`%U`, see `wire::logged_size`).
    pub(crate) body_logged: u64,
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
/// then the frontend's, then the built-in page. A custom page goes out as
/// HAProxy 2.6 sends it: its own `Connection` lines left out, the
/// connection kept after it when its head frames the body and says
/// nothing of closing, else closed.
pub(crate) async fn send_error_be(
    client: &mut BufConn,
    code: u16,
    fe: &FrontendRt,
    be: Option<&BackendRt>,
    keep: bool,
) -> Outcome {
    error_page(client, code, fe, be, keep, true, None).await
}

/// [`send_error_be`] where the sender has the exchange the
/// `http-after-response` rules see (the request, its variables).
pub(crate) async fn send_error_seen(
    client: &mut BufConn,
    code: u16,
    fe: &FrontendRt,
    be: Option<&BackendRt>,
    keep: bool,
    seen: &rules::FmtCtx<'_>,
) -> Outcome {
    error_page(client, code, fe, be, keep, true, Some(seen)).await
}

/// The 408 of a body waited for that did not come (HAProxy's stream
/// answers it, not its H1 parser: the page in its HTX form).
pub(crate) async fn send_body_timeout(
    client: &mut BufConn,
    fe: &FrontendRt,
    be: Option<&BackendRt>,
) -> Outcome {
    error_page(client, 0, fe, be, false, true, None).await
}

/// The error page of a request the HTTP/1 parser refused, or of one that
/// never came (408): HAProxy's connection layer sends those itself, no
/// `http-after-response` rule sees them.
pub(crate) async fn send_parser_error(
    client: &mut BufConn,
    code: u16,
    fe: &FrontendRt,
    keep: bool,
) -> Outcome {
    error_page(client, code, fe, None, keep, false, None).await
}

async fn error_page(
    client: &mut BufConn,
    code: u16,
    fe: &FrontendRt,
    be: Option<&BackendRt>,
    keep: bool,
    after: bool,
    seen: Option<&rules::FmtCtx<'_>>,
) -> Outcome {
    // Code 0: the stream's own 408 (see `send_body_timeout`).
    let stream_408 = code == 0;
    let code = if stream_408 { 408 } else { code };
    let custom = be
        .and_then(|b| b.errorfiles.iter().find(|(c, _)| *c == code))
        .or_else(|| fe.errorfiles.iter().find(|(c, _)| *c == code))
        .map(|(_, page)| &page[..]);
    // The stream's custom page (the parser's is sent as loaded, and
    // closes): HAProxy 2.6 reads it as a message, so its `Connection`
    // lines decide and count in `%B` but are not sent.
    let own = match custom {
        Some(p) if after && !error_pages::closes(code) => Some(CustomPage::of(p)),
        _ => None,
    };
    let keep = keep
        && match (&own, custom) {
            (Some(c), _) => c.keeps,
            (None, Some(_)) => false,
            (None, None) => true,
        };
    // After the parser, the stream answers: HAProxy's stream's page.
    let stream_400 = after && custom.is_none() && (code == 400 || stream_408);
    let page = match (&own, custom) {
        (Some(c), _) => &c.page[..],
        (None, Some(p)) => p,
        (None, None) if stream_408 => error_pages::stream_408(),
        (None, None) if after => error_pages::stream_response(code),
        // The parser's 413 (`h1-accept-payload-with-any-method`).
        (None, None) if code == 413 => error_pages::parser_413(),
        (None, None) => error_pages::response(code),
    };
    let (page, code) = if after {
        crate::http::after::local(fe, be, code, page, seen)
    } else {
        (Cow::Borrowed(page), code)
    };
    let http10 = own
        .as_ref()
        .is_some_and(|c| c.page.starts_with(b"HTTP/1.0 "));
    // The stream's pages say what becomes of the connection, HAProxy's
    // own and custom ones alike (the parser's pages, 400/408/422, say
    // `Connection: close` themselves; its custom ones are sent as loaded).
    let page = match client.asked {
        _ if (own.is_none() && custom.is_some())
            || error_pages::closes(code)
            || (!after && code == 413) =>
        {
            page
        }
        // An HTTP/1.0 page closes by default: only keep-alive is said.
        _ if http10 && !keep => page,
        _ if http10 => Cow::Owned(
            crate::http::reply::with_header(&page, b"connection: keep-alive\r\n").to_vec(),
        ),
        // Closed for any reason (asked to, `option httpclose`, a body
        // not all here): HAProxy 2.6 says so.
        _ if !keep
            || client.asked == io::ConnAsk::Close
            || client.pending == io::PendingBody::Partial =>
        {
            Cow::Owned(crate::http::reply::with_close(&page, false).to_vec())
        }
        io::ConnAsk::KeepAlive10 => Cow::Owned(
            crate::http::reply::with_header(&page, b"connection: keep-alive\r\n").to_vec(),
        ),
        _ => page,
    };
    let counted_conn = own.as_ref().map_or(0, |c| c.counted);
    // The stream's pages are formatted as any answer, respelled too; the
    // parser's are sent as they are (by HAProxy's connection layer).
    let page = if after { respelled(fe, page) } else { page };
    let page = &page[..];
    let ok = client.answer(page, fe.timeouts.client).await.is_ok();
    Outcome {
        status: Some(code),
        keep_client: ok && keep && !error_pages::closes(code),
        bytes_out: if ok { page.len() as u64 } else { 0 },
        logged_out: match (ok, stream_400) {
            (false, _) => 0,
            (true, false) => logged_size::message(page) + counted_conn,
            (true, true) => logged_size::message(page) + logged_size::OWN_CONNECTION_CLOSE,
        },
        body_in: 0,
        body_logged: 0,
    }
}

/// A custom error page as the stream sends it.
struct CustomPage {
    /// The page without its `Connection` lines.
    page: Vec<u8>,
    /// Whether the connection may go on after it: its body framed by its
    /// head (a `Content-Length`), no `close` among its connection tokens.
    keeps: bool,
    /// What `%B` counts of the lines left out: each name and value.
    counted: u64,
}

impl CustomPage {
    fn of(page: &[u8]) -> CustomPage {
        let end = memchr::memmem::find(page, b"\r\n\r\n").map_or(page.len(), |e| e + 2);
        let mut out = Vec::with_capacity(page.len());
        let (mut framed, mut closes, mut counted) = (false, false, 0);
        let mut lines = page[..end].split_inclusive(|&b| b == b'\n');
        if let Some(first) = lines.next() {
            out.extend_from_slice(first);
        }
        for line in lines {
            let text = line.strip_suffix(b"\n").unwrap_or(line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            let (name, value) = match memchr::memchr(b':', text) {
                Some(c) => (&text[..c], text[c + 1..].trim_ascii()),
                None => (text, &b""[..]),
            };
            if name.eq_ignore_ascii_case(b"connection") {
                closes |= value
                    .split(|&b| b == b',')
                    .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"));
                counted += (name.len() + value.len()) as u64;
                continue;
            }
            framed |= name.eq_ignore_ascii_case(b"content-length");
            out.extend_from_slice(line);
        }
        out.extend_from_slice(&page[end..]);
        CustomPage {
            page: out,
            keeps: framed && !closes,
            counted,
        }
    }
}

/// One of sluice's own answers with the names `option
/// h1-case-adjust-bogus-client` respells, as HAProxy respells its own.
fn respelled<'p>(fe: &FrontendRt, page: Cow<'p, [u8]>) -> Cow<'p, [u8]> {
    match &fe.case_client {
        Some(names) => {
            let mut page = page.into_owned();
            let end = memchr::memmem::find(&page, b"\r\n\r\n").map_or(page.len(), |e| e + 2);
            names.apply(&mut page[..end]);
            Cow::Owned(page)
        }
        None => page,
    }
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
    /// An `ignore-persist` rule held: no cookie chose the server, and
    /// none is inserted in the response (set by [`forward`]).
    pub(crate) persist_ignored: bool,
    /// The client connection's TLS (conditions of `http-response` rules).
    pub(crate) tls: Option<&'a crate::tls::TlsFacts>,
    /// The client connection's other facts (`fc_*`, `so_*`).
    pub(crate) client: &'a crate::sample::conn::ClientFacts,
    /// The request's variables.
    pub(crate) vars: &'a crate::sample::vars::Vars<'a>,
    /// The process, whose snapshot response rules read the proxies'
    /// state from (`nbsrv`, `be_server_timeout`...).
    pub(crate) rt: &'a crate::snapshot::runtime::Runtime,
    /// The snapshot the request runs on (the proxies' state the
    /// response's conditions and log line read).
    pub(crate) proxies: &'a crate::snapshot::Snapshot,
    /// The stick tables and the request's counters (None in tests that
    /// build a request by hand).
    pub(crate) stick: Option<&'a crate::state::table::track::StickView<'a>>,
    /// The entries `stick on|store-request` rules will store the server
    /// in once it answers; set by [`forward`].
    pub(crate) stores: crate::upstream::stick::Stores,
    /// The compression algorithm the request negotiated (the response
    /// may still not be compressed).
    pub(crate) comp: Option<crate::config::model::CompAlgo>,
    /// What the cache rules learned of the request (None without any).
    pub(crate) cache: Option<&'a crate::http::cache::CacheTxn>,
}

impl ReqCtx<'_> {
    /// The request's `timeout server`: a `set-timeout server` rule's, else
    /// its backend's.
    pub(crate) fn server_timeout(&self, be: &BackendRt) -> Option<std::time::Duration> {
        use crate::sample::tune::TimeoutKind;
        self.vars.tune.or(TimeoutKind::Server, be.timeouts.server)
    }

    /// The `timeout tunnel` a `set-timeout tunnel` rule gave the request,
    /// for both sides of its tunnel, None when no rule did.
    pub(crate) fn tunnel_timeout(&self) -> Option<std::time::Duration> {
        self.vars
            .tune
            .timeout(crate::sample::tune::TimeoutKind::Tunnel)
    }
}

/// No server for the request (none usable, queue full or timed out), at
/// first or on a redispatch: HAProxy's 503 with `SC`, `SQ` or `sQ`.
pub(super) async fn no_server(
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

/// `redir <prefix>`: the server chosen for a GET or HEAD request answers
/// for it with HAProxy's forged 302 to `<prefix>` followed by the
/// request's path and query, and the connection closes, as HAProxy 2.6
/// does. No response rule or cookie applies to it.
async fn server_redirect(
    fe: &FrontendRt,
    prefix: &str,
    req: &Head,
    client: &mut BufConn,
    rec: &mut LogRecord,
) -> Outcome {
    let path = crate::sample::fetch::pathq_of(req.target());
    let mut page = Vec::with_capacity(96 + prefix.len() + path.len());
    page.extend_from_slice(
        b"HTTP/1.1 302 Found\r\ncache-control: no-cache\r\ncontent-length: 0\r\nlocation: ",
    );
    page.extend_from_slice(prefix.as_bytes());
    page.extend_from_slice(path);
    page.extend_from_slice(b"\r\nconnection: close\r\n\r\n");
    rec.tally.status(302, Rows::BE);
    let ok = client.answer(&page, fe.timeouts.client).await.is_ok();
    Outcome {
        status: Some(302),
        keep_client: false,
        bytes_out: if ok { page.len() as u64 } else { 0 },
        logged_out: if ok { logged_size::message(&page) } else { 0 },
        body_in: 0,
        body_logged: 0,
    }
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
        crate::config::model::Balance::Source | crate::config::model::Balance::Hash(_) => ctx.src,
        _ => None,
    };
    let key = crate::snapshot::lb::LbKey {
        src,
        head: Some(req),
        prio: ctx.vars.tune.priority(),
    };
    // `force-persist` / `ignore-persist`: the first rule whose condition
    // holds (Some(true): force, Some(false): ignore).
    let rule = if be.persist_rules.is_empty() {
        None
    } else {
        let cx = request_ctx(fe, be, req, ctx);
        let view = &cx as &dyn crate::acl::eval::RequestView;
        be.persist_rules
            .iter()
            .find(|(_, c)| be.acls.eval(c, view))
            .map(|&(force, _)| force)
    };
    let force = rule == Some(true);
    let (mut persisted, cookie_edits) = persistence(be, req, ctx.edits, rec, force);
    // Boxed: rare (a cookie rewritten), and held beside the exchange's
    // future, in every request's.
    let cookie_edits = cookie_edits.map(Box::new);
    if rule == Some(false) {
        // The cookie is read (and rewritten) but chooses nothing: `U`.
        if persisted.take().is_some() || rec.persist[0] != cookie::CK_NONE {
            rec.persist[0] = cookie::CK_UNUSED;
        }
    }
    // `use-server` comes before the cookie's choice and the stick
    // tables' (the cookie is still read and rewritten).
    if !be.use_servers.is_empty() {
        let cx = request_ctx(fe, be, req, ctx);
        let view = &cx as &dyn crate::acl::eval::RequestView;
        if let Some(i) = balance::use_server(be, |c| be.acls.eval(c, view), force) {
            persisted = Some(i);
        }
    }
    let mut stores = crate::upstream::stick::Stores::default();
    if crate::upstream::stick::any(be) {
        let cx = request_ctx(fe, be, req, ctx);
        // Ignored persistence: the entries are not looked up, the keys
        // still stored.
        let assigned = persisted.is_some() || rule == Some(false);
        if let Some(i) = crate::upstream::stick::on_request(be, &cx, assigned, &mut stores, force) {
            persisted = Some(i);
        }
    }
    let mut cookie_ctx = ReqCtx {
        src: ctx.src,
        peer: ctx.peer,
        dst: ctx.dst,
        edits: cookie_edits.as_deref().or(ctx.edits),
        stream: ctx.stream,
        persisted,
        persist_ignored: rule == Some(false),
        tls: ctx.tls,
        client: ctx.client,
        vars: ctx.vars,
        rt: ctx.rt,
        proxies: ctx.proxies,
        stick: ctx.stick,
        stores,
        comp: ctx.comp,
        cache: ctx.cache,
    };
    let acquired = balance::pick(be, &key, &mut cookie_ctx.persisted).await;
    let ctx = &cookie_ctx;
    let slot = match acquired {
        Ok(slot) => slot,
        Err(e) => {
            let keep = keep_client && client.pending != io::PendingBody::Partial;
            // Rare: boxed, so the future of the common path stays small.
            return Box::pin(no_server(e, fe, be, client, keep, started, rec)).await;
        }
    };
    rec.be_queue = slot.queue_position();
    rec.srv_queue = slot.srv_queue_position();
    let mut seat = Seat::new(slot);
    let first: Arc<ServerState> = seat.server().clone();
    if be.redirs
        && matches!(req.method(), b"GET" | b"HEAD")
        && let Some(prefix) = be
            .servers
            .iter()
            .find(|s| Arc::ptr_eq(&s.state, &first))
            .and_then(|s| s.redir.as_deref())
    {
        // As HAProxy: the server is chosen (`stot`, `lbtot`) but sees no
        // request (`req_tot`, its `hrsp_*`).
        rec.server = crate::observe::log::SrvName::Server(first);
        drop(seat);
        // Rare: boxed, so the future of the common path stays small.
        return Box::pin(server_redirect(fe, prefix, req, client, rec)).await;
    }
    first.counters.count_request();
    let queue_ms = ms(started.elapsed());
    rec.t_queue = queue_ms as i64;
    ctx.stream.to_server(&first);
    let mut tries = Retries::default();
    // `on-marked-down shutdown-sessions` (the session ends when the server
    // is marked DOWN) or `on-marked-up shutdown-backup-sessions` of an
    // active server (it ends when that one comes UP): only then is a second
    // reference kept, to wait on; otherwise the one reference moves into the
    // record, as each clone is a write to a count all worker threads share.
    let killer = first.cuttable.load(Relaxed).then(|| first.clone());
    rec.server = crate::observe::log::SrvName::Server(first);
    let mut exchange = Exchange {
        fe,
        be,
        key: &key,
        seat: &mut seat,
        tries: &mut tries,
        req,
        body,
        client,
        keep_client,
        started,
        queue_ms,
        rec: &mut *rec,
        ctx,
    };
    let fut = exchange.run();
    let (out, conn_failed) = if let Some(first) = &killer {
        let killed = first.kill.notified();
        tokio::pin!(killed);
        killed.as_mut().enable();
        tokio::select! {
            o = fut => o,
            _ = killed => {
                rec.tally.srv_abrt |= Rows::BE_SRV;
                (Outcome { status: None, keep_client: false, bytes_out: 0, logged_out: 0, body_in: 0, body_logged: 0 }, false)
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
    drop(seat);
    out
}

/// A request's session on its backend, from the moment it is assigned
/// (`use_backend`, `default_backend`) to its end, as HAProxy counts a
/// stream on its backend (`scur`, `stot`, `be_conn` in the backend's own
/// rules): whatever answers it, a server, a rule or an error page.
pub(crate) struct BackendSession<'a>(&'a crate::state::counters::Counters);

impl<'a> BackendSession<'a> {
    pub(crate) fn start(be: &'a BackendRt) -> BackendSession<'a> {
        be.state.counters.session_start();
        BackendSession(&be.state.counters)
    }
}

impl Drop for BackendSession<'_> {
    fn drop(&mut self) {
        self.0.session_end();
    }
}

/// What the backend's `stick` rules read of the request.
pub(super) fn request_ctx<'a>(
    fe: &'a FrontendRt,
    be: &'a BackendRt,
    req: &'a Head,
    ctx: &'a ReqCtx<'_>,
) -> crate::sample::Ctx<'a> {
    crate::sample::Ctx {
        src: ctx.src,
        src_port: ctx.peer.inet().map(|a| a.port()),
        local: ctx.dst,
        req: Some(req),
        frontend: &fe.name,
        backend: Some(&be.name),
        frontend_id: fe.iid,
        backend_id: Some(be.iid),
        vars: Some(ctx.vars),
        tls: ctx.tls,
        client: Some(ctx.client),
        proxies: Some(ctx.proxies),
        stick: ctx.stick.map(|s| s as &dyn crate::sample::stick::Stick),
        ..Default::default()
    }
}

/// `cookie`: the server a request's persistence cookie names (its state
/// noted for the log), and the request's headers with its `Cookie` edited
/// as the mode says (None: no change).
fn persistence(
    be: &BackendRt,
    req: &Head,
    edits: Option<&Edits>,
    rec: &mut LogRecord,
    force: bool,
) -> (Option<usize>, Option<Edits>) {
    let Some(ck) = be.cookie.as_deref() else {
        return (None, None);
    };
    let Some(cc) = cookie::client_side(ck, be, req, edits, force) else {
        if ck.logged() {
            rec.persist = [cookie::CK_NONE, cookie::SCK_NONE];
        }
        return (None, None);
    };
    if ck.logged() {
        rec.persist = [cc.state, cookie::SCK_NONE];
    }
    if cc.rewrites.is_empty() {
        return (cc.server, None);
    }
    let mut e = edits.cloned().unwrap_or_default();
    for (i, v) in &cc.rewrites {
        e.set_at(*i, v.clone());
    }
    (cc.server, Some(e))
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

/// `PH`: the proxy refused the server's response.
pub(super) const BAD_RESPONSE: Term = Term::new(Cause::Proxy, Phase::Headers);
/// `SH`: the server closed or broke its response head.
pub(super) const SERVER_HEADERS: Term = Term::new(Cause::Server, Phase::Headers);

/// Keeps a response `be` refused for `show errors`.
pub(super) fn capture_response(
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
pub(super) async fn bad_response(
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

pub(super) fn ms(d: Duration) -> u32 {
    d.as_millis().min(u32::MAX as u128) as u32
}

/// Sends an answer sluice made up (a reply, a page) whose head already
/// says whether the connection stays open (`keep`).
pub(crate) async fn send_answer(
    client: &mut BufConn,
    out: &[u8],
    status: u16,
    keep: bool,
    fe: &FrontendRt,
    be: Option<&BackendRt>,
) -> Outcome {
    send_answer_seen(client, out, status, keep, fe, be, None).await
}

/// [`send_answer`] where the sender has the exchange the
/// `http-after-response` rules see (the request, its variables).
pub(crate) async fn send_answer_seen(
    client: &mut BufConn,
    out: &[u8],
    status: u16,
    keep: bool,
    fe: &FrontendRt,
    be: Option<&BackendRt>,
    seen: Option<&rules::FmtCtx<'_>>,
) -> Outcome {
    let (out, status) = crate::http::after::local(fe, be, status, out, seen);
    // An HTTP/1.0 client kept alive is told so, after every other field
    // (where HAProxy 2.6's connection layer writes it; `%B` does not
    // count it).
    let out = match client.asked {
        io::ConnAsk::KeepAlive10 if keep => Cow::Owned(
            crate::http::reply::with_header(&out, b"connection: keep-alive\r\n").to_vec(),
        ),
        _ => out,
    };
    let out = respelled(fe, out);
    let out = &out[..];
    let ok = client.answer(out, fe.timeouts.client).await.is_ok();
    Outcome {
        status: Some(status),
        keep_client: ok && keep,
        bytes_out: if ok { out.len() as u64 } else { 0 },
        logged_out: if ok { logged_size::message(out) } else { 0 },
        body_in: 0,
        body_logged: 0,
    }
}
