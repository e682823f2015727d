//! A server's response on its way to the client: interim answers, protocol
//! switches, the `http-response` rules and cookie, the body, and the
//! server connection back to its pool.

use std::sync::atomic::Ordering::Relaxed;

use bytes::{BufMut, BytesMut};

use crate::config::model::{CompAlgo, HttpReply, HttpResponseAction, HttpReuse};
use crate::http::compress;
use crate::http::cookie;
use crate::http::forward::{
    BAD_RESPONSE, Outcome, ReqCtx, SERVER_HEADERS, bad_response, capture_response,
    send_answer_seen, send_error_be, send_error_seen,
};
use crate::http::legacy;
use crate::http::rules::{self, Edits};
use crate::http::service::View;
use crate::observe::log::LogRecord;
use crate::observe::outcome::{Cause, Phase, Rows, Term};
use crate::snapshot::{BackendRt, FrontendRt};
use crate::state::ServerState;
use crate::wire::error_pages;
use crate::wire::error_spot::{self, ErrorSpot};
use crate::wire::h1::{BodyKind, H1Error, Head};
use crate::wire::h2_convert;
use crate::wire::io::{self, BufConn, HeadError, RelayError};

/// A response being relayed: the exchange it belongs to, the server
/// connection it comes on, and the bytes sent to the client so far.
pub(super) struct Relay<'a> {
    pub(super) fe: &'a FrontendRt,
    pub(super) be: &'a BackendRt,
    pub(super) server: &'a ServerState,
    pub(super) req: &'a Head,
    pub(super) upstream: BufConn,
    pub(super) client: &'a mut BufConn,
    pub(super) keep_client: bool,
    pub(super) rec: &'a mut LogRecord,
    pub(super) ctx: &'a ReqCtx<'a>,
    pub(super) bytes_out: u64,
    /// The same as HAProxy 2.6 logs it (`%B`): the internal form of the
    /// heads and bodies (`wire::logged_size`), not their wire bytes.
    pub(super) logged_out: u64,
    /// The algorithm the response is compressed with, once decided.
    pub(super) comp: Option<CompAlgo>,
    /// The cache object the body is stored in (`http-response
    /// cache-store`).
    pub(super) fill: Option<crate::state::cache::Fill>,
    /// The server connection may carry another request once the response
    /// is relayed ([`Relay::give_back`] pools it).
    pub(super) reusable: bool,
}

