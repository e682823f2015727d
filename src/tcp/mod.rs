//! `mode tcp`: a frontend that relays bytes to a server chosen by the same
//! balancing, `maxconn` queueing and health checks as HTTP, with half-close
//! carried across (a side that finishes sending shuts the other side's write
//! half, and the relay ends when both directions are done).
//!
//! Before choosing, `tcp-request content` rules run on the bytes buffered
//! within `tcp-request inspect-delay` (when a condition reads them, e.g.
//! `req.ssl_sni`); those bytes go to the server first. Once connected, the
//! backend's `tcp-response content` rules run on the server's first bytes
//! (`response.rs`). The session ends with HAProxy's `option tcplog` line.

mod response;
pub(crate) mod rules;

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use crate::sys::peer::Peer;
use crate::tls::Stream;

use crate::config::spoe::SpoeEvent;
use crate::observe::log::LogRecord;
use crate::observe::outcome::{self, Cause, Phase, Rows, Term};
use crate::snapshot::client::ClientConn;
use crate::snapshot::{BackendRt, FrontendRt};
use crate::state::table::track::{Level, StickView, Trackers};
use crate::tcp::rules::{SpoeRules, Verdict, View, Waits};
use crate::upstream::ConnectError;
use crate::upstream::balance::{self, PickError};
use crate::upstream::retry::{self, Retries, Seat};
use crate::upstream::spoe;
use crate::wire::relay::{End, HalfClose, IdleTimeouts, Relayed, pump};

/// Most request bytes held for content inspection (HAProxy's buffer).
const INSPECT_MAX: usize = 16 * 1024;

fn pick_backend(fe: &FrontendRt, view: &View<'_>) -> Option<Arc<BackendRt>> {
    use crate::acl::eval::RequestView;
    let cx = crate::sample::Ctx {
        frontend: &fe.name,
        ..view.sample_ctx()
    };
    fe.pick_backend(|c| fe.acls.eval(c, view), &cx).cloned()
}

/// Reads what the client sends until the payload fetches can decide, the
/// inspect delay ends, the client stops sending or the buffer is full.
async fn inspect(stream: &mut Stream, buf: &mut Vec<u8>, delay: Duration) {
    let deadline = tokio::time::Instant::now() + delay;
    // Read straight into `buf`: a chunk array here would be part of the
    // connection's task for its whole life, relay included.
    while crate::wire::client_hello::hello_incomplete(buf) && buf.len() < INSPECT_MAX {
        let start = buf.len();
        buf.resize((start + 4096).min(INSPECT_MAX), 0);
        let read = tokio::time::timeout_at(deadline, stream.read(&mut buf[start..])).await;
        match read {
            Ok(Ok(n)) if n > 0 => buf.truncate(start + n),
            _ => {
                buf.truncate(start);
                return;
            }
        }
    }
}

