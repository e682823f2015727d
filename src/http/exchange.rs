//! One request sent to the servers of a backend until an answer comes: the
//! steps of an attempt (connect, send the head, send the body, read the
//! response head) and the retries and replays between attempts.
//!
//! Replays: a reused idle connection that turns out closed is replayed
//! once on a new connection (not counted as a retry) when nothing can have
//! been acted on: the request could not be written, or the method is
//! idempotent and no body was sent. `retry-on` beyond `conn-failure`
//! (statuses, empty, junk or late responses) replays only requests without
//! a body: sluice streams bodies and keeps no copy to send twice.

use crate::tcp::rules::Verdict;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use bytes::{BufMut, BytesMut};

use crate::config::model::{ForwardFor, HttpConnMode, HttpReuse, RetryOn};
use crate::http::forward::{
    BAD_RESPONSE, Outcome, ReqCtx, SERVER_HEADERS, bad_response, capture_response, ms, no_server,
    send_error_be,
};
use crate::http::relay;
use crate::http::rules;
use crate::observe::log::LogRecord;
use crate::observe::outcome::{Cause, Phase, Rows, Term};
use crate::sample::srvconn::ServerFacts;
use crate::snapshot::{BackendRt, FrontendRt};
use crate::state::ServerState;
use crate::state::capture;
use crate::upstream::ConnectError;
use crate::upstream::retry::{self, Next, Retries, Seat};
use crate::wire::error_spot;
use crate::wire::h1::{BodyKind, H1Error, Head};
use crate::wire::io::{self, BufConn, HeadError, RelayError};

/// A request on its way to a server, and what its attempts learnt so far.
pub(super) struct Exchange<'a> {
    pub(super) fe: &'a FrontendRt,
    pub(super) be: &'a Arc<BackendRt>,
    pub(super) key: &'a crate::snapshot::lb::LbKey<'a>,
    pub(super) seat: &'a mut Seat,
    pub(super) tries: &'a mut Retries,
    pub(super) req: &'a Head,
    pub(super) body: BodyKind,
    pub(super) client: &'a mut BufConn,
    pub(super) keep_client: bool,
    /// When the request reached the backend, and its time in the queue.
    pub(super) started: Instant,
    pub(super) queue_ms: u32,
    pub(super) rec: &'a mut LogRecord,
    pub(super) ctx: &'a ReqCtx<'a>,
}

/// What stays the same from one attempt to the next, and what carries
/// over between them.
struct Plan {
    /// The connection mode closes the server connection after the answer.
    server_close: bool,
    /// The request head as it goes to the server.
    head: io::HeadBuf,
    /// `retry-on` beyond connection failures applies (no body to replay).
    l7_retries: bool,
    /// The client connection may go on after an error page.
    keep_on_error: bool,
    /// A pooled connection may be taken (not after one turned out closed).
    reuse_ok: bool,
    /// The body has been consumed from the client: after that the request
    /// cannot be replayed.
    body_sent: bool,
    body_in: u64,
    body_logged: u64,
    connect_ms: u32,
    /// The id of the pool the attempt's connection came from or was
    /// made for: it goes back only into that one. A server whose address
    /// changed meanwhile (DNS, `set server addr`) has a new pool, which
    /// must not get a connection to the old address (it would serve it
    /// again and again).
    pool: u64,
    /// `http-send-name-header`: where the head's last line ends, the
    /// server's name going after it for each attempt's server.
    name_at: Option<usize>,
}

/// A connection to the attempt's server (the seat's, which no step of an
/// attempt changes: a failure takes its own reference to it, the common
/// path none, as each clone is a write to a count every worker shares).
struct Attempt {
    up: BufConn,
    /// Taken from the idle pool.
    reused: bool,
}

/// Where an attempt's step leads: on with its result, to another attempt,
/// or to the end of the exchange (with whether no connection could be
/// made).
enum Step<T> {
    Go(T),
    Again,
    End(Outcome, bool),
}

/// Why a response head was not had: the `retry-on` bit, the status sent
/// instead, the log's termination state, and whether it is a server abort.
struct HeadFailure {
    bit: u32,
    /// `None`: a head the parser refused, kept for `show errors`.
    code: Option<u16>,
    term: Term,
    abort: bool,
}