/// Why [`Relay::prepare`] refused a response.
enum Refusal<'r> {
    /// Its framing is invalid (at the spot given).
    Framing(Head, ErrorSpot),
    /// `http-response deny` (with its reply), `rspdeny` (without).
    Denied(Option<&'r HttpReply>),
    /// `http-response return`: this reply instead, and what `%B` counts
    /// of the server's answer (HAProxy had it in its buffer).
    Returned(&'r HttpReply, u64),
    /// `http-response silent-drop`: the client is left without the
    /// answer (its status, and what `%B` counts of it, for the log).
    Dropped(u16, u64),
    /// `http-response redirect`: this answer instead (its status, its
    /// location), and what `%B` counts of the server's.
    Redirected(u16, Vec<u8>, u64),
    /// An `rsprep` left a head that does not parse.
    Invalid,
    /// `option checkcache`: a cacheable response sets a cookie.
    CacheableCookie,
    /// A Lua action's `act.DENY`: the error page of the response's
    /// status, and what `%B` counts of the server's answer.
    LuaDenied(u16, u64),
    /// A Lua action's `act.ERROR`, and what `%B` counts of the server's
    /// answer.
    LuaError(u64),
    /// A Lua action's `act.INVALID`, and what `%B` counts of the
    /// server's answer.
    LuaInvalid(u64),
    /// A Lua action's `txn:done()`, and what `%B` counts of the server's
    /// answer.
    Closed(u64),
    /// A Lua action's `txn:done(reply)`: this answer instead, and what
    /// `%B` counts of the server's.
    Replied(crate::lua::txn::Reply, u64),
    /// The rules stopped to wait at this action (see [`Resume`]).
    Wait(usize, &'r HttpResponseAction),
}

/// A final response whose framing is known, before its rules run.
struct Framed<'a> {
    resp: Head,
    body: BodyKind,
    /// Whether the client connection may go on after it.
    keep: bool,
    /// `cookie` persistence: the backend's setup and the index of the
    /// server that answered.
    persist: Option<(&'a crate::config::model::CookiePersist, usize)>,
}

/// Sets the persistence cookie of `persist` on a response (once its
/// `http-response` rules ran, before the `http-after-response` ones, as
/// HAProxy 2.6 orders the fields they add); what it did into `sck`.
fn persist_cookie<'c>(
    be: &'c BackendRt,
    req: &'c Head,
    ctx: &ReqCtx<'_>,
    persist: Option<(&'c crate::config::model::CookiePersist, usize)>,
    sck: &'c mut Option<u8>,
) -> impl FnOnce(&Head, &mut Option<Edits>) + Send + 'c {
    let (persisted, ignored) = (ctx.persisted, ctx.persist_ignored);
    move |resp: &Head, edits: &mut Option<Edits>| {
        if let Some((ck, i)) = persist {
            // `direct`: the cookie chose this server (not a redispatch).
            let direct = persisted == Some(i);
            let own = be.servers[i].cookie.as_deref();
            *sck = Some(cookie::server_side(
                ck, own, direct, req, resp, edits, ignored,
            ));
        }
    }
}

/// The response is ready to go: its head as the rules left it, its
/// framing, and whether the client connection goes on after it.
struct Ready {
    resp: Head,
    body: BodyKind,
    keep: bool,
    edits: Option<Edits>,
}

impl<'a> Relay<'a> {
    /// Relays `resp` (a response head just read) and what follows it.
    /// `server_close`: the server connection is not kept for another
    /// request whatever the response says.
    /// Borrowed, not consumed: an async fn's arguments are kept twice in
    /// its future (as passed and as bound), and this one is inline in
    /// every connection's; the caller then calls [`Relay::give_back`].
    pub(super) async fn run(&mut self, resp: Head, server_close: bool) -> Outcome {
        // Most answers are final: their path never makes the future of
        // `interim`.
        let resp = if is_interim(resp.status) {
            match Box::pin(self.interim(resp)).await {
                Ok(r) => r,
                Err(out) => return out,
            }
        } else {
            resp
        };
        self.rec.cap_resp = crate::observe::log::capture_headers(&self.fe.captures.response, &resp);
        // The rare paths (a protocol switch, a refused response) run in
        // futures of their own, boxed: the future of the common path stays
        // small, and is moved less.
        if resp.status == 101 {
            return Box::pin(self.switch(resp)).await;
        }
        // The compression filter decides on the server's head, before the
        // rules (which may test `res.comp`).
        if let Some(algo) = self.ctx.comp
            && let Ok(body) = resp.response_body(self.req.method())
            && compress::applies(self.fe, self.be, self.req, &resp, body)
        {
            self.comp = Some(algo);
            self.ctx.vars.set_comp(algo.cfg_name());
        }
        // `http-response wait-for-body`: the body before the rules.
        if !(self.be.http_response.is_empty() && self.fe.http_response.is_empty())
            && let Some(wait) = self.body_wait(&resp)
            && let Some(out) = Box::pin(self.wait_body(&resp, wait)).await
        {
            return out;
        }
        if !(self.fe.spoe.is_empty() && self.be.spoe.is_empty()) {
            Box::pin(self.spoe_response(&resp)).await;
        }
        // Rules that may wait run in a future of their own; the others
        // run to their end in place.
        let prepared = if self.fe.rsp_waits || self.be.rsp_waits {
            Box::pin(self.prepare_waiting(resp)).await
        } else {
            self.prepare(resp)
        };
        let ready = match prepared {
            Ok(r) => r,
            Err(refusal) => return Box::pin(self.refused(refusal)).await,
        };
        self.deliver(ready, server_close).await
    }

    /// Once the response is relayed: the server connection goes back to
    /// the pool `pool` (its id) if it can carry another request; else it
    /// closes.
    pub(super) fn give_back(self, pool: u64) {
        if !self.reusable {
            return;
        }
        // Not into a pool a reload put in place of the one it was
        // relayed under.
        let current = self.server.pool.load();
        if current.id() == pool {
            current.put(
                self.upstream.stream,
                current.request_sni(|| self.req.values("host").next()),
                self.server.pool_max.load(Relaxed),
            );
        }
    }

    /// The `http-response wait-for-body` rule that applies to `resp`, if
    /// one does: the first of the backend's then the frontend's rules
    /// whose condition holds before any rule ran.
    fn body_wait(&self, resp: &Head) -> Option<crate::config::model::WaitForBody> {
        let (fe, be, ctx) = (self.fe, self.be, self.ctx);
        let sets = [(&be.http_response, &be.acls), (&fe.http_response, &fe.acls)];
        let n = if fe.iid == be.iid { 1 } else { 2 };
        let mut waits = sets[..n].iter().flat_map(|(rules, acls)| {
            rules.iter().filter_map(move |(a, c)| match a {
                HttpResponseAction::WaitForBody(w) => Some((*w, c, *acls)),
                _ => None,
            })
        });
        let first = waits.next()?;
        let view = View {
            head: self.req,
            res: Some(resp),
            src: ctx.src,
            src_port: None,
            local: None,
            tls: ctx.tls,
            client: Some(ctx.client),
            proxies: Some(ctx.proxies),
            server_conn: self.rec.server_conn.as_deref(),
            frontend: &fe.name,
            frontend_id: fe.iid,
            backend: Some((be.name.as_str(), be.iid)),
            vars: Some(ctx.vars),
            req_body: None,
            res_body: None,
            stick: ctx.stick,
        };
        std::iter::once(first)
            .chain(waits)
            .find(|(_, c, acls)| c.as_ref().is_none_or(|c| acls.eval(c, &view)))
            .map(|(w, _, _)| w)
    }

    /// Reads the response's body as `wait` says before its rules run; the
    /// 504 HAProxy answers when the time runs out (`sR--`, no response
    /// time).
    async fn wait_body(
        &mut self,
        resp: &Head,
        wait: crate::config::model::WaitForBody,
    ) -> Option<Outcome> {
        let body = resp.response_body(self.req.method()).ok()?;
        if body == BodyKind::None {
            return None;
        }
        let (fe, be) = (self.fe, self.be);
        let room = crate::http::body::room(resp, be.max_head, body == BodyKind::Chunked);
        let limit = Some(wait.time)
            .into_iter()
            .chain(self.ctx.server_timeout(be))
            .min();
        let waited =
            crate::http::body::wait(&mut self.upstream, body, room, wait.at_least, limit).await;
        if waited == crate::http::body::Waited::Ready {
            return None;
        }
        self.rec.term(Cause::ServerTimeout, Phase::Request);
        self.rec.t_resp = -1;
        self.rec.tally.status(504, Rows::BE_SRV);
        let mut out = send_error_be(self.client, 504, fe, Some(be), false).await;
        out.bytes_out += self.bytes_out;
        // HAProxy's `%B` counts what it had of the server's answer too.
        out.logged_out += self.logged_out
            + resp.logged_size()
            + crate::wire::logged_size::buffered_body(body, &self.upstream.buf);
        Some(out)
    }

    /// Interim 1xx answers are relayed as they come; returns the final one
    /// (or a 101).
    async fn interim(&mut self, mut resp: Head) -> Result<Head, Outcome> {
        let (fe, be) = (self.fe, self.be);
        while is_interim(resp.status) {
            let mut head = downstream_head(&resp, BodyKind::None, true, 1, None, None);
            if let Some(names) = &fe.case_client {
                names.apply(&mut head);
            }
            if self.client.answer(&head, fe.timeouts.client).await.is_err() {
                self.rec.term(Cause::Client, Phase::Headers);
                return Err(self.unanswered());
            }
            self.bytes_out += head.len() as u64;
            self.logged_out += resp.logged_size();
            resp = match self
                .upstream
                .read_head(be.max_head, self.ctx.server_timeout(be))
                .await
            {
                Ok(raw) => match Head::parse_response_lax(raw, be.accept_invalid_resp) {
                    Ok(r) => r,
                    Err((e, raw)) => {
                        let spot = error_spot::locate(&raw, true, &e);
                        return Err(self.refuse(Some(&raw), spot).await);
                    }
                },
                Err(HeadError::TooLarge) => {
                    let spot = error_spot::locate(&self.upstream.buf, true, &H1Error::TooLarge);
                    return Err(self.refuse(None, spot).await);
                }
                Err(_) => {
                    self.rec.end(SERVER_HEADERS);
                    self.rec.tally.eresp |= Rows::BE_SRV;
                    self.rec.tally.status(502, Rows::BE_SRV);
                    let out = send_error_be(self.client, 502, fe, Some(be), self.keep_client);
                    return Err(out.await);
                }
            };
        }
        Ok(resp)
    }

    /// An HTTP/1 client's side of a switch: the 101's `head`, then the
    /// raw bytes both ways until either side closes; the bytes moved from
    /// the client and to it, those that came with the heads included.
    async fn tunnel(
        client: &mut BufConn,
        upstream: &mut BufConn,
        head: &[u8],
        idle: (Option<std::time::Duration>, Option<std::time::Duration>),
        fe: &FrontendRt,
        be: &BackendRt,
    ) -> (u64, u64) {
        let _ = io::write_all(&mut client.stream, head, fe.timeouts.client).await;
        // The tunnel's bytes that came with the heads count with the rest.
        let (early_out, early_in) = (upstream.buf.len() as u64, client.buf.len() as u64);
        if !upstream.buf.is_empty() {
            let pending = upstream.buf.split();
            let _ = io::write_all(&mut client.stream, &pending, fe.timeouts.client).await;
        }
        if !client.buf.is_empty() {
            let pending = client.buf.split();
            let _ = io::write_all(&mut upstream.stream, &pending, be.timeouts.server).await;
        }
        // `timeout client-fin` / `server-fin` once a direction has ended.
        let (c2s, s2c) = crate::tcp::relay(
            &mut client.stream,
            &mut upstream.stream,
            crate::wire::relay::IdleTimeouts {
                open: idle.0,
                fin: fe.timeouts.client_fin,
            },
            crate::wire::relay::IdleTimeouts {
                open: idle.1,
                fin: be.timeouts.server_fin,
            },
            fe.splice,
        )
        .await;
        (early_in + c2s, early_out + s2c)
    }

    /// The outcome of an answer that could not be sent: what went out
    /// before it.
    fn unanswered(&self) -> Outcome {
        Outcome {
            status: None,
            keep_client: false,
            bytes_out: self.bytes_out,
            logged_out: self.logged_out,
            body_in: 0,
            body_logged: 0,
        }
    }

    /// A 101: the protocol switch is checked, then the raw bytes are
    /// relayed both ways until either side closes (WebSocket and friends).
    async fn switch(&mut self, resp: Head) -> Outcome {
        let (fe, be) = (self.fe, self.be);
        // A 101 opens a tunnel only for a request that asked for an upgrade;
        // an unsolicited one would let the client's next bytes bypass parsing.
        if !self.req.requests_upgrade() {
            let spot = ErrorSpot::at(9, error_spot::state::RPCODE);
            return self.refuse(Some(&resp.raw), spot).await;
        }
        // A switch to WebSocket without the server's `Sec-WebSocket-Accept`
        // is not one the client can accept: a 502, as HAProxy answers.
        if resp.upgrades_to_websocket() && resp.values("sec-websocket-accept").next().is_none() {
            let spot = ErrorSpot::at(resp.raw.len().saturating_sub(1), error_spot::state::LAST_LF);
            return self.refuse(Some(&resp.raw), spot).await;
        }
        self.rec.tally.srv_status = Some(resp.status);
        let mut head = BytesMut::new();
        resp.write_switch(&mut head);
        if let Some(names) = &fe.case_client {
            names.apply(&mut head);
        }
        let (client, upstream) = (&mut *self.client, &mut self.upstream);
        // Both sides idle out after `timeout tunnel` if set, else after
        // their own client/server timeout.
        let idle = (
            self.ctx
                .tunnel_timeout()
                .or(fe.timeouts.tunnel)
                .or(be.timeouts.tunnel)
                .or(fe.timeouts.client),
            self.ctx
                .tunnel_timeout()
                .or(be.timeouts.tunnel)
                .or(self.ctx.server_timeout(be)),
        );
        // An HTTP/2 client's tunnel is its stream (an extended CONNECT):
        // the switch is its 200, the bytes its DATA frames.
        let (c2s, s2c) = if let Some(h2) = client.h2.as_deref_mut() {
            let mut ok = crate::wire::h2_convert::response(&resp);
            if let Some(r) = &mut ok {
                r.status = http::StatusCode::OK;
            }
            let Some(response) = ok else {
                return self.unanswered();
            };
            h2.tunnel(response, upstream, idle).await
        } else {
            Self::tunnel(client, upstream, &head, idle, fe, be).await
        };
        self.rec.tally.srv_in += c2s;
        // HAProxy 2.6 logs the 101 as its internal form measures it, like
        // any head, then the tunnel's bytes (measured: 146 for a 101 of
        // 129 bytes on the wire, `hello` and `echo:ping` after it).
        Outcome {
            status: Some(101),
            keep_client: false,
            bytes_out: self.bytes_out + head.len() as u64 + s2c,
            logged_out: self.logged_out + resp.logged_size() + s2c,
            body_in: c2s,
            body_logged: c2s,
        }
    }

    /// The final response's framing, then the `http-response` rules,
    /// legacy `rsp*` filters and the persistence cookie: what the client
    /// will be sent, or the answer that replaces it (answered by
    /// [`Relay::refused`]). For rules none of which waits: they run to
    /// their end here.
    fn prepare(&mut self, resp: Head) -> Result<Ready, Refusal<'a>> {
        let mut f = self.framed(resp)?;
        let mut sck = None;
        let mut cookie = Some(persist_cookie(
            self.be, self.req, self.ctx, f.persist, &mut sck,
        ));
        let mut edits = None;
        if self.has_response_rules() {
            let mut resume = Resume::default();
            edits = self.response_rules(&mut f.resp, f.body, &mut cookie, &mut resume)?;
        } else if let Some(cookie) = cookie.take() {
            cookie(&f.resp, &mut edits);
        }
        drop(cookie);
        Ok(self.ready(f, sck, edits))
    }

    /// [`Relay::prepare`] where a rule may wait (a Lua action, a
    /// `send-spoe-group`): the rules stop there, the wait is awaited, and
    /// they go on.
    async fn prepare_waiting(&mut self, resp: Head) -> Result<Ready, Refusal<'a>> {
        let mut f = self.framed(resp)?;
        let mut sck = None;
        let mut cookie = Some(persist_cookie(
            self.be, self.req, self.ctx, f.persist, &mut sck,
        ));
        let mut resume = Resume {
            waits: true,
            ..Resume::default()
        };
        let edits = loop {
            match self.response_rules(&mut f.resp, f.body, &mut cookie, &mut resume) {
                Err(Refusal::Wait(set, action)) => {
                    let (fe, be, req, ctx) = (self.fe, self.be, self.req, self.ctx);
                    let uid = self.rec.unique_id.clone();
                    let server_conn = self.rec.server_conn.as_deref();
                    let who = Who::of(&self.server.name, ctx, server_conn, uid.as_deref());
                    let mut decoded = Vec::new();
                    let res_body = res_body(be, &self.upstream.buf, &f.resp, f.body, &mut decoded);
                    let be = Some(be);
                    let (_, cx) = rules_cx(fe, be, &who, req, ctx, res_body.as_ref());
                    wait_for(fe, be, &cx, &f.resp, set, action, &mut resume).await;
                }
                done => break done?,
            }
        };
        drop(cookie);
        Ok(self.ready(f, sck, edits))
    }

    /// The final response's framing, and what is decided before its
    /// rules run.
    #[inline]
    fn framed(&mut self, resp: Head) -> Result<Framed<'a>, Refusal<'a>> {
        let be = self.be;
        let body = match resp.response_body(self.req.method()) {
            Ok(b) => b,
            Err(e) => {
                let spot = error_spot::locate(&resp.raw, true, &e);
                return Err(Refusal::Framing(resp, spot));
            }
        };
        self.rec.tally.srv_status = Some(resp.status);
        if crate::upstream::stick::any(be) {
            self.store_server(&resp);
        }
        // A soft stop that began during the request: the response says close.
        let keep =
            self.keep_client && body != BodyKind::UntilClose && !crate::sys::process::stopping();
        let persist = be.cookie.as_deref().and_then(|ck| {
            let i = be
                .servers
                .iter()
                .position(|s| std::ptr::eq(&*s.state, self.server))?;
            Some((ck, i))
        });
        if be.extras.checkcache && cookie::cacheable_cookie(self.req, &resp) {
            crate::observe::log::emit_alert(
                be,
                &format!(
                    "Blocking cacheable cookie in response from instance {}, server {}.",
                    be.name, self.server.name
                ),
            );
            return Err(Refusal::CacheableCookie);
        }
        Ok(Framed {
            resp,
            body,
            keep,
            persist,
        })
    }

    /// The response ready to go once its rules ran: `sck`, what the
    /// persistence cookie did, into the log.
    #[inline]
    fn ready(&mut self, f: Framed<'a>, sck: Option<u8>, edits: Option<Edits>) -> Ready {
        if let (Some((ck, _)), Some(sck)) = (f.persist, sck)
            && ck.logged()
        {
            self.rec.persist[1] = sck;
        }
        Ready {
            resp: f.resp,
            body: f.body,
            keep: f.keep,
            edits,
        }
    }

    /// SPOE messages of the `on-http-response` event (the frontend's
    /// engines, then the backend's when it is another proxy), before the
    /// `http-response` rules read what the agents answer.
    async fn spoe_response(&mut self, resp: &Head) {
        use crate::config::spoe::SpoeEvent;
        let (fe, be, ctx) = (self.fe, self.be, self.ctx);
        // The request's processing is over: `res` variables begin.
        ctx.vars.to_response();
        let cx = response_ctx(fe, be, ctx, self.req, self.server, Some(resp));
        // The frontend's engines, then the backend's (a listen section's
        // are its frontend's).
        let be_spoe = (fe.iid != be.iid).then_some(&be.spoe[..]);
        for e in crate::upstream::spoe::engines(&fe.spoe, be_spoe) {
            if e.wants(SpoeEvent::HttpResponse, ctx.vars) {
                let msgs = e.for_event(SpoeEvent::HttpResponse, &cx);
                let about = crate::upstream::spoe::Sent::Event(SpoeEvent::HttpResponse);
                e.notify(&msgs, &cx, ctx.vars, ctx.proxies, about).await;
            }
        }
    }

    /// `stick` rules: the server that answers goes into the entries noted
    /// for it, once the response's head is known good (HAProxy's
    /// `process_store_rules`, before the `http-response` rules).
    fn store_server(&self, resp: &Head) {
        let (be, ctx) = (self.be, self.ctx);
        let Some(i) = be
            .servers
            .iter()
            .position(|s| std::ptr::eq(&*s.state, self.server))
        else {
            return;
        };
        let cx = response_ctx(self.fe, be, ctx, self.req, self.server, Some(resp));
        crate::upstream::stick::on_response(be, &cx, i, &ctx.stores);
    }

    /// Whether the backend or the frontend has `http-response` rules or
    /// legacy `rsp*` filters.
    fn has_response_rules(&self) -> bool {
        has_response_rules(self.fe, Some(self.be))
    }

    /// `http-response` rules and legacy `rsp*` filters: the backend's,
    /// then the frontend's. A deny answers in the server's stead.
    fn response_rules(
        &mut self,
        resp: &mut Head,
        body: BodyKind,
        cookie: &mut Option<impl FnOnce(&Head, &mut Option<Edits>)>,
        resume: &mut Resume,
    ) -> Result<Option<Edits>, Refusal<'a>> {
        let (fe, be, req, ctx) = (self.fe, self.be, self.req, self.ctx);
        // The request's processing is over: `req` variables go, `res`
        // ones begin (unless `tcp-response` rules began them).
        ctx.vars.to_response();
        let uid = self.rec.unique_id.clone();
        let server_conn = self.rec.server_conn.as_deref();
        let who = Who::of(&self.server.name, ctx, server_conn, uid.as_deref());
        let mut decoded = Vec::new();
        let res_body = res_body(be, &self.upstream.buf, resp, body, &mut decoded);
        let mut marks = rules::SockMarks::default();
        let log = RespLog {
            cap: &mut self.rec.cap_resp,
            level: &mut self.rec.level,
            marks: &mut marks,
        };
        let store = Store {
            fill: &mut self.fill,
            body,
            compressing: self.comp.is_some(),
        };
        let edited = response_edits(
            fe,
            Some(be),
            &who,
            req,
            ctx,
            resp,
            log,
            cookie,
            res_body.as_ref(),
            Some(store),
            resume,
        );
        // What `%B` counts of the server's answer when another replaces
        // it (HAProxy had read it into its buffer).
        let server_part = |resp: &Head| {
            resp.logged_size() + crate::wire::logged_size::buffered_body(body, &self.upstream.buf)
        };
        // A rule's `set-tos` and `set-mark`, once they all ran.
        if marks.any()
            && !matches!(edited, Err(RespRefused::Wait(..)))
            && let Some(tcp) = self.client.stream.socket()
        {
            marks.apply(tcp);
        }
        edited.map_err(|refused| match refused {
            RespRefused::Denied(reply) => Refusal::Denied(reply),
            RespRefused::Returned(reply) => Refusal::Returned(reply, server_part(resp)),
            RespRefused::Dropped(status) => Refusal::Dropped(status, server_part(resp)),
            RespRefused::Redirected(code, page) => {
                Refusal::Redirected(code, page, server_part(resp))
            }
            RespRefused::Invalid => Refusal::Invalid,
            RespRefused::LuaDenied(status) => Refusal::LuaDenied(status, server_part(resp)),
            RespRefused::LuaError => Refusal::LuaError(server_part(resp)),
            RespRefused::LuaInvalid => Refusal::LuaInvalid(server_part(resp)),
            RespRefused::Closed => Refusal::Closed(server_part(resp)),
            RespRefused::Replied(reply) => Refusal::Replied(reply, server_part(resp)),
            RespRefused::Wait(set, action) => Refusal::Wait(set, action),
        })
    }

    /// The answer to a response [`Relay::prepare`] refused.
    async fn refused(&mut self, refusal: Refusal<'a>) -> Outcome {
        let (fe, be) = (self.fe, self.be);
        match refusal {
            Refusal::Framing(resp, spot) => self.refuse(Some(&resp.raw), spot).await,
            Refusal::Dropped(status, server_part) => {
                // HAProxy's `PR--` with the server's status, nothing sent.
                self.rec.end(Term::new(Cause::Proxy, Phase::Request));
                if let Some(tcp) = self.client.stream.socket() {
                    crate::tcp::rules::silent_drop(&tcp);
                }
                // What HAProxy had read of the server's answer counts in
                // `%B`, as for a `return`.
                Outcome {
                    status: Some(status),
                    keep_client: false,
                    bytes_out: 0,
                    logged_out: server_part,
                    body_in: 0,
                    body_logged: 0,
                }
            }
            Refusal::Denied(_) | Refusal::Returned(..) => {
                let (reply, server_part) = match refusal {
                    Refusal::Returned(reply, server_part) => {
                        // `http-response return`: an answer made here,
                        // `LH` (HAProxy), not a denial.
                        self.rec.end(Term::new(Cause::Local, Phase::Headers));
                        (Some(reply), Some(server_part))
                    }
                    Refusal::Denied(reply) => {
                        // `http-response deny`, `rspdeny`: the server's
                        // answer is dropped.
                        self.rec.end(BAD_RESPONSE);
                        self.rec.tally.dresp |= Rows::BE_SRV;
                        (reply, None)
                    }
                    _ => (None, None),
                };
                let (req, ctx, server) = (self.req, self.ctx, self.server);
                let uid = self.rec.unique_id.clone();
                let cx = rules::FmtCtx {
                    req,
                    src: ctx.src,
                    frontend: &fe.name,
                    backend: Some(&be.name),
                    server: Some(&server.name),
                    unique_id: uid.as_deref(),
                    res: None,
                    frontend_id: fe.iid,
                    backend_id: Some(be.iid),
                    src_port: None,
                    first_req: None,
                    server_id: sid(be, &server.name),
                    local: None,
                    proxies: Some(ctx.proxies),
                    vars: Some(ctx.vars),
                    tls: ctx.tls,
                    client: Some(ctx.client),
                    server_conn: self.rec.server_conn.as_deref(),
                    req_body: None,
                    res_body: None,
                    stick: ctx.stick,
                };
                let mut out =
                    deny_response(self.client, fe, be, self.keep_client, reply, &cx).await;
                // HAProxy's `%B` of a `return` counts the server's answer it
                // had read too.
                if let Some(n) = server_part {
                    out.logged_out += n;
                }
                out
            }
            Refusal::Redirected(code, loc, server_part) => {
                // An answer made here, as `http-response return`'s.
                self.rec.end(Term::new(Cause::Local, Phase::Headers));
                let page = rules::redirect_response(code, &loc, self.keep_client);
                let mut out = send_answer_seen(
                    self.client,
                    &page,
                    code,
                    self.keep_client,
                    fe,
                    Some(be),
                    None,
                )
                .await;
                out.logged_out += server_part;
                out
            }
            Refusal::LuaDenied(status, server_part) => {
                // As a deny (`PH`), with the page of the status the
                // response had: HAProxy leaves it as it is.
                self.rec.end(BAD_RESPONSE);
                self.rec.tally.dresp |= Rows::BE_SRV;
                let mut out =
                    send_error_be(self.client, status, fe, Some(be), self.keep_client).await;
                out.logged_out += server_part;
                out
            }
            Refusal::LuaError(server_part) => {
                // HAProxy's internal error: `IH`, a 500.
                self.rec.end(Term::new(Cause::Internal, Phase::Headers));
                let mut out = send_error_be(self.client, 500, fe, Some(be), self.keep_client).await;
                out.logged_out += server_part;
                out
            }
            Refusal::Replied(reply, server_part) => {
                // An answer made here (`LH`), the `http-after-response`
                // rules applied to it.
                self.rec.end(Term::new(Cause::Local, Phase::Headers));
                let (out, keep, _) =
                    crate::http::lua_txn::render(&reply, self.req.minor, self.keep_client);
                let status = reply.status.unwrap_or(200);
                let mut o =
                    send_answer_seen(self.client, &out, status, keep, fe, Some(be), None).await;
                o.logged_out += server_part;
                o
            }
            Refusal::Closed(server_part) => {
                // `txn:done()`: the client closed with nothing sent, as a
                // local end (`LH`).
                self.rec.end(Term::new(Cause::Local, Phase::Headers));
                Outcome {
                    status: None,
                    keep_client: false,
                    bytes_out: 0,
                    logged_out: server_part,
                    body_in: 0,
                    body_logged: 0,
                }
            }
            // HAProxy's `return_srv_prx_502`: `PH`, a failed response.
            Refusal::CacheableCookie => {
                self.rec.tally.eresp |= Rows::BE_SRV;
                self.rec.end(BAD_RESPONSE);
                send_error_be(self.client, 502, fe, Some(be), self.keep_client).await
            }
            Refusal::LuaInvalid(server_part) => {
                self.rec.tally.eresp |= Rows::BE_SRV;
                self.rec.end(BAD_RESPONSE);
                let mut out = send_error_be(self.client, 502, fe, Some(be), self.keep_client).await;
                out.logged_out += server_part;
                out
            }
            // Never: the rules that wait are run by `prepare_waiting`.
            Refusal::Wait(..) | Refusal::Invalid => {
                // An `rsprep` that broke the head: HAProxy 1.8's
                // `return_bad_resp` (the status was counted already).
                self.rec.tally.eresp |= Rows::BE_SRV;
                self.rec.end(BAD_RESPONSE);
                send_error_be(self.client, 502, fe, Some(be), self.keep_client).await
            }
        }
    }

    /// Sends the head and relays the body; notes whether the server
    /// connection can carry another request.
    async fn deliver(&mut self, ready: Ready, server_close: bool) -> Outcome {
        let (fe, be, req) = (self.fe, self.be, self.req);
        let Ready {
            resp,
            body,
            keep,
            edits,
        } = ready;
        let status = resp.status;
        let mut edits = edits;
        if self.comp.is_some() {
            compress::edit_head(&resp, &mut edits);
        }
        let mut head = downstream_head(&resp, body, keep, req.minor, edits.as_ref(), self.comp);
        // `option h1-case-adjust-bogus-client`: every field of the head,
        // the ones sluice adds too, as HAProxy respells them.
        if let Some(names) = &fe.case_client {
            names.apply(&mut head);
        }
        let head_len = head.len() as u64;
        // From the parsed fields: the head is not scanned again.
        let logged_head = self.logged_out + resp.logged_size();
        let samples = crate::observe::log::Samples {
            vars: Some(self.ctx.vars),
            tls: self.ctx.tls,
            client: Some(self.ctx.client),
            proxies: Some(self.ctx.proxies),
            stick: self.ctx.stick,
        };
        self.rec.log_early(fe, status, logged_head, req, samples);
        // Bodies no filter touches: relayed as they are, spliced when
        // they can be, or as frames to an HTTP/2 client.
        let filtering = self.comp.is_some() || self.fill.is_some();
        let relayed = match self.client.h2.as_deref_mut() {
            None if !filtering => {
                io::relay_message(
                    &mut head,
                    &mut self.upstream,
                    &mut self.client.stream,
                    body,
                    self.ctx.server_timeout(be),
                    fe.timeouts.client,
                    fe.splice,
                    fe.case_client.as_deref(),
                )
                .await
            }
            // An HTTP/2 client: the same response as frames (the HTTP/1
            // form above is what the counters measure).
            Some(h2) if !filtering => {
                let t = (self.ctx.server_timeout(be), fe.timeouts.client);
                let up = &mut self.upstream;
                match deliver_h2(h2, &mut head, &resp, body, edits.as_ref(), up, t) {
                    Ok(done) => done,
                    Err(later) => later.await,
                }
            }
            _ => {
                let comp = self.comp;
                Box::pin(self.filtered(&mut head, body, comp, &resp, edits.as_ref())).await
            }
        };
        let ok = match relayed {
            Ok(n) => {
                self.bytes_out += head_len + n.wire;
                self.logged_out = logged_head + n.logged;
                true
            }
            Err(RelayError::Framing(_, spot)) if !head.is_empty() => {
                // Bad from its first body bytes: nothing was sent to the
                // client yet, which gets a 502 instead. The head is part of
                // what was refused, as in HAProxy's buffer.
                let spot = spot.shifted(resp.raw.len());
                return Box::pin(self.refuse(Some(&resp.raw), spot)).await;
            }
            Err(e) => {
                self.body_failed(&e);
                false
            }
        };
        let rec = &mut *self.rec;
        rec.tally.srv_out = self.bytes_out;
        let reusable = ok
            && !server_close
            && body != BodyKind::UntilClose
            && resp.wants_keep_alive()
            && self.upstream.buf.is_empty()
            && be.http_reuse != HttpReuse::Never
            && self.server.send_proxy.load(Relaxed) == 0
            // `pool-max-conn 0`: none is kept.
            && self.server.pool_max.load(Relaxed) != 0
            // A server in maintenance keeps no idle connection (HAProxy
            // parks none), so that it can be deleted once drained.
            && !self.server.is_maint();
        // The response head points into the read buffer: drop it first.
        drop(resp);
        self.upstream.release_buffer();
        self.reusable = reusable;
        Outcome {
            status: Some(status),
            keep_client: keep && ok,
            bytes_out: self.bytes_out,
            logged_out: self.logged_out,
            body_in: 0,
            body_logged: 0,
        }
    }

    /// The body through the response filters (compression): the
    /// counters of the frontend and the backend as HAProxy fills them.
    async fn filtered(
        &mut self,
        head: &mut BytesMut,
        body: BodyKind,
        comp: Option<CompAlgo>,
        resp: &Head,
        edits: Option<&Edits>,
    ) -> Result<io::Relayed, RelayError> {
        let (fe, be) = (self.fe, self.be);
        let enc = match comp {
            Some(algo) => Some(compress::Encoder::new(algo, fe, be).map_err(RelayError::Write)?),
            None => None,
        };
        let compresses = enc.as_ref().is_some_and(compress::Encoder::compresses);
        let mut fill = self.fill.take();
        let filters = crate::http::filtered::Filters {
            enc,
            store: fill
                .as_mut()
                .map(|f| f as &mut (dyn crate::http::filtered::Sink + Send)),
        };
        let p = match self.client.h2.as_deref_mut() {
            None => {
                crate::http::filtered::relay(
                    head,
                    &mut self.upstream,
                    &mut self.client.stream,
                    body,
                    filters,
                    self.ctx.server_timeout(be),
                    fe.timeouts.client,
                    fe.case_client.as_deref(),
                )
                .await?
            }
            Some(h2) => {
                let t = (self.ctx.server_timeout(be), fe.timeouts.client);
                let out_kind = if comp.is_some() {
                    BodyKind::Chunked
                } else {
                    body
                };
                let response = match edits {
                    None => h2_convert::forwarded_response(resp, out_kind, |_, _| false, &[], &[]),
                    Some(e) => h2_convert::forwarded_response(
                        resp,
                        out_kind,
                        |i, n| e.drops_at(i, n),
                        &e.replaced,
                        &e.add,
                    ),
                }
                .ok_or(RelayError::Write(std::io::ErrorKind::InvalidData.into()))?;
                let mut response = response;
                // The compression filter's own fields, last, as
                // `compress::put_added` writes them for HTTP/1.
                if let Some(algo) = comp {
                    response.append(b"vary", b"Accept-Encoding");
                    if algo != CompAlgo::Identity {
                        response.append(b"content-encoding", algo.coding().as_bytes());
                    }
                }
                let src = &mut self.upstream;
                filtered_h2(h2, head, response, src, body, out_kind, filters, t).await?
            }
        };
        // (The fill, complete or not, is dropped here: an incomplete one
        // leaves nothing.)
        drop(fill);
        for c in [&fe.state.counters, &be.state.counters] {
            if comp.is_none() {
                break;
            }
            if compresses {
                c.local().comp_in.add(p.comp_in);
                c.local().comp_out.add(p.comp_out);
            } else {
                c.local().comp_byp.add(p.comp_in);
            }
            c.local().comp_rsp.inc();
        }
        // What the client was sent stands for the server's bytes in the
        // logged size: HAProxy logs the compressed message.
        Ok(io::Relayed {
            wire: p.relayed.wire,
            logged: if comp.is_some() {
                p.sent
            } else {
                p.relayed.logged
            },
        })
    }

    /// The body broke off after the head went out: a framing error is kept
    /// for `show errors`, the side that failed is logged and counted.
    fn body_failed(&mut self, e: &RelayError) {
        let rec = &mut *self.rec;
        if let RelayError::Framing(_, spot) = e {
            rec.tally.eresp |= Rows::BE_SRV;
            let (fe, be, server) = (self.fe, self.be, self.server);
            capture_response(fe, be, server, self.client, &[&self.upstream.buf], *spot);
        }
        if e.source_side() {
            let cause = if matches!(e, RelayError::ReadTimeout) {
                Cause::ServerTimeout
            } else {
                Cause::Server
            };
            rec.term(cause, Phase::Data);
            rec.tally.srv_abrt |= Rows::BE_SRV;
        } else {
            rec.term(Cause::Client, Phase::Data);
            rec.tally.cli_abrt |= Rows::BE_SRV;
        }
    }

    /// A response sluice refuses: its `head` (when read whole) and what
    /// follows in the read buffer are kept for `show errors`, the error at
    /// `spot`, and the client gets a 502 instead.
    async fn refuse(&mut self, head: Option<&[u8]>, spot: ErrorSpot) -> Outcome {
        let (fe, be, server) = (self.fe, self.be, self.server);
        let buf = &self.upstream.buf[..];
        match head {
            Some(h) => capture_response(fe, be, server, self.client, &[h, buf], spot),
            None => capture_response(fe, be, server, self.client, &[buf], spot),
        }
        bad_response(fe, be, self.client, self.rec, self.keep_client).await
    }
}