/// Serves one TCP-mode client connection to its end.
/// The client's stream is a plain socket, or TLS on a `bind ... ssl`
/// listener (terminated here, relayed in clear or re-encrypted to `ssl`
/// servers).
pub(crate) async fn serve(
    mut client: ClientConn,
    stream: Stream,
    mut peer: Peer,
    tls: Option<Box<crate::tls::TlsFacts>>,
) {
    // TCP_NODELAY comes from the listener (`frontend::listener::spawn`).
    client.facts.set_raw();
    let snap = client.rt.snapshot();
    let Some(fe) = snap.frontends().find(|f| *f.name == *client.frontend()) else {
        return;
    };
    // A request id needs the accept date and the request counter.
    let mut rec = LogRecord::new(fe.log.is_some() || fe.unique_id.is_some());
    if rec.enabled() {
        rec.set_addrs(peer, client.dst().or_else(|| stream.local_addr().ok()));
        crate::observe::log::emit_connect(fe, peer, rec.local);
    }
    // A TCP connection is one stream for its whole life (`show sess`).
    let entry = client.stream.entry();
    entry.begin();
    let mut stream = stream;
    let mut payload = Vec::new();
    if let Some(delay) = fe.inspect_delay
        && (fe.acls.reads_payload() || crate::tcp::rules::reads_payload(&fe.tcp_content))
    {
        inspect(&mut stream, &mut payload, delay).await;
    }
    // Looked up only for ACLs that read it or a `set-dst-port` that keeps
    // it: a system call otherwise saved.
    let mut local = match rec.local {
        Some(a) => a.inet(),
        None if fe.acls.reads_local() || crate::tcp::rules::moves_dst(&fe.tcp_content) => {
            client.dst().or_else(|| stream.local_addr().ok())
        }
        None => None,
    };
    // The connection's one stream counts on the counters its session
    // tracks and on those its content rules track.
    let strm = Trackers::default();
    let stick = StickView {
        tables: &snap.tables,
        sess: client.trackers(),
        strm: Some(&strm),
    };
    let tracking = outcome::Tracking {
        sess: client.trackers(),
        strm: Some(&strm),
        http: false,
        tables: Some(&snap.tables),
    };
    let process = &client.rt.process;
    let end = |rec: &mut LogRecord, vars: Option<&crate::sample::vars::Vars<'_>>| {
        let samples = crate::observe::log::Samples {
            vars,
            tls: tls.as_deref(),
            client: Some(&client.facts),
            proxies: Some(&*snap),
            stick: None,
        };
        outcome::finish_tracked(fe, process, rec, (None, None, samples), tracking)
    };
    let view = View {
        src: peer.inet(),
        local,
        payload: &payload,
        res_payload: None,
        tls: tls.as_deref(),
        client: Some(&client.facts),
        stick: Some(&stick),
    };
    // A TCP connection is its session and its one transaction.
    let sess_vars = crate::sample::vars::SessVars::default();
    let vars = crate::sample::vars::Vars::new(&sess_vars);
    let mut fx = crate::tcp::rules::Effects::default();
    // SPOE: the stream starts, then the frontend's content rules run.
    if !fe.spoe.is_empty() {
        let cx = || crate::sample::Ctx {
            vars: Some(&vars),
            frontend: &fe.name,
            frontend_id: fe.iid,
            ..crate::acl::eval::RequestView::sample_ctx(&view)
        };
        for ev in [SpoeEvent::ClientSession, SpoeEvent::FrontendTcpRequest] {
            Box::pin(spoe::send_event(fe.spoe.iter(), ev, &vars, &snap, cx)).await;
        }
    }
    let waits = Waits {
        log: fe.log.as_deref().map(|l| &l.setup),
        lua: fe.inspect_delay.is_some(),
        spoe: (!fe.spoe.is_empty()).then_some(SpoeRules {
            engines: &fe.spoe,
            may_wait: fe.inspect_delay.is_some(),
            snap: &snap,
            cx: None,
        }),
        res_open: false,
    };
    let verdict = crate::tcp::rules::run_waiting(
        (&fe.tcp_content, &fe.acls),
        &view,
        Some(&vars),
        Level::Stream,
        &mut fx,
        waits,
        true,
    )
    .await
    .unwrap_or(Verdict::Accept);
    rec.level = fx.level;
    if verdict == Verdict::Service {
        let cx = crate::sample::Ctx {
            vars: Some(&vars),
            ..crate::acl::eval::RequestView::sample_ctx(&view)
        };
        let name = fx.service.take().unwrap_or_default();
        lua_service(&name, &mut stream, &payload, cx, fe, &mut rec).await;
        vars.to_response();
        end(&mut rec, Some(&vars));
        return;
    }
    if verdict != Verdict::Accept {
        rec.tally.dreq = Rows::FE;
        rec.term(Cause::Proxy, Phase::Request);
        rec.null = sent_nothing(&payload, &stream);
        if verdict == Verdict::SilentDrop
            && let Some(tcp) = stream.socket()
        {
            crate::tcp::rules::silent_drop(&tcp);
        }
        end(&mut rec, None);
        return;
    }
    // `set-src`, `set-dst`: the session's addresses from here on.
    let mut set_dst = None;
    moved(
        &fx,
        (&mut peer, &mut local, &mut set_dst),
        entry,
        &mut rec,
        || client.dst().or_else(|| stream.local_addr().ok()),
    );
    let view = View {
        src: peer.inet(),
        local,
        ..view
    };
    let Some(be) = pick_backend(fe, &view) else {
        rec.term(Cause::Server, Phase::Connect);
        rec.null = sent_nothing(&payload, &stream);
        end(&mut rec, None);
        return;
    };
    entry.to_backend(be.iid);
    rec.assign_backend(&be);
    let bc = &be.state.counters;
    // A listen section's engines are its frontend's.
    let be_spoe = (be.iid != fe.iid).then_some(&be.spoe[..]);
    let spoe_any = !fe.spoe.is_empty() || be_spoe.is_some_and(|e| !e.is_empty());
    if spoe_any {
        let cx = || crate::sample::Ctx {
            vars: Some(&vars),
            frontend: &fe.name,
            frontend_id: fe.iid,
            backend: Some(&be.name),
            backend_id: Some(be.iid),
            ..crate::acl::eval::RequestView::sample_ctx(&view)
        };
        let ev = SpoeEvent::BackendTcpRequest;
        let engines = spoe::engines(&fe.spoe, be_spoe);
        Box::pin(spoe::send_event(engines, ev, &vars, &snap, cx)).await;
    }
    let verdict = if be.iid != fe.iid {
        // The Lua actions may wait as the frontend's rules do.
        let waits = Waits {
            log: be.log.as_deref(),
            lua: fe.inspect_delay.is_some(),
            spoe: (!be.spoe.is_empty()).then_some(SpoeRules {
                engines: &be.spoe,
                may_wait: be.inspect_delay.is_some(),
                snap: &snap,
                cx: None,
            }),
            res_open: false,
        };
        crate::tcp::rules::run_waiting(
            (&be.tcp_content, &be.acls),
            &view,
            Some(&vars),
            Level::Stream,
            &mut fx,
            waits,
            true,
        )
        .await
        .unwrap_or(Verdict::Accept)
    } else {
        Verdict::Accept
    };
    fx.mark(stream.socket());
    rec.level = fx.level;
    if !fx.captures.is_empty() {
        rec.cap_req = vec![None; fe.captures.request.len()];
        fx.capture_into(&mut rec.cap_req);
    }
    moved(
        &fx,
        (&mut peer, &mut local, &mut set_dst),
        entry,
        &mut rec,
        || client.dst().or_else(|| stream.local_addr().ok()),
    );
    if verdict == Verdict::Service {
        let cx = crate::sample::Ctx {
            vars: Some(&vars),
            ..crate::acl::eval::RequestView::sample_ctx(&view)
        };
        let name = fx.service.take().unwrap_or_default();
        lua_service(&name, &mut stream, &payload, cx, fe, &mut rec).await;
        rec.tally.intercepted = Rows::FE_BE;
        vars.to_response();
        end(&mut rec, Some(&vars));
        return;
    }
    if verdict != Verdict::Accept {
        rec.tally.dreq = Rows::BE;
        rec.term(Cause::Proxy, Phase::Request);
        rec.null = sent_nothing(&payload, &stream);
        if verdict == Verdict::SilentDrop
            && let Some(tcp) = stream.socket()
        {
            crate::tcp::rules::silent_drop(&tcp);
        }
        end(&mut rec, None);
        return;
    }
    // HAProxy 2.6 reads the client once as the session starts: a reset
    // found there ends it before a server is chosen (`CR`), a close is
    // taken as the end of what the client sends, not as its leaving.
    let first = first_read(&stream, &mut payload);
    if first == FirstRead::Reset {
        rec.term(Cause::Client, Phase::Request);
        rec.null = payload.is_empty();
        read_while_connecting(&mut rec, &payload);
        end(&mut rec, None);
        return;
    }
    let key = crate::snapshot::lb::LbKey {
        src: peer.ip(),
        head: None,
        prio: vars.tune.priority(),
    };
    let queued = Instant::now();
    let mut stores = crate::upstream::stick::Stores::default();
    let mut stuck = None;
    // What the backend's rules see: the buffered payload included.
    let view = View {
        src: peer.inet(),
        local,
        payload: &payload,
        res_payload: None,
        tls: tls.as_deref(),
        client: Some(&client.facts),
        stick: Some(&stick),
    };
    // `use-server` first.
    if !be.use_servers.is_empty() {
        stuck = balance::use_server(&be, |c| be.acls.eval(c, &view), false);
    }
    if crate::upstream::stick::any(&be) {
        let cx = crate::sample::Ctx {
            backend: Some(&be.name),
            backend_id: Some(be.iid),
            ..crate::acl::eval::RequestView::sample_ctx(&view)
        };
        // A server `use-server` chose is not looked up, its keys are
        // still stored.
        let assigned = stuck.is_some();
        if let Some(i) = crate::upstream::stick::on_request(&be, &cx, assigned, &mut stores, false)
        {
            stuck = Some(i);
        }
    }
    if stuck.is_none()
        && let Some(name) = &be.extras.rdp_persist
    {
        stuck = rdp_server(&be, &payload, name);
    }
    let slot = match balance::pick(&be, &key, &mut stuck).await {
        Ok(slot) => slot,
        Err(e) => {
            e.record(&be, &mut rec);
            rec.null = sent_nothing(&payload, &stream);
            end(&mut rec, None);
            return;
        }
    };
    rec.t_queue = ms(queued.elapsed());
    rec.be_queue = slot.queue_position();
    rec.srv_queue = slot.srv_queue_position();
    let mut seat = Seat::new(slot);
    entry.to_server(seat.server());
    bc.session_start();
    let mut tries = Retries::default();
    let connecting = Instant::now();
    let dst = set_dst
        .or_else(|| client.dst())
        .or_else(|| stream.local_addr().ok());
    let client_addr = peer.inet();
    // HAProxy 2.6 reads the client while it connects: what comes goes to
    // the server first, and a client that leaves first ends the session.
    let connected = if first == FirstRead::Closed {
        Ok(
            retry::connect(&be, &key, &mut seat, &mut tries, None, dst, client_addr)
                .await
                .map(|(s, _)| s),
        )
    } else {
        tokio::select! {
            c = retry::connect(&be, &key, &mut seat, &mut tries, None, dst, client_addr) => Ok(c.map(|(s, _)| s)),
            t = client_left(&mut stream, &mut payload) => Err(t),
        }
    };
    rec.retries = tries.done;
    rec.redispatched = tries.redispatched;
    // The server that accepted, or the last one tried (a redispatch may
    // have changed it).
    let server = seat.server().clone();
    entry.to_server(&server);
    rec.assign_server(&server);
    match connected {
        Err(left) => {
            if left.cause == Cause::Client && left.phase == Phase::Data {
                rec.tally.cli_abrt = Rows::BE_SRV;
            }
            rec.end(left);
            rec.null = payload.is_empty();
            read_while_connecting(&mut rec, &payload);
        }
        Ok(Err(e)) => {
            if let ConnectError::Pick(PickError::NoServer) = e {
                rec.tally.econ = Rows::BE;
            }
            if crate::sample::fetch::server_read() {
                let pool = server.pool.load();
                let facts = crate::sample::srvconn::ServerFacts::failed(
                    Some(pool.target(dst)),
                    e.server_error(),
                    pool.tls().is_some(),
                );
                rec.server_conn = Some(Box::new(facts));
            }
            // A queue on the redispatch is logged as a connect failure.
            rec.end(match &e {
                ConnectError::Pick(_) => Term::new(Cause::Server, Phase::Connect),
                e => e.term(),
            });
            rec.retryable = e.retryable();
            rec.null = sent_nothing(&payload, &stream);
            read_while_connecting(&mut rec, &payload);
        }
        // `proto h2` is HTTP only.
        Ok(Ok(Stream::Pipe(_))) => {
            tracing::warn!(
                "backend {}: 'proto h2' servers in 'mode tcp' are not supported, connection closed",
                be.name
            );
            rec.term(Cause::Server, Phase::Connect);
            rec.null = sent_nothing(&payload, &stream);
        }
        Ok(Ok(mut upstream)) => {
            rec.t_connect = ms(connecting.elapsed());
            if crate::sample::fetch::server_read() {
                let facts = crate::sample::srvconn::ServerFacts::of(&upstream);
                rec.server_conn = Some(Box::new(facts));
            }
            if crate::upstream::stick::any(&be)
                && let Some(i) = be
                    .servers
                    .iter()
                    .position(|s| Arc::ptr_eq(&s.state, &server))
            {
                let view = View {
                    src: peer.inet(),
                    local,
                    payload: &payload,
                    res_payload: None,
                    tls: tls.as_deref(),
                    client: Some(&client.facts),
                    stick: Some(&stick),
                };
                let cx = crate::sample::Ctx {
                    backend: Some(&be.name),
                    backend_id: Some(be.iid),
                    server: Some(&server.name),
                    ..crate::acl::eval::RequestView::sample_ctx(&view)
                };
                crate::upstream::stick::on_response(&be, &cx, i, &stores);
            }
            // `on-marked-down shutdown-sessions` (or an active server's
            // `on-marked-up shutdown-backup-sessions`) ends the connection.
            let killed = server.kill.notified();
            tokio::pin!(killed);
            let cuttable = server.cuttable.load(Relaxed);
            if cuttable {
                killed.as_mut().enable();
            }
            let proxy_header = crate::wire::proxy_proto::for_server(
                server.send_proxy.load(Relaxed),
                peer.inet(),
                set_dst.or_else(|| client.dst()),
                || stream.local_addr().ok(),
            );
            let first = [proxy_header.as_deref().unwrap_or(b""), &payload].concat();
            // With `tcp-response` rules, sent once they first ran.
            let inspecting = !be.tcp_response.is_empty();
            let mut wrote = inspecting
                || first.is_empty()
                || crate::wire::io::write_all(&mut upstream, &first, be.timeouts.server)
                    .await
                    .is_ok();
            // `tcp-response content`: the server's first bytes held
            // until the backend's rules decide.
            let mut held = Vec::new();
            // The request's `req` variables go, `res` ones may be set
            // (and stay for the log line, as in HAProxy).
            vars.to_response();
            // SPOE: the server's session, then its response's rules.
            if spoe_any {
                crate::snapshot::spoe::SpoeRt::response_side(&vars);
                let view = View {
                    src: peer.inet(),
                    local,
                    payload: &payload,
                    res_payload: None,
                    tls: tls.as_deref(),
                    client: Some(&client.facts),
                    stick: Some(&stick),
                };
                let cx = || crate::sample::Ctx {
                    vars: Some(&vars),
                    frontend: &fe.name,
                    frontend_id: fe.iid,
                    backend: Some(&be.name),
                    backend_id: Some(be.iid),
                    server: Some(&server.name),
                    ..crate::acl::eval::RequestView::sample_ctx(&view)
                };
                for ev in [SpoeEvent::ServerSession, SpoeEvent::TcpResponse] {
                    let engines = spoe::engines(&fe.spoe, be_spoe);
                    Box::pin(spoe::send_event(engines, ev, &vars, &snap, cx)).await;
                }
            }
            // A listen section's engines are its frontend's.
            let own_spoe = if be_spoe.is_some() {
                &be.spoe
            } else {
                &fe.spoe
            };
            let mut inspected = response::Inspected {
                verdict: Verdict::Accept,
                c2s: 0,
                first_sent: true,
                read: 0,
            };
            if inspecting {
                inspected = response::inspect(
                    &mut stream,
                    &mut upstream,
                    (&first, &mut held),
                    be.res_inspect_delay,
                    be.timeouts.server,
                    &mut ResponseRules {
                        be: &be,
                        view: View {
                            src: peer.inet(),
                            local,
                            payload: &payload,
                            res_payload: None,
                            tls: tls.as_deref(),
                            client: Some(&client.facts),
                            stick: Some(&stick),
                        },
                        vars: &vars,
                        fx: &mut fx,
                        spoe: (!own_spoe.is_empty()).then_some(SpoeRules {
                            engines: own_spoe,
                            may_wait: be.res_inspect_delay.is_some(),
                            snap: &snap,
                            cx: None,
                        }),
                    },
                )
                .await;
                fx.mark(stream.socket());
                rec.level = fx.level;
                wrote = inspected.first_sent || inspected.verdict != Verdict::Accept;
            }
            let delivered = held.is_empty()
                || !matches!(inspected.verdict, Verdict::Accept | Verdict::Close)
                || crate::wire::io::write_all(&mut stream, &held, fe.timeouts.client)
                    .await
                    .is_ok();
            let (c2s, s2c) = if !wrote {
                let failed = Relayed {
                    end: End::WriteError,
                    ..Relayed::default()
                };
                (Relayed::default(), failed)
            } else if !delivered {
                let failed = Relayed {
                    end: End::WriteError,
                    ..Relayed::default()
                };
                (failed, Relayed::default())
            } else if inspected.verdict != Verdict::Accept {
                // What the client sent meanwhile is read (HAProxy holds it
                // in its buffer), so that closing does not reset it.
                let _ = first_read(&stream, &mut Vec::new());
                match inspected.verdict {
                    // Reset the server; the client told with a close
                    // once what was held reached it.
                    Verdict::Close => {
                        if let Some(tcp) = upstream.socket() {
                            let _ = socket2::SockRef::from(&tcp).set_linger(Some(Duration::ZERO));
                        }
                    }
                    Verdict::Reject => {
                        rec.tally.dresp = Rows::ALL;
                        rec.term(Cause::Proxy, Phase::Data);
                    }
                    _ => {
                        rec.tally.dreq = Rows::FE;
                        rec.term(Cause::Proxy, Phase::Request);
                        if let Some(tcp) = stream.socket() {
                            crate::tcp::rules::silent_drop(&tcp);
                        }
                    }
                }
                Default::default()
            } else {
                let relayed = relay_ends(
                    &mut stream,
                    &mut upstream,
                    fe.timeouts_for_tcp(),
                    be.timeouts_for_tcp(),
                    fe.splice,
                );
                if cuttable {
                    tokio::select! {
                        r = relayed => r,
                        _ = &mut killed => {
                            // The bytes relayed so far are not counted.
                            rec.tally.srv_abrt = Rows::BE_SRV;
                            rec.term(Cause::Down, Phase::Data);
                            Default::default()
                        }
                    }
                } else {
                    relayed.await
                }
            };
            // What went through during the inspection counts as relayed
            // (HAProxy counts the server's bytes as they are read, those
            // a rule refused included).
            let first_part = if inspected.first_sent {
                payload.len() as u64
            } else {
                0
            };
            let c2s_total = c2s.bytes + first_part + inspected.c2s;
            // The server's bytes as read, not as a Lua action left them
            // (HAProxy counts them as they come).
            let s2c_total = s2c.bytes + inspected.read;
            let t = &mut rec.tally;
            (t.fe_in, t.srv_in) = (c2s_total, c2s_total);
            (t.fe_out, t.srv_out) = (s2c_total, s2c_total);
            rec.bytes_in = c2s_total;
            rec.bytes_out = s2c_total;
            rec.null = c2s_total == 0;
            if let Some(t) = termination(&c2s, &s2c) {
                rec.end(t);
            }
        }
    }
    bc.session_end();
    drop(seat);
    // `res` variables stay for the log line in mode tcp; `req` ones are
    // gone (HAProxy's log line reads the response's side).
    vars.to_response();
    end(&mut rec, Some(&vars));
}