/// A head the parser refused: logged `PH`, answered 502.
const REFUSED: HeadFailure = HeadFailure {
    bit: RetryOn::JUNK_RESPONSE,
    code: None,
    term: BAD_RESPONSE,
    abort: false,
};

impl<'a> Exchange<'a> {
    /// Sends the request to the seat's server and reads the response head,
    /// retrying as `retries`, `option redispatch` and `retry-on` allow, then
    /// relays the response. Returns the outcome and whether it ended
    /// because no connection could be made.
    /// Borrowed, not consumed: an async fn's arguments are kept twice in
    /// its future, and this one is inline in every connection's.
    pub(super) async fn run(&mut self) -> (Outcome, bool) {
        // A step's result, or on to the next attempt, or the end.
        macro_rules! step {
            ($e:expr) => {
                match $e.await {
                    Step::Go(v) => v,
                    Step::Again => continue,
                    Step::End(out, failed) => return (out, failed),
                }
            };
        }
        let mut plan = self.plan();
        let (up, resp, response_ms) = loop {
            let a = step!(self.connect(&mut plan));
            let a = step!(self.send_head(&mut plan, a));
            // Most requests have no body: their path never makes (nor
            // moves) the future of `send_body`.
            let a = if self.body == BodyKind::None || plan.body_sent {
                a
            } else {
                step!(self.send_body(&mut plan, a))
            };
            break step!(self.read_response(&mut plan, a));
        };
        // The response is relayed from here, not from a function of its
        // own: each nested future is made on the stack and then moved into
        // its parent's, and this one is large.
        let rec = &mut *self.rec;
        if crate::sample::fetch::server_read() {
            rec.server_conn = Some(Box::new(ServerFacts::of(&up.stream)));
        }
        rec.t_connect = plan.connect_ms as i64;
        rec.t_resp = response_ms as i64;
        // Set before relaying: `option logasap` logs at the response head.
        rec.retries = self.tries.done;
        rec.redispatched = self.tries.redispatched;
        // Borrowed, not cloned: a clone is a write to a count every worker
        // thread shares, per request.
        let server: &ServerState = self.seat.server();
        // The pool the connection goes back to, by its id: holding it (an
        // `Arc`) would be a write to a count every worker shares, twice.
        let pool = plan.pool;
        let mut relay = relay::Relay {
            fe: self.fe,
            be: self.be,
            server,
            req: self.req,
            upstream: up,
            client: &mut *self.client,
            keep_client: self.keep_client,
            rec: &mut *rec,
            ctx: self.ctx,
            bytes_out: 0,
            logged_out: 0,
            comp: None,
            fill: None,
            reusable: false,
        };
        let mut out = relay.run(resp, plan.server_close).await;
        relay.give_back(pool);
        // After a 101 the relay counted the tunnel's bytes from the client.
        out.body_in += plan.body_in;
        out.body_logged += plan.body_logged;
        let total_ms = ms(self.started.elapsed());
        rec.tally.times = Some([self.queue_ms, plan.connect_ms, response_ms, total_ms]);
        (out, false)
    }