/// A response relayed to an HTTP/2 client: at once, or a future of its own.
type H2Delivery<'d> = Result<
    Result<io::Relayed, RelayError>,
    std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<io::Relayed, RelayError>> + Send + 'd>,
    >,
>;

/// [`Relay::deliver`] to an HTTP/2 client: the response's HEADERS made
/// from the parsed head and the rules' edits, then its body; done at once
/// for no body or a small one already here, else a future of its own,
/// boxed. Out of line: the HTTP/1 path's future stays as it was.
#[inline(never)]
fn deliver_h2<'d>(
    h2: &'d mut crate::wire::h2_stream::H2Stream,
    head: &'d mut BytesMut,
    resp: &Head,
    body: BodyKind,
    edits: Option<&Edits>,
    upstream: &'d mut BufConn,
    (server_timeout, client_timeout): (Option<std::time::Duration>, Option<std::time::Duration>),
) -> H2Delivery<'d> {
    let response = match edits {
        None => h2_convert::forwarded_response(resp, body, |_, _| false, &[], &[]),
        Some(e) => {
            h2_convert::forwarded_response(resp, body, |i, n| e.drops_at(i, n), &e.replaced, &e.add)
        }
    };
    let Some(response) = response else {
        return Ok(Err(RelayError::Write(
            std::io::ErrorKind::InvalidData.into(),
        )));
    };
    match h2.deliver_at_once(head, response, upstream, body) {
        Ok(done) => Ok(done),
        Err(r) => Err(Box::pin(h2.deliver(
            head,
            r,
            upstream,
            body,
            server_timeout,
            client_timeout,
        ))),
    }
}