/// A backend's `tcp-response content` rules on the server's bytes held.
struct ResponseRules<'a, 'v> {
    be: &'a BackendRt,
    view: View<'a>,
    vars: &'a crate::sample::vars::Vars<'v>,
    fx: &'a mut crate::tcp::rules::Effects,
    /// Set when the rules' proxy has SPOE engines.
    spoe: Option<SpoeRules<'a>>,
}

impl response::Decide for ResponseRules<'_, '_> {
    async fn decide(&mut self, held: &mut Vec<u8>, last: bool, open: bool) -> Option<Verdict> {
        let view = View {
            res_payload: Some(held),
            ..self.view
        };
        // A `send-spoe-group` waits here, and so do the Lua actions
        // under a `tcp-response inspect-delay` (without, one that yields
        // fails, as in HAProxy).
        let waits = Waits {
            log: self.be.log.as_deref(),
            lua: self.be.res_inspect_delay.is_some(),
            spoe: self.spoe,
            res_open: open,
        };
        let verdict = crate::tcp::rules::run_waiting(
            (&self.be.tcp_response, &self.be.acls),
            &view,
            Some(self.vars),
            Level::Stream,
            self.fx,
            waits,
            last,
        )
        .await;
        if let Some(rewritten) = self.fx.res_rewrite.take() {
            *held = rewritten;
        }
        verdict
    }
}