    /// What the attempts share: the request head as it goes to the server
    /// and what may be retried.
    fn plan(&self) -> Plan {
        let (fe, be, body, req) = (self.fe, self.be, self.body, self.req);
        let server_close =
            be.conn_mode != HttpConnMode::KeepAlive || fe.conn_mode != HttpConnMode::KeepAlive;
        // `option forwardfor`: the backend's settings, else the frontend's.
        let ff = be.forwardfor.as_ref().or(fe.forwardfor.as_ref());
        // `option originalto`: the backend's settings, else the frontend's.
        let ot = be
            .extras
            .originalto
            .as_ref()
            .or(fe.extras.originalto.as_ref());
        let dst = ot.and_then(|_| {
            self.ctx
                .dst
                .or_else(|| self.client.stream.local_addr().ok())
                .map(|a| a.ip())
        });
        let excepted = |e: &Option<crate::config::extras::OriginalTo>, ip| {
            e.as_ref()
                .and_then(|o| o.except)
                .is_some_and(|(addr, prefix)| {
                    crate::sample::pattern::Net { addr, prefix }.contains(ip)
                })
        };
        // No header for a destination in either proxy's `except` network.
        let ot = ot.zip(dst).filter(|&(_, ip)| {
            !excepted(&be.extras.originalto, ip) && !excepted(&fe.extras.originalto, ip)
        });
        let name = be.extras.send_name_header.as_deref();
        let mut head = upstream_head(req, body, server_close, (ff, ot, name), self.ctx);
        // `option h1-case-adjust-bogus-server`: every field of the head,
        // the ones sluice adds too, as HAProxy respells them.
        if let Some(names) = &be.case_server {
            names.apply(&mut head);
        }
        let name_at = name.map(|_| head.len() - 2);
        Plan {
            name_at,
            server_close,
            head,
            l7_retries: be.retry_on.layer7()
                && body == BodyKind::None
                && self.ctx.vars.tune.l7_retry(),
            // Before the body is read: a page skips it if it is all here.
            keep_on_error: self.keep_client && self.client.pending != io::PendingBody::Partial,
            reuse_ok: be.http_reuse != HttpReuse::Never,
            body_sent: false,
            body_in: 0,
            body_logged: 0,
            connect_ms: 0,
            pool: 0,
        }
    }

    /// A connection to the seat's server: an idle one from its pool, else a
    /// new one (`upstream/retry.rs` retries and redispatches), then the
    /// PROXY header for `send-proxy`.
    async fn connect(&mut self, plan: &mut Plan) -> Step<Attempt> {
        let be = self.be;
        // `send-proxy`: a server connection tells one client's address, so
        // it is never shared (HAProxy only reuses one for an identical PROXY
        // line, in practice the same client connection).
        let pooled = if plan.reuse_ok && self.seat.server().send_proxy.load(Relaxed) == 0 {
            let pool = self.seat.server().pool.load();
            plan.pool = pool.id();
            pool.take(pool.request_sni(|| self.req.values("host").next()))
        } else {
            None
        };
        let reused = pooled.is_some();
        let stream = match pooled {
            Some(s) => {
                self.seat.attempt();
                self.seat.server().counters.local().reuse.inc();
                be.state.counters.local().reuse.inc();
                s
            }
            None => {
                let before = self.seat.server().clone();
                let t = Instant::now();
                let dst = self
                    .ctx
                    .dst
                    .or_else(|| self.client.stream.local_addr().ok());
                // A new connection is the rare path under keep-alive: its
                // future (connect, TLS) is boxed so that the common one,
                // and every future holding it, stays small.
                // The request's Host: the SNI to servers with `sni
                // req.hdr(host)`.
                let host = self.req.values("host").next();
                let client = self.ctx.peer.inet();
                let fresh = retry::connect(be, self.key, self.seat, self.tries, host, dst, client);
                match Box::pin(fresh).await {
                    Ok((s, pool)) => {
                        plan.connect_ms = ms(t.elapsed());
                        plan.pool = pool;
                        note_move(&before, self.seat, self.rec, self.ctx);
                        s
                    }
                    Err(ConnectError::Pick(e)) => {
                        let (fe, keep) = (self.fe, plan.keep_on_error);
                        let out = no_server(e, fe, be, self.client, keep, self.started, self.rec);
                        return Step::End(Box::pin(out).await, true);
                    }
                    Err(e) => {
                        if crate::sample::fetch::server_read() {
                            let pool = self.seat.server().pool.load();
                            let facts = ServerFacts::failed(
                                Some(pool.target(dst)),
                                e.server_error(),
                                pool.tls().is_some(),
                            );
                            self.rec.server_conn = Some(Box::new(facts));
                        }
                        self.rec.end(e.term());
                        self.rec.retryable = e.retryable();
                        // HAProxy counts its own 503 on the backend only.
                        self.rec.tally.status(503, Rows::BE);
                        let out =
                            send_error_be(self.client, 503, self.fe, Some(be), plan.keep_on_error);
                        return Step::End(Box::pin(out).await, true);
                    }
                }
            }
        };
        let mut up = BufConn::new(stream);
        if !reused
            && let Some(h) = &crate::wire::proxy_proto::for_server(
                self.seat.server().send_proxy.load(Relaxed),
                self.ctx.peer.inet(),
                self.ctx.dst,
                || self.client.stream.local_addr().ok(),
            )
            && io::write_all(&mut up.stream, h, self.ctx.server_timeout(be))
                .await
                .is_err()
        {
            self.rec.term(Cause::Server, Phase::Connect);
            return Step::End(Box::pin(self.server_failed(false)).await, false);
        }
        // Connected: an error from here on logs the connect time (HAProxy's
        // `0/0/0/-1/...` for a 504), not -1.
        self.rec.t_connect = plan.connect_ms as i64;
        Step::Go(Attempt { up, reused })
    }