/// A filtered body (compressed, or stored in the cache) to an HTTP/2
/// client: the filters write its HTTP/1 form (`out_kind`: chunked when
/// compressed) into an in-process pipe, which the stream reads as frames,
/// `response` its HEADERS. Filtering is rarer than plain relaying, so it
/// keeps one implementation, HTTP/1's, at the cost of a copy.
#[allow(clippy::too_many_arguments)]
async fn filtered_h2(
    h2: &mut crate::wire::h2_stream::H2Stream,
    head: &mut BytesMut,
    response: h2_convert::ResponseHead,
    src: &mut BufConn,
    body: BodyKind,
    out_kind: BodyKind,
    filters: crate::http::filtered::Filters<'_>,
    (server_timeout, client_timeout): (Option<std::time::Duration>, Option<std::time::Duration>),
) -> Result<crate::http::filtered::Pumped, RelayError> {
    use tokio::io::AsyncWriteExt as _;
    let pipe = |rx, tx| {
        crate::tls::Stream::Pipe(Box::new(crate::tls::stream::Pipe {
            rx,
            tx,
            peer: None,
            local: None,
        }))
    };
    let (w, r) = tokio::io::duplex(64 * 1024);
    let (unused_a, unused_b) = tokio::io::duplex(1);
    let mut writer = pipe(unused_a, w);
    let reader = BufConn::new(pipe(r, unused_b));
    let fill = async {
        // The head goes as HEADERS on the other side: none here.
        let mut none = BytesMut::new();
        let p = crate::http::filtered::relay(
            &mut none,
            src,
            &mut writer,
            body,
            filters,
            server_timeout,
            None,
            None,
        )
        .await;
        // The end of the pipe ends a body that lasts until the close.
        let _ = writer.shutdown().await;
        drop(writer);
        p
    };
    let send = async {
        let mut reader = reader;
        // The reader goes when the stream is done with it, so that a
        // client that reset the stream stops the filling side too.
        h2.deliver(head, response, &mut reader, out_kind, None, client_timeout)
            .await
    };
    let (p, sent) = tokio::join!(fill, send);
    let p = p?;
    sent?;
    Ok(p)
}