/// `tcp-request content use-service lua.<name>`: the script's TCP
/// service serves the client in a server's place, logged as HAProxy logs
/// it (`<lua.name>` for the server, its bytes both ways), counted as an
/// interception.
async fn lua_service(
    name: &str,
    stream: &mut Stream,
    payload: &[u8],
    cx: crate::sample::Ctx<'_>,
    fe: &FrontendRt,
    rec: &mut LogRecord,
) {
    rec.server = crate::observe::outcome::SrvName::Applet(format!("<lua.{name}>").into());
    rec.tally.intercepted = Rows::FE;
    let Some(scripts) = crate::sample::script::active() else {
        return;
    };
    let Some(host) = scripts.as_any().downcast_ref::<crate::lua::Host>() else {
        return;
    };
    let mut io = crate::lua::Io::default();
    io.applet = Some(crate::lua::AppletConn {
        stream: &mut *stream,
        buf: payload.to_vec(),
        eof: false,
        timeout: fe.timeouts.client,
        sent: 0,
        received: payload.len() as u64,
    });
    let mut t = crate::lua::txn::ConnTxn {
        cx,
        log: fe.log.as_deref().map(|l| &l.setup),
    };
    host.run_tcp_service(name, &mut t, &mut io).await;
    if let Some(a) = io.applet.take() {
        rec.bytes_in = a.received;
        rec.bytes_out = a.sent;
        (rec.tally.fe_in, rec.tally.fe_out) = (a.received, a.sent);
        rec.null = a.received == 0;
    }
    let _ = tokio::io::AsyncWriteExt::shutdown(stream).await;
}