    /// Writes the request head. A pooled connection that refuses it is
    /// replayed on a new one; a new one may be retried as an empty
    /// response.
    async fn send_head(&mut self, plan: &mut Plan, a: Attempt) -> Step<Attempt> {
        let Attempt { mut up, reused } = a;
        if let (Some(at), Some(h)) = (plan.name_at, &self.be.extras.send_name_header) {
            // The attempt's server, after the head's last line (after
            // `connection`, as HAProxy adds it).
            let head = &mut plan.head;
            head.truncate(at);
            head.put_slice(h.as_bytes());
            head.put_slice(b": ");
            head.put_slice(self.seat.server().name.as_bytes());
            head.put_slice(b"\r\n\r\n");
        }
        let fcgi_head;
        let head: &[u8] = match (&mut up.stream, self.be.fcgi.as_deref()) {
            (crate::tls::Stream::Fcgi(conn), Some(app)) => {
                let Some((records, framing)) = self.fcgi_request(&plan.head, app) else {
                    // A chunked body not all here: FastCGI needs its
                    // length first. HAProxy 2.6 answers 400, logged `PH`.
                    drop(up);
                    self.rec.term(Cause::Proxy, Phase::Headers);
                    self.rec.tally.status(400, Rows::BE_SRV);
                    let out = send_error_be(self.client, 400, self.fe, Some(self.be), false);
                    return Step::End(Box::pin(out).await, false);
                };
                conn.start(records.len(), framing, self.req.minor == 0);
                fcgi_head = records;
                &fcgi_head
            }
            _ => &plan.head,
        };
        if io::write_all(&mut up.stream, head, self.ctx.server_timeout(self.be))
            .await
            .is_err()
        {
            if reused {
                // A pooled connection the server had closed: nothing got
                // through, replay on a new one.
                plan.reuse_ok = false;
                return Step::Again;
            }
            drop(up);
            let server = self.seat.server().clone();
            let wanted = self.be.retry_on.has(RetryOn::EMPTY_RESPONSE);
            if let Some(next) = self.l7_retry(plan, &server, wanted) {
                return Box::pin(self.retry(plan, &server, next)).await;
            }
            self.rec.term(Cause::Server, Phase::Headers);
            return Step::End(
                Box::pin(self.server_failed(plan.keep_on_error)).await,
                false,
            );
        }
        self.rec.tally.srv_in += self.req.raw.len() as u64;
        Step::Go(Attempt { up, reused })
    }

    /// The records that open the request to a FastCGI application, made
    /// of the head as it goes to servers (`head`, rewritten by the rules),
    /// and the framing of the body after them; None for a chunked body
    /// whose length is not known yet.
    fn fcgi_request(
        &self,
        head: &[u8],
        app: &crate::snapshot::fcgi::FcgiRt,
    ) -> Option<(BytesMut, Option<u64>)> {
        let parsed = Head::parse_request(bytes::Bytes::copy_from_slice(head));
        let req = parsed.as_ref().unwrap_or(self.req);
        let cx = crate::http::forward::request_ctx(self.fe, self.be, req, self.ctx);
        let chunked_len = match self.client.pending {
            io::PendingBody::Buffered(end) if self.body == BodyKind::Chunked => {
                let mut d = crate::wire::h1::ChunkedDecoder::default();
                match d.feed(&self.client.buf[..end]) {
                    Ok(_) if d.is_done() => Some(d.body_len()),
                    _ => None,
                }
            }
            _ => None,
        };
        if self.body == BodyKind::Chunked && chunked_len.is_none() {
            return None;
        }
        let facts = crate::http::fcgi::Facts {
            app,
            cx: &cx,
            dst: self
                .ctx
                .dst
                .or_else(|| self.client.stream.local_addr().ok()),
            peer: self.ctx.peer.inet(),
            https: self.ctx.tls.is_some(),
            chunked_len,
        };
        Some(crate::http::fcgi::request(req, self.body, &facts))
    }