/// What the samples of a request sent to `server` read: the request and,
/// once it came, its answer's head (the `stick` store rules, SPOE's
/// `on-server-session`, `on-tcp-response` and `on-http-response`
/// messages).
pub(crate) fn response_ctx<'c>(
    fe: &'c FrontendRt,
    be: &'c BackendRt,
    ctx: &'c ReqCtx<'_>,
    req: &'c Head,
    server: &'c ServerState,
    resp: Option<&'c Head>,
) -> crate::sample::Ctx<'c> {
    crate::sample::Ctx {
        src: ctx.src,
        src_port: ctx.peer.inet().map(|a| a.port()),
        local: ctx.dst,
        req: Some(req),
        res: resp,
        status: resp.map(|r| r.status),
        frontend: &fe.name,
        backend: Some(&be.name),
        server: Some(&server.name),
        frontend_id: fe.iid,
        backend_id: Some(be.iid),
        vars: Some(ctx.vars),
        tls: ctx.tls,
        client: Some(ctx.client),
        proxies: Some(ctx.proxies as &dyn crate::sample::Proxies),
        stick: ctx.stick.map(|s| s as &dyn crate::sample::stick::Stick),
        ..Default::default()
    }
}

/// A 1xx answer other than 101: relayed, and a final one follows.
fn is_interim(status: u16) -> bool {
    (100..200).contains(&status) && status != 101
}