/// The addresses `set-src`, `set-dst` and their ports gave the session
/// (`fx`): the client `peer` (and its `show sess` entry), the `local`
/// address the rules and logs see, and `set_dst`, the one a PROXY header
/// to the server and a transparent connect use.
fn moved(
    fx: &crate::tcp::rules::Effects,
    (peer, local, set_dst): (
        &mut Peer,
        &mut Option<std::net::SocketAddr>,
        &mut Option<std::net::SocketAddr>,
    ),
    entry: &crate::state::sessions::StreamEntry,
    rec: &mut LogRecord,
    socket_dst: impl FnOnce() -> Option<std::net::SocketAddr>,
) {
    if let Some(src) = fx.src {
        *peer = Peer::Ip(src);
        entry.set_peer(*peer);
    }
    if let Some(dst) = fx.dst {
        (*local, *set_dst) = (Some(dst), Some(dst));
    }
    // The log line's addresses: the moved ones, the connection's for the
    // side no rule moved (`socket_dst`: where the client connected).
    if rec.enabled() && (fx.src.is_some() || fx.dst.is_some()) {
        rec.set_addrs(*peer, set_dst.or_else(socket_dst));
    }
}

/// Reads what the client sends while sluice connects to a server, into
/// `buf` (sent to the server first); resolves only when the client leaves,
/// as HAProxy 2.6 then stops connecting: a client that closes having sent
/// nothing ends the session `CC`, one that resets it `CD`. A client that
/// closes after sending something waits for its bytes to be delivered.
async fn client_left(stream: &mut Stream, buf: &mut Vec<u8>) -> Term {
    use bytes::BufMut;
    // Past the buffer's size the client waits, as it would for HAProxy's.
    while buf.len() < INSPECT_MAX {
        let room = INSPECT_MAX - buf.len();
        // `read_buf` grows `buf` only by what was read: cancelled when the
        // connection is made, it leaves no gap.
        match stream.read_buf(&mut (&mut *buf).limit(room)).await {
            Ok(0) if buf.is_empty() => return Term::new(Cause::Client, Phase::Connect),
            Ok(0) => break,
            Ok(_) => {}
            Err(_) => return Term::new(Cause::Client, Phase::Data),
        }
    }
    std::future::pending().await
}