    /// Streams the request body to the server, once: sluice answers an
    /// `Expect: 100-continue` itself first.
    async fn send_body(&mut self, plan: &mut Plan, mut a: Attempt) -> Step<Attempt> {
        let (fe, be, body) = (self.fe, self.be, self.body);
        if body == BodyKind::None || plan.body_sent {
            return Step::Go(a);
        }
        if !self.client.continued
            && self
                .req
                .values("expect")
                .any(|v| v.eq_ignore_ascii_case(b"100-continue"))
        {
            let _ = self
                .client
                .answer(b"HTTP/1.1 100 Continue\r\n\r\n", fe.timeouts.client)
                .await;
        }
        plan.body_sent = true;
        // Relayed from here on, not skipped after an answer.
        self.client.pending = io::PendingBody::None;
        let mut no_head = BytesMut::new();
        let relayed = io::relay_message(
            &mut no_head,
            self.client,
            &mut a.up.stream,
            body,
            fe.timeouts.client,
            self.ctx.server_timeout(be),
            fe.splice,
            be.case_server.as_deref(),
        )
        .await;
        match relayed {
            Ok(n) => {
                self.rec.tally.srv_in += n.wire;
                plan.body_in = n.wire;
                // `%U` counts the body as HAProxy 2.6 does.
                plan.body_logged = n.logged;
                Step::Go(a)
            }
            Err(e) => Step::End(self.body_failed(e).await, false),
        }
    }