/// The response head as it goes to the client.
pub(super) fn downstream_head(
    resp: &Head,
    body: BodyKind,
    keep: bool,
    client_minor: u8,
    edits: Option<&Edits>,
    comp: Option<CompAlgo>,
) -> io::HeadBuf {
    // A compressed body goes chunked.
    let body = if comp.is_some() {
        BodyKind::Chunked
    } else {
        body
    };
    let framing = resp.response_framing(body);
    let mut out = io::HeadBuf::new();
    let placed = match edits {
        None => resp.write_forwarded(&mut out, &framing),
        Some(e) => resp.write_forwarded_with(
            &mut out,
            (None, None),
            |i, n| e.drops_at(i, n),
            &e.replaced,
            &framing,
        ),
    };
    match comp {
        None => {
            if !placed {
                out.put_slice(framing.bytes());
            }
            if let Some(e) = edits {
                e.put_added(&mut out);
            }
        }
        // HAProxy's compression filter changes the head after the rules:
        // their fields first, then its own.
        Some(algo) => {
            if let Some(e) = edits {
                e.put_added(&mut out);
            }
            if !placed {
                out.put_slice(framing.bytes());
            }
            compress::put_added(&mut out, algo);
        }
    }
    // What becomes of the connection, said against the defaults of the
    // version the status line carries (the server's, as HAProxy 2.6
    // repeats it): an HTTP/1.0 answer announces keep-alive, never close.
    if resp.minor == 0 {
        if keep {
            out.put_slice(b"connection: keep-alive\r\n");
        }
    } else if !keep {
        out.put_slice(b"connection: close\r\n");
    } else if client_minor == 0 {
        out.put_slice(b"connection: keep-alive\r\n");
    }
    out.put_slice(b"\r\n");
    out
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
            return send_error_seen(client, status, fe, Some(be), false, cx).await;
        }
        None => crate::http::reply::with_close(error_pages::response(status), keep),
    };
    send_answer_seen(client, &out, status, keep, fe, Some(be), Some(cx)).await
}

/// What `http-response cache-store` needs: where the fill goes, the
/// body's framing, whether the response is compressed.
struct Store<'s> {
    fill: &'s mut Option<crate::state::cache::Fill>,
    body: BodyKind,
    compressing: bool,
}

/// Whether `e` changes nothing (a rule made it before deciding not to).
fn is_empty(e: &Edits) -> bool {
    e.target.is_none()
        && e.del.is_empty()
        && e.add.is_empty()
        && e.replaced.is_empty()
        && e.del_at.is_empty()
}

/// The `http-response` rules (and `http-after-response`) on an answer
/// made here, as on a server's: from the cache (`server` `<CACHE>`), or
/// from a Lua service (`<lua.name>`; `be` None when it answered in a
/// frontend, whose own rules are the only ones then, as in HAProxy). A
/// deny is `Err`.
pub(super) async fn local_answer_rules(
    fe: &FrontendRt,
    be: Option<&BackendRt>,
    server: &str,
    req: &Head,
    ctx: &ReqCtx<'_>,
    resp: &mut Head,
    rec: &mut LogRecord,
) -> Result<Option<Edits>, ()> {
    if !has_response_rules(fe, be) {
        return Ok(None);
    }
    ctx.vars.to_response();
    let uid = rec.unique_id.clone();
    // No server connection: the `bc_*` fetches find nothing.
    let who = Who::of(server, ctx, None, uid.as_deref());
    // Rules run where the client socket is not at hand: their `set-tos`
    // and `set-mark` are not applied.
    let mut marks = rules::SockMarks::default();
    let mut resume = Resume {
        waits: fe.rsp_waits || be.is_some_and(|b| b.rsp_waits),
        ..Resume::default()
    };
    let mut cookie = Some(|_: &Head, _: &mut Option<Edits>| {});
    loop {
        let log = RespLog {
            cap: &mut rec.cap_resp,
            level: &mut rec.level,
            marks: &mut marks,
        };
        let edited = response_edits(
            fe,
            be,
            &who,
            req,
            ctx,
            resp,
            log,
            &mut cookie,
            None,
            None,
            &mut resume,
        );
        let Err(RespRefused::Wait(set, action)) = edited else {
            return edited.map_err(|_| ());
        };
        let (_, cx) = rules_cx(fe, be, &who, req, ctx, None);
        Box::pin(wait_for(fe, be, &cx, resp, set, action, &mut resume)).await;
    }
}

/// Whether `fe` or `be` has `http-response` or `http-after-response`
/// rules or legacy `rsp*` filters.
pub(super) fn has_response_rules(fe: &FrontendRt, be: Option<&BackendRt>) -> bool {
    !fe.http_response.is_empty()
        || !fe.http_after.is_empty()
        || fe.legacy_rsp.is_some()
        || be.is_some_and(|be| {
            !be.http_response.is_empty() || !be.http_after.is_empty() || be.legacy_rsp.is_some()
        })
}

/// What the response rules write into the request's log record: the
/// response capture slots, the level of the line.
struct RespLog<'a> {
    cap: &'a mut [Option<Vec<u8>>],
    level: &'a mut Option<crate::config::model::LogLevel>,
    /// `set-tos`, `set-mark`: for the client socket, once the rules ran.
    marks: &'a mut rules::SockMarks,
}