/// What the first read of a client finds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FirstRead {
    /// Nothing more to read yet (what was there is in the buffer).
    Open,
    /// The client's close, after what was there.
    Closed,
    /// An error: the client reset the connection.
    Reset,
}

/// Reads what a plain TCP client has already sent, without waiting, into
/// `buf`, as HAProxy 2.6's first read of a new session does. A TLS
/// client's socket holds records, read by the handshake: left open.
fn first_read(stream: &Stream, buf: &mut Vec<u8>) -> FirstRead {
    let Stream::Tcp(tcp) = stream else {
        return FirstRead::Open;
    };
    // The socket itself, not tokio's `try_read`: a socket just accepted
    // has no readiness recorded yet, and would read as empty.
    let Some(fd) = tcp.fd() else {
        return FirstRead::Closed;
    };
    let sock = socket2::SockRef::from(&fd);
    while buf.len() < INSPECT_MAX {
        let start = buf.len();
        buf.resize((start + 4096).min(INSPECT_MAX), 0);
        let read = std::io::Read::read(&mut &*sock, &mut buf[start..]);
        let n = *read.as_ref().unwrap_or(&0);
        buf.truncate(start + n);
        match read {
            Ok(0) => return FirstRead::Closed,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return FirstRead::Open,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return FirstRead::Reset,
        }
    }
    FirstRead::Open
}