    /// The body could not be relayed: the client's fault (408, 400, a
    /// framing error sluice answers itself) or the server's (502).
    async fn body_failed(&mut self, e: RelayError) -> Outcome {
        let (fe, be, rec) = (self.fe, self.be, &mut *self.rec);
        if !e.source_side() {
            rec.tally.srv_abrt |= Rows::BE_SRV;
            rec.term(Cause::Server, Phase::Data);
            rec.tally.status(502, Rows::BE_SRV);
            return send_error_be(self.client, 502, fe, Some(be), false).await;
        }
        rec.tally.cli_abrt |= Rows::BE_SRV;
        let code = if matches!(e, RelayError::ReadTimeout) {
            408
        } else {
            400
        };
        if let RelayError::Framing(_, spot) = &e {
            rec.tally.ereq |= Rows::FE;
            let src = self.client.stream.peer_addr().ok();
            capture::request_error(fe, Some(be), src, &[&self.client.buf], *spot);
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
        send_error_be(self.client, code, fe, Some(be), false).await
    }

    /// Reads and parses the response head. A status `retry-on` names is
    /// dropped with its connection and the request sent again (the last
    /// one allowed is relayed as is); a reused connection closed before
    /// answering replays an idempotent request.
    async fn read_response(&mut self, plan: &mut Plan, a: Attempt) -> Step<(BufConn, Head, u32)> {
        let (fe, be) = (self.fe, self.be);
        let Attempt { mut up, reused } = a;
        let sent_at = Instant::now();
        // SPOE: the server's session, then the response's content rules
        // (the frontend's engines, then the backend's).
        let be_spoe = (be.iid != fe.iid).then_some(&be.spoe[..]);
        if (!fe.spoe.is_empty() || be_spoe.is_some_and(|e| !e.is_empty()))
            && self.ctx.vars.spoe.server_side_first()
        {
            Box::pin(self.spoe_server_side(be_spoe)).await;
        }
        if !be.tcp_response.is_empty() {
            // A listen section's engines are its frontend's.
            let (fe, be) = (self.fe, self.be);
            let engines = if be.iid == fe.iid { &fe.spoe } else { &be.spoe };
            // A Lua action may wait under the rules' inspect delay.
            let lua = be.res_inspect_delay.is_some()
                && be
                    .tcp_response
                    .iter()
                    .any(|(a, _)| matches!(a, crate::config::model::TcpAction::LuaRes(_)));
            let verdict = if engines.is_empty() && !lua {
                self.tcp_response_rules()
            } else {
                Box::pin(self.tcp_response_rules_waiting(engines)).await
            };
            match verdict {
                Verdict::Accept => {}
                // The server's side closed before its answer: HAProxy's
                // 502 `SH`.
                Verdict::Close => {
                    drop(up);
                    let server = self.seat.server().clone();
                    let failure = HeadFailure {
                        bit: 0,
                        code: Some(502),
                        term: SERVER_HEADERS,
                        abort: true,
                    };
                    return Box::pin(self.head_failed(plan, &server, failure)).await;
                }
                v => return Step::End(self.tcp_response_refused(v, plan), false),
            }
        }
        let failure = match up.read_head(be.max_head, self.ctx.server_timeout(be)).await {
            Ok(raw) => match Head::parse_response_lax(raw, be.accept_invalid_resp) {
                Ok(resp) => {
                    if be.retry_on.on_status(resp.status) && plan.l7_retries {
                        let server = self.seat.server().clone();
                        if let Some(next) = self.l7_retry(plan, &server, true) {
                            drop(resp);
                            drop(up);
                            return Box::pin(self.retry(plan, &server, next)).await;
                        }
                    }
                    return Step::Go((up, resp, ms(sent_at.elapsed())));
                }
                Err((e, raw)) => {
                    let spot = error_spot::locate(&raw, true, &e);
                    let server = self.seat.server();
                    capture_response(fe, be, server, self.client, &[&raw, &up.buf], spot);
                    REFUSED
                }
            },
            Err(HeadError::TooLarge) => {
                let spot = error_spot::locate(&up.buf, true, &H1Error::TooLarge);
                let server = self.seat.server();
                capture_response(fe, be, server, self.client, &[&up.buf], spot);
                REFUSED
            }
            Err(HeadError::Closed)
                if reused && !plan.body_sent && idempotent(self.req.method()) =>
            {
                // The server closed an idle connection just as it was
                // reused: an idempotent request is replayed once.
                plan.reuse_ok = false;
                return Step::Again;
            }
            Err(HeadError::Closed | HeadError::Io(_)) => HeadFailure {
                bit: RetryOn::EMPTY_RESPONSE,
                code: Some(502),
                term: SERVER_HEADERS,
                abort: true,
            },
            Err(HeadError::Timeout) => HeadFailure {
                bit: RetryOn::RESPONSE_TIMEOUT,
                code: Some(504),
                term: Term::new(Cause::ServerTimeout, Phase::Headers),
                abort: false,
            },
            Err(HeadError::Truncated) => HeadFailure {
                bit: RetryOn::JUNK_RESPONSE,
                code: Some(502),
                term: SERVER_HEADERS,
                abort: true,
            },
        };
        drop(up);
        let server = self.seat.server().clone();
        Box::pin(self.head_failed(plan, &server, failure)).await
    }

    /// The backend's `tcp-response content` rules in an HTTP backend: run
    /// once the request is sent, before the response head is read (as
    /// HAProxy runs them before its HTTP analysis), with no buffered bytes
    /// to wait for.
    async fn spoe_server_side(&mut self, be_spoe: Option<&[Arc<crate::snapshot::spoe::SpoeRt>]>) {
        use crate::config::spoe::SpoeEvent;
        let (fe, be, ctx) = (self.fe, self.be, self.ctx);
        let server = self.seat.server().clone();
        let req = self.req;
        let cx = || crate::http::relay::response_ctx(fe, be, ctx, req, &server, None);
        for ev in [SpoeEvent::ServerSession, SpoeEvent::TcpResponse] {
            let engines = crate::upstream::spoe::engines(&fe.spoe, be_spoe);
            crate::upstream::spoe::send_event(engines, ev, ctx.vars, ctx.proxies, cx).await;
        }
    }

    fn tcp_response_rules(&mut self) -> Verdict {
        let ctx = self.ctx;
        ctx.vars.to_response();
        let view = self.tcp_response_view();
        let mut fx = crate::tcp::rules::Effects::default();
        let level = crate::state::table::track::Level::Stream;
        let (rules, acls) = (&self.be.tcp_response, &self.be.acls);
        let verdict = crate::tcp::rules::run(rules, acls, &view, Some(ctx.vars), level, &mut fx);
        self.tcp_response_effects(&fx);
        verdict
    }

    /// [`Self::tcp_response_rules`] where the rules' proxy has SPOE
    /// engines or a Lua action may wait: a `send-spoe-group` rule waits
    /// for its agent, a Lua action for what it waits for.
    async fn tcp_response_rules_waiting(
        &mut self,
        engines: &[Arc<crate::snapshot::spoe::SpoeRt>],
    ) -> Verdict {
        let ctx = self.ctx;
        ctx.vars.to_response();
        let view = self.tcp_response_view();
        let mut fx = crate::tcp::rules::Effects::default();
        let level = crate::state::table::track::Level::Stream;
        let spoe = crate::tcp::rules::SpoeRules {
            engines,
            may_wait: self.be.res_inspect_delay.is_some(),
            snap: ctx.proxies,
            cx: None,
        };
        let waits = crate::tcp::rules::Waits {
            log: self.be.log.as_deref(),
            lua: self.be.res_inspect_delay.is_some(),
            spoe: (!engines.is_empty()).then_some(spoe),
            res_open: true,
        };
        let (rules, acls) = (&self.be.tcp_response, &self.be.acls);
        let verdict = crate::tcp::rules::run_waiting(
            (rules, acls),
            &view,
            Some(ctx.vars),
            level,
            &mut fx,
            waits,
            true,
        )
        .await
        .unwrap_or(Verdict::Accept);
        self.tcp_response_effects(&fx);
        verdict
    }

    fn tcp_response_view(&self) -> crate::tcp::rules::View<'a> {
        let ctx = self.ctx;
        crate::tcp::rules::View {
            src: ctx.peer.inet(),
            local: ctx.dst,
            payload: b"",
            res_payload: None,
            tls: ctx.tls,
            client: Some(ctx.client),
            stick: ctx.stick,
        }
    }