/// Why the response rules refused a response.
enum RespRefused<'r> {
    /// `http-response deny` (with its reply), `rspdeny` (without).
    Denied(Option<&'r HttpReply>),
    /// `http-response return`.
    Returned(&'r HttpReply),
    /// `http-response silent-drop` (the response's status).
    Dropped(u16),
    /// `http-response redirect`: its status and location.
    Redirected(u16, Vec<u8>),
    /// An `rsprep` left a head that does not parse.
    Invalid,
    /// A Lua action's `act.DENY`: the error page of this status (the
    /// response's).
    LuaDenied(u16),
    /// A Lua action's `act.ERROR`: an internal error.
    LuaError,
    /// A Lua action's `act.INVALID`: a bad response.
    LuaInvalid,
    /// A Lua action's `txn:done()`: the client closed, sent nothing.
    Closed,
    /// A Lua action's `txn:done(reply)`: this answer instead.
    Replied(crate::lua::txn::Reply),
    /// The rules stopped at this action of set 0 (the backend's) or 1
    /// (the frontend's), which waits: see [`Resume`].
    Wait(usize, &'r HttpResponseAction),
}

/// Who a response's rules see: the server that answered, the client, the
/// request's id.
struct Who<'a> {
    server: &'a str,
    src: Option<std::net::IpAddr>,
    tls: Option<&'a crate::tls::TlsFacts>,
    client: &'a crate::sample::conn::ClientFacts,
    server_conn: Option<&'a crate::sample::srvconn::ServerFacts>,
    unique_id: Option<&'a str>,
}

impl<'a> Who<'a> {
    /// Who the rules of a response from `server` see.
    fn of(
        server: &'a str,
        ctx: &ReqCtx<'a>,
        server_conn: Option<&'a crate::sample::srvconn::ServerFacts>,
        unique_id: Option<&'a str>,
    ) -> Who<'a> {
        Who {
            server,
            src: ctx.src,
            tls: ctx.tls,
            client: ctx.client,
            server_conn,
            unique_id,
        }
    }
}

/// The body that came with a response's head, or was waited for: a view
/// of the server connection's buffer `buf` (a chunked one decoded once,
/// into `decoded`), where a rule reads it.
fn res_body<'b>(
    be: &BackendRt,
    buf: &'b [u8],
    resp: &Head,
    body: BodyKind,
    decoded: &'b mut Vec<u8>,
) -> Option<crate::sample::fetch::Body<'b>> {
    (body != BodyKind::None && crate::sample::fetch::body_read(true)).then(|| {
        let room = crate::http::body::room(resp, be.max_head, body == BodyKind::Chunked);
        crate::http::body::view(buf, body, room, decoded)
    })
}

/// The id of the server named `name` in `be` (`srv_id`): looked up only
/// where response rules run.
fn sid(be: &BackendRt, name: &str) -> Option<u32> {
    be.servers.iter().find(|s| s.name == name).map(|s| s.sid)
}

/// Where a run of the `http-response` rules stopped to wait (a Lua
/// action, a `send-spoe-group`), what the rules before had done, and
/// what the wait gave: [`response_edits`] goes on from there.
#[derive(Default)]
struct Resume {
    /// Whether the rules may stop at an action that waits (else one is
    /// skipped: only where the proxies have none).
    waits: bool,
    /// The rule set (0: the backend's, 1: the frontend's) and the rule
    /// waited at.
    at: Option<(usize, usize)>,
    /// The edits of the rules before it.
    edits: Option<Edits>,
    /// How the Lua action waited at ended.
    lua: Option<LuaEnd>,
}

impl Resume {
    /// Notes where the rules stop, at `action`, rule `at` of set `set`.
    fn wait_at<'r>(
        &mut self,
        set: usize,
        at: usize,
        edits: Option<Edits>,
        action: &'r HttpResponseAction,
    ) -> RespRefused<'r> {
        self.at = Some((set, at));
        self.edits = edits;
        RespRefused::Wait(set, action)
    }
}

/// How a Lua response action ended: its `act.*` code, the status and
/// the log level it set.
struct LuaEnd {
    end: crate::lua::ActionEnd,
    status: Option<(u16, Vec<u8>)>,
    level: Option<crate::config::model::LogLevel>,
    /// `txn:done(reply)`: the answer that replaces the response.
    reply: Option<crate::lua::txn::Reply>,
    /// `txn:set_tos()`, `txn:set_mark()`.
    marks: rules::SockMarks,
}

/// Waits at `action`, rule of set `set` where the response rules stopped
/// (see [`Resume`]): runs the Lua action to its end, or sends the group's
/// messages to the agent and waits for its answer.
async fn wait_for(
    fe: &FrontendRt,
    be: Option<&BackendRt>,
    cx: &rules::FmtCtx<'_>,
    resp: &Head,
    set: usize,
    action: &HttpResponseAction,
    resume: &mut Resume,
) {
    let cx = rules::FmtCtx {
        res: Some(resp),
        ..*cx
    };
    match action {
        HttpResponseAction::Lua(a) => {
            let mut t = crate::http::lua_txn::ResTxn {
                cx,
                resp,
                edits: &mut resume.edits,
                status: None,
                level: None,
                reply: None,
                marks: rules::SockMarks::default(),
                // The backend's rules come first, then the frontend's.
                log: if set == 0 {
                    be.and_then(|b| b.log.as_deref())
                } else {
                    fe.log.as_deref().map(|l| &l.setup)
                },
            };
            let end = crate::http::lua_txn::run_response(a, &mut t).await;
            let (status, level, reply) = (t.status.take(), t.level, t.reply.take());
            resume.lua = Some(LuaEnd {
                end,
                status,
                level,
                reply,
                marks: t.marks,
            });
        }
        HttpResponseAction::SendSpoeGroup { engine, group } => {
            // The engines of the proxy whose rule this is.
            let engines = match (set, be) {
                (0, Some(b)) => &b.spoe,
                _ => &fe.spoe,
            };
            if let Some(e) = engines.iter().find(|e| e.conf.id == *engine)
                && let Some(msgs) = e.group(group)
            {
                let about = crate::upstream::spoe::Sent::Group(group);
                let (vars, proxies) = (cx.vars, cx.proxies);
                if let (Some(vars), Some(proxies)) = (vars, proxies) {
                    e.notify(msgs, &rules::sample_ctx(&cx), vars, proxies, about)
                        .await;
                }
            }
        }
        _ => {}
    }
}

/// What the response rules of `fe` and `be` see: the request and the
/// connection (`view`, for conditions) and the same for their formats.
/// Inlined: built in place, the two are not copied out (measured: about
/// 300 instructions per response with rules when they were).
#[inline(always)]
fn rules_cx<'x>(
    fe: &'x FrontendRt,
    be: Option<&'x BackendRt>,
    who: &Who<'x>,
    req: &'x Head,
    ctx: &ReqCtx<'x>,
    res_body: Option<&'x crate::sample::fetch::Body<'x>>,
) -> (View<'x>, rules::FmtCtx<'x>) {
    let (server, src, tls) = (who.server, who.src, who.tls);
    // The address the client reached (`dst`): a PROXY header's, else
    // asked of the socket, only where rules run.
    let rules = !fe.http_response.is_empty() || be.is_some_and(|b| !b.http_response.is_empty());
    let local = rules
        .then(|| ctx.dst.or_else(|| ctx.client.socket_local()))
        .flatten();
    let src_port = ctx.peer.inet().map(|a| a.port());
    let view = View {
        head: req,
        res: None,
        src,
        src_port,
        local,
        tls,
        client: Some(who.client),
        proxies: Some(ctx.proxies),
        server_conn: who.server_conn,
        frontend: &fe.name,
        frontend_id: fe.iid,
        backend: be.map(|b| (b.name.as_str(), b.iid)),
        vars: Some(ctx.vars),
        req_body: None,
        res_body,
        stick: ctx.stick,
    };
    let cx = rules::FmtCtx {
        req,
        src,
        frontend: &fe.name,
        backend: be.map(|b| b.name.as_str()),
        server: Some(server),
        unique_id: who.unique_id,
        res: None,
        frontend_id: fe.iid,
        backend_id: be.map(|b| b.iid),
        src_port,
        first_req: None,
        server_id: be.and_then(|b| sid(b, server)),
        local,
        proxies: Some(ctx.proxies),
        vars: Some(ctx.vars),
        tls,
        client: Some(who.client),
        server_conn: who.server_conn,
        req_body: None,
        res_body,
        stick: ctx.stick,
    };
    (view, cx)
}