/// `persist rdp-cookie`: the server whose address the RDP cookie encodes
/// (`msts=<IPv4 as the integer of its bytes in memory>.<port as the
/// integer of its network-order bytes>.0000`, as the Microsoft broker
/// writes it on x86), if it takes the session (up, or `option persist`).
fn rdp_server(be: &BackendRt, payload: &[u8], name: &str) -> Option<usize> {
    let value = crate::sample::fetch::rdp_cookie_value(payload, name)?;
    let text = std::str::from_utf8(value).ok()?;
    let mut parts = text.split('.');
    let addr: u32 = parts.next()?.parse().ok()?;
    let port: u32 = parts.next()?.parse().ok()?;
    let ip = std::net::Ipv4Addr::from(addr.to_le_bytes());
    let port = u16::from_be_bytes((port as u16).to_le_bytes());
    let want = std::net::SocketAddr::from((ip, port));
    let i = be
        .servers
        .iter()
        .position(|s| s.state.pool.load().addr() == want)?;
    (be.servers[i].state.takes_persistent() || be.persist).then_some(i)
}

/// A session that ended before relaying counts the bytes the client sent
/// meanwhile as received (`%U`, `bin`), as HAProxy 2.6 does.
fn read_while_connecting(rec: &mut LogRecord, payload: &[u8]) {
    let n = payload.len() as u64;
    (rec.tally.fe_in, rec.tally.srv_in, rec.bytes_in) = (n, n, n);
}

/// Whether the client of a session that ends before any relaying sent
/// nothing at all (`option dontlognull`). HAProxy reads what a client sends
/// while it inspects, queues or connects, so bytes still waiting in the
/// socket count as sent. A TLS client's socket holds records, not what it
/// said: such a session is taken as having sent something, and logged.
fn sent_nothing(payload: &[u8], stream: &Stream) -> bool {
    payload.is_empty()
        && match stream {
            Stream::Tcp(s) => !crate::wire::io::has_pending(s),
            _ => false,
        }
}