    fn tcp_response_effects(&mut self, fx: &crate::tcp::rules::Effects) {
        fx.mark(self.client.stream.socket());
        if fx.level.is_some() {
            self.rec.level = fx.level;
        }
    }

    /// A response `tcp-response content` refused before it came: the
    /// client's connection closed with nothing said (`reject`, HAProxy's
    /// `PD--`, counted in `dresp`) or dropped unknowing (`silent-drop`,
    /// `PR--`, `dreq`).
    fn tcp_response_refused(&mut self, verdict: Verdict, plan: &Plan) -> Outcome {
        let rec = &mut *self.rec;
        if verdict == Verdict::SilentDrop {
            rec.tally.dreq |= Rows::FE;
            rec.term(Cause::Proxy, Phase::Request);
            if let Some(tcp) = self.client.stream.socket() {
                crate::tcp::rules::silent_drop(&tcp);
            }
        } else {
            rec.tally.dresp |= Rows::ALL;
            rec.term(Cause::Proxy, Phase::Data);
        }
        rec.t_connect = plan.connect_ms as i64;
        rec.retries = self.tries.done;
        Outcome {
            status: None,
            keep_client: false,
            bytes_out: 0,
            logged_out: 0,
            body_in: 0,
            body_logged: 0,
        }
    }

    /// No usable response head: another attempt if `retry-on` names the
    /// failure, else the error page.
    async fn head_failed<T>(
        &mut self,
        plan: &mut Plan,
        server: &Arc<ServerState>,
        f: HeadFailure,
    ) -> Step<T> {
        if let Some(next) = self.l7_retry(plan, server, self.be.retry_on.has(f.bit)) {
            return self.retry(plan, server, next).await;
        }
        let Some(code) = f.code else {
            let out = bad_response(self.fe, self.be, self.client, self.rec, self.keep_client);
            return Step::End(out.await, false);
        };
        let rec = &mut *self.rec;
        rec.end(f.term);
        rec.tally.eresp |= Rows::BE_SRV;
        if f.abort {
            rec.tally.srv_abrt |= Rows::BE_SRV;
        }
        rec.tally.status(code, Rows::BE_SRV);
        let out = send_error_be(self.client, code, self.fe, Some(self.be), self.keep_client);
        Step::End(out.await, false)
    }