/// Runs the `http-response` rules then the `rsp*` filters of the backend,
/// then of the frontend (once for a `listen` section), then `cookie`
/// (the persistence cookie), then the `http-after-response` rules. The
/// filters may replace `resp` with their rewrite.
#[allow(clippy::too_many_arguments)]
fn response_edits<'r>(
    fe: &'r FrontendRt,
    be: Option<&'r BackendRt>,
    who: &Who<'_>,
    req: &Head,
    ctx: &ReqCtx<'_>,
    resp: &mut Head,
    log: RespLog<'_>,
    cookie: &mut Option<impl FnOnce(&Head, &mut Option<Edits>)>,
    res_body: Option<&crate::sample::fetch::Body<'_>>,
    mut store: Option<Store<'_>>,
    resume: &mut Resume,
) -> Result<Option<Edits>, RespRefused<'r>> {
    let (view, cx) = rules_cx(fe, be, who, req, ctx, res_body);
    // Where an earlier run stopped to wait: the rules go on from there.
    let from = resume.at.take();
    let (from_set, from_rule) = from.unwrap_or((0, 0));
    let mut edits: Option<Edits> = resume.edits.take();
    // A `listen` section is its own frontend: its rules run once.
    // A `listen` section is its own backend; a service answering in a
    // frontend has none.
    let own = be.is_some_and(|b| b.iid == fe.iid);
    let fe_rules: &[_] = if own { &[] } else { &fe.http_response };
    let fe_legacy = if own { None } else { fe.legacy_rsp.as_deref() };
    let sets = [
        match be {
            Some(b) => (&b.http_response[..], &b.acls, b.legacy_rsp.as_deref()),
            None => (&[][..], &fe.acls, None),
        },
        (fe_rules, &fe.acls, fe_legacy),
    ];
    for (set, (rules_, acls, legacy_rsp)) in sets.into_iter().enumerate().skip(from_set) {
        let skip = if set == from_set { from_rule } else { 0 };
        for (at, (action, cond)) in rules_.iter().enumerate().skip(skip) {
            // The action waited at (its condition held) ends now.
            let resumed = from == Some((set, at));
            // The response's conditions see it (`status`, `res.hdr`).
            let res_view = View {
                res: Some(&*resp),
                ..view
            };
            // Nor the request's headers, gone in HAProxy by then (a
            // condition on `path` never matches there, as it warns).
            if !resumed
                && let Some(c) = cond
                && !acls.eval(
                    c,
                    &crate::sample::Ctx {
                        req_gone: true,
                        ..crate::acl::eval::RequestView::sample_ctx(&res_view)
                    },
                )
            {
                continue;
            }
            // The rest of this section's rules are skipped.
            if *action == HttpResponseAction::Allow {
                break;
            }
            let mut caps = rules::CaptureSlots {
                slots: &mut *log.cap,
                lens: &fe.captures.response,
            };
            // The response as the server sent it (the edits of earlier
            // rules are applied after the last rule).
            if rules::edit_response(action, resp, &mut edits, &cx, &mut caps) {
                continue;
            }
            match action {
                HttpResponseAction::Lua(_) => {
                    // Run by the caller of a run that may wait, which
                    // runs the rules again from here with how it ended.
                    let Some(LuaEnd {
                        end,
                        status,
                        level,
                        reply,
                        marks,
                    }) = resumed.then(|| resume.lua.take()).flatten()
                    else {
                        if resume.waits {
                            return Err(resume.wait_at(set, at, edits, action));
                        }
                        continue;
                    };
                    if let Some(l) = level {
                        *log.level = Some(l);
                    }
                    log.marks.merge(marks);
                    if let Some((code, reason)) = status
                        && let Some(mut h) = rules::restatus(resp, edits.as_ref(), code, &reason)
                    {
                        // As `set-status`: the edits so far are part of
                        // the new head.
                        h.count_status_line_of(resp);
                        *resp = h;
                        edits = None;
                    }
                    use crate::lua::ActionEnd;
                    match end {
                        ActionEnd::Continue | ActionEnd::Failed => {}
                        ActionEnd::Stop => break,
                        // HAProxy's error page of the response's status.
                        ActionEnd::Deny => return Err(RespRefused::LuaDenied(resp.status)),
                        ActionEnd::Error => return Err(RespRefused::LuaError),
                        ActionEnd::Invalid => return Err(RespRefused::LuaInvalid),
                        ActionEnd::Closed => {
                            return Err(match reply {
                                Some(reply) => RespRefused::Replied(reply),
                                None => RespRefused::Closed,
                            });
                        }
                        // The response goes as it is now: no more rules,
                        // `http-after-response` ones neither.
                        ActionEnd::Done | ActionEnd::Abort => {
                            if let Some(cookie) = cookie.take() {
                                cookie(resp, &mut edits);
                            }
                            return Ok(edits);
                        }
                    }
                }
                // Sent by the caller of a run that may wait, which runs
                // the rules again from the next one.
                HttpResponseAction::SendSpoeGroup { .. } => {
                    if !resumed && resume.waits {
                        return Err(resume.wait_at(set, at, edits, action));
                    }
                }
                HttpResponseAction::Deny(reply) => return Err(RespRefused::Denied(Some(reply))),
                HttpResponseAction::Return(reply) => return Err(RespRefused::Returned(reply)),
                HttpResponseAction::SilentDrop => return Err(RespRefused::Dropped(resp.status)),
                HttpResponseAction::Redirect {
                    kind,
                    fmt,
                    code,
                    drop_query,
                    append_slash,
                } => {
                    let cx = rules::FmtCtx {
                        res: Some(resp),
                        ..cx
                    };
                    let v = rules::eval(fmt, &cx);
                    let loc = rules::location(
                        *kind,
                        &v,
                        cx.req,
                        cx.req.target(),
                        (*drop_query, *append_slash),
                    );
                    return Err(RespRefused::Redirected(*code, loc));
                }
                // Waited for before the rules ran (`Relay::wait_body`).
                HttpResponseAction::WaitForBody(_) => {}
                HttpResponseAction::Table(a) => {
                    if let Some(stick) = ctx.stick {
                        let cx = rules::FmtCtx {
                            res: Some(resp),
                            ..cx
                        };
                        stick.act(
                            a,
                            &rules::sample_ctx(&cx),
                            crate::state::table::track::Level::HttpStream,
                        );
                    }
                }
                HttpResponseAction::SetLogLevel(l) => *log.level = Some(*l),
                HttpResponseAction::SetTos(v) => log.marks.tos = Some(*v),
                HttpResponseAction::SetMark(v) => log.marks.mark = Some(*v),
                // Stopped the loop above; the others were applied.
                HttpResponseAction::Allow
                | HttpResponseAction::SetHeader { .. }
                | HttpResponseAction::AddHeader { .. }
                | HttpResponseAction::DelHeader { .. }
                | HttpResponseAction::ReplaceHeader(_)
                | HttpResponseAction::ReplaceValue(_)
                | HttpResponseAction::SetStatus { .. }
                | HttpResponseAction::Capture { .. }
                | HttpResponseAction::Var(_)
                | HttpResponseAction::Map(_)
                | HttpResponseAction::StrictMode(_)
                | HttpResponseAction::SetNice(_) => {}
                HttpResponseAction::CacheStore(c) => {
                    // The backend's rules come first; a hit is not stored
                    // again (no `store` then).
                    let caches = match (set, be) {
                        (0, Some(b)) => &b.caches,
                        _ => &fe.caches,
                    };
                    if let Some(st) = store.as_mut()
                        && st.fill.is_none()
                        && let Some(cache) = caches.get(c.idx)
                        // A compression filter before the cache's (the
                        // frontend's, the cache's in the backend) leaves
                        // nothing to store, as in HAProxy.
                        && !(st.compressing && set == 0 && !own && fe.comp.is_some())
                    {
                        let before = edits.as_ref().filter(|e| !is_empty(e));
                        let stored = crate::http::cache::store_rule(
                            cache, ctx.cache, req, resp, before, st.body,
                        );
                        if let Some((fill, age)) = stored {
                            *st.fill = Some(fill);
                            // HAProxy took the server's `Age` out of the
                            // response itself.
                            if let Some(i) = age {
                                edits.get_or_insert_with(Edits::default).set_at(i, None);
                            }
                        }
                    }
                }
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
    if let Some(cookie) = cookie.take() {
        cookie(resp, &mut edits);
    }
    for (rules_, acls) in crate::http::after::sets(fe, be) {
        for (action, cond) in rules_ {
            // These rules see the response (`status`, `res.hdr`).
            let scx = crate::sample::Ctx {
                res: Some(&*resp),
                status: Some(resp.status),
                ..rules::sample_ctx(&cx)
            };
            // Their conditions no longer see the request: in HAProxy it
            // is gone by then (one on `path` never matches there).
            if let Some(c) = cond
                && !acls.eval(
                    c,
                    &crate::sample::Ctx {
                        req_gone: true,
                        ..scx
                    },
                )
            {
                continue;
            }
            if *action == HttpResponseAction::Allow {
                break;
            }
            let mut caps = rules::CaptureSlots {
                slots: &mut *log.cap,
                lens: &fe.captures.response,
            };
            rules::edit_response(action, resp, &mut edits, &cx, &mut caps);
        }
    }
    Ok(edits)
}