fn ms(d: Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

/// How a relayed TCP session ended, as HAProxy's termination state tells
/// it: a side's timeout (`cD`, `sD`) or error (`CD`, `SD`) first; both
/// sides closing cleanly is `--`.
fn termination(c2s: &Relayed, s2c: &Relayed) -> Option<Term> {
    let cause = match (c2s.end, s2c.end) {
        (End::Timeout, _) | (_, End::WriteTimeout) => Cause::ClientTimeout,
        (_, End::Timeout) | (End::WriteTimeout, _) => Cause::ServerTimeout,
        (End::ReadError, _) | (_, End::WriteError) => Cause::Client,
        (_, End::ReadError) | (End::WriteError, _) => Cause::Server,
        _ => return None,
    };
    Some(Term::new(cause, Phase::Data))
}

/// Relays both ways until both directions have ended. Each direction reads
/// with its source's inactivity timeout and writes with its
/// destination's; when one side finishes sending, the
/// other side's write half is shut down. Returns (a to b, b to a) byte
/// counts. Used for `mode tcp` and for HTTP protocol switches (101). On
/// Linux the bytes go through the kernel with splice(2) unless `tune` says
/// `nosplice` (see [`crate::wire::splice`]).
pub(crate) async fn relay(
    a: &mut Stream,
    b: &mut Stream,
    a_idle: impl Into<IdleTimeouts>,
    b_idle: impl Into<IdleTimeouts>,
    tune: crate::wire::splice::Tune,
) -> (u64, u64) {
    let (ab, ba) = relay_ends(a, b, a_idle.into(), b_idle.into(), tune).await;
    (ab.bytes, ba.bytes)
}

/// [`relay`], also telling how each direction ended. Once one direction
/// has ended, each side's waits use its `fin` timeout.
pub(crate) async fn relay_ends(
    a: &mut Stream,
    b: &mut Stream,
    a_idle: IdleTimeouts,
    b_idle: IdleTimeouts,
    tune: crate::wire::splice::Tune,
) -> (Relayed, Relayed) {
    let half = HalfClose::default();
    if let (Stream::Tcp(a), Stream::Tcp(b)) = (&mut *a, &mut *b)
        && let (Ok(a), Ok(b)) = (a.reactor(), b.reactor())
    {
        return relay_tcp(a, b, a_idle, b_idle, tune, &half).await;
    }
    // TLS on a side: its read and write halves share the TLS session.
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    tokio::join!(
        pump(ar, bw, a_idle, b_idle, &half),
        pump(br, aw, b_idle, a_idle, &half)
    )
}

/// Two plain sockets: spliced in the kernel where it can be.
async fn relay_tcp(
    a: &mut TcpStream,
    b: &mut TcpStream,
    a_idle: IdleTimeouts,
    b_idle: IdleTimeouts,
    tune: crate::wire::splice::Tune,
    half: &HalfClose,
) -> (Relayed, Relayed) {
    #[cfg(target_os = "linux")]
    if !tune.disabled {
        let (a, b) = (&*a, &*b);
        return tokio::join!(
            crate::wire::splice::pump(a, b, a_idle, b_idle, tune, half),
            crate::wire::splice::pump(b, a, b_idle, a_idle, tune, half)
        );
    }
    #[cfg(not(target_os = "linux"))]
    let _ = tune;
    let (ar, aw) = a.split();
    let (br, bw) = b.split();
    tokio::join!(
        pump(ar, bw, a_idle, b_idle, half),
        pump(br, aw, b_idle, a_idle, half)
    )
}

impl FrontendRt {
    /// Client-side inactivity in TCP mode: `timeout tunnel` if set (the
    /// connection is a tunnel from the start), else `timeout client`;
    /// `timeout client-fin` once a direction has ended.
    pub(crate) fn timeouts_for_tcp(&self) -> IdleTimeouts {
        IdleTimeouts {
            open: self.timeouts.tunnel.or(self.timeouts.client),
            fin: self.timeouts.client_fin,
        }
    }
}

impl BackendRt {
    /// Server-side inactivity in TCP mode: `timeout tunnel`, else `timeout
    /// server`; `timeout server-fin` once a direction has ended.
    pub(crate) fn timeouts_for_tcp(&self) -> IdleTimeouts {
        IdleTimeouts {
            open: self.timeouts.tunnel.or(self.timeouts.server),
            fin: self.timeouts.server_fin,
        }
    }
}