    /// A `retry-on` failure the request may be sent again for (`wanted`:
    /// the backend's `retry-on` names it), counted as a retry.
    fn l7_retry(&mut self, plan: &Plan, server: &ServerState, wanted: bool) -> Option<Next> {
        if !(plan.l7_retries && wanted) {
            return None;
        }
        self.tries.after_l7_failure(self.be, server)
    }

    /// Another attempt, on the server `next` says (the same one, or
    /// another after a redispatch); a 503 when none is left.
    async fn retry<T>(&mut self, plan: &Plan, server: &Arc<ServerState>, next: Next) -> Step<T> {
        match self.tries.apply(next, self.be, self.key, self.seat).await {
            Ok(()) => {
                note_move(server, self.seat, self.rec, self.ctx);
                Step::Again
            }
            Err(e) => {
                let (fe, be, keep) = (self.fe, self.be, plan.keep_on_error);
                let out = no_server(e, fe, be, self.client, keep, self.started, self.rec);
                Step::End(out.await, false)
            }
        }
    }

    /// The server failed before its answer (the termination state is set):
    /// counted as a bad response, answered 502.
    async fn server_failed(&mut self, keep: bool) -> Outcome {
        self.rec.tally.eresp |= Rows::BE_SRV;
        self.rec.tally.status(502, Rows::BE_SRV);
        send_error_be(self.client, 502, self.fe, Some(self.be), keep).await
    }
}

/// After a redispatch: the new server counts the request, the log and
/// `show sess` name it.
fn note_move(before: &Arc<ServerState>, seat: &Seat, rec: &mut LogRecord, ctx: &ReqCtx<'_>) {
    if !Arc::ptr_eq(before, seat.server()) {
        seat.server().counters.count_request();
        rec.assign_server(seat.server());
        ctx.stream.to_server(seat.server());
    }
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

/// The request head as it goes to the server.
fn upstream_head(
    req: &Head,
    body: BodyKind,
    close: bool,
    (ff, ot, name): (
        Option<&ForwardFor>,
        Option<(&crate::config::extras::OriginalTo, std::net::IpAddr)>,
        Option<&str>,
    ),
    ctx: &ReqCtx<'_>,
) -> io::HeadBuf {
    let mut out = io::HeadBuf::new();
    let framing = req.request_framing(body);
    // `http-send-name-header` removes the request's own fields of its name.
    let named = |n: &[u8]| name.is_some_and(|h| n.eq_ignore_ascii_case(h.as_bytes()));
    let placed = match ctx.edits {
        None if name.is_none() => req.write_forwarded(&mut out, &framing),
        None => req.write_forwarded_with(&mut out, (None, None), |_, n| named(n), &[], &framing),
        Some(e) => req.write_forwarded_with(
            &mut out,
            (e.method.as_deref(), e.target.as_deref()),
            |i, n| e.drops_at(i, n) || named(n),
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
    // `option originalto`: the address the client connected to, after
    // `x-forwarded-for` as HAProxy adds it.
    if let Some((ot, dst)) = ot {
        out.put_slice(ot.header.as_bytes());
        out.put_slice(b": ");
        rules::put_ip(&mut out, dst);
        out.put_slice(b"\r\n");
    }
    // A protocol switch (WebSocket) has its `upgrade` and `connection`
    // fields forwarded in place, as HAProxy 2.6 keeps them, and nothing
    // said of the connection after them (the `upgrade` token is enough,
    // with or without an `Upgrade` field). The common case, nothing to
    // say, is decided without reading the tokens.
    if close != (req.minor == 0) && !req.connection_lists_upgrade() {
        // Only what differs from the version's default is announced, as
        // HAProxy 2.6 does: close on HTTP/1.1, keep-alive on HTTP/1.0 (the
        // request goes out in the client's version).
        out.put_slice(if close {
            b"connection: close\r\n"
        } else {
            b"connection: keep-alive\r\n"
        });
    }
    out.put_slice(b"\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::h1::FramingLine;

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
